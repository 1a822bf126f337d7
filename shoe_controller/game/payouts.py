"""The pay table (R14) and the settlement of a bet on a finished round, in exact money."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from types import MappingProxyType

from shoe_controller.game.rules import Outcome, Side

BIG_SMALL_LAST_ROUND = 20  # R14.1


class Bet(StrEnum):
    PLAYER = "player"
    BANKER = "banker"
    BANKER_NO_COMMISSION = "banker_no_commission"
    TIE = "tie"
    PLAYER_PAIR = "player_pair"
    BANKER_PAIR = "banker_pair"
    ANY_PAIR = "any_pair"
    PERFECT_PAIR = "perfect_pair"
    BIG = "big"
    SMALL = "small"
    LUCKY6 = "lucky6"
    PLAYER_DRAGON = "player_dragon"
    BANKER_DRAGON = "banker_dragon"


class PayoutError(ValueError):
    """A bet that cannot be settled: refused by the rules, or a pay table that is wrong."""


# The key of each odds entry; dragons are paid by margin (`margin_9` ... `margin_4`) and
# `natural` (R14). Amounts are "pays x to 1" (a winning stake of 1 is paid x).
DEFAULT_PAY_TABLE: Mapping[str, Decimal] = MappingProxyType(
    {
        "player": Decimal(1),
        "banker": Decimal("0.95"),
        "banker_no_commission": Decimal(1),
        "banker_no_commission_six": Decimal("0.5"),
        "tie": Decimal(8),
        "player_pair": Decimal(11),
        "banker_pair": Decimal(11),
        "any_pair": Decimal(5),
        "perfect_pair": Decimal(25),
        "big": Decimal("0.5"),
        "small": Decimal("1.5"),
        "lucky6_2cards": Decimal(12),
        "lucky6_3cards": Decimal(20),
        "dragon_margin_9": Decimal(30),
        "dragon_margin_8": Decimal(10),
        "dragon_margin_7": Decimal(5),
        "dragon_margin_6": Decimal(3),
        "dragon_margin_5": Decimal(2),
        "dragon_margin_4": Decimal(1),
        "dragon_natural": Decimal(1),
    }
)


def pay_table(overrides: Mapping[str, object] | None = None) -> Mapping[str, Decimal]:
    """The default pay table with a house's overrides from config (R14.2), checked."""
    table = dict(DEFAULT_PAY_TABLE)
    for key, value in (overrides or {}).items():
        if key not in table:
            raise PayoutError(f"unknown pay table entry {key!r}; known: {sorted(table)}")
        if isinstance(value, bool) or not isinstance(value, int | str | Decimal):
            raise PayoutError(
                f"pay table entry {key!r} must be a number as text or int, got {value!r}"
            )
        try:
            amount = Decimal(value)
        except ArithmeticError:
            raise PayoutError(f"pay table entry {key!r} is not a number: {value!r}") from None
        if not amount.is_finite() or amount < 0:
            raise PayoutError(f"pay table entry {key!r} must be zero or more, got {value!r}")
        table[key] = amount
    return MappingProxyType(table)


