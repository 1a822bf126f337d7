"""How the order statistics fall when the shoe was shuffled fairly: p-values and thresholds.

docs/shuffle.md "p-values". The null hypothesis: this shoe is a uniformly random
order of its whole composition (every card `decks` times; with RFID, every tag once) and the
statistics are taken on the cards compared so far, the reference held fixed. Per statistic:

- `longest_run`, P(longest >= L): the simulated table where >= 100 of its shoes reach L,
  capped by the exact mean number of common L-runs E[N_L] (Markov's bound on P(N_L >= 1));
  past the table's reach that bound alone, within a few per cent of the truth that far out;
- `common_runs_k`, P(N_k >= x): the simulated table, (its shoes >= x, + 1) / (its shoes + 1);
  None for a deck count without a table;
- `factory_stretch`, P(longest >= F): the table capped by, then alone, the exact mean number
  of F-card windows in new-deck order (the same bound);
- `successions`, P(S >= s): exact, S of a uniform permutation of the c cards both shoes show
  (whatever was dealt, their order in this shoe is uniform under the null);
- `rising_sequences`, P(R <= r): exact, the Eulerian numbers (R - 1 is the number of descents
  of the inverse permutation).

The tables (`shuffle_tables.json`, package data written by tools/shuffle_study.py with the seed
they name) hold for each deck count the simulated distribution at every 16th number of cards
compared. A run statistic of n cards against a reference of m is looked up at the table's n'
with the same number of window pairs, (n' - 1)(N - 1) = (n - 1)(m - 1), N the table's whole-shoe
reference; a lookup takes the first table point at or past n' (more cards can only lengthen
runs, so the p-value errs high). An alarm threshold for a per-shoe false-alarm rate is the value
whose p-value at the whole shoe's count is at or below the rate. Pure but for reading its own
tables once when it loads: no clock.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from shoe_controller.vocab.cards import Card, Suit, full_deck

TABLE_TAIL = 100  # table shoes at or past a value that make the table's word on it good enough


@dataclass(frozen=True, slots=True)
class Histogram:
    """How many simulated shoes showed each value, from `first` on."""

    first: int
    counts: tuple[int, ...]

    def at_least(self, value: int) -> int:
        """Simulated shoes with this value or more."""
        return sum(self.counts[max(value - self.first, 0) :])


@dataclass(frozen=True, slots=True)
class DeckTable:
    """One deck count's simulated null: a histogram per statistic at each point of `grid`."""

    decks: int
    shoes: int
    grid: tuple[int, ...]  # cards compared
    stats: Mapping[str, tuple[Histogram, ...]] = field(default_factory=dict)

    @property
    def shoe_cards(self) -> int:
        return 52 * self.decks

    def at(self, name: str, cards: float) -> Histogram | None:
        """The statistic's histogram at the first grid point at or past `cards`, if any."""
        point = bisect_left(self.grid, cards)
        histograms = self.stats.get(name)
        if histograms is None or point == len(self.grid):
            return None
        return histograms[point]


@dataclass(frozen=True, slots=True)
class NullTables:
    """The simulated nulls shipped with the code, by deck count."""

    seed: str
    decks: Mapping[int, DeckTable]

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> NullTables:
        """Read the tables' JSON form (see tools/shuffle_study.py `tables`)."""
        decks: dict[int, DeckTable] = {}
        for key, table in dict(data["decks"]).items():  # type: ignore[call-overload]
            stats = {
                name: tuple(Histogram(row[0], tuple(row[1:])) for row in rows)
                for name, rows in table["stats"].items()
            }
            decks[int(key)] = DeckTable(int(key), table["shoes"], tuple(table["grid"]), stats)
        return cls(str(data["seed"]), decks)


# Data shipped beside this module (package data), read once when it loads.
_TABLES_JSON = resources.files(__package__).joinpath("shuffle_tables.json").read_text("utf-8")
DEFAULT_TABLES = NullTables.from_json(json.loads(_TABLES_JSON))


def smallest_at_or_below(
    p_value: Callable[[int], float], rate: float, start: int, stop: int
) -> int:
    """The first value from `start` whose upper-tail p-value is at or below `rate` (else stop)."""
    for value in range(start, stop):
        if p_value(value) <= rate:
            return value
    return stop


