"""The one fold of a shoe's public cards (game/shoe_cards.py): what each event makes public
(R15)."""

from __future__ import annotations

from collections import Counter

from shoe_controller.game.shoe_cards import ShoeCards, hands, public_card
from shoe_controller.vocab.cards import Card, parse_card


def cards(*names: str) -> list[Card]:
    return [parse_card(name) for name in names]


def test_a_card_not_named_or_damaged_is_unseen() -> None:
    assert public_card("10h") == parse_card("TH")
    assert [public_card(value) for value in (None, "hidden", "ZZ", 7, ["AS"])] == [None] * 5


def test_a_results_hands_come_in_dealing_order() -> None:
    assert list(hands(["AS", "2H", None], ["KD", "QC"]).items()) == [
        ("P1", parse_card("AS")),
        ("B1", parse_card("KD")),
        ("P2", parse_card("2H")),
        ("B2", parse_card("QC")),
        ("P3", None),
    ]
    assert hands(None, "AS") == {}


def test_a_squeezed_round_is_seen_at_its_end_and_only_as_public() -> None:
    shoe = ShoeCards()
    shoe.feed("shoe.burned", None, {"cards": ["AS"], "count": 3})
    shoe.feed("round.started", 1, {})
    for position in ("P1", "B1", "P2", "B2"):
        shoe.feed("card.dealt", 1, {"position": position, "card": None})  # squeezed
    shoe.feed("card.revealed", 1, {"position": "P1", "card": "9C"})
    assert shoe.round(1).positions["P1"] == parse_card("9C")
    assert shoe.seen() == Counter(cards("AS"))  # a round in progress is not out yet
    shoe.feed("round.result", 1, {"player": ["9C", "TD"], "banker": ["2S", None]})
    assert shoe.seen() == Counter(cards("AS", "9C", "TD", "2S"))
    assert shoe.burned_count == 3
    # R10.4: a void withdraws the result; its cards are every card the round took.
    shoe.feed("round.voided", 1, {"reason": "x", "cards": ["9C", None, "KH"]})
    assert list(shoe.round(1).taken()) == ["#1", "#2", "#3"]
    assert shoe.seen() == Counter(cards("AS", "9C", "KH"))


def test_an_extra_card_is_seen_at_once_and_once_when_burned() -> None:
    shoe = ShoeCards()
    shoe.feed("card.extra", 2, {"card": "5D"})
    assert shoe.seen() == Counter(cards("5D"))
    shoe.feed("shoe.burned", None, {"cards": ["5D"]})
    assert shoe.seen() == Counter(cards("5D"))
    assert shoe.burned_count == 1
