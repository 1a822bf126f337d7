"""The supervisor's card decisions and the holds behind them, as the pit boss sees them.

Each test reads what the table says back (the supervisor.action details, the refusal's whole
text, the events and the status view's holds), never the books; how many copies of a card
the table counts is read the way the table shows it, by the card that would be one too many.
"""

from __future__ import annotations

from typing import Any

from shoe_testkit.table import ClockedTable, only, types_of

from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import ButtonPressed, DeviceFault, ShoeState, ShoeStateChanged


def _data(events: list[Event]) -> list[tuple[str, dict[str, Any]]]:
    return [(str(event.type), event.data) for event in events]


def _refusal(events: list[Event]) -> str:
    (refused,) = events
    assert refused.data["code"] == "command_refused", refused.data
    return str(refused.data["text"])


def _details(events: list[Event]) -> dict[str, Any]:
    assert events[0].type == EventType.SUPERVISOR_ACTION, events[0].data
    return dict(events[0].data["details"])


def _table(**settings: Any) -> ClockedTable:
    driver = ClockedTable(TableConfig(decks=6, **settings))
    driver.open_shoe()
    return driver


def _copies_until_too_many(driver: ClockedTable, name: str) -> int:
    """How many more copies of a card the table takes before one is too many (6 decks): the
    cards it counts are 6 + 1 less this. The copies are dealt as rounds of their own (the
    squeezed ones revealed); the one too many is discarded."""
    for fed in range(1, 20):
        if any(event.data.get("code") == "too_many_copies" for event in driver.card(name)):
            driver.sup("discard")
            return fed
        if driver.table.state == "reveal":
            driver.reveal()
    raise AssertionError(f"{name} was never one copy too many")


# ---------------------------------------------------------------- holds


def test_a_held_table_refuses_card_decisions_naming_every_hold() -> None:
    driver = _table(insurance=False)
    driver.deal("9S 3D")
    driver.sup("hold")
    driver.apply(DeviceFault(driver.at(), "scanner", 0x0001, 2, "jam"))
    held = (
        "the table is held (supervisor_hold, device_fault): the supervisor resolves the hold first"
    )
    assert _refusal(driver.sup("correct", position="P1", card="8S")) == f"correct refused: {held}"
    assert _refusal(driver.sup("missed", card="8S", position="P2")) == f"missed refused: {held}"
    assert _refusal(driver.sup("extra")) == f"extra refused: {held}"


def test_a_hold_shows_its_text_and_time_and_asks_the_supervisor() -> None:
    driver = _table(insurance=False)
    driver.deal("9S 3D")
    events = driver.apply(DeviceFault(driver.at(), "scanner", 0x0001, 2, "jam"))
    text = (
        "scanner fault 0x0001: jam while the shoe is in play: supervisor: resume once it is cleared"
    )
    assert _data(events)[1] == (
        "procedure.alert",
        {"code": "device_fault", "text": text, "needs_supervisor": True},
    )
    (hold,) = driver.table.view()["holds"]
    assert (hold["text"], hold["since"]) == (text, events[0].at)


def test_a_fault_at_the_host_fault_base_is_the_hosts_own_and_resume_clears_it() -> None:
    driver = _table(insurance=False)
    driver.deal("9S 3D")
    driver.apply(DeviceFault(driver.at(), "scanner", 0xF000, 2, "garbled"))
    (hold,) = driver.table.view()["holds"]
    assert hold["waiting_for"] is None
    events = driver.sup("resume")
    assert _data(events)[1:] == [
        (
            "device.fault_cleared",
            {"device": "scanner", "code": 0xF000, "severity": None, "text": ""},
        )
    ]
    assert driver.table.state == "dealing"


def test_a_tamper_hold_is_a_security_alert_and_ends_the_shoe_for_security() -> None:
    driver = _table(insurance=False)
    driver.deal("9S 3D")
    events = driver.apply(DeviceFault(driver.at(), "scanner", 0x0004, 2, "lid forced"))
    assert _data(only(events, EventType.SECURITY_ALERT)) == [
        (
            "security.alert",
            {
                "code": "tamper",
                "details": {"device": "scanner", "fault": 4, "text": "lid forced"},
            },
        )
    ]
    events = driver.sup("change_shoe")
    assert only(events, EventType.SHOE_ENDED)[0].data["reason"] == "security"


