"""Shuffle findings at the table: the companion's slug notices and shuffle report turned into
events, and the shoe's latest report kept (docs/shuffle.md).

The companion (`shoe-controller surveillance`) holds this shoe's order against the previous
shoe's (game/surveillance/shuffle_watch.py, numpy: not in the daemon) and the control socket
journals what it finds as a `shuffle_findings` input. Here, from the inputs alone (a replay
gives the same events):
- `surveillance.slug` for a slug not raised before in this shoe: where it is in both shoes
  and the cards that follow it in the previous shoe (what a team betting it expects next),
  and, when the companion says, the next round's worth of every bet plain and if the slug
  goes on (`next_round`, game/surveillance/slug_edge.py);
- `surveillance.slug_ended` for a raised slug that a card broke;
- `surveillance.shuffle_report` with the shoe's report, once, at its end (`final`).
A companion that catches up (after a restart of either process) sends the shoe's notices
again: a slug is known by where it starts in both shoes, and raised or ended once.

Pure data and checks: `books.ShoeBook.shuffle` holds the shoe's `ShuffleRecord`;
shuffle_reports.py is the input's handler.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.game.payouts import Bet
from shoe_controller.vocab.cards import CardError, parse_card
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import ShuffleFindings

NOTICE_KINDS = {
    "slug": EventType.SURVEILLANCE_SLUG,
    "slug_ended": EventType.SURVEILLANCE_SLUG_ENDED,
}
VERDICTS = ("fair", "suspect", "unshuffled")
TEST_FIELDS = ("value", "p_value", "threshold")
MAX_NOTICES = 1000
MAX_NEXT_CARDS = 64
NOTICE_FIELDS = frozenset({"kind", "card", "slug"})
SLUG_FIELDS = NOTICE_FIELDS | {"next_round"}  # a slug's notice may say what it is worth
BET_NAMES = frozenset(bet.value for bet in Bet)


@dataclass(slots=True)
class ShuffleRecord:
    """A shoe's shuffle findings: the latest report, and the slugs raised and ended."""

    after_seq: int = -1
    round: int = 0
    at: str = ""
    against: int | None = None
    final: bool = False
    report: dict[str, Any] | None = None
    slugs: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> its last word
    live: set[str] = field(default_factory=set)  # keys of the slugs raised and not ended
    under_way: dict[str, Any] | None = None  # the slug as it stands now, with its worth
    # The shoe before's final findings, when they came after its end (the table opens the
    # next shoe's book at shoe.ended, in the same input as the last round's result).
    previous: ShuffleRecord | None = None

    def accept(self, item: ShuffleFindings, at: str) -> list[tuple[EventType, dict[str, Any]]]:
        """Keep checked findings of this record's shoe (`findings_problem` and
        `freshness_problem` first); the events they cause."""
        self.after_seq, self.round, self.at = item.after_seq, item.round, at
        self.against = item.against
        self.report = _plain(item.findings["report"])
        self.under_way = _plain(item.findings.get("live"))
        events: list[tuple[EventType, dict[str, Any]]] = []
        for notice in item.findings.get("notices", ()):
            slug = _plain(notice["slug"])
            key = slug_key(slug)
            data = {"round": item.round, "against": item.against, "card": notice["card"], **slug}
            if "next_round" in notice:
                data["next_round"] = _plain(notice["next_round"])
            if notice["kind"] == "slug":
                if key in self.slugs:
                    continue  # raised already (findings sent again after a restart)
                self.live.add(key)
            else:
                if key in self.slugs and key not in self.live:
                    continue  # ended already
                self.live.discard(key)
            self.slugs[key] = {"kind": notice["kind"], **data}
            events.append((NOTICE_KINDS[notice["kind"]], data))
        if item.final and not self.final:
            self.final = True
            events.append((EventType.SURVEILLANCE_SHUFFLE_REPORT, dict(self.report)))
        return events

    def accept_previous(
        self, item: ShuffleFindings, at: str
    ) -> list[tuple[EventType, dict[str, Any]]]:
        """The shoe before's final findings, come after its end: kept in `previous`."""
        self.previous = ShuffleRecord()
        return self.previous.accept(item, at)

    def to_json(self) -> dict[str, Any]:
        """What `shuffle` answers besides the report: where the findings stand."""
        return {
            "round": self.round,
            "at": self.at,
            "after_seq": self.after_seq,
            "final": self.final,
            "slugs": [dict(value) for value in self.slugs.values()],
            "live": [dict(self.slugs[key]) for key in sorted(self.live)],
            "under_way": self.under_way,
        }


