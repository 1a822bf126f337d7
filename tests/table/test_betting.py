"""The betting clock (issue 29, table/betting.py): bets closed by the dealer's button or the
table server, a card before its time (R17, R10.1), the round's clock in the events, and the
recovery contract with betting inputs in the shoe."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.table import PUSH_API_FIELDS, Driver, shuffled_shoe, types_of

from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import (
    BetsState,
    BettingChanged,
    Button,
    ButtonPressed,
    CardDrawn,
    ControllerStarted,
)

# What the round's clock adds to PUSH_API.md's fields (docs/table.md "Betting").
CLOCK_FIELDS = {
    "round.started": {"bets_closed_at", "first_card_at", "server_round"},
    "round.result": {
        "bets_closed_at",
        "first_card_at",
        "last_card_at",
        "result_at",
        "server_round",
    },
    "round.voided": {"server_round"},
    "shoe.ended": {"opened_at", "first_round_at", "dealing_seconds"},
}
DOWNTIME_FIELDS = {"previous_shoe", "since", "opened_at", "until", "seconds", "shuffle_seconds"}
BETS_FIELDS = {"round", "server_round", "by", "source"}


def _no_more_bets(driver: Driver) -> list[Event]:
    return driver.apply(ButtonPressed(driver.at(), "scanner", Button.NO_MORE_BETS))


def _server(driver: Driver, state: str, shoe: int, number: int, nonce: str) -> list[Event]:
    return driver.apply(
        BettingChanged(driver.at(), BetsState(state), shoe, number, f"G-{number}", nonce, "srv")
    )


def _replayed(driver: Driver, config: TableConfig) -> Table:
    """A fresh table given the journal's inputs of the open shoe (the recovery contract)."""
    shoe = min(shoe for shoe, _ in driver.inputs if shoe >= driver.table.shoe)
    table = Table(config, last_shoe=shoe - 1)
    for belongs, item in driver.inputs:
        if belongs >= shoe:
            table.apply(item)
    return table


def test_a_restart_between_bets_closed_and_the_first_card_deals_the_round() -> None:
    config = TableConfig(betting="server", insurance=False)
    driver = Driver(config)
    driver.open_shoe()
    _server(driver, "closed", 1, 1, "n1")
    replayed = _replayed(driver, config)
    assert replayed.snapshot() == driver.table.snapshot()
    assert replayed.indicator == (5, 1)  # deal P1: the bets are closed
    replayed.apply(ControllerStarted(driver.at(), "0.1.0", 2, True))
    again = BettingChanged(driver.at(), BetsState.CLOSED, 1, 1, "G-1", "n1", "srv")
    assert [event.data["code"] for event in replayed.apply(again)] == ["repeated_message"]
    started = replayed.apply(CardDrawn(driver.at(), "scanner", parse_card("9H")))
    assert types_of(started) == ["round.started", "card.dealt"]
    assert started[0].data["bets_closed_at"] == "2027-01-15T08:00:04.000000Z"
    assert started[0].data["server_round"] == "G-1"


def test_a_replayed_shoe_gives_the_same_events_and_state() -> None:
    config = TableConfig(betting="server", early_card="hold", insurance=False)
    driver = Driver(config)
    live: list[Event] = []
    live += driver.load() + driver.deal("AS 4C")
    live += _server(driver, "open", 1, 1, "n1")
    live += driver.card("9H")  # early: held
    live += _server(driver, "closed", 1, 1, "n2")  # late
    live += driver.sup("accept", reason="seen on the video")
    live += driver.deal("2C KD 5S")
    live += _server(driver, "closed", 1, 2, "n3") + _server(driver, "closed", 1, 2, "n3")
    table = Table(config)
    again = [event for _, item in driver.inputs for event in table.apply(item)]
    assert again == live
    assert table.snapshot() == driver.table.snapshot()
    assert "bets_closed_late" in [event.data.get("code") for event in live]
    assert live[-1].data["code"] == "repeated_message"


