"""R14 pay table and settlement, in exact money."""

import random
from decimal import Decimal

import pytest

from shoe_controller.game.payouts import (
    DEFAULT_PAY_TABLE,
    Bet,
    PayoutError,
    Result,
    pay_table,
    returns_per_unit,
    settle,
)
from shoe_controller.game.rules import Outcome, next_position, outcome
from shoe_controller.vocab.cards import Card, full_deck, parse_card


def result_of(text: str) -> Outcome:
    return outcome([parse_card(word) for word in text.split()])


PLAYER_WINS_7_0 = result_of("7S KH KD KC KS")  # P 7 stands, B 0 draws K: player by 7
BANKER_WINS_6_ON_2 = result_of("2S 3H 3D 3C KS")  # P 5 draws 0; B 6 stands: banker 6 v 5
BANKER_NATURAL = result_of("2S 9H 3D KC")
TIE_PAIRS = result_of("2S 3H 2D 3C 5S")  # both hands pair; P 9 v B 6 on five cards
NATURAL_TIE = result_of("9S 9H KD KC")
PLAYER_WINS_BY_9 = result_of("9S KH KD 5C")  # natural 9 v 5? B 5 -> natural ends: player


def test_tie_pairs_round_is_what_the_tests_below_assume() -> None:
    # P 2+2 = 4 draws 5 -> 9; B 3+3 = 6 draws on v=5? R9.4 6 draws only on 6-7: stands.
    assert TIE_PAIRS.player_total == 9
    assert TIE_PAIRS.banker_total == 6
    assert TIE_PAIRS.cards == 5


@pytest.mark.parametrize(
    ("bet", "result", "expected", "winnings"),
    [
        (Bet.PLAYER, PLAYER_WINS_7_0, Result.WIN, 100),
        (Bet.BANKER, PLAYER_WINS_7_0, Result.LOSE, 0),
        (Bet.BANKER, BANKER_NATURAL, Result.WIN, 95),
        (Bet.BANKER_NO_COMMISSION, BANKER_NATURAL, Result.WIN, 100),
        (Bet.BANKER_NO_COMMISSION, BANKER_WINS_6_ON_2, Result.WIN, 50),
        (Bet.BANKER, BANKER_WINS_6_ON_2, Result.WIN, 95),
        (Bet.PLAYER, NATURAL_TIE, Result.PUSH, 0),
        (Bet.BANKER, NATURAL_TIE, Result.PUSH, 0),
        (Bet.TIE, NATURAL_TIE, Result.WIN, 800),
        (Bet.TIE, PLAYER_WINS_7_0, Result.LOSE, 0),
        (Bet.PLAYER_PAIR, TIE_PAIRS, Result.WIN, 1100),
        (Bet.BANKER_PAIR, TIE_PAIRS, Result.WIN, 1100),
        (Bet.ANY_PAIR, TIE_PAIRS, Result.WIN, 500),
        (Bet.PERFECT_PAIR, TIE_PAIRS, Result.LOSE, 0),
        (Bet.BIG, TIE_PAIRS, Result.WIN, 50),
        (Bet.SMALL, TIE_PAIRS, Result.LOSE, 0),
        (Bet.SMALL, BANKER_NATURAL, Result.WIN, 150),
        (Bet.BIG, BANKER_NATURAL, Result.LOSE, 0),
        (Bet.LUCKY6, BANKER_WINS_6_ON_2, Result.WIN, 1200),
        (Bet.LUCKY6, BANKER_NATURAL, Result.LOSE, 0),
    ],
)
def test_r14_settlement(bet: Bet, result: Outcome, expected: Result, winnings: int) -> None:
    settled = settle(bet, 100, result, round_number=5)
    assert settled.result is expected
    assert settled.winnings == winnings
    assert settled.returned == (0 if expected is Result.LOSE else 100 + winnings)


def test_lucky6_on_three_cards_pays_20() -> None:
    three = result_of("KS 2H KD 2C 2S 2H")
    assert settle(Bet.LUCKY6, 10, three, 1).winnings == 200


def test_perfect_pair_pays_25() -> None:
    assert settle(Bet.PERFECT_PAIR, 10, result_of("JS 2H JS 2H 9S"), 1).winnings == 250