def slug_key(slug: Mapping[str, Any]) -> str:
    """A slug's name: where it starts in this shoe and in the previous one."""
    return f"{slug['this'][0]}:{slug['previous'][0]}"


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _is_count(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_span(value: Any) -> bool:
    """`[from, to]`: positions counted from 1, from <= to."""
    return (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(_is_count(end, 1) for end in value)
        and value[0] <= value[1]
    )


def _report_problem(report: Any, shoe: int, against: int) -> str | None:
    if not isinstance(report, Mapping):
        return "findings.report must be an object"
    if report.get("shoe") != shoe or report.get("against") != against:
        return "findings.report must name the findings' shoe and against"
    if not _is_count(report.get("cards_compared")):
        return "findings.report.cards_compared must be a whole number >= 0"
    if report.get("verdict") not in VERDICTS:
        return f"findings.report.verdict must be one of {', '.join(VERDICTS)}"
    tests = report.get("tests")
    if not isinstance(tests, Mapping):
        return "findings.report.tests must be an object"
    for name, values in tests.items():
        if not isinstance(values, Mapping) or set(values) != set(TEST_FIELDS):
            return f"findings.report.tests.{name} must have exactly {', '.join(TEST_FIELDS)}"
        if not all(_is_number(values[key]) for key in TEST_FIELDS):
            return f"findings.report.tests.{name}: {', '.join(TEST_FIELDS)} must be numbers"
        if not 0 <= values["p_value"] <= 1:
            return f"findings.report.tests.{name}.p_value must be from 0 to 1"
    runs = report.get("runs")
    if not isinstance(runs, list | tuple):
        return "findings.report.runs must be a list"
    for run in runs:
        if not (
            isinstance(run, Mapping)
            and set(run) == {"length", "this", "previous"}
            and _is_count(run["length"], 1)
            and _is_span(run["this"])
            and _is_span(run["previous"])
        ):
            return "findings.report.runs: each needs length, this [from, to], previous [from, to]"
    return None


def _notice_problem(notice: Any) -> str | None:
    if not isinstance(notice, Mapping) or not NOTICE_FIELDS <= set(notice) <= SLUG_FIELDS:
        return "each notice needs exactly kind, card, slug (and a slug's notice next_round)"
    if notice["kind"] not in NOTICE_KINDS:
        return f"a notice's kind is one of {', '.join(NOTICE_KINDS)}"
    if "next_round" in notice:
        if notice["kind"] != "slug":
            return "only a slug's notice has next_round"
        problem = _next_round_problem(notice["next_round"])
        if problem is not None:
            return problem
    if not _is_count(notice["card"], 1):
        return "a notice's card must be a position >= 1"
    return _slug_problem(notice["slug"], "a notice's slug")


def _live_problem(live: Any) -> str | None:
    """`{"slug": ..., "next_round"?: ...}`: the slug under way as the findings' round ends."""
    if not isinstance(live, Mapping) or not {"slug"} <= set(live) <= {"slug", "next_round"}:
        return "findings.live must be null or an object of slug (and next_round)"
    if "next_round" in live:
        problem = _next_round_problem(live["next_round"])
        if problem is not None:
            return f"findings.live: {problem}"
    return _slug_problem(live["slug"], "findings.live.slug")


def _slug_problem(slug: Any, named: str) -> str | None:
    if not isinstance(slug, Mapping) or set(slug) != {"length", "this", "previous", "next"}:
        return f"{named} needs exactly length, this, previous, next"
    if not (_is_count(slug["length"], 1) and _is_span(slug["this"]) and _is_span(slug["previous"])):
        return "a slug needs a length >= 1 and its places this [from, to], previous [from, to]"
    following = slug["next"]
    if not isinstance(following, list | tuple) or len(following) > MAX_NEXT_CARDS:
        return f"a slug's next must be a list of at most {MAX_NEXT_CARDS} cards"
    for card in following:
        try:
            parse_card(card)
        except (CardError, TypeError, AttributeError):
            return f"a slug's next names {card!r}: not a card"
    return None


def _next_round_problem(worth: Any) -> str | None:
    """`{"edge": {bet: number} | null, "if_it_goes_on": {bet: number} | null}`."""
    if not isinstance(worth, Mapping) or set(worth) != {"edge", "if_it_goes_on"}:
        return "a slug's next_round needs exactly edge, if_it_goes_on"
    for name in ("edge", "if_it_goes_on"):
        bets = worth[name]
        if bets is None:
            continue
        if not isinstance(bets, Mapping) or not set(bets) <= BET_NAMES:
            return f"next_round.{name} must be null or an object of bets of the pay table"
        if not all(_is_number(value) for value in bets.values()):
            return f"next_round.{name}: each bet's worth must be a number"
    return None


def findings_of(request: Mapping[str, Any]) -> dict[str, Any]:
    """A `shuffle_report` request's findings as the input holds them: `report`, `notices`
    and, while a slug is under way, `live`."""
    findings = {"report": request["report"], "notices": request.get("notices", [])}
    if request.get("live") is not None:
        findings["live"] = request["live"]
    return findings


def findings_problem(item: ShuffleFindings) -> str | None:
    """What makes findings unusable (a text naming the field), or None."""
    if not _is_count(item.shoe, 1) or not _is_count(item.against, 1) or item.against >= item.shoe:
        return "shoe and against must be shoe numbers, against before shoe"
    if not _is_count(item.round) or not _is_count(item.after_seq):
        return "round and after_seq must be whole numbers >= 0"
    findings = item.findings
    if not isinstance(findings, Mapping) or not set(findings) <= {"report", "notices", "live"}:
        return "findings must be an object of report, notices and live"
    if findings.get("live") is not None:
        problem = _live_problem(findings["live"])
        if problem is not None:
            return problem
    problem = _report_problem(findings.get("report"), item.shoe, item.against)
    if problem is not None:
        return problem
    notices = findings.get("notices", [])
    if not isinstance(notices, list | tuple) or len(notices) > MAX_NOTICES:
        return f"findings.notices must be a list of at most {MAX_NOTICES}"
    for notice in notices:
        problem = _notice_problem(notice)
        if problem is not None:
            return f"findings.notices: {problem}"
    return None


def freshness_problem(
    book_number: int, book_open: bool, record: ShuffleRecord, item: ShuffleFindings
) -> str | None:
    """Why findings come too late for the shoe in the book, or None: another shoe, not newer
    than the last ones, or the shoe before's (the book of the next one opens at shoe.ended)
    but for its final findings, once, before the next shoe opens."""
    if item.shoe == book_number - 1 and not book_open and item.final:
        if record.previous is not None:
            return f"shoe {item.shoe}'s final shuffle findings are in already"
        return None
    if item.shoe != book_number or not book_open:
        now = f"shoe {book_number} is open" if book_open else "no shoe is open"
        return f"shuffle findings for shoe {item.shoe}: {now}"
    if item.after_seq <= record.after_seq:
        return (
            f"shuffle findings after seq {item.after_seq} are not newer than the last ones"
            f" (after seq {record.after_seq})"
        )
    return None
