"""The table's own count (table/device_counters.py) where the mutation runs found it
untested: missed-cards reports with or without their counter, a shoe opened by hand, the ends
of the counter's range, the cut card's counter, the double-read window's edges, the clock
stepping back, and the exact text of each refusal (what the pit boss reads).
"""

from __future__ import annotations

from typing import Any

import pytest
from shoe_testkit.table import ClockedTable, only

from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import CardDrawn, CardsMissed, CutCardSeen


def counted(driver: ClockedTable, name: str, counter: int) -> list[Event]:
    return driver.apply(CardDrawn(driver.at(), "scanner", parse_card(name), counter))


def opened() -> ClockedTable:
    """A loaded shoe burned with AS 4C (counters 1 and 2)."""
    driver = ClockedTable(TableConfig(insurance=False))
    driver.load()
    counted(driver, "AS", 1)
    counted(driver, "4C", 2)
    return driver


def alerts(events: list[Event]) -> list[dict[str, Any]]:
    return [event.data for event in only(events, EventType.PROCEDURE_ALERT)]


def test_a_missed_cards_report_after_a_negative_counter_is_refused_as_out_of_range() -> None:
    driver = opened()
    events = driver.apply(CardsMissed(driver.at(), "scanner", 3, after_counter=-1))
    (alert,) = alerts(events)
    assert alert["code"] == "invalid_counter"  # not taken for a mismatch with the count
    assert "cards_missed after counter -1" in alert["text"]
    assert not only(events, EventType.CARD_DEALT)


def texts(events: list[Event]) -> list[str]:
    return [alert["text"] for alert in alerts(events)]


def test_the_count_after_a_report_that_names_its_counter_is_that_counter_plus_the_cards() -> None:
    # Card 3 left unscanned and the shoe says so (after 2, one card): the table counts 3 and
    # holds for the placeholder (R10.5). The next card comes with counter 5, so card 4 was
    # missed too: a second placeholder, then card 5, both behind the hold.
    driver = opened()
    reported = driver.apply(CardsMissed(driver.at(), "scanner", 1, after_counter=2))
    assert [alert["code"] for alert in alerts(reported)] == ["missed_card"]
    events = counted(driver, "9H", 5)
    assert [text.split(" was ")[0] for text in texts(events)] == ["card #4", "card #5"]
    assert "not scanned" in texts(events)[0]


def test_the_count_after_a_report_is_what_the_next_card_follows_without_a_gap() -> None:
    driver = opened()
    driver.apply(CardsMissed(driver.at(), "scanner", 2, after_counter=2))
    events = counted(driver, "9H", 5)  # cards 3 and 4 were the reported ones
    assert [text.split(" was ")[0] for text in texts(events)] == ["card #5"]


def test_a_shoe_opened_by_hand_takes_its_first_counter_as_the_base() -> None:
    # start_shoe with no SHOE loaded report (docs/table.md): the table has no counter yet, so
    # the first card's counter, whatever it is, starts the count; nothing was missed.
    driver = ClockedTable(TableConfig(insurance=False))
    driver.sup("start_shoe", by="sup9", reason="shoe report lost")
    events = counted(driver, "AS", 37) + counted(driver, "4C", 38)
    assert alerts(events) == []
    assert only(events, EventType.SHOE_BURNED)  # the burn, from the first card on
    assert texts(counted(driver, "9H", 40))[0].startswith("card #")  # 39 missed: counted from 37


# ---- the second mutation run: what each check tells the pit boss, at the edges of its range ----


def hand_opened() -> ClockedTable:
    """A shoe opened by hand (start_shoe, no SHOE loaded report): the table has no counter."""
    driver = ClockedTable(TableConfig(insurance=False))
    driver.sup("start_shoe", by="sup9", reason="shoe report lost")
    return driver


def refusals(events: list[Event]) -> list[tuple[str, str, bool]]:
    return [(alert["code"], alert["text"], alert["needs_supervisor"]) for alert in alerts(events)]


SUPERVISOR_MISSED = "supervisor: check the shoe, enter a real card with missed card=.."