@pytest.mark.parametrize(
    ("text", "bet", "expected", "winnings"),
    [
        ("7S KH KD KC KS", Bet.PLAYER_DRAGON, Result.WIN, 1),  # player 7 v 0: margin 7 pays 5
        ("9S KH KD 5C", Bet.PLAYER_DRAGON, Result.WIN, 1),  # natural win pays 1
        ("9S 9H KD KC", Bet.PLAYER_DRAGON, Result.PUSH, 0),  # natural tie returns the stake
        ("9S 9H KD KC", Bet.BANKER_DRAGON, Result.PUSH, 0),
        ("6S 3H KD 3C", Bet.PLAYER_DRAGON, Result.LOSE, 0),  # non-natural tie loses
        ("2S 3H 3D 3C KS", Bet.BANKER_DRAGON, Result.LOSE, 0),  # banker by 1 only
        ("2S 3H 3D 3C KS", Bet.PLAYER_DRAGON, Result.LOSE, 0),
    ],
)
def test_r14_dragon(text: str, bet: Bet, expected: Result, winnings: int) -> None:
    settled = settle(bet, 1, result_of(text), 1)
    assert settled.result is expected
    if expected is Result.WIN and result_of(text).natural is None:
        assert settled.winnings == DEFAULT_PAY_TABLE[f"dragon_margin_{result_of(text).margin}"]
    elif expected is Result.WIN:
        assert settled.winnings == winnings


@pytest.mark.parametrize(("margin", "pays"), [(9, 30), (8, 10), (7, 5), (6, 3), (5, 2), (4, 1)])
def test_r14_dragon_margin_table(margin: int, pays: int) -> None:
    # Player 7 or 9 on three cards against banker totals that give each margin.
    # P 0+0 draws 9 -> 9; banker 0+0 draws (R9.4 total 0 always) its third card.
    banker_third = 9 - margin
    banker_card = "KA23456789"[banker_third] + "C"
    result = result_of(f"KS KH KD KC 9S {banker_card}")
    assert result.natural is None
    assert result.margin == margin
    assert settle(Bet.PLAYER_DRAGON, 10, result, 1).winnings == 10 * pays


def test_r14_1_big_small_refused_after_round_20() -> None:
    assert settle(Bet.BIG, 100, TIE_PAIRS, 20).result is Result.WIN
    with pytest.raises(PayoutError, match=r"R14\.1"):
        settle(Bet.BIG, 100, TIE_PAIRS, 21)
    with pytest.raises(PayoutError, match=r"R14\.1"):
        settle(Bet.SMALL, 100, BANKER_NATURAL, 30)
    assert settle(Bet.PLAYER, 100, TIE_PAIRS, 30).result is Result.WIN
    # A house that closes Big/Small later (R14.2: houses differ).
    assert settle(Bet.BIG, 100, TIE_PAIRS, 25, big_small_last_round=30).result is Result.WIN
    with pytest.raises(PayoutError, match="after round 30"):
        settle(Bet.BIG, 100, TIE_PAIRS, 31, big_small_last_round=30)


def test_commission_rounds_down_to_whole_units() -> None:
    assert settle(Bet.BANKER, 15, BANKER_NATURAL, 1).winnings == 14  # 14.25
    assert settle(Bet.BIG, 3, TIE_PAIRS, 1).winnings == 1  # 1.5


