"""Surveillance reports at the table: a bet's player edge crossing the threshold, and the shoe's
record of every report (docs/surveillance.md).

The companion (`shoe-controller surveillance`) computes the exact worth of every bet on the
next round and the control socket journals it as a `surveillance_report` input. Here the
table turns it into events, from the inputs alone (replay gives the same events):
`surveillance.edge` when a bet's player edge rises above the report's threshold (strictly),
`surveillance.edge_cleared` when it falls back to it or below, or the bet is no longer
offered (Big and Small after R14.1). The shoe keeps every report (`EdgeWatch`, in
`books.ShoeBook.surveillance`): `shoectl edge` shows the latest with the shoe's history and
summary. Nothing here names a card: reports carry counts by rank of the cards not seen, made
from public identities only (R15).

Pure data and checks: `books` holds the shoe's `EdgeWatch`; edge_reports.py is the input's handler.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.game.payouts import Bet
from shoe_controller.vocab.cards import RANK_LETTERS
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import SurveillanceReport

BET_FIELDS = ("probability", "payout", "player_edge")
BET_ORDER = tuple(bet.value for bet in Bet)
MAX_CARDS_LEFT = 1400  # what odds.py can analyse exactly (26 decks)


@dataclass(slots=True)
class Raised:
    """A bet above the threshold: since which round, and its largest edge meanwhile."""

    since_round: int
    largest_edge: float


@dataclass(slots=True)
class KeptReport:
    """One accepted report, as the shoe keeps it."""

    round: int
    at: str
    after_seq: int
    threshold: float
    cards_left: dict[str, int]
    bets: dict[str, dict[str, float]]

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "at": self.at,
            "after_seq": self.after_seq,
            "threshold": self.threshold,
            "cards_left": dict(self.cards_left),
            "bets": {name: dict(values) for name, values in self.bets.items()},
        }


@dataclass(slots=True)
class EdgeWatch:
    """A shoe's surveillance reports in order, and the bets now above the threshold."""

    reports: list[KeptReport] = field(default_factory=list)
    raised: dict[str, Raised] = field(default_factory=dict)

    @property
    def latest(self) -> KeptReport | None:
        return self.reports[-1] if self.reports else None

    def accept(self, report: SurveillanceReport, at: str) -> list[tuple[EventType, dict[str, Any]]]:
        """Keep a checked report; the events it causes, in bet order (`report_problem` first)."""
        kept = KeptReport(
            round=report.round,
            at=at,
            after_seq=report.after_seq,
            threshold=float(report.threshold),
            cards_left={rank: int(report.cards_left[rank]) for rank in RANK_LETTERS},
            bets={
                name: {key: float(report.bets[name][key]) for key in BET_FIELDS}
                for name in BET_ORDER
                if name in report.bets
            },
        )
        self.reports.append(kept)
        where = {
            "round": kept.round,
            "threshold": kept.threshold,
            "cards": sum(kept.cards_left.values()),
            "cards_left": dict(kept.cards_left),
        }
        events: list[tuple[EventType, dict[str, Any]]] = []
        for name in BET_ORDER:
            values = kept.bets.get(name)
            raised = self.raised.get(name)
            if values is None:
                if raised is not None:  # no longer offered (R14.1)
                    del self.raised[name]
                    events.append(_cleared(name, None, "bet_closed", raised, where))
                continue
            edge = values["player_edge"]
            if edge > kept.threshold:
                if raised is None:
                    self.raised[name] = Raised(kept.round, edge)
                    events.append((EventType.SURVEILLANCE_EDGE, {"bet": name, **values, **where}))
                else:
                    raised.largest_edge = max(raised.largest_edge, edge)
            elif raised is not None:
                del self.raised[name]
                events.append(_cleared(name, edge, "below_threshold", raised, where))
        return events