def test_each_counter_refusal_says_what_happened_and_what_to_do() -> None:
    # The texts the pit boss reads on the alert (and in `shoectl status`'s refusing line).
    driver = opened()
    assert refusals(counted(driver, "7D", 0)) == [
        ("invalid_counter",
         f"card counter 0 is outside 1..416 (a 8-deck shoe): not dealt; {SUPERVISOR_MISSED}",
         True),
    ]  # fmt: skip
    counted(driver, "9H", 3)
    assert refusals(counted(driver, "9H", 3)) == [
        ("double_read",
         "card counter 3 came twice for the same card: a double read, not dealt again", False),
    ]  # fmt: skip
    assert refusals(counted(driver, "7D", 2)) == [
        ("counter_went_back",
         "card counter 2 after 3 (the shoe counts +1 per card): not dealt; supervisor: if a card"
         " really left the shoe enter it with missed card=..; if the shoe keeps losing count,"
         " change_shoe",
         True),
    ]  # fmt: skip
    assert [e.data["position"] for e in only(counted(driver, "2C", 4), EventType.CARD_DEALT)] == [
        "B1"
    ]  # nothing refused changed the count


def test_a_missed_cards_report_that_does_not_fit_the_count_is_refused_with_its_reason() -> None:
    driver = opened()
    mismatch = driver.apply(CardsMissed(driver.at(), "scanner", 1, after_counter=1))
    assert refusals(mismatch) == [
        ("counter_mismatch",
         "the shoe reported 1 missed card(s) after card 1, but the last card it counted was 2:"
         " not taken; the next card's counter shows any gap",
         True),
    ]  # fmt: skip
    # 415 cards after card 2 would end at counter 417, past the shoe's 416 (the count alone,
    # 415, is a possible number of cards).
    beyond = driver.apply(CardsMissed(driver.at(), "scanner", 415, after_counter=2))
    assert refusals(beyond) == [
        ("invalid_counter",
         "cards_missed last counter 417 is outside 1..416 (a 8-deck shoe): not dealt;"
         f" {SUPERVISOR_MISSED}",
         True),
    ]  # fmt: skip
    assert driver.table.book.drawn == 2  # neither report took a card
    assert not only(counted(driver, "9H", 3), EventType.PROCEDURE_ALERT)  # the count is 2 still


def test_the_shoes_last_counter_is_in_range() -> None:
    # A shoe opened by hand at the end of its count: cards 415 and 416 (the last of 8 decks)
    # are the burn, and both are taken.
    driver = hand_opened()
    events = counted(driver, "AS", 415) + counted(driver, "4C", 416)
    assert alerts(events) == []
    (burned,) = only(events, EventType.SHOE_BURNED)
    assert burned.data["count"] == 2


def test_missed_cards_right_after_loading_are_the_shoes_first_cards() -> None:
    # A loaded shoe counts from 0: "1 card missed after card 0" is card 1, the burn's first.
    driver = ClockedTable(TableConfig(insurance=False))
    driver.load()
    events = driver.apply(CardsMissed(driver.at(), "scanner", 1, after_counter=0))
    ((code, text, needs_supervisor),) = refusals(events)
    assert code == "missed_card"
    assert text.startswith("card #1 was not scanned")
    assert "it belongs to the burn" in text
    assert needs_supervisor is True
    assert driver.table.state == "held"
    assert alerts(counted(driver, "4C", 2))[0]["code"] == "card_during_hold"  # no gap: 1 then 2


def test_missed_cards_reported_without_their_counter_follow_the_tables_count() -> None:
    # The shoe says 2 cards were missed but not after which: the table's count (2) goes to 4,
    # so the next card with counter 6 shows one more missed (card #5) before it (card #6).
    driver = opened()
    reported = driver.apply(CardsMissed(driver.at(), "scanner", 2))
    assert [alert["code"] for alert in alerts(reported)] == ["missed_card"]
    assert texts(reported)[0].startswith("card #3 was not scanned")
    assert texts(counted(driver, "9H", 6)) == [
        "card #5 was not scanned while the table is held: it is placed after the hold",
        "card #6 was drawn while the table is held: it is placed after the hold",
    ]


def test_missed_cards_in_a_shoe_without_counters_are_placeholders_and_nothing_else() -> None:
    driver = hand_opened()
    driver.deal("AS 4C")  # no counters at all: the table has none to go on from
    events = driver.apply(CardsMissed(driver.at(), "scanner", 1))
    assert [alert["code"] for alert in alerts(events)] == ["missed_card"]
    assert texts(events)[0].startswith("card #3 was not scanned")
    events = driver.card("9H")  # and the next card, still without a counter, is #4
    assert texts(events) == [
        "card #4 was drawn while the table is held: it is placed after the hold"
    ]


def cut(driver: ClockedTable, counter: int) -> list[Event]:
    return driver.apply(CutCardSeen(driver.at(), "scanner", counter=counter))