def test_each_fault_and_each_hold_of_its_own_holds_the_table() -> None:
    driver = _table(insurance=False)
    driver.deal("9S 3D")
    driver.apply(DeviceFault(driver.at(), "scanner", 0x0001, 2, "jam"))
    driver.apply(DeviceFault(driver.at(), "scanner", 0x0003, 2, "motor"))
    driver.apply(DeviceFault(driver.at(), "scanner", 0x0001, 2, "jam"))  # the same again
    assert types_of(driver.sup("hold"))[0] == "supervisor.action"  # other holds stand
    assert types_of(
        driver.apply(ShoeStateChanged(driver.at(), "scanner", ShoeState.COVER_OPEN))
    ) == ["procedure.alert"]
    holds = driver.table.view()["holds"]
    assert [(hold["code"], hold["waiting_for"]) for hold in holds] == [
        ("device_fault", "scanner to clear fault 0x0001 (FAULT_CLEARED)"),
        ("device_fault", "scanner to clear fault 0x0003 (FAULT_CLEARED)"),
        ("supervisor_hold", None),
        ("cover_open", None),
    ]


class _TableThatCannotRebuild(Table):
    """A table whose REVEAL handling fails and whose rebuild fails too: stands in for a bug
    the table cannot undo (test_table_procedures.py's _TableWithAFlaw, one step worse)."""

    def _handle(self, item: Any) -> None:
        if isinstance(item, ButtonPressed):
            raise RuntimeError("a flaw in the table's own code")
        super()._handle(item)

    def _rebuild(self, shoe: int) -> None:
        raise RuntimeError("the rebuild fails too")


def test_a_bug_the_table_cannot_undo_holds_it_for_a_person() -> None:
    driver = ClockedTable()
    driver.table = _TableThatCannotRebuild(TableConfig())
    driver.open_shoe()
    driver.deal("2S 4D")
    events = driver.reveal()
    assert [event.data["text"] for event in events] == [
        "the controller failed on a button input (RuntimeError); the table could not"
        " rebuild its state and is held; call the technician with the journal"
    ]
    assert driver.table.state == "held"
    assert driver.table.view()["holds"] == [
        {
            "code": "internal_error",
            "text": "internal error",
            "since": events[0].at,
            "kind": "plain",
            "actions": ["resume", "change_shoe"],
            "waiting_for": None,
        }
    ]


# ---------------------------------------------------------------- confirm and discard


def test_confirm_with_nothing_to_decide_is_refused_even_with_squeezed_cards_out() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.deal("9S 3D")
    assert _refusal(driver.sup("confirm")) == "confirm refused: no card waits for a decision"
    driver.sup("hold")
    assert _refusal(driver.sup("confirm")) == "confirm refused: no card waits for a decision"


def test_a_card_not_read_is_confirmed_only_with_its_identity() -> None:
    driver = _table(insurance=False)
    driver.deal("2S 4D")
    driver.card(None)
    assert _refusal(driver.sup("confirm")) == (
        "confirm refused: card #5 has no identity: enter it with confirm card=.."
    )
    events = driver.sup("confirm", card="7H")
    assert _details(events) == {"seq": 5, "hold": "unreadable_card", "card": "7H"}
    assert _data(events)[1:] == [("card.dealt", {"position": "P2", "card": "7H", "face_up": False})]


def test_a_doubtful_card_is_confirmed_or_discarded_and_the_details_say_which() -> None:
    driver = _table(insurance=False)
    driver.deal("2S 4D")
    driver.card("7H", low_confidence=True)
    assert _details(driver.sup("discard")) == {"seq": 5, "hold": "low_confidence"}
    assert driver.table.state == "dealing"
    driver.card("7H", low_confidence=True)
    events = driver.sup("confirm")
    assert _details(events) == {"seq": 6, "hold": "low_confidence", "card": "7H"}
    assert _data(events)[1:] == [("card.dealt", {"position": "P2", "card": "7H", "face_up": False})]
    # The discarded card is no copy of the shoe's: six 7H more and the seventh is one too many.
    assert _copies_until_too_many(driver, "7H") == 6


def test_a_card_drawn_during_a_plain_hold_is_discarded_and_counts_no_more() -> None:
    driver = _table(insurance=False)
    driver.deal("2S 4D")
    driver.sup("hold")
    driver.card("7H")
    assert _details(driver.sup("discard")) == {"seq": 5, "hold": None}
    assert _refusal(driver.sup("discard")) == (
        "discard refused: no held card to discard (a dealt card is corrected, or its round voided)"
    )
    driver.sup("resume")
    assert _copies_until_too_many(driver, "7H") == 7