def descent_distribution(size: int, most: int) -> np.ndarray:
    """P(k descents) of a uniform permutation of `size`, k = 0..most: Eulerian numbers / size!.

    The recurrence A(n, k) = (k + 1) A(n-1, k) + (n - k) A(n-1, k-1), divided by n! as it goes:
    every term positive, so the floats keep their relative precision (tiny ones underflow to 0).
    """
    most = max(most, 0)
    p = np.zeros(most + 1)
    p[0] = 1.0
    k = np.arange(most + 1)
    for n in range(2, size + 1):
        shifted = np.concatenate(([0.0], p[:-1]))
        p = ((k + 1) * p + (n - k) * shifted) / n
    return p


def succession_distribution(size: int) -> np.ndarray:
    """P(s successions) of a uniform permutation of `size`, s = 0..size-1.

    Permutations of size with s successions: C(size-1, s) a(size-1-s) (a = OEIS A000255,
    a(n) = n a(n-1) + (n-1) a(n-2)), so P(s) = b(size-1-s) / (size s!) with b(n) = a(n) / n!,
    b(n) = b(n-1) + b(n-2) / n.
    """
    if size <= 0:
        return np.ones(1)
    b = np.ones(size)
    for n in range(2, size):
        b[n] = b[n - 1] + b[n - 2] / n
    s = np.arange(size)
    inverse_factorials = np.cumprod(np.concatenate(([1.0], 1.0 / np.arange(1, size))))
    return b[size - 1 - s] * inverse_factorials / size