def test_a_cut_card_counter_is_compared_with_the_shoes_own_count_when_it_has_one() -> None:
    # Opened by hand at counter 37: two cards out by the table, 38 by the shoe's counter. The
    # cut card after card 38 agrees with the shoe; after 2 it would not.
    driver = hand_opened()
    counted(driver, "AS", 37)
    counted(driver, "4C", 38)
    events = cut(driver, 38)
    assert alerts(events) == []
    assert only(events, EventType.SHOE_CUT_CARD)[0].data == {"after_card": 2}  # R2.1


def test_a_cut_card_counter_that_disagrees_tells_both_counts() -> None:
    driver = hand_opened()
    counted(driver, "AS", 37)
    counted(driver, "4C", 38)
    assert refusals(cut(driver, 2)) == [
        ("cut_card_counter",
         "the cut card came out after card 2 by the shoe's counter, but the table counts 2"
         " card(s) out: the table's count stands (R2.1, R3.1); supervisor: check the shoe",
         True),
    ]  # fmt: skip


@pytest.mark.parametrize(("counter", "codes"), [(3, []), (4, ["cut_card_counter"])])
def test_a_cut_card_counter_from_a_shoe_that_counts_no_cards_is_compared_with_the_table(
    counter: int, codes: list[str]
) -> None:
    driver = hand_opened()
    driver.deal("AS 4C 9H")  # no counters: the table counts 3 out
    assert [alert["code"] for alert in alerts(cut(driver, counter))] == codes


# ---- without counters: the double-read window's edges --------------------------------------


def ascii_shoe() -> ClockedTable:
    """A loaded shoe that sends no counters, burned with AS 4C, then P1 9H (at 1 s steps)."""
    driver = ClockedTable(TableConfig(insurance=False))
    driver.open_shoe()
    driver.card("9H")
    return driver


def after(
    driver: ClockedTable, seconds: float, name: str, counter: int | None = None
) -> list[Event]:
    """The card `name` read `seconds` after the last input."""
    driver.clock += seconds - 1.0  # at() adds the 1.0 back
    return driver.apply(CardDrawn(driver.at(), "scanner", parse_card(name), counter))


def dealt(events: list[Event]) -> list[str]:
    return [event.data["position"] for event in only(events, EventType.CARD_DEALT)]


def test_the_same_card_read_at_the_same_instant_is_held_as_a_possible_double_read() -> None:
    driver = ascii_shoe()
    events = after(driver, 0.0, "9H")
    assert [alert["code"] for alert in alerts(events)] == ["double_read_suspected"]
    assert dealt(events) == []


def test_the_same_card_exactly_the_window_later_is_dealt() -> None:
    # double_read_window 0.25 s: "within" the window means less than 0.25 s after.
    driver = ascii_shoe()
    events = after(driver, 0.25, "9H")
    assert alerts(events) == []
    assert dealt(events) == ["B1"]


def test_a_card_with_a_counter_is_judged_by_its_counter_not_the_window() -> None:
    # The shoe sent no counter for 9H, then 9H again 0.1 s later with counter 4: the counter
    # says it is the next card (the table counted 3), so it is dealt, not held.
    driver = ascii_shoe()
    events = after(driver, 0.1, "9H", counter=4)
    assert alerts(events) == []
    assert dealt(events) == ["B1"]


def test_the_window_compares_two_reads_without_counters() -> None:
    # 9H came with counter 3; the same card 0.1 s later without one is not held as its double
    # read: only two reads that both lack a counter are compared by time.
    driver = opened()
    counted(driver, "9H", 3)
    events = after(driver, 0.1, "9H")
    assert alerts(events) == []
    assert dealt(events) == ["B1"]


# ---- the clock ------------------------------------------------------------------------------


def test_an_input_at_the_same_time_as_the_last_is_no_step_back() -> None:
    driver = opened()
    driver.clock -= 1.0  # 9H at the instant 4C was read
    events = counted(driver, "9H", 3)
    assert alerts(events) == []
    assert dealt(events) == ["P1"]


def test_a_step_back_says_how_far_and_who_must_act() -> None:
    driver = opened()
    driver.clock -= 120.0  # the next input comes 119 s before the last one
    assert refusals(counted(driver, "9H", 3)) == [
        ("time_went_back",
         "this input's time is 119.000 s before the last input's: the clock went back; times"
         " in the journal are out of order from here; technician: check NTP",
         False),
    ]  # fmt: skip