class Result(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"  # the stake is returned


@dataclass(frozen=True, slots=True)
class Settlement:
    """What a bet gets: `winnings` on top of the stake returned (0 for a loss or a push)."""

    result: Result
    stake: int
    winnings: int

    @property
    def returned(self) -> int:
        """What goes back to the player: stake and winnings, nothing after a loss."""
        return 0 if self.result is Result.LOSE else self.stake + self.winnings


def _odds(bet: Bet, outcome: Outcome, table: Mapping[str, Decimal]) -> Decimal | Result:
    """The odds a winning bet is paid at, or LOSE/PUSH (R14)."""
    winner = outcome.winner
    match bet:
        case Bet.PLAYER | Bet.BANKER | Bet.BANKER_NO_COMMISSION:
            if winner is Side.TIE:
                return Result.PUSH
            if winner is not (Side.PLAYER if bet is Bet.PLAYER else Side.BANKER):
                return Result.LOSE
            if bet is Bet.BANKER_NO_COMMISSION and outcome.banker_six:
                return table["banker_no_commission_six"]
            return table[bet.value]
        case Bet.TIE:
            return table["tie"] if winner is Side.TIE else Result.LOSE
        case Bet.PLAYER_PAIR:
            return table["player_pair"] if outcome.player_pair else Result.LOSE
        case Bet.BANKER_PAIR:
            return table["banker_pair"] if outcome.banker_pair else Result.LOSE
        case Bet.ANY_PAIR:
            return table["any_pair"] if outcome.any_pair else Result.LOSE
        case Bet.PERFECT_PAIR:
            return table["perfect_pair"] if outcome.perfect_pair else Result.LOSE
        case Bet.BIG:
            return table["big"] if outcome.big else Result.LOSE
        case Bet.SMALL:
            return Result.LOSE if outcome.big else table["small"]
        case Bet.LUCKY6:
            return table[f"lucky6_{outcome.lucky6}cards"] if outcome.lucky6 else Result.LOSE
        case Bet.PLAYER_DRAGON | Bet.BANKER_DRAGON:
            return _dragon(Side.PLAYER if bet is Bet.PLAYER_DRAGON else Side.BANKER, outcome, table)
    raise PayoutError(f"unknown bet {bet!r}")


def returns_per_unit(
    outcome: Outcome, table: Mapping[str, Decimal] = DEFAULT_PAY_TABLE
) -> dict[str, Fraction]:
    """What a unit stake on each bet of `table` nets on this round, exactly (R14): the odds
    for a win, -1 for a loss, 0 for a push; unrounded, unlike `settle`'s whole units."""
    returns: dict[str, Fraction] = {}
    for bet in Bet:
        odds = _odds(bet, outcome, table)
        if isinstance(odds, Result):  # _odds gives a Result only for a loss or a push
            returns[bet.value] = Fraction(-1 if odds is Result.LOSE else 0)
        else:
            returns[bet.value] = Fraction(odds)
    return returns


def _dragon(side: Side, outcome: Outcome, table: Mapping[str, Decimal]) -> Decimal | Result:
    """R14 dragon: a natural win pays 1, a natural tie pushes, a non-natural win pays by margin."""
    hand_natural = outcome.natural in (side.value, "both")
    if outcome.winner is Side.TIE:
        return Result.PUSH if outcome.natural == "both" else Result.LOSE
    if outcome.winner is not side:
        return Result.LOSE
    if hand_natural:
        return table["dragon_natural"]
    if outcome.margin >= 4:
        return table[f"dragon_margin_{outcome.margin}"]
    return Result.LOSE


def settle(
    bet: Bet | str,
    stake: int,
    outcome: Outcome,
    round_number: int,
    table: Mapping[str, Decimal] = DEFAULT_PAY_TABLE,
    *,
    big_small_last_round: int = BIG_SMALL_LAST_ROUND,
) -> Settlement:
    """Settle one bet of `stake` smallest money units on a round (R14).

    `round_number` counts the shoe's real rounds (trial rounds, R2.3, do not count; the
    table's `round.started` says `big_small_open` by the same count), and
    `big_small_last_round` is the house's setting ([table] big_small_last_round).
    Winnings are rounded down to a whole unit, as a cage pays. Raises PayoutError for a bet
    the rules refuse: Big and Small after that round (R14.1).
    """
    try:
        bet = Bet(bet)
    except ValueError:
        raise PayoutError(f"unknown bet {bet!r}; known: {[b.value for b in Bet]}") from None
    if isinstance(stake, bool) or not isinstance(stake, int) or stake <= 0:
        raise PayoutError(f"stake must be a positive whole number of money units, got {stake!r}")
    if bet in (Bet.BIG, Bet.SMALL) and round_number > big_small_last_round:
        raise PayoutError(f"{bet.value} cannot be bet after round {big_small_last_round} (R14.1)")
    odds = _odds(bet, outcome, table)
    if isinstance(odds, Result):
        return Settlement(odds, stake, 0)
    return Settlement(Result.WIN, stake, math.floor(odds * stake))