def test_r14_2_house_overrides() -> None:
    table = pay_table({"tie": "9", "banker": Decimal("0.96")})
    assert settle(Bet.TIE, 10, NATURAL_TIE, 1, table).winnings == 90
    assert settle(Bet.BANKER, 100, BANKER_NATURAL, 1, table).winnings == 96
    assert DEFAULT_PAY_TABLE["tie"] == 8  # the defaults are untouched


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tie_bet": 9}, "unknown pay table entry"),
        ({"tie": 8.5}, "must be a number as text"),
        ({"tie": "eight"}, "not a number"),
        ({"tie": "-1"}, "zero or more"),
        ({"tie": True}, "must be a number"),
    ],
)
def test_bad_pay_table(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(PayoutError, match=message):
        pay_table(overrides)


@pytest.mark.parametrize("stake", [0, -5, 1.5, True])
def test_bad_stake(stake: object) -> None:
    with pytest.raises(PayoutError, match="stake"):
        settle(Bet.PLAYER, stake, TIE_PAIRS, 1)  # type: ignore[arg-type]


def test_unknown_bet() -> None:
    with pytest.raises(PayoutError, match="unknown bet"):
        settle("martingale", 10, TIE_PAIRS, 1)


@pytest.mark.parametrize("bet", list(Bet))
@pytest.mark.parametrize(
    "result", [PLAYER_WINS_7_0, BANKER_WINS_6_ON_2, BANKER_NATURAL, TIE_PAIRS, NATURAL_TIE]
)
def test_a_bet_given_by_name_settles_as_the_bet_itself(bet: Bet, result: Outcome) -> None:
    # Config and the push API name bets as text: "player" must never lose a winning Player bet.
    by_name = settle(bet.value, 100, result, round_number=5)
    assert by_name == settle(bet, 100, result, round_number=5)


def test_a_winning_player_bet_given_by_name_is_paid() -> None:
    settled = settle("player", 100, PLAYER_WINS_7_0, round_number=5)
    assert (settled.result, settled.winnings) == (Result.WIN, 100)


@pytest.mark.parametrize("bet", [Bet.PLAYER_PAIR, Bet.BANKER_PAIR, Bet.ANY_PAIR])
def test_r13_pair_bets_lose_without_a_pair(bet: Bet) -> None:
    assert not BANKER_NATURAL.any_pair  # P 2S 3D, B 9H KC
    assert settle(bet, 100, BANKER_NATURAL, 1).result is Result.LOSE


def test_r13_one_side_pair_wins_any_pair_and_only_that_side() -> None:
    banker_pair_only = PLAYER_WINS_7_0  # P 7S KD, B KH KC
    assert settle(Bet.BANKER_PAIR, 10, banker_pair_only, 1).winnings == 110
    assert settle(Bet.PLAYER_PAIR, 10, banker_pair_only, 1).result is Result.LOSE
    assert settle(Bet.ANY_PAIR, 10, banker_pair_only, 1).winnings == 50


@pytest.mark.parametrize(
    ("text", "bet", "pays"),
    [
        ("2S 9H 3D KC", Bet.BANKER_DRAGON, 1),  # banker natural 9 v 5: natural pays 1
        ("9S 7H KD KC", Bet.PLAYER_DRAGON, 1),  # natural 9 v 7, margin 2: still pays 1
        ("9S 8H KD KC", Bet.PLAYER_DRAGON, 1),  # both natural, player wins by 1: pays 1
        ("8S 9H KD KC", Bet.BANKER_DRAGON, 1),  # both natural, banker wins by 1: pays 1
    ],
)
def test_r14_dragon_natural_wins_whatever_the_margin(text: str, bet: Bet, pays: int) -> None:
    result = result_of(text)
    settled = settle(bet, 10, result, 1)
    assert settled.result is Result.WIN
    assert settled.winnings == 10 * pays


def test_r14_banker_dragon_wins_by_margin_on_three_cards() -> None:
    result = result_of("KS KH KD KC 2S 9C")  # banker 9 v player 2, no natural: margin 7
    assert (result.natural, result.margin) == (None, 7)
    assert settle(Bet.BANKER_DRAGON, 10, result, 1).winnings == 50
    assert settle(Bet.PLAYER_DRAGON, 10, result, 1).result is Result.LOSE


def test_r14_2_a_house_may_pay_nothing_on_an_entry() -> None:
    table = pay_table({"dragon_margin_4": 0})  # zero is allowed: the entry is switched off
    assert table["dragon_margin_4"] == 0
    assert settle(Bet.PLAYER_DRAGON, 10, result_of("KS KH KD KC 9S 5C"), 1, table).winnings == 0


def test_each_result_is_what_the_cage_pays_a_unit() -> None:
    """returns_per_unit against settle() on many rounds: a win's odds, -1, 0."""
    rng = random.Random(28)
    deck = list(full_deck()) * 8
    stake = 10_000  # a stake the cage pays without rounding (odds to a hundredth)
    for _ in range(300):
        drawn: list[Card] = []
        for card in rng.sample(deck, 6):
            if next_position(drawn) is None:
                break
            drawn.append(card)
        dealt = outcome(drawn)
        for bet, value in returns_per_unit(dealt).items():
            settled = settle(bet, stake, dealt, 1)
            if settled.result is Result.LOSE:
                assert value == -1
            elif settled.result is Result.PUSH:
                assert value == 0
            else:
                assert value * stake == settled.winnings, bet