class FairShuffle:
    """The null for one shoe's composition: p-values and alarm thresholds of every statistic."""

    def __init__(self, copies: Mapping[Card, int], table: DeckTable | None = None) -> None:
        self.copies = dict(copies)
        self.cards = sum(self.copies.values())  # the whole shoe's
        self.table = table
        self._rising: dict[int, np.ndarray] = {}  # the exact laws already worked out, by size
        self._successions: dict[int, np.ndarray] = {}

    @classmethod
    def for_decks(cls, decks: int, tables: NullTables | None = DEFAULT_TABLES) -> FairShuffle:
        """A shoe of `decks` full decks, with the shipped table for that count if there is one."""
        table = tables.decks.get(decks) if tables is not None else None
        return cls(dict.fromkeys(full_deck(), decks), table)

    # ---------------------------------------------------------------- runs, rank and suit only

    def _chance(self, window: Sequence[Card | None]) -> float:
        """P(a given place of the shuffled shoe holds exactly these cards in this order)."""
        chance, seen = 1.0, {}
        for drawn, card in enumerate(window):
            if card is None:
                return 0.0
            left = self.copies.get(card, 0) - seen.get(card, 0)
            if left <= 0:
                return 0.0
            chance *= left / (self.cards - drawn)
            seen[card] = seen.get(card, 0) + 1
        return chance

    def expected_common_runs(
        self, reference: Sequence[Card | None], cards: int, length: int
    ) -> float:
        """E[N_L]: the mean number of common runs of `length` cards (pairs of windows), exact."""
        windows = cards - length + 1
        if windows <= 0 or length > len(reference):
            return 0.0
        chances = (
            self._chance(reference[start : start + length])
            for start in range(len(reference) - length + 1)
        )
        return windows * sum(chances)

    def _equivalent_cards(self, cards: int, reference_length: int) -> float | None:
        """The table's cards compared with as many window pairs as `cards` against the reference."""
        if self.table is None:
            return None
        return 1 + (cards - 1) * (reference_length - 1) / (self.table.shoe_cards - 1)

    def _table_p(self, name: str, value: int, cards: float | None) -> tuple[float, int] | None:
        """(p-value, shoes at or past the value) from the table, if it covers the point."""
        histogram = self.table.at(name, cards) if self.table and cards is not None else None
        if histogram is None:
            return None
        above = histogram.at_least(value)
        return (above + 1) / (self.table.shoes + 1), above  # type: ignore[union-attr]

    def longest_run_p(self, value: int, cards: int, reference: Sequence[Card | None]) -> float:
        """P(the longest common run of `cards` cards against the reference is `value` or more)."""
        if value <= 1:
            return 1.0
        bound = min(1.0, self.expected_common_runs(reference, cards, value))
        found = self._table_p("longest_run", value, self._equivalent_cards(cards, len(reference)))
        if found is not None and found[1] >= TABLE_TAIL:
            return min(found[0], bound)  # an estimate above an exact upper bound is noise
        return bound

    def longest_run_threshold(
        self, rate: float, cards: int, reference: Sequence[Card | None]
    ) -> int:
        """The shortest run whose p-value at `cards` is at or below the rate."""
        return smallest_at_or_below(
            lambda value: self.longest_run_p(value, cards, reference), rate, 2, len(reference) + 1
        )

    def common_runs_p(self, k: int, value: int, cards: int, reference_length: int) -> float | None:
        """P(N_k >= value) from the table; None when no table covers this deck count or k."""
        if value <= 0:
            return 1.0
        found = self._table_p(
            f"common_runs_{k}", value, self._equivalent_cards(cards, reference_length)
        )
        return None if found is None else found[0]

    def common_runs_threshold(
        self, k: int, rate: float, cards: int, reference_length: int
    ) -> int | None:
        """The count of common k-runs at or past which the p-value is at or below the rate."""
        if self.common_runs_p(k, 1, cards, reference_length) is None:
            return None
        stop = max(cards - k + 1, 0) * max(reference_length - k + 1, 0) + 1
        return smallest_at_or_below(
            lambda value: self.common_runs_p(k, value, cards, reference_length) or 0.0,
            rate,
            1,
            stop,
        )

    # ------------------------------------------------------------------- new-deck order

    def expected_factory_stretches(self, cards: int, length: int) -> float:
        """The mean number of `length`-card windows in new-deck order among `cards`, exact."""
        windows = cards - length + 1
        if windows <= 0 or not 2 <= length <= 13:
            return 0.0
        total = 0.0
        for suit in Suit:
            for low in range(1, 15 - length):
                run = [Card(rank, suit) for rank in range(low, low + length)]
                total += self._chance(run) + self._chance(run[::-1])
        return windows * total

    def factory_p(self, value: int, cards: int) -> float:
        """P(the longest stretch in new-deck order among `cards` is `value` or more)."""
        if value <= 1:
            return 1.0  # a card is a stretch of 1: any card at all reaches it
        bound = min(1.0, self.expected_factory_stretches(cards, value))
        found = self._table_p("factory_stretch", value, cards)
        if found is not None and found[1] >= TABLE_TAIL:
            return min(found[0], bound)
        return bound

    def factory_threshold(self, rate: float, cards: int) -> int:
        """The shortest stretch in new-deck order whose p-value is at or below the rate."""
        return smallest_at_or_below(lambda value: self.factory_p(value, cards), rate, 2, 14)

    # ------------------------------------------------------------- unique identities, exact

    def _rising_cdf(self, shared: int) -> np.ndarray:
        """P(R <= r) for r = 0 .. shared (kept per size: a report asks twice)."""
        if shared not in self._rising:
            descents = np.cumsum(descent_distribution(shared, shared - 1))
            self._rising[shared] = np.concatenate(([0.0], np.minimum(descents, 1.0)))
        return self._rising[shared]

    def rising_p(self, value: int, shared: int) -> float:
        """P(R <= value) for the position map of `shared` cards (fewer: the riffle's sign)."""
        if shared <= 0 or value >= shared:
            return 1.0
        if value <= 0:
            return 0.0
        return float(self._rising_cdf(shared)[value])

    def rising_threshold(self, rate: float, shared: int) -> int:
        """The most rising sequences whose p-value is at or below the rate (alarm: at or below)."""
        if shared <= 0:
            return 0
        return int(np.searchsorted(self._rising_cdf(shared), rate, side="right")) - 1

    def _succession_tail(self, shared: int) -> np.ndarray:
        """P(S >= s) for s = 0 .. shared - 1, the small terms summed first (kept per size)."""
        if shared not in self._successions:
            self._successions[shared] = np.cumsum(succession_distribution(shared)[::-1])[::-1]
        return self._successions[shared]

    def successions_p(self, value: int, shared: int) -> float:
        """P(S >= value) for the position map of `shared` cards."""
        if value <= 0:
            return 1.0
        if value >= max(shared, 1):
            return 0.0
        return float(min(1.0, self._succession_tail(shared)[value]))

    def successions_threshold(self, rate: float, shared: int) -> int:
        """The fewest successions whose p-value is at or below the rate."""
        above = np.nonzero(self._succession_tail(shared) <= rate)[0]
        return int(above[0]) if above.size else max(shared, 1)