@pytest.mark.parametrize(
    ("betting", "close"),
    [("button", _no_more_bets), ("server", lambda d: _server(d, "closed", 1, 2, "x"))],
)
def test_the_indicator_shows_bets_open_then_deal(betting: str, close: object) -> None:
    driver = Driver(TableConfig(betting=betting, insurance=False))
    driver.load()
    assert driver.table.indicator == (2, 1)  # the burn comes first
    driver.deal("AS 4C")
    assert driver.table.indicator == (7, 0)
    if betting == "button":
        _no_more_bets(driver)
    else:
        _server(driver, "closed", 1, 1, "c1")
    assert driver.table.indicator == (5, 1)
    assert driver.table.view()["betting"]["closed"] is True
    driver.deal("9H 2C KD 5S")
    assert driver.table.indicator == (7, 0)  # round 2's bets are open
    view = driver.table.view()["betting"]
    assert view == {
        "by": betting,
        "round": 2,
        "closed": False,
        "opened_at": None,
        "closed_at": None,
        "server_round": None,
    }
    close(driver)  # type: ignore[operator]
    assert driver.table.indicator == (5, 1)


def test_a_table_without_betting_shows_what_it_showed_and_refuses_the_new_inputs() -> None:
    driver = Driver(TableConfig(insurance=False))
    driver.open_shoe()
    assert driver.table.indicator == (1, 0)
    assert driver.table.view()["betting"] is None
    for events in (_no_more_bets(driver), _server(driver, "closed", 1, 1, "n")):
        assert [event.data["code"] for event in events] == ["betting_off"]
    for action in ("accept", "dealer"):
        (refusal,) = driver.sup(action, id="D1") if action == "dealer" else driver.sup(action)
        assert "keeps no round clock" in refusal.data["text"]
    (unknown,) = driver.sup("bogus")
    assert "accept" not in unknown.data["text"]
    assert "dealer" not in unknown.data["text"]
    events = driver.deal("9H 2C KD 5S")
    assert set(events[0].data) == PUSH_API_FIELDS["round.started"]
    assert set(events[-1].data) == PUSH_API_FIELDS["round.result"]


def test_a_clock_without_betting_times_the_rounds_and_takes_dealers() -> None:
    driver = Driver(TableConfig(clock=True, insurance=False))
    driver.open_shoe()
    assert driver.table.indicator == (1, 0)  # no bets to wait for
    (signed,) = driver.sup("dealer", id="D-07")
    assert signed.data["details"] == {"dealer": "D-07", "signed": "in"}
    (out,) = driver.sup("dealer", out=True)
    assert out.data["details"] == {"dealer": None, "signed": "out"}
    (refused,) = driver.sup("dealer")
    assert "give the dealer's id" in refused.data["text"]
    (bad,) = driver.sup("dealer", id="two words")
    assert bad.data["code"] == "command_refused"
    assert "letters, digits" in bad.data["text"]
    events = driver.deal("9H 2C KD 5S")
    assert types_of(events)[0] == "round.started"  # not early: this table takes no bets
    assert events[0].data["bets_closed_at"] is None
    result = events[-1].data
    assert result["first_card_at"] == "2027-01-15T08:00:08.000000Z"  # 9H, the 8th input
    assert result["last_card_at"] == result["result_at"] == "2027-01-15T08:00:11.000000Z"


def test_an_early_squeezed_card_is_not_named() -> None:
    driver = Driver(TableConfig(betting="button", squeeze=True, insurance=False))
    driver.open_shoe()
    events = driver.card("QH")
    assert types_of(events) == ["round.started", "card.dealt", "procedure.alert"]
    assert events[1].data["card"] is None
    assert "QH" not in events[2].data["text"]
    assert "card #3" in events[2].data["text"]


def test_the_server_may_close_the_next_round_while_one_is_dealt() -> None:
    driver = Driver(TableConfig(betting="server", insurance=False))
    driver.open_shoe()
    _server(driver, "closed", 1, 1, "a")
    driver.deal("2S 4D")
    (closed,) = _server(driver, "closed", 1, 2, "b")
    assert closed.round == 1  # said during round 1 ...
    assert closed.data["round"] == 2  # ... about round 2
    driver.deal("3C 5H")
    events = driver.deal("9H 2C KD 5S")
    assert "procedure.alert" not in types_of(events)  # round 2 was closed in time


def _check_clocked_event(event: Event) -> None:
    kind = str(event.type)
    if kind in ("bets.opened", "bets.closed"):
        assert set(event.data) == BETS_FIELDS
    elif kind == "shoe.downtime":
        assert set(event.data) == DOWNTIME_FIELDS
    else:
        assert set(event.data) == PUSH_API_FIELDS[kind] | CLOCK_FIELDS.get(kind, set()), event
    json.dumps(event.to_json())
    if event.type == EventType.PROCEDURE_ALERT:
        assert event.data["code"] not in ("early_card", "internal_error"), event.data


