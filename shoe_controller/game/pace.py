"""A table's pace from its journaled events: rounds an hour, round times, the wait from bets
closed to the first card, the downtime between shoes, holds and how long each took, by hour
and by dealer (`shoectl pace`, `shoe-controller report`, the metrics).

Pure: events in (the journal's JSON form, in seq order), figures out; no clock, no I/O, the
zone the hours are counted in is given. Only the events' own times are used, so it works on
every table; a table that keeps the round's clock (docs/table.md "Betting") adds when the bets
closed and names its dealers. What is counted (docs/pace.md):
- a round is a real round with a result; trial rounds (R2.3) and voided rounds are counted
  apart; each belongs to the hour, the window and the dealer of its `round.started`;
- a round's time: its first card (`first_card_at`, else `round.started`) to its result;
- a shoe's downtime: the shoe before's `shoe.ended` to this shoe's first `round.started`;
- a hold: an alert of a hold code, until the supervisor's next action that ends holds (or the
  shoe's end);
- the dealer in charge: from `supervisor.action dealer` signed in until signed out or
  another dealer signs in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

HOUR = timedelta(hours=1)
# The actions that end a hold (books.WAYS_OUT's, all kinds): a hold lasts until the next one.
ENDING_ACTIONS = frozenset(
    {"resume", "confirm", "discard", "missed", "void", "accept", "change_shoe"}
)


def instant(at: str) -> datetime:
    """An event's time (the journal's ISO form, UTC) as an aware datetime."""
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


@dataclass
class RoundTimes:
    shoe: int
    round: int
    started: datetime
    first_card: datetime
    trial: bool = False
    bets_closed: datetime | None = None
    ended: datetime | None = None
    outcome: str | None = None  # "result", "voided"
    dealer: str | None = None
    server_round: str | None = None

    @property
    def seconds(self) -> float | None:
        """First card to result; None for a round without a result."""
        if self.outcome != "result" or self.ended is None:
            return None
        return (self.ended - self.first_card).total_seconds()

    @property
    def wait(self) -> float | None:
        """Bets closed to the first card (a table with betting)."""
        if self.bets_closed is None:
            return None
        return (self.first_card - self.bets_closed).total_seconds()

    @property
    def counted(self) -> bool:
        return self.outcome == "result" and not self.trial


@dataclass
class ShoeTimes:
    shoe: int
    first_round: datetime | None = None
    ended: datetime | None = None
    reason: str | None = None
    downtime: float | None = None  # the shoe before's end to this shoe's first round


@dataclass
class HoldTimes:
    code: str
    shoe: int | None
    since: datetime
    until: datetime | None = None
    ended_by: str | None = None

    @property
    def seconds(self) -> float | None:
        return None if self.until is None else (self.until - self.since).total_seconds()


@dataclass
class Shift:
    """What the events tell, each thing once: rounds, shoes, holds, dealers in charge."""

    rounds: list[RoundTimes] = field(default_factory=list)
    shoes: dict[int, ShoeTimes] = field(default_factory=dict)
    holds: list[HoldTimes] = field(default_factory=list)
    dealers: list[tuple[str, datetime, datetime | None]] = field(default_factory=list)
    last_at: datetime | None = None


def read_shift(events: Iterable[Mapping[str, Any]], hold_codes: Iterable[str]) -> Shift:
    """One pass over the events (seq order); `hold_codes`: the alert codes that hold the table
    (table.alerts.ALERT_CODES whose meaning starts with "hold" or "security hold")."""
    reader = _Reader(frozenset(hold_codes))
    for event in events:
        reader.feed(event)
    return reader.shift


class _Reader:
    def __init__(self, hold_codes: frozenset[str]) -> None:
        self.shift = Shift()
        self._hold_codes = hold_codes
        self._open: dict[tuple[int, int], RoundTimes] = {}
        self._dealer: str | None = None
        self._last_end: datetime | None = None  # the last shoe.ended seen

    def feed(self, event: Mapping[str, Any]) -> None:
        kind, data, at = event["type"], event.get("data") or {}, instant(event["at"])
        shoe, number = event.get("shoe"), event.get("round")
        self.shift.last_at = at
        if kind == "round.started" and shoe is not None and number is not None:
            self._started(shoe, number, at, data)
        elif kind in ("round.result", "round.voided") and (shoe, number) in self._open:
            times = self._open.pop((shoe, number))
            times.ended, times.outcome = at, "result" if kind == "round.result" else "voided"
        elif kind == "shoe.ended" and shoe is not None:
            record = self.shift.shoes.setdefault(shoe, ShoeTimes(shoe))
            record.ended, record.reason = at, data.get("reason")
            self._last_end = at
            self._end_holds(at, "shoe.ended", shoe)
        elif kind == "supervisor.action":
            self._action(data, at, shoe)
        elif kind in ("procedure.alert", "security.alert"):
            code = data.get("code")
            if code in self._hold_codes and (
                kind == "security.alert" or data.get("needs_supervisor")
            ):
                self.shift.holds.append(HoldTimes(code, shoe, at))

    def _started(self, shoe: int, number: int, at: datetime, data: Mapping[str, Any]) -> None:
        first = data.get("first_card_at")
        closed = data.get("bets_closed_at")
        times = RoundTimes(
            shoe,
            number,
            at,
            instant(first) if first else at,
            trial=bool(data.get("trial")),
            bets_closed=instant(closed) if closed else None,
            dealer=self._dealer,
            server_round=data.get("server_round"),
        )
        self._open[(shoe, number)] = times
        self.shift.rounds.append(times)
        record = self.shift.shoes.setdefault(shoe, ShoeTimes(shoe))
        if record.first_round is None:
            record.first_round = at
            if self._last_end is not None and self._last_end <= at:
                record.downtime = (at - self._last_end).total_seconds()

    def _action(self, data: Mapping[str, Any], at: datetime, shoe: int | None) -> None:
        action = data.get("action")
        if action == "dealer":
            details = data.get("details") or {}
            self._change_dealer(
                details.get("dealer") if details.get("signed") == "in" else None, at
            )
        elif action in ENDING_ACTIONS:
            self._end_holds(at, str(action), shoe)

    def _change_dealer(self, dealer: str | None, at: datetime) -> None:
        dealers = self.shift.dealers
        if dealers and dealers[-1][2] is None:
            name, since, _ = dealers[-1]
            dealers[-1] = (name, since, at)
        self._dealer = dealer
        if dealer is not None:
            dealers.append((dealer, at, None))

    def _end_holds(self, at: datetime, by: str, shoe: int | None) -> None:
        for hold in self.shift.holds:
            if hold.until is None and (shoe is None or hold.shoe in (None, shoe)):
                hold.until, hold.ended_by = at, by


# ------------------------------------------------------------------ figures


def percentile(values: Iterable[float], share: float) -> float | None:
    """The `share` (0-1) quantile, linear between the closest ranks; None without values."""
    ordered = sorted(values)
    if not ordered:
        return None
    place = share * (len(ordered) - 1)
    low = math.floor(place)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (place - low)


def _figures(rounds: list[RoundTimes], hours: float) -> dict[str, Any]:
    counted = [r for r in rounds if r.counted]
    seconds = [s for r in counted if (s := r.seconds) is not None]
    waits = [w for r in counted if (w := r.wait) is not None]
    return {
        "rounds": len(counted),
        "rounds_per_hour": round(len(counted) / hours, 2) if hours > 0 else None,
        "hours": round(hours, 3),
        "round_seconds_p50": _rounded(percentile(seconds, 0.5)),
        "round_seconds_p90": _rounded(percentile(seconds, 0.9)),
        "bets_closed_to_first_card_p50": _rounded(percentile(waits, 0.5)),
        "bets_closed_to_first_card_p90": _rounded(percentile(waits, 0.9)),
        "voided": sum(1 for r in rounds if r.outcome == "voided"),
        "trial": sum(1 for r in rounds if r.trial and r.outcome == "result"),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _within(rounds: list[RoundTimes], start: datetime, end: datetime) -> list[RoundTimes]:
    return [r for r in rounds if start <= r.started < end]


def dealer_hours(shift: Shift, start: datetime, end: datetime) -> dict[str, float]:
    """Each dealer's time in charge within [start, end), in hours."""
    hours: dict[str, float] = {}
    for name, since, until in shift.dealers:
        overlap = min(until or end, end) - max(since, start)
        if overlap > timedelta(0):
            hours[name] = hours.get(name, 0.0) + overlap / HOUR
    return hours


