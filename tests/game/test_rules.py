"""The rules of a round: R5, R7, R9 (every cell of the R9.4 table), R11-R13, R16."""

import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shoe_testkit.table import PUSH_API_FIELDS

from shoe_controller.game.rules import (
    InsuranceOffer,
    InsuranceResult,
    Position,
    RoundError,
    Side,
    banker_draws,
    hand_total,
    insurance_limits,
    insurance_offers,
    next_position,
    outcome,
    player_draws,
    positions_of,
    settle_insurance,
    split_hands,
)
from shoe_controller.vocab.cards import Card, Suit, parse_card, points


def cards(text: str) -> list[Card]:
    return [parse_card(word) for word in text.split()]


def card_worth(value: int, suit: Suit = Suit.S) -> Card:
    """A card of the given points: K for 0, else the rank itself."""
    return Card(value or 13, suit)


def deal(player_two: tuple[int, int], banker_two: tuple[int, int], *more: int) -> list[Card]:
    """Cards in dealing order P1 B1 P2 B2 (then third cards) with the given points."""
    p1, p2 = player_two
    b1, b2 = banker_two
    suits = iter([Suit.S, Suit.H, Suit.D, Suit.C, Suit.H, Suit.D])
    return [card_worth(v, next(suits)) for v in (p1, b1, p2, b2, *more)]


# R9.4 exactly as docs/rules.md writes it: banker total -> third-card points on which Banker draws.
R9_4_DRAWS_WHEN = {
    0: set(range(10)),
    1: set(range(10)),
    2: set(range(10)),
    3: set(range(10)) - {8},
    4: {2, 3, 4, 5, 6, 7},
    5: {4, 5, 6, 7},
    6: {6, 7},
    7: set(),
}


@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("third", range(10))
def test_r9_4_every_cell(banker_total: int, third: int) -> None:
    assert banker_draws(banker_total, third) == (third in R9_4_DRAWS_WHEN[banker_total])


@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("third", range(10))
def test_r9_4_every_cell_through_the_dealing_order(banker_total: int, third: int) -> None:
    # Player 0+3 = 3 draws (R9.2); banker made of two cards totalling banker_total.
    first, second = (banker_total, 0) if banker_total else (0, 0)
    round_cards = deal((0, 3), (first, second), third)
    assert next_position(round_cards[:4]) is Position.P3
    expected = Position.B3 if third in R9_4_DRAWS_WHEN[banker_total] else None
    assert next_position(round_cards) is expected


@pytest.mark.parametrize("total", range(8))
def test_r9_2_player_draws_on_0_to_5(total: int) -> None:
    assert player_draws(total) == (total <= 5)


@pytest.mark.parametrize("total", range(8))
def test_r9_3_banker_when_player_stood(total: int) -> None:
    assert banker_draws(total, None) == (total <= 5)
    # Player stands on 6 (3+3): the banker's decision alone remains.
    round_cards = deal((3, 3), (total, 0))
    assert next_position(round_cards) == (Position.B3 if total <= 5 else None)


@pytest.mark.parametrize("natural", [8, 9])
@pytest.mark.parametrize("other", range(10))
def test_r9_1_natural_ends_the_round(natural: int, other: int) -> None:
    assert next_position(deal((natural, 0), (other, 0))) is None
    assert next_position(deal((other, 0), (natural, 0))) is None


def test_r7_dealing_order() -> None:
    assert [next_position(cards("2S 3H 4D KC")[:n]) for n in range(4)] == [
        Position.P1,
        Position.B1,
        Position.P2,
        Position.B2,
    ]
    # Player 2+4=6 stands, banker 3+0=3 draws: the fifth card is B3, not P3.
    assert positions_of(cards("2S 3H 4D KC 5S"))[4] is Position.B3
    # Player 2+2=4 draws; banker 3+0=3 with P3=5 draws.
    assert positions_of(cards("2S 3H 2D KC 5S 6H")) == list(Position)


def test_cards_after_the_round_is_complete_are_refused() -> None:
    with pytest.raises(RoundError, match="more than this round takes"):
        next_position(cards("9S 3H KD 3C AS"))  # natural 9: four cards only
    with pytest.raises(RoundError, match="after the round was complete"):
        positions_of(cards("9S 3H KD 3C AS"))


def test_rounds_that_are_not_complete_or_too_long_are_refused_with_the_count() -> None:
    natural = cards("9S KH KD KC")  # player 9: a natural ends the round at four cards
    with pytest.raises(RoundError, match=r"^5 cards are more than this round takes \(4\)$"):
        next_position([*natural, parse_card("5S")])
    with pytest.raises(RoundError, match=r"^card 5 \(5S\) came after the round was complete$"):
        positions_of([*natural, parse_card("5S")])
    drawing = cards("KS KH KD KC")  # 0 v 0: the player draws
    with pytest.raises(RoundError, match=r"^the round is not complete after 4 cards$"):
        outcome(drawing)
    with pytest.raises(RoundError, match=r"^the round is not complete after 3 cards$"):
        outcome(drawing[:3])
    with pytest.raises(RoundError, match=r"^7 cards are more than this round takes \(6\)$"):
        next_position([*drawing, *cards("KS KH KD")])


