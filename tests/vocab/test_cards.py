"""Cards: notations (docs/spec-push-api.md, docs/spec-protocol.md, field devices) and values (R5,
R2.2)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoe_controller.vocab.cards import (
    Card,
    CardError,
    Suit,
    burn_value,
    from_index,
    from_line_code,
    from_protocol,
    full_deck,
    parse_card,
    points,
)

cards = st.builds(Card, st.integers(1, 13), st.sampled_from(list(Suit)))


@pytest.mark.parametrize(
    ("text", "rank", "suit"),
    [
        ("TD", 10, Suit.D),
        ("QH", 12, Suit.H),
        ("10H", 10, Suit.H),
        ("4S", 4, Suit.S),
        ("AC", 1, Suit.C),
        ("KS", 13, Suit.S),
        (" jh ", 11, Suit.H),
    ],
)
def test_parse_card_reads_short_and_field_notation(text: str, rank: int, suit: Suit) -> None:
    assert parse_card(text) == Card(rank, suit)


@pytest.mark.parametrize("text", ["", "1S", "11H", "ZS", "QX", "QHH", "0D", "10", "T"])
def test_parse_card_rejects_what_names_no_card(text: str) -> None:
    with pytest.raises(CardError, match="not a card"):
        parse_card(text)


@given(cards)
def test_short_notation_round_trips(card: Card) -> None:
    text = str(card)
    assert len(text) == 2
    assert parse_card(text) == card


@pytest.mark.parametrize(
    ("code", "card"),
    [("A01", "AS"), ("A13", "KS"), ("H12", "QH"), ("C10", "TC"), ("D11", "JD"), ("d07", "7D")],
)
def test_line_codes(code: str, card: str) -> None:
    assert from_line_code(code) == parse_card(card)


@pytest.mark.parametrize("code", ["A00", "A14", "S01", "H1", "H001", "", "X12"])
def test_bad_line_codes(code: str) -> None:
    with pytest.raises(CardError, match="line code"):
        from_line_code(code)


def test_protocol_numbers() -> None:
    # docs/spec-protocol.md: suit 0 S, 1 H, 2 D, 3 C; rank 1-13.
    assert from_protocol(1, 0) == parse_card("AS")
    assert from_protocol(13, 3) == parse_card("KC")
    assert from_protocol(10, 2) == parse_card("TD")
    with pytest.raises(CardError):
        from_protocol(0, 0)
    with pytest.raises(CardError):
        from_protocol(14, 0)
    with pytest.raises(CardError, match="suit"):
        from_protocol(5, 4)


def test_deck_check_index_matches_protocol_layout() -> None:
    # docs/spec-protocol.md SHUFFLE_DONE: counts[(rank-1)*4 + suit]
    assert parse_card("AS").index == 0
    assert parse_card("AC").index == 3
    assert parse_card("2S").index == 4
    assert parse_card("KC").index == 51
    deck = full_deck()
    assert len(set(deck)) == 52
    assert [from_index(card.index) for card in deck] == list(deck)


@pytest.mark.parametrize(
    ("rank", "score", "burn"),
    [
        (1, 1, 1),
        (2, 2, 2),
        (5, 5, 5),
        (9, 9, 9),
        (10, 0, 10),
        (11, 0, 10),
        (12, 0, 10),
        (13, 0, 10),
    ],
)
def test_points_r5_and_burn_value_r2_2(rank: int, score: int, burn: int) -> None:
    card = Card(rank, Suit.H)
    assert points(card) == score
    assert burn_value(card) == burn


def test_pretty_uses_suit_symbols() -> None:
    assert parse_card("TD").pretty == "10♦"
    assert parse_card("QS").pretty == "Q♠"


def test_card_rejects_bad_values() -> None:
    with pytest.raises(CardError):
        Card(0, Suit.S)
    with pytest.raises(CardError):
        Card(3, "S")  # type: ignore[arg-type]


def test_cards_sort_by_rank_then_suit() -> None:
    assert sorted([Card(1, Suit.H), Card(1, Suit.S), Card(2, Suit.S)]) == [
        Card(1, Suit.S),
        Card(1, Suit.H),
        Card(2, Suit.S),
    ]