def played_since(rounds: list[RoundTimes], start: datetime) -> datetime:
    """When play began within a stretch from `start`: its first round's start, or `start`
    itself when that round's shoe was already being dealt before it. The rates of
    `shoectl pace` are over the time from then, not over the hours before the first card."""
    before = [r for r in rounds if r.started < start]
    after = [r for r in rounds if r.started >= start]
    if not after:
        return start
    first = min(after, key=lambda r: r.started)
    if before and max(before, key=lambda r: r.started).shoe == first.shoe:
        return start
    return first.started


def pace(shift: Shift, start: datetime, end: datetime) -> dict[str, Any]:
    """`shoectl pace`: the last hour and the shift [start, end), the table and each dealer;
    the table's rates over the time since play began in each (`played_since`)."""
    shift_rounds = _within(shift.rounds, start, end)
    hour_start = max(start, end - HOUR)
    before = [r for r in shift.rounds if r.started < end]
    played = played_since(before, start)
    hour_played = played_since(before, hour_start)
    shoes = [s for s in shift.shoes.values() if s.first_round and start <= s.first_round < end]
    dealers = {
        name: {
            **_figures([r for r in shift_rounds if r.dealer == name], hours),
            "hours": round(hours, 3),
        }
        for name, hours in dealer_hours(shift, start, end).items()
    }
    return {
        "since": start,
        "until_at": end,
        "last_hour": {
            **_figures(_within(shift.rounds, hour_start, end), (end - hour_played) / HOUR),
            "since": hour_start,
            "played_since": hour_played,
        },
        "shift": {
            **_figures(shift_rounds, (end - played) / HOUR),
            "since": start,
            "played_since": played,
        },
        "shoes": [
            {
                "shoe": s.shoe,
                "first_round_at": s.first_round,
                "ended_at": s.ended,
                "downtime_seconds": _rounded(s.downtime),
            }
            for s in sorted(shoes, key=lambda s: s.shoe)
        ],
        "dealers": dealers,
    }


