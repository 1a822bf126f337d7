"""The table's own count after the inputs the mutation run found untested (issue 27):
missed-cards reports that name their counter, and a shoe opened by hand (table/device_counters.py).
"""

from __future__ import annotations

from typing import Any

from shoe_testkit.table import Driver, only

from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import CardDrawn, CardsMissed


def counted(driver: Driver, name: str, counter: int) -> list[Event]:
    return driver.apply(CardDrawn(driver.at(), "scanner", parse_card(name), counter))


def opened() -> Driver:
    """A loaded shoe burned with AS 4C (counters 1 and 2)."""
    driver = Driver(TableConfig(insurance=False))
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
    driver = Driver(TableConfig(insurance=False))
    driver.sup("start_shoe", by="sup9", reason="shoe report lost")
    events = counted(driver, "AS", 37) + counted(driver, "4C", 38)
    assert alerts(events) == []
    assert only(events, EventType.SHOE_BURNED)  # the burn, from the first card on
    assert texts(counted(driver, "9H", 40))[0].startswith("card #")  # 39 missed: counted from 37