def test_r5_hand_total_is_modulo_10() -> None:
    assert hand_total(cards("7S 8H")) == 5
    assert hand_total(cards("KS QH JD")) == 0
    assert hand_total(cards("AS 9H")) == 0
    assert hand_total(cards("9S 9H 9D")) == 7


def test_outcome_fields_of_a_six_card_round() -> None:
    # P: 2 2 5 -> 9 ; B: 3 K 6 -> 9 : a tie on six cards.
    result = outcome(cards("2S 3H 2D KC 5S 6H"))
    assert result.player == tuple(cards("2S 2D 5S"))
    assert result.banker == tuple(cards("3H KC 6H"))
    assert (result.player_total, result.banker_total) == (9, 9)
    assert result.winner is Side.TIE
    assert result.natural is None
    assert result.player_pair  # 2S 2D (R13: suits ignored)
    assert not result.banker_pair
    assert not result.perfect_pair
    assert result.any_pair
    assert result.cards == 6
    assert result.big
    assert result.lucky6 is None
    assert not result.banker_six
    assert result.margin == 0


def test_result_data_has_every_push_api_field() -> None:
    data = outcome(cards("6S 3H KD 3C")).result_data()
    # docs/spec-push-api.md, written once for tests
    assert set(data) == PUSH_API_FIELDS["round.result"]
    # P 6+0 = 6 stands; B 3+3 = 6 stands (R9.3): tie, small.
    assert data["player"] == ["6S", "KD"]
    assert data["banker"] == ["3H", "3C"]
    assert data["winner"] == "tie"
    assert data["big"] is False
    assert data["banker_pair"] is True


@pytest.mark.parametrize(
    ("text", "natural", "winner"),
    [
        ("8S 2H KD 3C", "player", Side.PLAYER),
        ("2S 8H 3D KC", "banker", Side.BANKER),
        ("8S 9H KD KC", "both", Side.BANKER),
        ("9S 9H KD KC", "both", Side.TIE),
    ],
)
def test_naturals(text: str, natural: str, winner: Side) -> None:
    result = outcome(cards(text))
    assert result.natural == natural
    assert result.winner is winner
    assert result.cards == 4


def test_r13_pairs_and_perfect_pairs() -> None:
    assert outcome(cards("JS 2H JH 2C 9S")).player_pair  # J♠J♥ pairs
    assert not outcome(cards("JS 2H QS 3C 9S")).player_pair  # J♠Q♠ does not
    both = outcome(cards("JS 2H JS 2H 9S"))  # two decks: identical cards
    assert both.perfect_pair
    assert both.player_perfect_pair
    assert both.banker_perfect_pair
    assert not outcome(cards("JS 2H JH 2C 9S")).perfect_pair
    # A third card never makes a pair: only the first two count.
    third = outcome(cards("2S 3H 4D KC 2H"))
    assert third.player == tuple(cards("2S 4D"))
    assert not third.player_pair


def test_lucky6_on_two_and_three_cards() -> None:
    # B 3+3 = 6 v P 2+3 = 5 -> P draws K (0): 5; B 6 with v=0 stands -> Banker wins with 6 on 2.
    two = outcome(cards("2S 3H 3D 3C KS"))
    assert (two.winner, two.banker_total, two.lucky6, two.banker_six) == (Side.BANKER, 6, 2, True)
    # P K+K = 0 draws 2; B 2+2 = 4 draws on v=2 (R9.4) a 2 -> 6 on three cards.
    three = outcome(cards("KS 2H KD 2C 2S 2H"))
    assert (three.winner, three.banker_total, three.lucky6) == (Side.BANKER, 6, 3)
    assert outcome(cards("9S 7H KD 9C")).lucky6 is None  # banker 6 loses to a natural
    assert outcome(cards("6S 9H KD 7C")).lucky6 is None  # tie at 6: no Lucky 6


def round_strategy() -> st.SearchStrategy[list[Card]]:
    """A complete round drawn card by card from a random (infinite-deck) stream."""
    card = st.builds(Card, st.integers(1, 13), st.sampled_from(list(Suit)))
    return st.lists(card, min_size=6, max_size=6).map(complete_round)


def complete_round(stream: list[Card]) -> list[Card]:
    dealt: list[Card] = []
    while next_position(dealt) is not None:
        dealt.append(stream[len(dealt)])
    return dealt