@settings(max_examples=12, deadline=None)
@given(
    betting=st.sampled_from(["button", "server"]),
    seed=st.integers(0, 2**32 - 1),
    squeeze=st.booleans(),
    trials=st.integers(0, 2),
)
def test_a_shoe_dealt_with_its_bets_closed_in_time_gives_the_rules_outcomes(
    betting: str, seed: int, squeeze: bool, trials: int
) -> None:
    config = TableConfig(betting=betting, squeeze=squeeze)
    cards = shuffled_shoe(config.decks, seed)
    shoe = deal_shoe(cards, config, cut_after=random.Random(seed).randint(300, 380),
                     trial_rounds=trials)  # fmt: skip
    table = Table(config)
    results = []
    for item in shoe.inputs:
        for event in table.apply(item):
            _check_clocked_event(event)
            if event.type == EventType.ROUND_RESULT:
                results.append(event)
                assert event.data["first_card_at"] <= event.data["last_card_at"]
                assert event.data["last_card_at"] <= event.data["result_at"]
                real = event.data["bets_closed_at"] is not None
                assert real != (len(results) <= trials)  # trial rounds take no bets
                named = event.data["server_round"] is not None
                assert named == (real and betting == "server")
    assert [event.data["winner"] for event in results] == [
        outcome.winner.value for outcome in shoe.outcomes
    ]


def test_the_next_shoes_inputs_alone_give_its_downtime() -> None:
    config = TableConfig(clock=True, insurance=False)
    driver = Driver(config)
    driver.open_shoe()
    driver.deal("9H 2C KD 5S")
    driver.clock += 600
    (*_, ended) = driver.sup("change_shoe")
    assert ended.type == EventType.SHOE_ENDED
    assert ended.data["dealing_seconds"] == 604.0  # the first card (9H) to the change
    belongs, carried = driver.inputs[-1]
    assert (belongs, type(carried).__name__, carried.at) == (2, "PreviousShoe", driver.clock)
    driver.clock += 300
    live = driver.load() + driver.deal("AS 4C 9H 2C KD 5S")
    (downtime,) = [event for event in live if event.type == EventType.SHOE_DOWNTIME]
    assert downtime.data["seconds"] == 304.0  # the end to the next shoe's first round
    assert downtime.data["shuffle_seconds"] == 301.0  # the end to SHOE loaded
    assert types_of(live).index("shoe.downtime") + 1 == types_of(live).index("round.started")
    fresh = Table(config, last_shoe=1)  # what recovery does: shoe 2's inputs only
    again = [event for shoe, item in driver.inputs if shoe == 2 for event in fresh.apply(item)]
    assert again == live
    assert fresh.snapshot() == driver.table.snapshot()
    # Without the clock, nothing is carried and the events are PUSH_API.md's.
    plain = Driver(TableConfig(insurance=False))
    plain.open_shoe()
    plain.sup("change_shoe")
    assert [type(item).__name__ for _, item in plain.inputs][-1] == "SupervisorCommand"


@settings(max_examples=30, deadline=None)
@given(
    steps=st.lists(
        st.sampled_from(["card", "card", "card", "bets", "accept", "void", "restart"]),
        min_size=10,
        max_size=80,
    ),
    early_card=st.sampled_from(["hold", "void"]),
    seed=st.integers(0, 2**16),
)
def test_cards_and_bets_in_any_order_never_break_the_table(
    steps: list[str], early_card: str, seed: int
) -> None:
    config = TableConfig(betting="button", early_card=early_card, insurance=False)
    driver = Driver(config)
    driver.open_shoe()
    cards = iter(shuffled_shoe(8, seed)[2:])
    for step in steps:
        if step == "card":
            events = driver.card(str(next(cards)))
        elif step == "bets":
            events = _no_more_bets(driver)
        elif step == "restart":
            replayed = _replayed(driver, config)
            assert replayed.snapshot() == driver.table.snapshot()
            continue
        else:
            events = driver.sup(step)
        for event in events:
            if event.type == EventType.PROCEDURE_ALERT:
                assert event.data["code"] != "internal_error", event.data["text"]
            elif event.type not in (EventType.SUPERVISOR_ACTION, EventType.SECURITY_ALERT):
                _check_clocked_event(event)
        holds = [hold["code"] for hold in driver.table.view()["holds"]]
        assert holds in ([], ["early_card"])  # nothing else holds a correctly read shoe
        if early_card == "void":
            assert holds == []  # the studio's rule: never a supervisor asked
        if holds:
            assert driver.table.indicator == (3, 0)
