"""`shoectl events`: the journal's events as journalctl shows a log: the last N (`-n`), those
between two times (`--since`, `--until`), or live (`--follow`), with a header row.

The control socket gives at most 1000 events an answer (docs/control.md `events`), so what
asks for more is read in pages on one connection: forward with `after` from the first seq
at or after `--since` (found by bisection over the seqs: the journal's times grow with its
seqs), or backward in windows of 1000 seqs for the last N. Pages are read whole and the
`--type` filter is applied here, so a page always says how far it reached. The times typed
are read as shoectl shows times (typed_times.py).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import click

from shoe_controller.cli.shoectl.checks import EventTypeParam
from shoe_controller.cli.shoectl.client import AnswerError, Client, UnreachableError
from shoe_controller.cli.shoectl.following import follow_events
from shoe_controller.cli.shoectl.plumbing import (
    EXIT_OK,
    ask,
    connect,
    fail,
    fail_answer,
    json_option,
    out,
    painter,
    print_json_line,
    times,
)
from shoe_controller.cli.shoectl.render import Painter, event_row
from shoe_controller.cli.shoectl.times import Times, moment
from shoe_controller.cli.shoectl.typed_times import FORMS, TimeTypedError, read_time

PAGE = 1000  # the most events the control socket gives in one answer
SAMPLE = 10  # events asked for to find one a viewer may see (surveillance's are left out)
Event = Mapping[str, Any]


def matches(kind: str, types: Iterable[str]) -> bool:
    """The socket's rule: a full type (`card.dealt`) or a family (`card`); none: all."""
    wanted = tuple(types)
    return not wanted or any(kind == t or kind.startswith(t + ".") for t in wanted)


def _at(event: Event) -> datetime:
    instant = moment(event.get("at"))
    assert instant is not None, event  # the journal's every event has its time
    return instant


