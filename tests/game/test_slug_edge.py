"""The next round's worth of every bet if a slug goes on (game/surveillance/slug_edge.py).

What a slug is worth to a team is the gap between a bet's plain edge on the cards left and
its result on the previous shoe's next cards. Checked: a round dealt by hand from known
cards, each bet's result against the cage's settlement, the plain edge as the mean of the
results over every order of a small shoe (so both halves agree exactly), and the cases with
no answer (too few cards, a card never shown, Big and Small closed by R14.1).
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import pytest

from shoe_controller.game.odds import Composition
from shoe_controller.game.payouts import Bet, pay_table, returns_per_unit
from shoe_controller.game.rules import outcome
from shoe_controller.game.surveillance.edge import bet_edges
from shoe_controller.game.surveillance.slug_edge import next_round_worth, round_from
from shoe_controller.vocab.cards import Card, parse_card


def cards(text: str) -> list[Card]:
    return [parse_card(word) for word in text.split()]


def test_a_banker_natural_nine_dealt_from_the_next_cards() -> None:
    # P1 KH, B1 9S, P2 5D, B2 QC: Player 5, Banker 9, a natural: two cards each, no more.
    worth = next_round_worth(Composition.full_shoe(8), cards("KH 9S 5D QC 2H 3S"))
    known = worth["if_it_goes_on"]
    assert known["banker"] == 0.95
    assert known["banker_no_commission"] == 1.0  # not a winning six
    assert known["player"] == -1.0
    assert known["tie"] == -1.0
    assert known["small"] == 1.5  # four cards
    assert known["big"] == -1.0
    assert known["banker_dragon"] == 1.0  # a natural win pays 1 (R14 dragon)
    assert known["player_dragon"] == -1.0
    assert known["player_pair"] == known["banker_pair"] == known["any_pair"] == -1.0
    assert set(known) == {bet.value for bet in Bet}
    # The plain edge is the full shoe's: every bet favours the house.
    assert all(edge < 0 for edge in worth["edge"].values())
    assert worth["edge"]["banker"] == pytest.approx(-0.010579, abs=1e-6)


def test_a_tie_pushes_the_main_bets_and_pays_the_tie() -> None:
    # P 4+3 = 7, B 2+5 = 7: both stand, a tie of 7.
    worth = next_round_worth(Composition.full_shoe(8), cards("4H 2S 3D 5C"))
    known = worth["if_it_goes_on"]
    assert known["player"] == known["banker"] == known["banker_no_commission"] == 0.0
    assert known["tie"] == 8.0
    assert known["player_dragon"] == known["banker_dragon"] == -1.0  # a tie, not naturals


def test_the_round_takes_third_cards_by_the_rules() -> None:
    # P 2+3 = 5 draws (R10.1); B 4+K = 4, Player's third 6: Banker draws (R10.2), 4+5 = 9.
    dealt = round_from(cards("2H 4S 3D KC 6H 5S 9D"))
    assert dealt is not None
    assert [str(card) for card in dealt.player] == ["2H", "3D", "6H"]
    assert [str(card) for card in dealt.banker] == ["4S", "KC", "5S"]
    assert dealt.winner.value == "banker"


@pytest.mark.parametrize(
    ("next_cards", "why"),
    [
        (cards("2H 4S 3D KC 6H"), "the Banker's third card is not among them"),
        (cards("KH 9S 5D"), "four cards at least"),
        ([], "none at all"),
        ([*cards("KH 9S"), None, *cards("QC 2H 3S")], "P2 never shown"),
    ],
)
def test_no_answer_when_the_next_cards_do_not_make_a_round(
    next_cards: list[Card | None], why: str
) -> None:
    worth = next_round_worth(Composition.full_shoe(8), next_cards)
    assert worth["if_it_goes_on"] is None, why
    assert worth["edge"] is not None  # the plain edge does not need them


def test_a_card_not_shown_after_the_round_is_complete_does_not_matter() -> None:
    worth = next_round_worth(Composition.full_shoe(8), [*cards("KH 9S 5D QC"), None, None])
    assert worth["if_it_goes_on"] is not None
    assert worth["if_it_goes_on"]["banker"] == 0.95


def test_big_and_small_left_out_once_closed() -> None:
    worth = next_round_worth(Composition.full_shoe(8), cards("KH 9S 5D QC"), big_small_open=False)
    for side in ("edge", "if_it_goes_on"):
        assert "big" not in worth[side]
        assert "small" not in worth[side]
        assert "banker" in worth[side]


def test_too_few_cards_left_for_a_plain_edge() -> None:
    few = Composition(tuple(1 if index < 5 else 0 for index in range(52)))
    worth = next_round_worth(few, cards("KH 9S 5D QC"))
    assert worth["edge"] is None
    assert worth["if_it_goes_on"] is not None


def test_the_house_pay_table_is_used() -> None:
    table = pay_table({"tie": "9"})
    worth = next_round_worth(Composition.full_shoe(8), cards("4H 2S 3D 5C"), table)
    assert worth["if_it_goes_on"]["tie"] == 9.0
    assert worth["edge"]["tie"] > next_round_worth(Composition.full_shoe(8), [])["edge"]["tie"]


def test_the_plain_edge_is_the_mean_of_the_results_over_every_order() -> None:
    """On a 7-card shoe, every order equally likely: the mean of what each bet nets on the
    round dealt from it is the bet's plain edge, exactly (both halves count the same rules)."""
    shoe = cards("AH 2S 3D 4C 5H 6S 9D")
    composition = Composition(tuple(Counter(card.index for card in shoe)[i] for i in range(52)))
    totals: Counter[str] = Counter()
    orders = list(itertools.permutations(shoe))
    for order in orders:
        dealt = round_from(order)
        assert dealt is not None
        for bet, value in returns_per_unit(dealt).items():
            totals[bet] += value
    plain = bet_edges(composition)
    for bet in Bet:
        assert Fraction(totals[bet.value], len(orders)) == plain[bet.value].player_edge, bet
    # And what next_round_worth reports is those fractions as floats.
    reported = next_round_worth(composition, [])["edge"]
    assert reported == {bet: float(edge.player_edge) for bet, edge in plain.items()}


def test_the_outcome_is_the_rules_outcome() -> None:
    sequence = cards("2H 4S 3D KC 6H 5S")
    assert round_from(sequence) == outcome(sequence)