def test_squeezed_cards_read_doubtfully_are_confirmed_one_by_one_after_the_reveal() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.card("9S", low_confidence=True)
    driver.card("3D")
    driver.card("KH", low_confidence=True)
    driver.card("2D")
    driver.reveal()
    assert _refusal(driver.sup("discard")) == (
        "discard refused: no held card to discard (a dealt card is corrected, or its round voided)"
    )
    events = driver.sup("confirm")  # P1 as read
    assert _data(events) == [
        (
            "supervisor.action",
            {
                "action": "confirm",
                "by": "sup7",
                "reason": "test",
                "details": {"seq": 3, "hold": "low_confidence", "card": "9S"},
            },
        ),
        ("card.revealed", {"position": "P1", "card": "9S"}),
    ]
    assert driver.table.state == "held"  # P2 still waits
    assert [hold["code"] for hold in driver.table.view()["holds"]] == ["low_confidence"]
    events = driver.sup("confirm", card="5H")  # P2 was another card
    assert _details(events) == {"seq": 5, "hold": "low_confidence", "card": "5H"}
    assert _data(events)[1:] == [
        ("card.dealt", {"position": "P2", "card": None, "face_up": False}),
        ("card.revealed", {"position": "P2", "card": "5H"}),
    ]
    assert driver.table.state == "dealing"
    assert driver.table.view()["round"]["cards"] == {
        "P1": "9S",
        "B1": "3D",
        "P2": "5H",
        "B2": "2D",
    }
    assert driver.table.view()["round"]["next_position"] == "P3"
    assert _copies_until_too_many(driver, "KH") == 7  # KH was never out
    assert _copies_until_too_many(driver, "5H") == 6


def test_a_squeezed_card_confirmed_as_another_card_counts_as_that_card() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.card("9S", low_confidence=True)
    driver.deal("3D KH 2D")
    driver.reveal()
    events = driver.sup("confirm", card="9S")  # the card it was read as: nothing changes
    assert _data(events)[1] == ("card.revealed", {"position": "P1", "card": "9S"})
    assert types_of(events)[2:] == ["round.result"]
    assert _copies_until_too_many(driver, "9S") == 6


# ---------------------------------------------------------------- correct


def test_correct_swaps_a_dealt_card_and_the_counts_follow() -> None:
    driver = _table(insurance=False)
    driver.deal("9S 3D KH")
    events = driver.sup("correct", position="P1", card="8S")
    assert _data(events) == [
        (
            "supervisor.action",
            {
                "action": "correct",
                "by": "sup7",
                "reason": "test",
                "details": {"position": "P1", "card": "8S", "was": "9S"},
            },
        ),
        ("card.dealt", {"position": "P1", "card": "8S", "face_up": False}),
    ]
    # Corrected back: 8S leaves, 9S counts again; P1 is announced again.
    events = driver.sup("correct", position="P1", card="9S")
    assert _details(events) == {"position": "P1", "card": "9S", "was": "8S"}
    assert _data(events)[1:] == [("card.dealt", {"position": "P1", "card": "9S", "face_up": False})]
    assert _copies_until_too_many(driver, "8S") == 7
    assert _copies_until_too_many(driver, "9S") == 6


def test_correct_of_a_squeezed_card_names_neither_card_until_the_reveal() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.deal("9S 3D 4H")
    events = driver.sup("correct", position="P1", card="8S")
    assert _details(events) == {"position": "P1", "card": None, "was": None}
    driver.deal("2D")
    events = driver.reveal()
    assert ("card.revealed", {"position": "P1", "card": "8S"}) in _data(events)
    # Once open, a correction names both, and the card is announced again.
    events = driver.sup("correct", position="P1", card="9S")
    assert _details(events) == {"position": "P1", "card": "9S", "was": "8S"}
    assert ("card.revealed", {"position": "P1", "card": "9S"}) in _data(events)


def test_correct_voids_the_insurance_as_a_corrected_card() -> None:
    driver = _table()
    driver.deal("2S 4D 3C 2H")
    events = driver.sup("correct", position="B1", card="5D")
    assert _data(events)[1:] == [
        ("card.dealt", {"position": "B1", "card": "5D", "face_up": False}),
        ("insurance.voided", {"side": "banker", "stage": 1, "reason": "card_corrected"}),
    ]