class Pages:
    """The journal's events on one connection, a page at a time."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.examined = 0  # the last seq a forward read reached

    def after(self, seq: int, limit: int = PAGE) -> list[dict[str, Any]]:
        return self._client.request({"cmd": "events", "after": seq, "limit": limit})["events"]

    def bounds(self) -> tuple[int, int]:
        """The first and last seq the journal holds (0, 0 when empty)."""
        first = self.after(0, 1)
        last = self._client.request({"cmd": "events", "limit": 1})["events"]
        return (first[0]["seq"] if first else 0), (last[-1]["seq"] if last else 0)

    def seq_before(self, instant: datetime, first: int, last: int) -> int:
        """The seq after which the events are at `instant` or later (bisection)."""
        low, high = max(first - 1, 0), last
        while low < high:
            middle = (low + high) // 2
            found = self.after(middle, SAMPLE)[:1]
            if not found or _at(found[0]) >= instant:
                high = middle
            else:
                low = min(found[0]["seq"], high)  # every seq before it leads to it too
        return low

    def forward(self, after: int, until: datetime | None) -> Iterator[dict[str, Any]]:
        """Every event after seq `after`, to the end or to `until`."""
        self.examined = after
        while True:
            batch = self.after(self.examined)
            if not batch:
                return
            for event in batch:
                if until is not None and _at(event) > until:
                    return
                yield event
            self.examined = batch[-1]["seq"]

    def last(self, count: int, types: Iterable[str], high: int, first: int) -> list[Event]:
        """The last `count` matching events up to seq `high`, oldest first."""
        found: deque[Event] = deque()
        while len(found) < count and high >= max(first, 1):
            low = max(high - PAGE, first - 1, 0)
            page = [e for e in self.after(low, high - low) if e["seq"] <= high]
            found.extendleft(reversed([e for e in page if matches(e["type"], types)]))
            high = low
        return list(found)[-count:] if count else []


def _typed(text: str | None, option: str, utc: bool) -> datetime | None:
    if text is None:
        return None
    try:
        return read_time(text, utc=utc)
    except TimeTypedError as error:
        raise click.BadParameter(str(error), param_hint=option) from None


TIME_WIDTH = len("TIME (+08:00)")  # a stream cannot align on what comes later


class Printer:
    """One event a line (a stream cannot align on what comes later: fixed widths), after a
    header row (not in JSON)."""

    def __init__(self, as_json: bool, paint: Painter, shown: Times) -> None:
        self._as_json, self._paint, self._shown = as_json, paint, shown
        self._headed = as_json

    def header(self) -> None:
        if not self._headed:
            time = self._shown.column("TIME")
            header = f"{'SEQ':>6}  {time:<{TIME_WIDTH}}  {'SHOE/RND':<8}  {'TYPE':<20}  DETAILS"
            out(self._paint(header, "head"))
            self._headed = True

    def __call__(self, event: Event) -> None:
        self.header()
        if self._as_json:
            print_json_line(event)
        else:
            paint = self._paint
            seq, at, where, (kind, role), details = event_row(event, paint, self._shown)
            kind = paint(kind.ljust(20), role)
            out(f"{seq:>6}  {at:<{TIME_WIDTH}}  {where:<8}  {kind}  {details}")
        sys.stdout.flush()


TIME_HELP = (
    " TIME is read in this machine's zone, as shoectl shows times (with --utc: in UTC), or"
    f" with its offset: {FORMS}; a time the clocks pass twice (daylight saving) is refused."
)


@click.command("events", short_help="The event log: the last N, --since/--until, --follow.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they happen.")
@click.option(
    "--type",
    "-t",
    "types",
    multiple=True,
    metavar="TYPE",
    type=EventTypeParam(),
    help="Only this type (card.dealt) or family (card); repeatable.",
)
@click.option(
    "--last",
    "-n",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="How many past events to show: the last N (of --since/--until's stretch, when one is"
    " given and -n too). More than 1000 are read in pages of 1000.",
)
@click.option(
    "--since", "-S", metavar="TIME", help="Events from TIME on (all of them)." + TIME_HELP
)
@click.option("--until", "-U", metavar="TIME", help="Events up to TIME." + TIME_HELP)
@json_option
def events_command(
    *,
    follow: bool,
    types: tuple[str, ...],
    last: int,
    since: str | None,
    until: str | None,
    as_json: bool,
) -> None:
    """The journal's events, newest last, as journalctl shows a log: the last N, those since
    or until a time, or --follow for them live (JSON: one event a line)."""
    shown = times()
    start, end = _typed(since, "--since", shown.utc), _typed(until, "--until", shown.utc)
    if follow and end is not None:
        raise click.UsageError("--follow goes on without an end: leave out --until")
    if start is not None and end is not None and end < start:
        raise click.UsageError(f"--until {until} is before --since {since}")
    source = click.get_current_context().get_parameter_source("last")
    counted = source is not click.core.ParameterSource.DEFAULT
    show = Printer(as_json, painter(), shown)
    request: dict[str, Any] = {"cmd": "events", "types": list(types), "limit": min(last, PAGE)}
    if start is None and end is None and last <= PAGE:
        if not follow:
            for event in ask(request)["events"] if last else []:
                show(event)
            return
    else:
        after = _history(types=types, last=last, start=start, end=end, counted=counted, show=show)
        if not follow:
            return
        request = {"cmd": "events", "types": list(types), "after": after}
    show.header()
    try:
        follow_events(request, show)
    except KeyboardInterrupt:
        raise SystemExit(EXIT_OK) from None
    except AnswerError as error:
        fail_answer(error)


def _history(
    *,
    types: tuple[str, ...],
    last: int,
    start: datetime | None,
    end: datetime | None,
    counted: bool,
    show: Printer,
) -> int:
    """Print the events asked for in pages; returns the last seq read (to follow after)."""
    try:
        with connect() as client:
            pages = Pages(client)
            first, final = pages.bounds()
            if start is not None:
                after = pages.seq_before(start, first, final)
                stretch: Iterable[Event] = (
                    e for e in pages.forward(after, end) if matches(e["type"], types)
                )
                if counted:
                    stretch = deque(stretch, maxlen=last)
                for event in stretch:
                    show(event)
                return max(pages.examined, after)
            high = final
            if end is not None:
                high = pages.seq_before(end + timedelta(microseconds=1), first, final)
            for event in pages.last(last, types, high, first):
                show(event)
            return final
    except UnreachableError as error:
        fail(str(error))
    except AnswerError as error:
        fail_answer(error)