@given(round_strategy())
def test_property_rounds_obey_the_drawing_rules(round_cards: list[Card]) -> None:
    result = outcome(round_cards)
    player, banker = split_hands(round_cards)
    assert 2 <= len(player) <= 3
    assert 2 <= len(banker) <= 3
    assert result.cards == len(round_cards) == len(player) + len(banker)
    p_two, b_two = hand_total(player[:2]), hand_total(banker[:2])
    if p_two >= 8 or b_two >= 8:
        assert len(round_cards) == 4
    else:
        assert (len(player) == 3) == (p_two <= 5)
        third = points(player[2]) if len(player) == 3 else None
        assert (len(banker) == 3) == banker_draws(b_two, third)
    expected = (
        Side.PLAYER
        if result.player_total > result.banker_total
        else Side.BANKER
        if result.banker_total > result.player_total
        else Side.TIE
    )
    assert result.winner is expected
    assert result.margin == abs(result.player_total - result.banker_total)
    assert result.big == (len(round_cards) >= 5)
    if result.lucky6:
        assert result.winner is Side.BANKER
        assert result.banker_total == 6
        assert result.lucky6 == len(banker)


# ---- R16 insurance ----------------------------------------------------------------------

R16_3_BANKER = [  # stage, banker totals, player totals, odds
    (1, {4}, range(0, 4), Fraction(3, 2)),
    (1, {5}, range(0, 5), Fraction(2)),
    (1, {6}, range(0, 6), Fraction(3)),
    (1, {7}, range(0, 6), Fraction(4)),
    (2, {1}, {1}, Fraction(7)),
    (2, {1, 2, 3}, {0}, Fraction(10)),
]
R16_4_PLAYER = [
    (1, range(0, 6), {6}, Fraction(3)),
    (1, range(0, 6), {7}, Fraction(4)),
    (2, range(0, 4), {4}, Fraction(3, 2)),
    (2, range(0, 5), {5}, Fraction(2)),
    (2, range(0, 6), {6}, Fraction(3)),
    (2, range(0, 7), {7}, Fraction(4)),
    (2, range(0, 7), {8}, Fraction(8)),
    (2, range(0, 7), {9}, Fraction(10)),
]


def expected_offers(stage: int, banker: int, player: int) -> set[tuple[Side, Fraction]]:
    found = set()
    for side, table in ((Side.BANKER, R16_3_BANKER), (Side.PLAYER, R16_4_PLAYER)):
        for row_stage, banker_totals, player_totals, odds in table:
            if row_stage == stage and banker in banker_totals and player in player_totals:
                found.add((side, odds))
    return found


def two_card_points(total: int) -> tuple[int, int]:
    return (total, 0)


@pytest.mark.parametrize("banker", range(8))
@pytest.mark.parametrize("player", range(8))
def test_r16_stage_1_every_total(banker: int, player: int) -> None:
    round_cards = deal(two_card_points(player), two_card_points(banker))
    offers = insurance_offers(round_cards)
    still_open = next_position(round_cards) is not None
    expected = expected_offers(1, banker, player) if still_open else set()  # R16.5
    assert {(offer.side, offer.odds) for offer in offers} == expected
    assert all(offer.stage == 1 for offer in offers)


@pytest.mark.parametrize("banker", range(8))
@pytest.mark.parametrize("player_final", range(10))
def test_r16_stage_2_every_total(banker: int, player_final: int) -> None:
    # Player 0 + 0 draws; its third card gives its final total.
    round_cards = deal((0, 0), two_card_points(banker), player_final)
    offers = insurance_offers(round_cards)
    banker_will_draw = banker_draws(banker, player_final)
    expected = expected_offers(2, banker, player_final) if banker_will_draw else set()  # R16.5
    assert {(offer.side, offer.odds) for offer in offers} == expected
    assert all(offer.stage == 2 for offer in offers)


@pytest.mark.parametrize("player_third", [6, 7])
@pytest.mark.parametrize("player_two", range(6))
def test_r16_4_stage_2_against_banker_6_while_the_banker_still_draws(
    player_two: int, player_third: int
) -> None:
    # Banker 6 draws only on a third card of 6 or 7 (R9.4): then the round is still open and
    # every stage-2 Player cell with banker 6 applies, Player 8 (pays 8) and 9 (pays 10) too.
    round_cards = deal((player_two, 0), (6, 0), player_third)
    player_final = (player_two + player_third) % 10
    assert next_position(round_cards) is Position.B3  # still open: R16.5 does not apply
    offers = insurance_offers(round_cards)
    assert {(offer.side, offer.odds) for offer in offers} == expected_offers(2, 6, player_final)
    assert all((o.stage, o.banker_total, o.player_total) == (2, 6, player_final) for o in offers)