def test_correct_is_refused_with_its_reason() -> None:
    driver = _table(insurance=False)
    assert _refusal(driver.sup("correct", position="P1", card="2S")) == (
        "correct refused: no round is in progress"
    )
    driver.deal("2S 4D")
    assert _refusal(driver.sup("correct", position="P1", card="2S")) == (
        "correct refused: P1 already holds 2S"
    )
    assert _refusal(driver.sup("correct", position="B2", card="2S")) == (
        "correct refused: round 1 has no card at B2"
    )


# ---------------------------------------------------------------- missed


def test_a_missed_card_with_its_position_rearranges_the_round() -> None:
    driver = _table()
    driver.deal("2S 4D 3C")
    events = driver.sup("missed", card="KS", position="B1")
    assert _data(events) == [
        (
            "supervisor.action",
            {
                "action": "missed",
                "by": "sup7",
                "reason": "test",
                "details": {"seq": 6, "card": "KS", "position": "B1"},
            },
        ),
        ("card.dealt", {"position": "B1", "card": "KS", "face_up": False}),
        ("card.dealt", {"position": "P2", "card": "4D", "face_up": False}),
        ("card.dealt", {"position": "B2", "card": "3C", "face_up": False}),
        (
            "procedure.alert",
            {
                "code": "cards_rearranged",
                "text": "after the missed card the cards lie in dealing order (R10.5):"
                " P1 2S, B1 KS, P2 4D, B2 3C",
                "needs_supervisor": True,
            },
        ),
    ]
    assert driver.table.state == "dealing"
    # The next card drawn is the seventh out of the shoe, and the round goes on with it.
    driver.sup("hold")
    driver.card("5H")
    assert _details(driver.sup("discard")) == {"seq": 7, "hold": None}
    driver.sup("resume")
    events = driver.deal("5H")
    assert _data(events)[0] == ("card.dealt", {"position": "B3", "card": "5H", "face_up": False})
    assert only(events, EventType.ROUND_RESULT)[0].data["banker"] == ["KS", "3C", "5H"]
    assert _copies_until_too_many(driver, "KS") == 6


def test_a_missed_card_in_a_squeezed_round_stays_hidden() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.deal("2S 4D 3C")
    assert _refusal(driver.sup("missed", card="KS", position="B1")) == (
        "missed refused: reveal the squeezed cards first: where the cards go would tell them (R15)"
    )
    driver.reveal()
    events = driver.sup("missed", card="KS", position="B1")
    assert _details(events) == {"seq": 6, "card": None, "position": "B1"}
    assert _data(events)[-1] == (
        "procedure.alert",
        {
            "code": "cards_rearranged",
            "text": "after the missed card the cards lie in dealing order (R10.5):"
            " P1 2S, B1 card #6, P2 4D, B2 3C",
            "needs_supervisor": True,
        },
    )
    assert driver.table.view()["round"]["cards"]["B1"] == "hidden"


def test_a_missed_card_is_refused_with_its_reason() -> None:
    driver = _table(insurance=False)
    assert _refusal(driver.sup("missed", card="KS", position="B1")) == (
        "missed refused: no round is in progress to put the missed card in"
    )
    driver.deal("9S 9D KD KH 2S 4D")  # round 1 ends with two naturals, round 2 has two cards
    assert _refusal(driver.sup("missed", card="KS")) == (
        "missed refused: the shoe reported no gap: say where the card belonged with position=.."
    )
    assert _refusal(driver.sup("missed", card="KS", position="B2")) == (
        "missed refused: no place among round 2's cards makes that card B2"
    )
    assert _details(driver.sup("missed", card="KS", position="P1")) == {
        "seq": 9,
        "card": "KS",
        "position": "P1",
    }


def test_a_missed_card_the_shoe_reported_is_entered_without_a_position() -> None:
    driver = _table(insurance=False)
    driver.deal("2S 4D")
    driver.card(None)
    events = driver.sup("missed", card="7H")
    assert _data(events) == [
        (
            "supervisor.action",
            {
                "action": "missed",
                "by": "sup7",
                "reason": "test",
                "details": {"seq": 5, "card": "7H", "position": None},
            },
        ),
        ("card.dealt", {"position": "P2", "card": "7H", "face_up": False}),
    ]


# ---------------------------------------------------------------- extra


