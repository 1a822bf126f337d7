"""Surveillance reports at the table: threshold crossings as events, from the inputs alone
(replay gives the same), refusals, Big/Small closing (R14.1), the shoe's record."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoe_controller.game.payouts import Bet
from shoe_controller.table.config import TableConfig
from shoe_controller.table.edge_watch import history, summary
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import (
    ShoeState,
    ShoeStateChanged,
    SurveillanceReport,
    input_to_json,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"
AT = 1_800_000_000.0
RANKS = "A23456789TJQK"
EDGE, CLEARED = EventType.SURVEILLANCE_EDGE, EventType.SURVEILLANCE_EDGE_CLEARED


def bets(**edges: float) -> dict[str, dict[str, float]]:
    """Every bet at -5 % but those named."""
    out = {}
    for bet in Bet:
        edge = edges.get(bet.value, -0.05)
        out[bet.value] = {"probability": 0.1, "payout": 11.0, "player_edge": edge}
    return out


def report(after: int, round_number: int = 1, threshold: float = 0.0, **edges: float):
    return SurveillanceReport(
        at=AT + after,
        shoe=1,
        round=round_number,
        after_seq=after,
        cards_left=dict.fromkeys(RANKS, 30),
        bets=bets(**edges),
        threshold=threshold,
    )


@pytest.fixture
def table() -> Table:
    table = Table(TableConfig())
    table.apply(ShoeStateChanged(AT, "scanner", ShoeState.LOADED))
    assert table.book.open
    return table


def kinds(events) -> list[tuple[str, str]]:
    return [(event.type, event.data["bet"]) for event in events]


def test_a_bet_rising_above_the_threshold_and_falling_back(table: Table) -> None:
    assert table.apply(report(10)) == []
    risen = table.apply(report(20, 2, player_pair=0.031, tie=0.0))  # 0 is not above 0
    assert kinds(risen) == [(EDGE, "player_pair")]
    data = risen[0].data
    assert (risen[0].round, data["round"], data["player_edge"], data["threshold"]) == (
        None,
        2,
        0.031,
        0.0,
    )
    assert data["cards"] == 13 * 30
    assert data["cards_left"]["K"] == 30
    assert table.apply(report(30, 3, player_pair=0.05)) == []  # still above: no news
    cleared = table.apply(report(40, 4, player_pair=-0.001))
    assert kinds(cleared) == [(CLEARED, "player_pair")]
    assert cleared[0].data | {"cards_left": None} == {
        "bet": "player_pair",
        "player_edge": -0.001,
        "reason": "below_threshold",
        "since_round": 2,
        "largest_edge": 0.05,
        "threshold": 0.0,
        "round": 4,
        "cards": 390,
        "cards_left": None,
    }
    shoe = summary(table.book.surveillance)
    assert shoe["player_pair"]["rounds_favoured"] == 2
    assert shoe["player_pair"]["largest_edge"] == 0.05
    assert shoe["player_pair"]["largest_edge_round"] == 3
    assert shoe["player_pair"]["first_favoured_round"] == 2
    assert shoe["tie"]["rounds_favoured"] == 0
    assert [entry["round"] for entry in history(table.book.surveillance)] == [1, 2, 3, 4]


def test_the_threshold_comes_with_each_report(table: Table) -> None:
    # The house's threshold of the moment: a negative one reports the banker's -1.06 %.
    assert kinds(table.apply(report(10, threshold=-0.02, banker=-0.0106))) == [(EDGE, "banker")]
    assert kinds(table.apply(report(11, threshold=-0.01, banker=-0.0106))) == [(CLEARED, "banker")]


def test_big_and_small_leave_when_closed(table: Table) -> None:
    assert kinds(table.apply(report(10, 20, big=0.01))) == [(EDGE, "big")]
    fields = input_to_json(report(11, 21))
    del fields["type"]
    fields["bets"] = {k: v for k, v in fields["bets"].items() if k not in ("big", "small")}
    events = table.apply(SurveillanceReport(**fields))
    assert kinds(events) == [(CLEARED, "big")]  # R14.1
    assert events[0].data["reason"] == "bet_closed"
    assert events[0].data["player_edge"] is None


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"shoe": 2}, "shoe 1 is open"),
        ({"after_seq": 10}, "not newer"),
        ({"round": 0}, "round"),
        ({"threshold": 1.0}, "threshold"),
        ({"cards_left": {"A": 3}}, "cards_left"),
        ({"cards_left": dict.fromkeys(RANKS, -1)}, "cards_left"),
        ({"bets": {"roulette": bets()["tie"]}}, "unknown bet"),
        ({"bets": {"tie": {"probability": 0.1, "payout": 8.0}}}, "exactly"),
        ({"bets": {"tie": {"probability": 2.0, "payout": 8.0, "player_edge": 0.1}}}, "0 to 1"),
        (
            {"bets": {"tie": {"probability": 0.1, "payout": 8.0, "player_edge": float("nan")}}},
            "finite",
        ),
        ({"bets": {}}, "at least one"),
    ],
)
def test_an_unusable_report_is_refused_and_changes_nothing(
    table: Table, change: dict, text: str
) -> None:
    table.apply(report(10, player_pair=0.2))
    before = table.snapshot()
    fields = {**input_to_json(report(11, player_pair=-0.2)), **change}
    del fields["type"]
    events = table.apply(SurveillanceReport(**fields))
    assert [event.type for event in events] == [EventType.PROCEDURE_ALERT]
    assert events[0].data["code"] == "invalid_input"
    assert text in events[0].data["text"]
    assert table.snapshot() == before


def test_no_report_without_an_open_shoe() -> None:
    table = Table(TableConfig())
    events = table.apply(report(1))
    assert events[0].data["code"] == "invalid_input"
    assert "no shoe is open" in events[0].data["text"]


def test_the_docs_name_both_events_and_their_fields() -> None:
    text = (DOCS / "table.md").read_text(encoding="utf-8")
    for kind in (EDGE, CLEARED):
        assert f"`{kind}`" in text
    assert "(docs/surveillance.md" in text
    study = (DOCS / "surveillance.md").read_text(encoding="utf-8")
    for word in ("surveillance.edge", "surveillance.edge_cleared", "shoectl edge", "report"):
        assert word in study
