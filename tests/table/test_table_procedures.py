"""The table's procedures one by one: what each input does, and what it must leave alone."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.scenario import render_event
from shoe_testkit.table import (
    PUSH_API_FIELDS,
    ClockedTable,
    factory_order_false_alarms,
    only,
    shuffled_shoe,
    types_of,
)

from shoe_controller.game.rules import outcome
from shoe_controller.table.action_registry import HANDLERS
from shoe_controller.table.action_specs import ACTIONS
from shoe_controller.table.alerts import ALERT_CODES
from shoe_controller.table.books import FactoryRun
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import INPUT_HANDLERS, Table
from shoe_controller.vocab.cards import Card, Suit, parse_card
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import (
    INPUT_TYPES,
    ButtonPressed,
    CardDrawn,
    CardsMissed,
    ControllerStarted,
    CutCardSeen,
    DeviceFault,
    DeviceFaultCleared,
    ShoeState,
    ShoeStateChanged,
    ShuffleDone,
    ShuffleStarted,
    SupervisorCommand,
)

NO_INSURANCE = TableConfig(insurance=False)


# ---------------------------------------------------------------- the contract of apply


def test_a_refused_input_changes_nothing_and_says_why() -> None:
    driver = ClockedTable()
    driver.open_shoe()
    driver.deal("2S 4D")
    before = driver.table.snapshot()
    refusals = [
        ShoeStateChanged(driver.at(), "scanner", ShoeState.LOADED),  # a shoe is open
        SupervisorCommand(driver.at(), "reveal", "sup7", "no squeeze", {}),
        SupervisorCommand(driver.at(), "trial", "sup7", "late", {"rounds": 1}),
        SupervisorCommand(driver.at(), "correct", "sup7", "bad", {"position": "B3", "card": "QH"}),
        SupervisorCommand(driver.at(), "confirm", "sup7", "nothing held", {}),
        SupervisorCommand(driver.at(), "close_insurance", "sup7", "no window", {}),
        CardsMissed(driver.at(), "scanner", 0),
        CardDrawn(float("nan"), "scanner", parse_card("QH")),
    ]
    for item in refusals:
        events = driver.table.apply(item)
        assert len(events) == 1, events
        assert events[0].type == EventType.PROCEDURE_ALERT
        assert events[0].data["code"] in ALERT_CODES
        assert driver.table.snapshot() == before


def test_apply_never_raises_on_objects_that_are_no_input() -> None:
    table = Table(TableConfig())
    for thing in (object(), None, "card QH", {"type": "card"}):
        events = table.apply(thing)  # type: ignore[arg-type]
        assert [event.data["code"] for event in events] == ["unknown_input"]


def test_a_refused_command_yields_exactly_one_command_refused_alert() -> None:
    driver = ClockedTable()
    cases: list[dict[str, Any]] = [
        {"action": "bogus"},
        {"action": "void", "by": ""},
        {"action": "void", "reason": " "},
        {"action": "trial", "args": {"rounds": 4}},
        {"action": "trial", "args": {"round": 1}},
        {"action": "correct", "args": {"position": "P7", "card": "QH"}},
        {"action": "correct", "args": {"position": "P1"}},
        {"action": "change_shoe", "args": {"misdeal": "yes"}},
        {"action": "void"},
    ]
    for case in cases:
        command = SupervisorCommand(
            driver.at(), case["action"], case.get("by", "sup7"), case.get("reason", "why"),
            case.get("args", {}),
        )  # fmt: skip
        events = driver.table.apply(command)
        assert types_of(events) == ["procedure.alert"], case
        assert events[0].data["code"] == "command_refused"
        assert events[0].data["needs_supervisor"] is False
        assert events[0].data["text"], case


def test_an_accepted_command_starts_with_supervisor_action() -> None:
    driver = ClockedTable()
    events = driver.sup("start_shoe", by="sup9", reason="shoe report lost")
    assert events[0].type == EventType.SUPERVISOR_ACTION
    assert events[0].data == {
        "action": "start_shoe", "by": "sup9", "reason": "shoe report lost",
        "details": {"shoe": 1},
    }  # fmt: skip
    assert driver.table.state == "burning"


def test_every_event_has_exactly_the_push_api_fields() -> None:
    driver = ClockedTable(TableConfig(squeeze=True))
    events = driver.load() + driver.deal("AS 4C 2S KD 3C 2H") + driver.reveal()
    events += driver.card("7C") + driver.reveal() + driver.card("6D") + driver.reveal()
    assert len(events) > 10
    for event in events:
        assert set(event.data) == PUSH_API_FIELDS[str(event.type)], event
        json.dumps(event.to_json())


def test_events_carry_the_input_time() -> None:
    driver = ClockedTable()
    events = driver.table.apply(ShoeStateChanged(1_800_000_000.5, "scanner", ShoeState.LOADED))
    assert events[0].at == "2027-01-15T08:00:00.500000Z"


# ---------------------------------------------------------------- rounds and the shoe


def test_a_perfect_shoe_gives_the_rules_engines_outcomes() -> None:
    cards = shuffled_shoe(8, seed=11)
    dealt = deal_shoe(cards, TableConfig(), cut_after=400)
    table = Table(TableConfig())
    events = [event for item in dealt.inputs for event in table.apply(item)]
    results = [event.data for event in only(events, EventType.ROUND_RESULT)]
    assert results == [result.result_data() for result in dealt.outcomes]
    assert len(results) > 60
    assert only(events, EventType.PROCEDURE_ALERT) == []
    ended = only(events, EventType.SHOE_ENDED)
    assert [event.data["reason"] for event in ended] == ["cut_card"]
    assert ended[0].data["cards_dealt"] == dealt.cards_drawn
    assert table.shoe == 2


def test_big_and_small_close_after_round_20() -> None:
    driver = ClockedTable(NO_INSURANCE)
    driver.open_shoe()
    opened = []
    for index in range(22):
        suit = "SHDC"[index % 4]  # no card more often than the decks hold
        round_cards = " ".join(rank + suit for rank in ("9", "2", "K", "5"))
        started = only(driver.deal(round_cards), EventType.ROUND_STARTED)
        opened.append(started[0].data["big_small_open"])
    assert opened == [True] * 20 + [False, False]  # R14.1


def test_a_shuffler_dealer_keeps_big_and_small_open() -> None:
    driver = ClockedTable(TableConfig(mode="shuffler_dealer", insurance=False))
    driver.apply(ShuffleDone(driver.at(), "dealer", 1, True, 8, 416))
    opened = []
    for _ in range(22):
        events = []
        for name in ["9H", "2C", "KD", "5S"]:  # the machine takes its cards back every round
            events += driver.card(name, face_up=True)
        opened.append(only(events, EventType.ROUND_STARTED)[0].data["big_small_open"])
    assert all(opened)


def test_the_first_card_of_a_shoe_burned_unseen_holds_for_its_value() -> None:
    driver = ClockedTable()
    driver.load()
    events = driver.card(None)  # R2.2 (b): the count depends on this card
    assert [event.data["code"] for event in events] == ["unreadable_card"]
    events = driver.sup("confirm", card="2H")
    assert driver.table.view()["burn"]["to_burn"] == 2
    # A later burn card needs no identity: it is counted unseen.
    assert driver.card(None) == []
    assert types_of(driver.card("9S")) == ["shoe.burned"]
    assert events[0].data["details"]["card"] == "2H"


def test_missed_burn_cards_are_counted_without_a_hold_in_decks_mode() -> None:
    driver = ClockedTable(TableConfig(burn="decks", decks=6))
    driver.load()
    driver.deal("2S 3S")
    assert driver.apply(CardsMissed(driver.at(), "scanner", 2)) == []
    events = driver.deal("4H 5H")
    assert only(events, EventType.SHOE_BURNED)[0].data["cards"] == [
        "2S",
        "3S",
        None,
        None,
        "4H",
        "5H",
    ]


def test_two_missed_cards_are_entered_one_by_one_then_the_queue_is_dealt() -> None:
    driver = ClockedTable(NO_INSURANCE)
    driver.open_shoe()
    driver.card("QH")
    driver.apply(CardsMissed(driver.at(), "scanner", 2, after_counter=3))
    driver.card("4S")
    assert driver.table.view()["queued_cards"] == 3
    first = driver.sup("missed", card="7D")
    assert types_of(first)[0] == "supervisor.action"
    assert [e.data["code"] for e in only(first, EventType.PROCEDURE_ALERT)] == ["missed_card"]
    second = driver.sup("missed", card="2C")
    dealt = [(e.data["position"], e.data["card"]) for e in only(second, EventType.CARD_DEALT)]
    assert dealt == [("P2", "2C"), ("B2", "4S")]
    assert driver.table.view()["round"]["cards"] == {"P1": "QH", "B1": "7D", "P2": "2C", "B2": "4S"}


def test_two_extras_are_absorbed_when_two_cards_are_burned_per_round() -> None:
    driver = ClockedTable(TableConfig(burn_per_round=2, insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C KD")
    driver.card("5S", multi=True)
    events = driver.card("7D", multi=True) + driver.card("8D", multi=True)  # R10.3, not R10.4
    assert types_of(events) == ["shoe.burned"]  # they were the two burn cards of round 2
    assert driver.table.state == "ready"
    assert driver.table.shoe == 1


def test_the_cut_card_waits_behind_cards_queued_during_a_hold() -> None:
    driver = ClockedTable(NO_INSURANCE)
    driver.open_shoe()
    driver.deal("9H 2C KD")
    driver.apply(ShoeStateChanged(driver.at(), "scanner", ShoeState.COVER_OPEN))
    driver.card("5S")  # the last card of round 1, drawn during the hold
    driver.apply(CutCardSeen(driver.at(), "scanner"))  # then the cut card: round 2 is the last
    events = driver.sup("resume")
    assert types_of(events)[-3:] == ["round.result", "shoe.cut", "shoe.cut_card"]
    assert driver.table.view()["last_round"] == 2


def test_a_warning_fault_or_a_fault_with_no_shoe_does_not_hold() -> None:
    driver = ClockedTable()
    driver.apply(DeviceFault(driver.at(), "scanner", 1, 2, "jam"))
    assert driver.table.state == "no_shoe"
    driver.open_shoe()
    driver.apply(DeviceFault(driver.at(), "scanner", 2, 1, "read retry"))
    assert driver.table.state == "ready"
    assert [f["code"] for f in driver.table.view()["faults"]] == [1, 2]
    # A fault reported again (a status request after a reconnect) is reported again, since
    # events depend on the shoe's inputs only, but it never holds the table twice.
    driver.apply(DeviceFault(driver.at(), "scanner", 1, 2, "jam"))
    again = driver.apply(DeviceFault(driver.at(), "scanner", 1, 2, "jam"))
    assert types_of(again) == ["device.fault"]
    assert [hold["code"] for hold in driver.table.view()["holds"]] == ["device_fault"]


def test_a_restart_forgets_device_status_but_not_holds() -> None:
    driver = ClockedTable()
    driver.open_shoe()
    driver.apply(DeviceFault(driver.at(), "scanner", 3, 2, "cover open while dealing"))
    driver.apply(ControllerStarted(driver.at(), "0.1.0", 2, True))
    view = driver.table.view()
    assert view["faults"] == []
    assert [hold["code"] for hold in view["holds"]] == ["device_fault"]
    # The hold remembers its own fault: resume waits for the clear.
    assert driver.sup("resume")[0].data["code"] == "command_refused"
    driver.apply(DeviceFaultCleared(driver.at(), "scanner", 3))
    assert types_of(driver.sup("resume")) == ["supervisor.action"]


# ---------------------------------------------------------------- indicator


def test_the_indicator_follows_the_procedure() -> None:
    driver = ClockedTable(NO_INSURANCE)
    table = driver.table
    assert table.indicator == (0, 0)
    driver.load()
    assert table.indicator == (2, 1)  # the burn card is due
    driver.card("2H")
    assert table.indicator == (2, 2)
    driver.deal("5D 6D")
    assert table.indicator == (1, 0)
    positions = []
    for name in ["AS", "3D", "3H", "3C", "6D"]:
        driver.card(name)
        positions.append(table.indicator)
    assert positions == [(5, 2), (5, 3), (5, 4), (5, 5), (5, 6)]
    driver.card("6S")
    assert table.indicator == (6, 2)  # Banker wins 2 to 0
    driver.card("QH", low_confidence=True)
    assert table.indicator == (3, 0)


def test_the_insurance_window_shows_and_holds_the_next_card() -> None:
    driver = ClockedTable()
    driver.open_shoe()
    driver.deal("2S 4D 3C 2H")
    assert driver.table.indicator == (4, 0)
    assert driver.table.view()["insurance"] == [
        {"side": "banker", "stage": 1, "odds": 3, "banker_total": 6, "player_total": 5}
    ]


# ---------------------------------------------------------------- squeeze (R15)


def _squeeze_run(hidden: str, early: str) -> tuple[list[str], str]:
    driver = ClockedTable(TableConfig(squeeze=True))
    driver.open_shoe()
    events = driver.deal(hidden) + driver.card(early)
    return [render_event(event) for event in events], json.dumps(driver.table.view())


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("2S KD 3C 2H", "9S 9D KC QH"),  # Player draws / both naturals
        ("6S 2D KH AC", "2C AD 3D KC"),  # Player stands / Player draws
    ],
)
def test_nothing_about_squeezed_cards_leaves_before_the_reveal(first: str, second: str) -> None:
    # Two rounds that differ only in their hidden cards (and so in which positions a third
    # card would take) must look the same from outside until the reveal.
    events_one, view_one = _squeeze_run(first, "7C")
    events_two, view_two = _squeeze_run(second, "7C")
    assert events_one == events_two
    assert view_one == view_two
    for name in set(first.split()) | set(second.split()):
        assert name not in view_one


def test_squeezed_cards_are_revealed_with_their_positions() -> None:
    driver = ClockedTable(TableConfig(squeeze=True))
    driver.open_shoe()
    dealt = driver.deal("9H 2C KD 5S")
    assert [event.data["card"] for event in only(dealt, EventType.CARD_DEALT)] == [None] * 4
    events = driver.sup("reveal")
    revealed = [(e.data["position"], e.data["card"]) for e in only(events, EventType.CARD_REVEALED)]
    assert revealed == [("P1", "9H"), ("B1", "2C"), ("P2", "KD"), ("B2", "5S")]
    assert types_of(events)[-1] == "round.result"


def test_a_face_up_card_is_public_in_squeeze_mode() -> None:
    driver = ClockedTable(TableConfig(squeeze=True))
    driver.open_shoe()
    events = driver.card("9H", face_up=True)
    assert only(events, EventType.CARD_DEALT)[0].data["card"] == "9H"


def test_supervisor_details_do_not_name_a_squeezed_card() -> None:
    driver = ClockedTable(TableConfig(squeeze=True, insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C KD")
    events = driver.sup("correct", position="B1", card="3C")
    assert events[0].data["details"] == {"position": "B1", "card": None, "was": None}
    assert "3C" not in json.dumps([event.to_json() for event in events])
    held = driver.card("QH", duplicate=True)
    assert "QH" not in json.dumps([event.to_json() for event in held])
    assert driver.sup("confirm")[0].data["details"]["card"] is None


def test_a_squeezed_card_held_for_security_does_not_give_away_its_tag() -> None:
    # R15: an RFID tag names its card to whoever holds the registry: not before the reveal;
    # without squeeze the tag is what the supervisor needs to find the card.
    driver = ClockedTable(TableConfig(squeeze=True, insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C")
    held = driver.card("QH", uid="04A1B2C3", duplicate=True)
    (alert,) = only(held, EventType.SECURITY_ALERT)
    assert alert.data["details"]["uid"] is None
    assert "04A1B2C3" not in _outside(held)
    plain = ClockedTable(TableConfig(insurance=False))
    plain.open_shoe()
    shown = plain.card("QH", uid="04A1B2C3", duplicate=True)
    assert only(shown, EventType.SECURITY_ALERT)[0].data["details"]["uid"] == "04A1B2C3"


def _outside(events: list) -> str:
    return json.dumps([event.to_json() for event in events])


def test_a_squeezed_card_taken_out_of_the_round_is_never_named() -> None:
    # R15, R10.3: `extra` on a hidden card, and a correction that leaves the hidden P3
    # unwanted, make extra cards nobody has seen: card.extra and the burn carry null.
    driver = ClockedTable(TableConfig(squeeze=True, insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C KD")
    events = driver.sup("extra")
    assert only(events, EventType.CARD_EXTRA)[0].data == {"card": None}
    assert "KD" not in _outside(events)
    driver = ClockedTable(TableConfig(squeeze=True, insurance=False))
    driver.open_shoe()
    driver.deal("2S KD 3C 2H")
    driver.reveal()
    driver.card("7D")  # P3, hidden until its reveal
    events = driver.sup("correct", position="P1", card="5S")  # Player 8: no P3 (R9.1)
    assert only(events, EventType.CARD_EXTRA)[0].data == {"card": None}
    assert "7D" not in _outside(events)


def test_a_card_drawn_before_the_reveal_is_not_named_when_the_round_is_voided() -> None:
    # R15: the fifth card waits unplaced; had it been placed it would have been hidden.
    driver = ClockedTable(TableConfig(squeeze=True, insurance=False))
    driver.open_shoe()
    driver.deal("2S KD 3C 2H 7D")
    events = driver.sup("void")
    assert only(events, EventType.ROUND_VOIDED)[0].data["cards"] == [None] * 5
    assert "7D" not in _outside(events)


def test_a_card_pulled_with_a_squeezed_rounds_last_card_is_an_extra_card() -> None:
    # R10.2, R10.3: the round's cards are all out (a natural) though its result waits for
    # the reveal; the card pulled together with B2 is an extra card, not the next P1.
    driver = ClockedTable(TableConfig(squeeze=True, insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C KD")
    driver.card("5S", multi=True)
    driver.card("7D", multi=True)
    events = driver.reveal()
    assert types_of(events)[-3:] == ["round.result", "card.extra", "shoe.burned"]
    assert only(events, EventType.CARD_EXTRA)[0].data == {"card": "7D"}  # burns are public
    assert driver.table.view()["round"] is None


# ---------------------------------------------------------------- preparation and recovery


def test_a_shuffle_during_an_open_shoe_belongs_to_the_next_shoe() -> None:
    driver = ClockedTable(TableConfig(mode="batch_shuffler"))
    driver.apply(ShuffleDone(driver.at(), "shuffler", 1, True, 8, 416))
    driver.open_shoe()
    item = ShuffleDone(driver.at(), "shuffler", 2, True, 8, 416)
    assert (driver.table.shoe, driver.table.shoe_of(item)) == (1, 2)
    events = driver.apply(item)
    assert [(str(e.type), e.shoe) for e in events] == [("shoe.shuffled", 2)]
    assert driver.table.shoe_of(CardDrawn(driver.at(), "scanner", None)) == 1


def _replayed(driver: ClockedTable) -> Table:
    """Recovery as the journal does it: the inputs of the open shoe and later, in order."""
    table = Table(driver.table.config, last_shoe=driver.table.shoe - 1)
    for shoe, item in driver.inputs:
        if shoe >= driver.table.shoe:
            table.apply(item)
    return table


def test_replaying_the_open_shoes_inputs_rebuilds_the_state_exactly() -> None:
    config = TableConfig(mode="batch_shuffler", squeeze=True, burn_per_round=1)
    dealt = deal_shoe(shuffled_shoe(8, seed=5), config, cut_after=380)
    driver = ClockedTable(config)
    extra = {
        60: ShuffleStarted(0.0, "shuffler", 9, 8),
        61: ShuffleDone(0.0, "shuffler", 9, True, 8, 416),
    }
    checked = 0
    for index, item in enumerate(dealt.inputs):
        driver.apply(item)
        if index in extra:
            driver.apply(extra[index])
        if index % 37 == 0 or index == len(dealt.inputs) - 1:
            assert _replayed(driver).snapshot() == driver.table.snapshot(), index
            checked += 1
    assert checked > 10
    assert driver.table.shoe == 2
    assert driver.table.view()["deck_check"] == "checked"  # the next shoe's shuffle survived


# ---------------------------------------------------------------- the safety net


class _TableWithAFlaw(Table):
    """A table whose REVEAL handling fails after changing state: stands in for a bug."""

    def _handle(self, item: Any) -> None:
        if not isinstance(item, ButtonPressed):
            super()._handle(item)
            return
        self.book.drawn += 100
        raise RuntimeError("a flaw in the table's own code")


def test_a_bug_refuses_the_input_and_restores_the_state() -> None:
    table = _TableWithAFlaw(TableConfig())
    driver = ClockedTable()
    driver.table = table
    driver.open_shoe()
    driver.deal("2S 4D")
    before = table.snapshot()
    events = driver.reveal()
    assert [(e.data["code"], e.data["needs_supervisor"]) for e in events] == [
        ("internal_error", True)
    ]
    assert table.snapshot() == before
    assert types_of(driver.deal("3C 2H")) == ["card.dealt", "card.dealt", "insurance.offered"]


# ---------------------------------------------------------------- factory order


def test_a_run_is_same_suit_ranks_one_apart_in_one_direction() -> None:
    run = FactoryRun()
    up = [run.feed(Card(rank, Suit.S)) for rank in range(1, 7)]
    assert up == [1, 2, 3, 4, 5, 6]
    assert run.feed(Card(5, Suit.S)) == 1  # turning back starts again
    assert [run.feed(Card(rank, Suit.H)) for rank in (13, 12, 11)] == [1, 2, 3]
    assert run.feed(None) == 0
    assert run.feed(Card(10, Suit.H)) == 1


def test_the_documented_false_alarm_rate_matches_a_simulation() -> None:
    # With runs of 3 (common enough to count) the formula must match shuffled shoes; the
    # default of 6 is then the same formula, quoted in docs/table.md.
    rng = random.Random(3)
    cards = shuffled_shoe(8, seed=0)
    shoes, alarms = 2000, 0
    for _ in range(shoes):
        rng.shuffle(cards)
        run = FactoryRun()
        alarms += sum(run.feed(card) == 3 for card in cards)
    expected = factory_order_false_alarms(3, 8, 416)
    assert abs(alarms / shoes - expected) / expected < 0.12
    assert factory_order_false_alarms(6, 8, 402) == pytest.approx(1.33e-6, rel=0.01)


def test_every_input_type_has_a_handler() -> None:
    assert set(INPUT_HANDLERS) == set(INPUT_TYPES.values())


def test_every_supervisor_action_has_a_check_and_a_procedure() -> None:
    assert list(HANDLERS) == list(ACTIONS)  # the same actions, in the order shoectl lists them
    for handler in HANDLERS.values():
        assert callable(handler.check)
        assert callable(handler.do)


def test_the_result_is_the_rules_engines() -> None:
    driver = ClockedTable(NO_INSURANCE)
    driver.open_shoe()
    events = driver.deal("AS 3D 3H 3C 6D 6S")
    cards = [parse_card(name) for name in ["AS", "3D", "3H", "3C", "6D", "6S"]]
    assert only(events, EventType.ROUND_RESULT)[0].data == outcome(cards).result_data()


def test_a_missed_card_is_inserted_into_a_squeezed_round_only_after_the_reveal() -> None:
    driver = ClockedTable(TableConfig(squeeze=True, insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C KD 5S")
    events = driver.sup("missed", card="3C", position="B1")
    assert events[0].data["code"] == "command_refused"
    assert "R15" in events[0].data["text"]


@pytest.mark.parametrize("counter", [-3, 8 * 52 + 1])
def test_a_cut_card_counter_outside_the_shoe_is_refused(counter: int) -> None:
    driver = ClockedTable(TableConfig(insurance=False))
    driver.open_shoe()
    before = driver.table.snapshot()
    (alert,) = driver.apply(CutCardSeen(driver.at(), "scanner", counter))
    assert alert.type == EventType.PROCEDURE_ALERT
    assert alert.data["code"] == "invalid_input"
    assert str(counter) in alert.data["text"]
    assert driver.table.snapshot() == before  # nothing changed: no negative "cards behind"


def test_voiding_the_last_round_does_not_drop_a_fault_hold_with_the_shoe() -> None:
    # R3.1 + R10.1: after the cut card the round in progress is the last; voiding it would
    # end the shoe and take the device fault's hold with it, so the next shoe would open
    # over an active fault. Refused: resume (once the fault clears) or change_shoe.
    driver = ClockedTable(TableConfig(insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C")
    driver.apply(CutCardSeen(driver.at(), "scanner"))
    driver.apply(DeviceFault(driver.at(), "scanner", 0x0004, 3, "tamper"))
    assert driver.table.state == "held"
    (refusal,) = driver.sup("void")
    assert refusal.data["code"] == "command_refused"
    assert "resume first, or change_shoe" in refusal.data["text"]
    assert driver.table.view()["shoe_open"]