def test_extra_takes_the_last_card_out_of_the_round() -> None:
    driver = _table()
    driver.deal("2S 4D 3C 2H")
    events = driver.sup("extra")
    assert _data(events) == [
        (
            "supervisor.action",
            {
                "action": "extra",
                "by": "sup7",
                "reason": "test",
                "details": {"seq": 6, "card": "2H"},
            },
        ),
        ("insurance.voided", {"side": "banker", "stage": 1, "reason": "card_corrected"}),
        ("card.extra", {"card": "2H"}),
    ]
    view = driver.table.view()["round"]
    assert (view["number"], view["cards"], view["next_position"]) == (
        1,
        {"P1": "2S", "B1": "4D", "P2": "3C"},
        "B2",
    )


def test_extra_of_a_squeezed_card_does_not_name_it() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.deal("2S 4D 3C")
    assert _details(driver.sup("extra")) == {"seq": 5, "card": None}


def test_extra_with_no_card_of_a_round_is_refused() -> None:
    driver = _table(insurance=False)
    assert _refusal(driver.sup("extra")) == (
        "extra refused: no card of a round in progress to take out"
    )


# ---------------------------------------------------------------- counts and the squeeze


def test_a_card_entered_as_one_already_out_counts_one_more_copy() -> None:
    # Confirmed after the reveal as B1's card, corrected to it, or missed as another copy.
    driver = _table(squeeze=True, insurance=False)
    driver.card("9S", low_confidence=True)
    driver.deal("3D KH 2D")
    driver.reveal()
    driver.sup("confirm", card="3D")
    assert _copies_until_too_many(driver, "3D") == 5
    driver = _table(insurance=False)
    driver.deal("9S 3D KH")
    driver.sup("correct", position="P1", card="3D")
    assert _copies_until_too_many(driver, "3D") == 5
    driver = _table(insurance=False)
    driver.deal("2S 4D 3C")
    driver.sup("missed", card="2S", position="B1")
    assert _copies_until_too_many(driver, "2S") == 5


def test_a_missed_card_can_belong_at_the_last_place() -> None:
    driver = _table(insurance=False)
    driver.deal("2S 4D 3C")
    events = driver.sup("missed", card="KS", position="B2")
    assert _data(events)[1] == ("card.dealt", {"position": "B2", "card": "KS", "face_up": False})
    assert driver.table.view()["round"]["cards"] == {"P1": "2S", "B1": "4D", "P2": "3C", "B2": "KS"}


def test_a_card_the_supervisor_enters_for_a_gap_is_not_screened_again() -> None:
    driver = _table(insurance=False)
    driver.deal("9S 9S 9S 9S 9S 9S")  # six copies: a tie of eights, then P1 and B1
    driver.card(None)  # not read: the supervisor saw a seventh 9S
    events = driver.sup("missed", card="9S")
    assert _data(events)[1:] == [
        ("card.dealt", {"position": "P2", "card": "9S", "face_up": False}),
    ]
    assert driver.table.state == "dealing"


def test_a_squeezed_card_corrected_to_itself_is_announced_again() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.deal("9S 3D")
    events = driver.sup("correct", position="P1", card="9S")
    assert _data(events)[1:] == [
        ("card.dealt", {"position": "P1", "card": None, "face_up": False}),
    ]


def test_a_doubtful_squeezed_card_corrected_before_the_reveal_needs_no_confirm() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.card("9S", low_confidence=True)
    driver.deal("3D KH 2D")
    driver.sup("correct", position="P1", card="8S")
    events = driver.reveal()
    assert ("card.revealed", {"position": "P1", "card": "8S"}) in _data(events)
    assert driver.table.view()["holds"] == []


def test_extra_names_a_squeezed_card_once_it_is_open() -> None:
    driver = _table(squeeze=True, insurance=False)
    driver.deal("2S 4D 3C 2H")
    driver.reveal()
    assert _details(driver.sup("extra")) == {"seq": 6, "card": "2H"}


def test_a_squeezed_third_card_confirmed_as_another_voids_the_insurance() -> None:
    driver = _table(squeeze=True)
    driver.deal("2S 4D 3C 2H")
    driver.reveal()  # Banker insurance offered at stage 1 ...
    driver.reveal()  # ... and closed
    driver.card("7C", low_confidence=True)  # P3
    driver.reveal()
    events = driver.sup("confirm", card="8C")
    assert (
        "insurance.voided",
        {"side": "banker", "stage": 1, "reason": "card_corrected"},
    ) in _data(events)
    assert only(events, EventType.ROUND_RESULT)[0].data["player"] == ["2S", "3C", "8C"]
