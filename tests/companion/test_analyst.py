"""The companion's analyst (companion/companion.py `Analyst`): the composition of the cards not
seen, and the report it makes after an event that calls for one (R14, R15)."""

from __future__ import annotations

from shoe_controller.companion.companion import Analyst
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE
from shoe_controller.game.surveillance.sightings import ShoeSightings
from shoe_controller.vocab.cards import parse_card


def _event(kind: str, seq: int, data: dict, round_number: int | None = None) -> dict:
    return {"type": kind, "seq": seq, "shoe": 1, "round": round_number, "data": data}


def test_composition_leaves_none_of_a_card_seen_too_often() -> None:
    analyst = Analyst(1, DEFAULT_PAY_TABLE, 20)
    sightings = ShoeSightings(1)
    sightings.feed(_event("shoe.burned", 1, {"cards": ["AS", "AS"]}))  # a confirmed duplicate
    composition = analyst.composition(sightings.seen())
    assert composition.card_counts[parse_card("AS").index] == 0
    assert composition.total == 51


def test_the_report_names_its_shoe_round_and_the_event_it_is_after() -> None:
    analyst = Analyst(8, DEFAULT_PAY_TABLE, 20)
    for event in [
        _event("shoe.shuffled", 40, {}),
        _event("round.started", 41, {}, 1),  # no trial flag: a real round
        _event("round.result", 42, {"player": ["AS", "8D"], "banker": ["4C", "3H"]}, 1),
    ]:
        analyst.feed({**event, "shoe": 4})
    report = analyst.report()
    assert report is not None
    assert (report["shoe"], report["round"], report["after_seq"]) == (4, 2, 42)
    assert report["cards_left"]["A"] == 31
    assert analyst.shoes[4].basis is not None
    assert analyst.shoes[4].basis.real_rounds == 1
    assert analyst.shoes[4].basis.seen == analyst.shoes[4].seen()