def report(
    shift: Shift, start: datetime, end: datetime, zone: tzinfo | None
) -> list[dict[str, Any]]:
    """`shoe-controller report`: one row per hour (in `zone`; None: this machine's) and one
    per dealer, then the whole stretch: rounds, pace, voids, misdeals, shoes, holds."""
    rows = []
    hour = start.astimezone(zone).replace(minute=0, second=0, microsecond=0)
    while hour < end:
        since, until = max(hour, start), min(hour + HOUR, end)
        rows.append(_row("hour", hour.isoformat(), shift, since, until, keep=bool))
        hour += HOUR
    for name, hours in sorted(dealer_hours(shift, start, end).items()):
        row = _row("dealer", name, shift, start, end, keep=lambda r, n=name: r.dealer == n)
        row["rounds_per_hour"] = round(row["rounds"] / hours, 2) if hours > 0 else None
        row["hours"] = round(hours, 3)
        rows.append(row)
    rows.append(_row("total", "", shift, start, end, keep=bool))
    return rows


def _row(
    kind: str, name: str, shift: Shift, start: datetime, end: datetime, *, keep: Any
) -> dict[str, Any]:
    rounds = [r for r in _within(shift.rounds, start, end) if keep(r)]
    row = {"kind": kind, "name": name, **_figures(rounds, (end - start) / HOUR)}
    if kind == "dealer":  # holds, shoes and downtime are the table's, not a dealer's
        return row
    ended = [s for s in shift.shoes.values() if s.ended and start <= s.ended < end]
    downtimes = [
        s.downtime
        for s in shift.shoes.values()
        if s.downtime is not None and s.first_round and start <= s.first_round < end
    ]
    return {
        **row,
        "shoes_ended": len(ended),
        "misdeals": sum(1 for s in ended if s.reason == "misdeal"),
        "downtime_seconds": _rounded(sum(downtimes)),
        "holds": _holds([h for h in shift.holds if start <= h.since < end]),
    }


def _holds(holds: list[HoldTimes]) -> dict[str, dict[str, Any]]:
    """By code: how many, how long until the supervisor's action (p50, max), still standing."""
    by_code: dict[str, list[HoldTimes]] = {}
    for hold in holds:
        by_code.setdefault(hold.code, []).append(hold)
    summary = {}
    for code, found in sorted(by_code.items()):
        seconds = [s for hold in found if (s := hold.seconds) is not None]
        summary[code] = {
            "count": len(found),
            "resolve_seconds_p50": _rounded(percentile(seconds, 0.5)),
            "resolve_seconds_max": _rounded(max(seconds)) if seconds else None,
            "unresolved": len(found) - len(seconds),
        }
    return summary


def plain_json(value: Any) -> Any:
    """Figures as JSON takes them, times in the journal's ISO form (UTC), as the daemon's
    answers are (`shoectl pace --json`, `shoe-controller report --format json`)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, dict):
        return {key: plain_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_json(item) for item in value]
    return value
