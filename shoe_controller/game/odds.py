"""Exact odds of every round outcome and the house edge of every bet for a shoe's composition.

The main outcomes (winner, totals, cards dealt, naturals, margins) come from an exact
enumeration of the first six cards out of the shoe, weighted by the composition (drawing
without replacement), with the third-card decisions read from `rules.player_draws` and
`rules.banker_draws` (R9). Pairs (R13) depend only on the first two cards of each hand and are
computed in closed form. Every count is an exact integer, so probabilities and house edges are
exact `Fraction`s; see docs/odds.md.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType

import numpy as np

from shoe_controller.game.payouts import DEFAULT_PAY_TABLE, Bet
from shoe_controller.game.rules import banker_draws, is_natural, player_draws
from shoe_controller.vocab import words
from shoe_controller.vocab.cards import (
    RANK_LETTERS,
    Card,
    CardError,
    Suit,
    from_index,
    parse_card,
    points,
)

RANKS = 13
SUITS = len(Suit)
CARD_KINDS = RANKS * SUITS
POINT_VALUES = 10
ROUND_CARDS_MAX = 6  # two hands of at most three cards (R9)
# Weights are products of six counts; their sum, N(N-1)...(N-5), must fit an int64.
MAX_CARDS = 1400
MARGINS = range(4, 10)  # the dragon margins that pay (R14)
MAX_DECKS = MAX_CARDS // CARD_KINDS

PROBABILITY_KEYS = (
    "banker",
    "player",
    "tie",
    "player_pair",
    "banker_pair",
    "any_pair",
    "perfect_pair",
    "big",
    "small",
    "lucky6_2cards",
    "lucky6_3cards",
    "natural",
    *(f"player_dragon_margin_{margin}" for margin in MARGINS),
    *(f"banker_dragon_margin_{margin}" for margin in MARGINS),
    "player_dragon_natural_win",
    "banker_dragon_natural_win",
    "natural_tie",
)
# The bets whose stake a tie returns: their edge is also given per decided round.
TIE_PUSH_BETS = (Bet.PLAYER, Bet.BANKER, Bet.BANKER_NO_COMMISSION)


class OddsError(ValueError):
    """A composition that cannot be analysed, or a --remaining text that names none."""


@dataclass(frozen=True, slots=True)
class Composition:
    """What is in the shoe: how many of each card, by `Card.index` (rank and suit).

    `suits_known` is False when only rank counts were given: the suits of each rank are then
    assumed spread as evenly as possible (which only matters for the perfect pair).
    """

    card_counts: tuple[int, ...]
    suits_known: bool = True

    def __post_init__(self) -> None:
        counts = tuple(self.card_counts)
        if len(counts) != CARD_KINDS:
            raise OddsError(f"a composition counts {CARD_KINDS} cards, got {len(counts)} counts")
        for index, count in enumerate(counts):
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise OddsError(f"count of {from_index(index)} must be a whole number >= 0")
        object.__setattr__(self, "card_counts", counts)

    @classmethod
    def full_shoe(cls, decks: int) -> Composition:
        """A fresh shoe of `decks` 52-card decks (R1)."""
        if isinstance(decks, bool) or not isinstance(decks, int) or decks < 1:
            raise OddsError(f"decks must be a whole number >= 1, got {decks!r}")
        return cls((decks,) * CARD_KINDS)

    @classmethod
    def from_rank_counts(cls, counts: Sequence[int]) -> Composition:
        """Counts per rank, ace to king; suits are assumed spread as evenly as possible."""
        counts = tuple(counts)
        if len(counts) != RANKS:
            raise OddsError(f"rank counts need {RANKS} numbers (A 2-9 T J Q K), got {len(counts)}")
        card_counts = [0] * CARD_KINDS
        for rank_index, count in enumerate(counts):
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                label = RANK_LETTERS[rank_index]
                raise OddsError(f"count of rank {label} must be a whole number >= 0")
            share, extra = divmod(count, SUITS)
            for suit in range(SUITS):
                card_counts[rank_index * SUITS + suit] = share + (1 if suit < extra else 0)
        return cls(tuple(card_counts), suits_known=False)

    @classmethod
    def after_dealt(cls, decks: int, cards: Iterable[Card]) -> Composition:
        """What is left of a fresh `decks`-deck shoe once `cards` have been dealt (or burnt)."""
        counts = list(cls.full_shoe(decks).card_counts)
        dealt = Counter(cards)
        for card, times in sorted(dealt.items(), key=lambda item: item[0].index):
            if times > counts[card.index]:
                held = words.counted(counts[card.index], "copy", "copies")
                raise OddsError(
                    f"{card} is dealt {words.counted(times, 'time')}, but"
                    f" {words.counted(decks, 'deck')} {'holds' if decks == 1 else 'hold'}"
                    f" only {held}"
                )
            counts[card.index] -= times
        return cls(tuple(counts))

    @property
    def total(self) -> int:
        return sum(self.card_counts)

    @property
    def rank_counts(self) -> tuple[int, ...]:
        """Cards per rank, ace to king."""
        kinds = self.card_counts
        return tuple(sum(kinds[rank * SUITS : (rank + 1) * SUITS]) for rank in range(RANKS))

    @property
    def point_counts(self) -> tuple[int, ...]:
        """Cards per point value 0-9 (R5: tens and faces score 0)."""
        by_points = [0] * POINT_VALUES
        for rank_index, count in enumerate(self.rank_counts):
            by_points[points(Card(rank_index + 1, Suit.S))] += count
        return tuple(by_points)


@dataclass(frozen=True, slots=True)
class Analysis:
    """Exact probabilities of the outcomes and house edges of the bets for one composition.

    `house_edge` is minus the expected return per unit staked, a push counting as 0.
    `house_edge_excluding_ties` gives, for the bets a tie pushes (R12), the edge per round
    that is not a tie (empty when every round must tie).
    """

    composition: Composition
    probabilities: Mapping[str, Fraction]
    house_edge: Mapping[str, Fraction]
    house_edge_excluding_ties: Mapping[str, Fraction]

    def to_dict(self) -> dict[str, object]:
        return {
            "cards": self.composition.total,
            "suits": "known" if self.composition.suits_known else "assumed_even",
            **{key: float(value) for key, value in self.probabilities.items()},
            "house_edge": {bet: float(edge) for bet, edge in self.house_edge.items()},
            "house_edge_excluding_ties": {
                bet: float(edge) for bet, edge in self.house_edge_excluding_ties.items()
            },
        }

    def to_json(self) -> str:
        """One JSON object: probabilities by outcome, `house_edge` by bet, as fractions of 1."""
        return json.dumps(self.to_dict())


def _falling(n: int, k: int) -> int:
    """n (n-1) ... (n-k+1): the ordered ways to draw k of n cards."""
    return math.perm(n, k) if n >= k else 0


def _code(player_total: int, banker_total: int, player_drew: bool, banker_drew: bool) -> int:
    """The bin of a finished round in the main-outcome count array (10 x 10 x 2 x 2)."""
    return ((player_total * POINT_VALUES + banker_total) * 2 + player_drew) * 2 + banker_drew


@dataclass(frozen=True, slots=True)
class _Tables:
    """Composition-free index tables, built once from the drawing rules."""

    first: np.ndarray  # (4, starts) point values of P1 B1 P2 B2, grouped by two-card totals
    repeats: np.ndarray  # (4, starts) how many earlier of the four cards share each value
    orderings: np.ndarray  # (starts,) how many deals in order each start stands for
    held: np.ndarray  # (starts, 10) how many of each value the four cards take from the shoe
    gather: tuple[np.ndarray, np.ndarray, np.ndarray]  # flat indices of S0, S1, S2 that count
    order: np.ndarray  # sorts the gathered terms by their outcome bin
    starts: np.ndarray  # where each bin's terms start in sorted order
    bins: np.ndarray  # the bin of each run


def _two_card_hands() -> list[list[tuple[int, int, int]]]:
    """Per two-card total, its hands as (first, second, orderings), the cards in either order
    counting once with orderings 2; padded with (0, 0, 0) to the same length for every total."""
    hands: list[list[tuple[int, int, int]]] = [[] for _ in range(POINT_VALUES)]
    for first in range(POINT_VALUES):
        for second in range(first, POINT_VALUES):
            orderings = 1 if first == second else 2
            hands[(first + second) % POINT_VALUES].append((first, second, orderings))
    width = max(len(hand) for hand in hands)
    return [hand + [(0, 0, 0)] * (width - len(hand)) for hand in hands]


@functools.cache
def _tables() -> _Tables:
    """Enumerate the first four cards grouped by (player two-card total, banker two-card
    total), each hand's two cards unordered (the weight, totals and the rest of the round do
    not depend on their order), and map every later draw to its outcome using the R9
    decisions from rules.py."""
    hands = _two_card_hands()
    rows = [
        (p1, b1, p2, b2, player_orderings * banker_orderings)
        for player_total in range(POINT_VALUES)
        for banker_total in range(POINT_VALUES)
        for p1, p2, player_orderings in hands[player_total]
        for b1, b2, banker_orderings in hands[banker_total]
    ]
    p1, b1, p2, b2, orderings = np.array(rows).T
    first = np.stack([p1, b1, p2, b2])
    repeats = np.stack(
        [
            np.zeros_like(p1),
            b1 == p1,
            (p2 == p1).astype(int) + (p2 == b1),
            (b2 == p1).astype(int) + (b2 == b1) + (b2 == p2),
        ]
    ).astype(np.int64)
    held = np.zeros((first.shape[1], POINT_VALUES), dtype=np.int64)
    for row in first:
        held[np.arange(first.shape[1]), row] += 1

    # Third-card decisions, asked of rules.py once per cell (R9.1-R9.4).
    player_rule = [player_draws(total) for total in range(POINT_VALUES)]
    banker_after_stand = [banker_draws(total, None) for total in range(POINT_VALUES)]
    banker_after_draw = [
        [banker_draws(total, third) for third in range(POINT_VALUES)]
        for total in range(POINT_VALUES)
    ]
    classes = POINT_VALUES * POINT_VALUES
    code0 = np.full(classes, -1)  # rounds of four cards
    code1 = np.full((classes, POINT_VALUES), -1)  # one third card, value e
    code2 = np.full((classes, POINT_VALUES, POINT_VALUES), -1)  # P3 = e, then B3 = f
    for ptotal in range(POINT_VALUES):
        for btotal in range(POINT_VALUES):
            group = ptotal * POINT_VALUES + btotal
            if (
                is_natural(ptotal)
                or is_natural(btotal)
                or (not player_rule[ptotal] and not banker_after_stand[btotal])
            ):
                code0[group] = _code(ptotal, btotal, False, False)
            elif not player_rule[ptotal]:
                for e in range(POINT_VALUES):
                    code1[group, e] = _code(ptotal, (btotal + e) % 10, False, True)
            else:
                for e in range(POINT_VALUES):
                    pfinal = (ptotal + e) % 10
                    if not banker_after_draw[btotal][e]:
                        code1[group, e] = _code(pfinal, btotal, True, False)
                        continue
                    for f in range(POINT_VALUES):
                        code2[group, e, f] = _code(pfinal, (btotal + f) % 10, True, True)
    gather = tuple(np.flatnonzero(code.ravel() >= 0) for code in (code0, code1, code2))
    targets = np.concatenate(
        [code.ravel()[where] for code, where in zip((code0, code1, code2), gather, strict=True)]
    )
    order = np.argsort(targets, kind="stable")
    bins, starts = np.unique(targets[order], return_index=True)
    for array in (first, repeats, orderings, held, *gather, order, starts, bins):
        array.setflags(write=False)
    return _Tables(first, repeats, orderings, held, gather, order, starts, bins)


def main_outcome_counts(point_counts: Sequence[int]) -> tuple[np.ndarray, int]:
    """Exact counts of every finished round, as (counts[player_total, banker_total,
    player_drew, banker_drew], total): counts / total are the probabilities.

    Each count is the number of ordered ways to draw the first six cards from the shoe that
    end in that round (cards a round does not use are counted too, so every round shares the
    denominator N(N-1)...(N-5)).
    """
    cards = sum(point_counts)
    if cards < ROUND_CARDS_MAX:
        raise OddsError(f"a round can take {ROUND_CARDS_MAX} cards; the shoe holds {cards}")
    if cards > MAX_CARDS:
        raise OddsError(f"at most {MAX_CARDS} cards can be analysed exactly, got {cards}")
    # Every value below is a whole number of at most N**6. Below 2**53 float64 holds them all
    # exactly and lets BLAS do the sums (10x faster); above that (over 456 cards) use int64.
    exact_in_float = cards**ROUND_CARDS_MAX < 2**53
    shoe = np.asarray(point_counts, dtype=np.float64 if exact_in_float else np.int64)
    tables = _tables()
    groups = POINT_VALUES * POINT_VALUES
    # Ordered ways to draw the first four cards: n_a (n_b - [b=a]) (n_c - ...) ... A factor
    # reaches 0 before any can go negative, so impossible draws weigh exactly 0.
    weight4 = tables.orderings * np.prod(shoe[tables.first] - tables.repeats, axis=0)
    weight4 = weight4.reshape(groups, 1, -1)
    left = (shoe - tables.held).reshape(groups, -1, POINT_VALUES)  # the shoe after them
    s0 = weight4.sum(axis=2).ravel()  # by two-card totals: four cards
    s1 = np.matmul(weight4, left)[:, 0, :]  # ... then a fifth card of each value
    s2 = np.matmul((weight4[:, 0, :, None] * left).transpose(0, 2, 1), left)  # ... and a sixth
    # The sixth card cannot be the fifth card itself: n_f - [f = e].
    s2[:, np.arange(POINT_VALUES), np.arange(POINT_VALUES)] -= s1
    terms = np.concatenate(
        [
            (s0 * ((cards - 4) * (cards - 5))).ravel()[tables.gather[0]],
            (s1 * (cards - 5)).ravel()[tables.gather[1]],
            s2.ravel()[tables.gather[2]],
        ]
    )
    counts = np.zeros(POINT_VALUES * POINT_VALUES * 4, dtype=np.int64)
    counts[tables.bins] = np.add.reduceat(terms[tables.order], tables.starts)
    return counts.reshape(POINT_VALUES, POINT_VALUES, 2, 2), _falling(cards, ROUND_CARDS_MAX)


def _pair_probabilities(counts: Sequence[int], cards: int) -> tuple[Fraction, Fraction]:
    """(one given hand pairs, either hand pairs) when a pair means two cards of one kind.

    A hand's first two cards are any two cards of the shoe, and both hands' are any four
    (the order of dealing does not change the odds of a set of positions).
    """
    same = sum(count * (count - 1) for count in counts)
    # Both hands pair: one kind four times, or two kinds twice each.
    both = sum(count * (count - 1) * (count - 2) * (count - 3) for count in counts)
    both += same * same - sum((count * (count - 1)) ** 2 for count in counts)
    one = Fraction(same, _falling(cards, 2))
    either = 2 * one - Fraction(both, _falling(cards, 4))
    return one, either


@functools.cache
def _round_events() -> tuple[tuple[str, ...], np.ndarray]:
    """The main-outcome events as rows of a 0/1 matrix over the round bins of
    `main_outcome_counts` (flattened), so one product counts them all."""
    player_total = np.arange(POINT_VALUES)[:, None, None, None]
    banker_total = np.arange(POINT_VALUES)[None, :, None, None]
    player_drew = np.arange(2)[None, None, :, None].astype(bool)
    banker_drew = np.arange(2)[None, None, None, :].astype(bool)
    four_cards = ~player_drew & ~banker_drew
    player_natural = four_cards & (player_total >= 8)  # R9.1: 8 or 9 on two cards
    banker_natural = four_cards & (banker_total >= 8)
    player_wins = player_total > banker_total
    banker_wins = banker_total > player_total
    ties = player_total == banker_total
    margin = player_total - banker_total
    banker_six = banker_wins & (banker_total == 6)
    events = {
        "banker": banker_wins,
        "player": player_wins,
        "tie": ties,
        "big": ~four_cards,
        "small": four_cards,
        "lucky6_2cards": banker_six & ~banker_drew,
        "lucky6_3cards": banker_six & banker_drew,
        "natural": player_natural | banker_natural,
        **{f"player_dragon_margin_{m}": (margin == m) & ~player_natural for m in MARGINS},
        **{f"banker_dragon_margin_{m}": (margin == -m) & ~banker_natural for m in MARGINS},
        "player_dragon_natural_win": player_wins & player_natural,
        "banker_dragon_natural_win": banker_wins & banker_natural,
        "natural_tie": ties & player_natural & banker_natural,
    }
    shape = (POINT_VALUES, POINT_VALUES, 2, 2)
    matrix = np.stack([np.broadcast_to(mask, shape).ravel() for mask in events.values()])
    matrix = matrix.astype(np.int64)
    matrix.setflags(write=False)
    return tuple(events), matrix


def _probabilities(composition: Composition) -> dict[str, Fraction]:
    counts, total = main_outcome_counts(composition.point_counts)
    names, matrix = _round_events()
    ways = matrix @ counts.ravel()
    probabilities = {
        name: Fraction(int(count), total) for name, count in zip(names, ways, strict=True)
    }
    pair, any_pair = _pair_probabilities(composition.rank_counts, composition.total)
    _, perfect_pair = _pair_probabilities(composition.card_counts, composition.total)
    probabilities |= {
        "player_pair": pair,
        "banker_pair": pair,
        "any_pair": any_pair,
        "perfect_pair": perfect_pair,
    }
    return {key: probabilities[key] for key in PROBABILITY_KEYS}


def _expected_returns(
    p: Mapping[str, Fraction], table: Mapping[str, Decimal]
) -> dict[str, Fraction]:
    """Expected return per unit staked of every bet (R14): win pays table odds, loss -1, push 0."""

    def pays(key: str) -> Fraction:
        return Fraction(table[key])

    lucky6 = p["lucky6_2cards"] + p["lucky6_3cards"]  # Banker wins with 6 (banker_six)
    returns = {
        Bet.PLAYER: pays("player") * p["player"] - p["banker"],
        Bet.BANKER: pays("banker") * p["banker"] - p["player"],
        Bet.BANKER_NO_COMMISSION: pays("banker_no_commission") * (p["banker"] - lucky6)
        + pays("banker_no_commission_six") * lucky6
        - p["player"],
        Bet.TIE: pays("tie") * p["tie"] - (1 - p["tie"]),
        Bet.BIG: pays("big") * p["big"] - p["small"],
        Bet.SMALL: pays("small") * p["small"] - p["big"],
        Bet.LUCKY6: pays("lucky6_2cards") * p["lucky6_2cards"]
        + pays("lucky6_3cards") * p["lucky6_3cards"]
        - (1 - lucky6),
    }
    for bet in (Bet.PLAYER_PAIR, Bet.BANKER_PAIR, Bet.ANY_PAIR, Bet.PERFECT_PAIR):
        returns[bet] = pays(bet.value) * p[bet.value] - (1 - p[bet.value])
    for bet, side in ((Bet.PLAYER_DRAGON, "player"), (Bet.BANKER_DRAGON, "banker")):
        # R14 dragon: a natural win pays `dragon_natural`, a natural tie pushes, a non-natural
        # win by 4-9 pays by margin, anything else loses.
        wins = [(f"{side}_dragon_margin_{m}", f"dragon_margin_{m}") for m in MARGINS]
        wins.append((f"{side}_dragon_natural_win", "dragon_natural"))
        won = sum((p[event] for event, _ in wins), Fraction(0))
        lost = 1 - won - p["natural_tie"]
        returns[bet] = sum((pays(key) * p[event] for event, key in wins), Fraction(0)) - lost
    return {bet.value: returns[bet] for bet in Bet}


def analyse(composition: Composition, table: Mapping[str, Decimal] = DEFAULT_PAY_TABLE) -> Analysis:
    """Exact probabilities of every outcome and house edge of every bet in `table` (R9-R14)."""
    probabilities = _probabilities(composition)
    returns = _expected_returns(probabilities, table)
    decided = 1 - probabilities["tie"]
    return Analysis(
        composition=composition,
        probabilities=MappingProxyType(probabilities),
        house_edge=MappingProxyType({bet: -value for bet, value in returns.items()}),
        # Undefined, so left out, when every round must tie (a shoe of a single point value).
        house_edge_excluding_ties=MappingProxyType(
            {bet.value: -returns[bet.value] / decided for bet in TIE_PUSH_BETS} if decided else {}
        ),
    )


def format_analysis(analysis: Analysis, title: str | None = None) -> str:
    """An aligned table: each outcome's probability in %, each bet's house edge in %."""
    composition = analysis.composition
    suits = "" if composition.suits_known else "; suits assumed evenly spread per rank"
    lines = [title or f"Exact odds for a shoe of {composition.total} cards{suits}", ""]
    width = max(len(key) for key in (*analysis.probabilities, *analysis.house_edge))
    lines.append(f"{'outcome':<{width}}  {'probability':>12}")
    for key, value in analysis.probabilities.items():
        lines.append(f"{key:<{width}}  {float(value) * 100:>11.6f}%")
    lines += ["", f"{'bet':<{width}}  {'house edge':>12}  {'excl. ties':>12}"]
    for bet, edge in analysis.house_edge.items():
        excluding = analysis.house_edge_excluding_ties.get(bet)
        extra = f"  {float(excluding) * 100:>11.4f}%" if excluding is not None else ""
        lines.append(f"{bet:<{width}}  {float(edge) * 100:>11.4f}%{extra}")
    return "\n".join(lines)


_SEPARATORS = re.compile(r"[\s,;]+")


def parse_remaining(spec: str, decks: int) -> Composition:
    """Read --remaining: 13 rank counts (A 2-9 T J Q K) or the cards already dealt (`QH,3S`)."""
    tokens = [token for token in _SEPARATORS.split(spec.strip()) if token]
    if not tokens:
        raise OddsError("is empty: give 13 rank counts (A..K) or the dealt cards, e.g. 'QH,3S'")
    if all(token.isdigit() for token in tokens):
        counts = [int(token) for token in tokens]
        if len(counts) != RANKS:
            raise OddsError(
                f"has {len(counts)} numbers; rank counts need {RANKS} (A 2 3 4 5 6 7 8 9 T J Q K)"
            )
        for rank_index, count in enumerate(counts):
            if count > SUITS * decks:
                raise OddsError(
                    f"counts {count} of rank {RANK_LETTERS[rank_index]}, more than {decks} decks "
                    f"hold ({SUITS * decks}); set --decks"
                )
        return Composition.from_rank_counts(counts)
    cards = []
    for token in tokens:
        try:
            cards.append(parse_card(token))
        except CardError as error:
            raise OddsError(f"{error} (or give 13 whole-number rank counts)") from None
    return Composition.after_dealt(decks, cards)