@pytest.mark.parametrize(("player_two", "player_third", "odds"), [(2, 6, 8), (1, 7, 8), (3, 6, 10)])
def test_r16_4_player_8_or_9_against_banker_6_pays_8_or_10(
    player_two: int, player_third: int, odds: int
) -> None:
    offers = insurance_offers(deal((player_two, 0), (6, 0), player_third))
    assert [(o.side, o.odds) for o in offers] == [(Side.PLAYER, Fraction(odds))]


def test_r16_1_no_insurance_on_a_natural() -> None:
    assert insurance_offers(deal((8, 0), (4, 0))) == []
    assert insurance_offers(deal((0, 3), (9, 0))) == []


def test_r16_5_decided_round_offers_nothing() -> None:
    # Banker 6, Player 7 stands; banker 6 stands too: decided, though R16.4 lists no cell.
    # Banker 7 v Player 6 stage 1 would be decided as well (both stand).
    assert insurance_offers(deal((6, 0), (7, 0))) == []
    # Stage 2: Player 0+0 then 7 (total 7); banker 6 draws on v=7 -> open, pays 4.
    open_round = insurance_offers(deal((0, 0), (6, 0), 7))
    assert [(o.side, o.odds) for o in open_round] == [(Side.PLAYER, Fraction(4))]
    # Same totals but v=7 via 3+4: player 3+0 draws 4 -> 7; banker 6 stands on v=4: decided.
    assert insurance_offers(deal((3, 0), (6, 0), 4)) == []


def test_no_insurance_at_other_moments() -> None:
    assert insurance_offers(deal((0, 0), (0, 0))[:3]) == []
    assert insurance_offers(deal((3, 3), (1, 0), 5)) == []  # fifth card is B3: no stage 2


def make_offer(side: Side, stage: int) -> InsuranceOffer:
    return InsuranceOffer(side, stage, Fraction(2), 0, 0)


@pytest.mark.parametrize(
    ("side", "stage", "text", "expected"),
    [
        # P 0+0 -> draws 9 = 9; B 3+0 draws v=9 -> K = 3: Player wins.
        (Side.BANKER, 1, "KS 3H KD KC 9S KH", InsuranceResult.WIN),
        (Side.PLAYER, 1, "KS 3H KD KC 9S KH", InsuranceResult.LOSE),
        # P 0 draws K -> 0 ; B 3 draws 4 -> 7: Banker wins.
        (Side.BANKER, 2, "KS 3H KD KC KS 4H", InsuranceResult.LOSE),
        (Side.PLAYER, 2, "KS 3H KD KC KS 4H", InsuranceResult.WIN),
        # Tie at 0 after stage 2: wins Banker insurance (R16.3), returned for Player's.
        (Side.BANKER, 2, "KS 3H KD KC KS 7H", InsuranceResult.WIN),
        (Side.PLAYER, 2, "KS 3H KD KC KS 7H", InsuranceResult.PUSH),
        (Side.BANKER, 1, "KS 3H KD KC KS 7H", InsuranceResult.PUSH),
        # Tie at 9 after stage 2: P 0 draws 9; B 2 draws 7 -> 9.
        (Side.PLAYER, 2, "KS 2H KD KC 9S 7H", InsuranceResult.WIN),
        (Side.BANKER, 2, "KS 2H KD KC 9S 7H", InsuranceResult.PUSH),
        (Side.PLAYER, 1, "KS 2H KD KC 9S 7H", InsuranceResult.PUSH),
    ],
)
def test_r16_settlement(side: Side, stage: int, text: str, expected: InsuranceResult) -> None:
    assert settle_insurance(make_offer(side, stage), outcome(cards(text))) is expected


def test_r16_7_limits() -> None:
    # min = floor(100 / 1.5) = 66; max = floor(1000 / 1.5) - 1 = 665.
    assert insurance_limits(100, 1000, Fraction(3, 2)) == (66, 665)
    # Small main bet: max = floor(150 / 10) - 1 = 14 < min 10? no: 14 >= 10.
    assert insurance_limits(100, 150, Fraction(10)) == (10, 14)
    # max below min: only the minimum may be bet.
    assert insurance_limits(100, 100, Fraction(4)) == (25, 25)


def test_offer_event_data_gives_whole_odds_as_integers() -> None:
    # docs/spec-push-api.md: odds 3 is written 3, not 3.0; 1.5 stays 1.5.
    offer = InsuranceOffer(Side.PLAYER, 1, Fraction(3), 2, 6)
    assert json.dumps(offer.event_data()["odds"]) == "3"
    assert (
        json.dumps(InsuranceOffer(Side.BANKER, 1, Fraction(3, 2), 4, 2).event_data()["odds"])
        == "1.5"
    )


def test_offer_event_data() -> None:
    offer = insurance_offers(deal((2, 0), (4, 0)))[0]
    assert offer.event_data() == {
        "side": "banker",
        "stage": 1,
        "odds": 1.5,
        "banker_total": 4,
        "player_total": 2,
    }
