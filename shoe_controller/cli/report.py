"""`shoe-controller report`: a shift report from the journal, per hour and per dealer: rounds,
pace, round times, voids, misdeals, shoes, downtime, holds by kind and how long each took to
resolve (docs/pace.md).

Read-only from the journal (the daemon's, while it runs, or a copy), counted by game/pace.py as
`shoectl pace` counts; hours and times in this machine's zone like shoectl (`--utc`: UTC).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import click

from shoe_controller.cli.export import table_settings
from shoe_controller.cli.options import config_option
from shoe_controller.cli.output_file import OutputFile, open_output
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.shoectl.typed_times import FORMS, TimeTypedError, read_time
from shoe_controller.game.pace import instant, plain_json, read_shift, report
from shoe_controller.store.journal import Journal, JournalError
from shoe_controller.store.queries import JournalReader
from shoe_controller.table.alerts import HOLD_CODES
from shoe_controller.vocab import words

DEALER_LOOKBACK = timedelta(hours=12)  # the dealer in charge at --since signed in since then
PAGE = 1000
# The CSV is opened in a spreadsheet by a person: its headings in words (the JSON keeps the
# codes, its keys: the left side).
COLUMNS: Mapping[str, str] = MappingProxyType({
    "kind": "kind", "name": "name", "rounds": "rounds", "rounds_per_hour": "rounds an hour",
    "hours": "hours", "round_seconds_p50": "round time median (s)",
    "round_seconds_p90": "round time 90th percentile (s)",
    "bets_closed_to_first_card_p50": "bets closed to first card median (s)",
    "bets_closed_to_first_card_p90": "bets closed to first card 90th percentile (s)",
    "voided": "voided", "trial": "trial", "shoes_ended": "shoes ended", "misdeals": "misdeals",
    "downtime_seconds": "downtime (s)",
})  # fmt: skip
TIME_HELP = f" Read in this machine's zone (with --utc: UTC), or with its offset: {FORMS}."


def _when(text: str, option: str, utc: bool) -> datetime:
    try:
        return read_time(text, utc=utc)
    except TimeTypedError as error:
        raise click.BadParameter(str(error), param_hint=option) from None


@click.command("report")
@config_option("The daemon's configuration: where its journal is.")
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="This journal file instead of the configuration's (a copy will do).",
)
@click.option("--since", "since_text", required=True, metavar="TIME", help="From." + TIME_HELP)
@click.option(
    "--until", "until_text", default="now", show_default=True, metavar="TIME",
    help="To." + TIME_HELP,
)  # fmt: skip
@click.option(
    "--format", "form", type=click.Choice(["csv", "json"]), default="csv", show_default=True,
    help="CSV (one row an hour, a dealer, the total) or JSON.",
)  # fmt: skip
@click.option("--utc", is_flag=True, help="Hours and times in UTC instead of this machine's zone.")
@click.option(
    "-o", "--output", default="-", show_default=True,
    type=OutputFile(), help="The file ('-': standard output).",
)  # fmt: skip
def report_command(
    *,
    config_path: Path,
    journal_path: Path | None,
    since_text: str,
    until_text: str,
    form: str,
    utc: bool,
    output: str,
) -> None:
    """A shift report from the journal: per hour and per dealer, rounds, pace, holds by kind
    and time to resolve, voids, misdeals, shoes."""
    start, end = _when(since_text, "--since", utc), _when(until_text, "--until", utc)
    if end <= start:
        raise click.UsageError(f"--until {until_text} is not after --since {since_text}")
    given = click.get_current_context().get_parameter_source("config_path")
    _, configured = table_settings(config_path, given is not click.core.ParameterSource.DEFAULT)
    path = journal_path or (Path(configured) if configured else None)
    if path is None:
        raise click.UsageError(f"no journal: {config_path} does not exist; give --journal PATH")
    try:
        with Journal.open(path, None, read_only=True) as journal:
            events = events_between(journal.reads, start - DEALER_LOOKBACK, end)
            shift = read_shift(events, HOLD_CODES)
    except JournalError as error:
        raise click.ClickException(f"cannot read the journal: {error}") from None
    shown = Times.chosen(utc)
    rows = report(shift, start, end, shown.zone)
    text = _json(rows, start, end, shown) if form == "json" else _csv(rows)
    with open_output(output) as stream:
        stream.write(text)


def events_between(
    reads: JournalReader, start: datetime, end: datetime
) -> Iterator[dict[str, Any]]:
    """The journal's events from `start` to `end`, in seq order (found by bisection)."""
    first, last = reads.first_seq(), reads.last_seq()
    if first is None:
        return
    low, high = first - 1, last
    while low < high:  # the last seq before the first event at `start` or later
        middle = (low + high) // 2
        found = reads.events_after(middle, 1)
        if not found or instant(found[0].at) >= start:
            high = middle
        else:
            low = min(found[0].seq, high)  # every seq before it leads to it too
    seq = low
    while True:
        batch = reads.events_after(seq, PAGE)
        if not batch:
            return
        for event in batch:
            if instant(event.at) > end:
                return
            yield event.to_wire()
        seq = batch[-1].seq


def _json(rows: list[dict[str, Any]], start: datetime, end: datetime, shown: Times) -> str:
    document = {"since": plain_json(start), "until_at": plain_json(end), "rows": rows}
    return json.dumps(shown.in_json(document), indent=2, ensure_ascii=False) + "\n"


def _csv(rows: list[dict[str, Any]]) -> str:
    """One row each; a hold code's count and its median time to resolve as two columns."""
    codes = sorted({code for row in rows for code in row.get("holds", {})})
    header = [
        *COLUMNS.values(),
        *(f"{heading}: {words.alert(code)}" for code in codes
          for heading in ("holds", "median time to resolve (s)")),
    ]  # fmt: skip
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        holds = row.get("holds", {})
        cells = [row.get(column) for column in COLUMNS]
        for code in codes:
            found = holds.get(code)
            cells += [found["count"], found["resolve_seconds_p50"]] if found else [0, None]
        writer.writerow(["" if cell is None else cell for cell in cells])
    return stream.getvalue()