def _cleared(
    name: str, edge: float | None, reason: str, raised: Raised, where: Mapping[str, Any]
) -> tuple[EventType, dict[str, Any]]:
    data = {
        "bet": name,
        "player_edge": edge,
        "reason": reason,
        "since_round": raised.since_round,
        "largest_edge": raised.largest_edge,
        **where,
    }
    return EventType.SURVEILLANCE_EDGE_CLEARED, data


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def report_problem(report: SurveillanceReport) -> str | None:
    """What makes a report unusable (a text naming the field), or None."""
    for name in ("shoe", "after_seq"):
        if not _is_count(getattr(report, name)):
            return f"{name} must be a whole number >= 0"
    if not _is_count(report.round) or report.round < 1:
        return "round must be a whole number >= 1"
    if not _is_number(report.threshold) or not -1 < report.threshold < 1:
        return "threshold must be a number above -1 and below 1"
    cards = report.cards_left
    if not isinstance(cards, Mapping) or set(cards) != set(RANK_LETTERS):
        return f"cards_left must count each rank {' '.join(RANK_LETTERS)}"
    if not all(_is_count(cards[rank]) for rank in RANK_LETTERS):
        return "cards_left must be whole numbers >= 0"
    if sum(cards.values()) > MAX_CARDS_LEFT:
        return f"cards_left counts more than {MAX_CARDS_LEFT} cards"
    bets = report.bets
    if not isinstance(bets, Mapping) or not bets:
        return "bets must name at least one bet"
    unknown = sorted(str(name) for name in bets if name not in BET_ORDER)
    if unknown:
        return f"unknown bet(s) {unknown}; bets are {', '.join(BET_ORDER)}"
    for name, values in bets.items():
        if not isinstance(values, Mapping) or set(values) != set(BET_FIELDS):
            return f"bets.{name} must have exactly {', '.join(BET_FIELDS)}"
        if not all(_is_number(values[key]) for key in BET_FIELDS):
            return f"bets.{name}: {', '.join(BET_FIELDS)} must be finite numbers"
        if not 0 <= values["probability"] <= 1:
            return f"bets.{name}.probability must be from 0 to 1"
        if values["payout"] < 0 or values["player_edge"] < -1:
            return f"bets.{name}: payout must be >= 0 and player_edge >= -1"
    return None


def wrong_shoe(book_number: int, book_open: bool, report: SurveillanceReport) -> str | None:
    """Why a report is not for the shoe in the book (another shoe, or none open), or None."""
    if book_open and report.shoe == book_number:
        return None
    where = f"shoe {book_number} is open" if book_open else "no shoe is open"
    return f"surveillance report for shoe {report.shoe}: {where}"


def not_newer(watch: EdgeWatch, report: SurveillanceReport) -> str | None:
    """Why a report is not newer than the shoe's last one, or None."""
    latest = watch.latest
    if latest is None or report.after_seq > latest.after_seq:
        return None
    return (
        f"surveillance report after seq {report.after_seq} is not newer than the last"
        f" one (after seq {latest.after_seq})"
    )


def freshness_problem(
    book_number: int, book_open: bool, watch: EdgeWatch, report: SurveillanceReport
) -> str | None:
    """Why a report comes too late for the shoe in the book, or None: another shoe, or not
    newer than the last one (a companion catching up sends such reports)."""
    return wrong_shoe(book_number, book_open, report) or not_newer(watch, report)


def summary(watch: EdgeWatch) -> dict[str, dict[str, Any]]:
    """Per bet, over the shoe's rounds (the last report of each round counts): in how many
    the player was favoured (edge > 0) and above the threshold, the first such round, and
    the largest edge with its round."""
    by_round: dict[int, KeptReport] = {}
    for report in watch.reports:
        by_round[report.round] = report
    out: dict[str, dict[str, Any]] = {}
    for name in BET_ORDER:
        rows = [
            (number, report.bets[name]["player_edge"], report.threshold)
            for number, report in sorted(by_round.items())
            if name in report.bets
        ]
        if not rows:
            continue
        favoured = [number for number, edge, _ in rows if edge > 0]
        best_round, best, _ = max(rows, key=lambda row: (row[1], -row[0]))
        out[name] = {
            "rounds": len(rows),
            "rounds_favoured": len(favoured),
            "rounds_above_threshold": sum(edge > limit for _, edge, limit in rows),
            "first_favoured_round": favoured[0] if favoured else None,
            "largest_edge": best,
            "largest_edge_round": best_round,
        }
    return out


def history(watch: EdgeWatch) -> list[dict[str, Any]]:
    """How the edges moved over the shoe: per report its round, cards left and edges."""
    return [
        {
            "round": report.round,
            "after_seq": report.after_seq,
            "cards": sum(report.cards_left.values()),
            "player_edge": {name: values["player_edge"] for name, values in report.bets.items()},
        }
        for report in watch.reports
    ]
