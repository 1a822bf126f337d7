"""The order statistics of a shoe held against a reference order, in one pass over the cards.

docs/shuffle.md. The reference is the previous shoe's cards in dealt order (burn
included); "this shoe" is the shoe being judged, in dealt order. Positions are counted from 1
at a shoe's first card. A card that left a shoe without a public identity is `None`: it keeps
its position and matches nothing.

- Rank and suit only (an 8-deck shoe holds 8 copies of every card):
  - a common run: a stretch of this shoe equal card for card to a stretch of the reference
    (`CommonRun`, `maximal_common_runs`, `longest_common_run`);
  - `common_runs(cards, reference, k)`: how many pairs (stretch of this shoe, stretch of the
    reference) of k cards are equal: a maximal run of L >= k cards counts L - k + 1.
- Unique identities (RFID: every physical card distinct, any hashable id):
  - `position_map`: the cards both shoes show, in this shoe's order, each replaced by its
    place among them in the reference's order (0 = first): a permutation of 0..c-1;
  - `successions`: reference neighbours (among those cards) still adjacent, in the same order;
  - `rising_sequences` (Bayer and Diaconis): the number of rising sequences of the map: a
    riffle shuffle leaves at most 2, k of them at most 2**k.
- This shoe alone: `factory_stretches`: cards in new-deck order, the rule of the table's
  security hold (table/books.py `FactoryRun`, docs/table.md): same suit, ranks one apart,
  always up or always down, burn cards included. `FactoryRun` fixes no suit order, so neither
  does this: a deck in factory order shows as four stretches of 13, whatever its brand's order
  of the suits. Unlike `FactoryRun`, a stretch may begin on the card that ended one running the
  other way (6♠ 7♠ 6♠ 5♠ is a stretch of 3 from 7♠).

The watch (`shuffle_watch.ShuffleWatch`) keeps the same numbers as the cards come; these
functions are the plain definitions it is tested against. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from shoe_controller.vocab.cards import Card

Span = tuple[int, int]  # first and last position, counted from 1


@dataclass(frozen=True, slots=True)
class CommonRun:
    """A stretch of this shoe that repeats a stretch of the reference, card for card."""

    length: int
    this: Span  # where it is in this shoe
    previous: Span  # where it is in the reference

    def to_json(self) -> dict[str, Any]:
        """The report's form: `{"length", "this": [from, to], "previous": [from, to]}`."""
        return {"length": self.length, "this": list(self.this), "previous": list(self.previous)}


@dataclass(frozen=True, slots=True)
class Stretch:
    """Cards in a row in new-deck order: same suit, ranks one apart, always up or always down."""

    length: int
    this: Span
    ascending: bool | None  # None for a single card (no direction yet)

    def to_json(self) -> dict[str, Any]:
        return {"length": self.length, "this": list(self.this)}


def run_at(end: int, reference_end: int, length: int) -> CommonRun:
    """The run of `length` cards ending at 0-based index `end` here and `reference_end` there."""
    return CommonRun(
        length, (end - length + 2, end + 1), (reference_end - length + 2, reference_end + 1)
    )


def longest_first(runs: Iterable[CommonRun]) -> list[CommonRun]:
    """Longest first; ties: the earliest in this shoe, then in the reference."""
    return sorted(runs, key=lambda run: (-run.length, run.this, run.previous))


def reference_places(reference: Sequence[Card | None]) -> dict[Card, tuple[int, ...]]:
    """Each card's 0-based places in the reference, in order."""
    places: dict[Card, list[int]] = {}
    for index, card in enumerate(reference):
        if card is not None:
            places.setdefault(card, []).append(index)
    return {card: tuple(found) for card, found in places.items()}


def diagonal_step(
    runs: dict[int, int], card: Card | None, places: dict[Card, tuple[int, ...]]
) -> dict[int, int]:
    """The common runs ending at the next card, from those ending at the card before.

    Keys are the 0-based reference index where a run ends, values its length: one step of the
    longest-common-substring recurrence along every diagonal at once (8 copies: 8 places).
    """
    if card is None:
        return {}
    return {place: runs.get(place - 1, 0) + 1 for place in places.get(card, ())}


def maximal_common_runs(
    cards: Sequence[Card | None], reference: Sequence[Card | None], min_length: int = 1
) -> list[CommonRun]:
    """Every common run that cannot grow on either side, of `min_length` cards or more.

    Longest first (ties: earliest in this shoe). A run of this shoe may repeat the reference in
    several places (8 copies of each card): each place is a run of its own.
    """
    places = reference_places(reference)
    found: list[CommonRun] = []
    runs: dict[int, int] = {}
    for index, card in enumerate([*cards, None]):  # the None closes the runs still open
        following = diagonal_step(runs, card, places) if index < len(cards) else {}
        for place, length in runs.items():
            if place + 1 not in following and length >= min_length:
                found.append(run_at(index - 1, place, length))
        runs = following
    return longest_first(found)


def longest_common_run(
    cards: Sequence[Card | None], reference: Sequence[Card | None]
) -> CommonRun | None:
    """The longest common run (ties: the earliest in this shoe); None when no card is shared."""
    runs = maximal_common_runs(cards, reference)
    return runs[0] if runs else None


def common_runs(cards: Sequence[Card | None], reference: Sequence[Card | None], k: int) -> int:
    """Pairs (k cards in a row here, k cards in a row there) that are equal card for card."""
    if k < 1:
        raise ValueError(f"a run has at least 1 card, got k={k}")
    return sum(run.length - k + 1 for run in maximal_common_runs(cards, reference, k))


def _first_places(ids: Iterable[Hashable | None]) -> dict[Hashable, int]:
    """Each identity's first 0-based place (a repeated tag counts where it was first seen)."""
    places: dict[Hashable, int] = {}
    for index, identity in enumerate(ids):
        if identity is not None and identity not in places:
            places[identity] = index
    return places


def position_map(
    uids: Sequence[Hashable | None], reference_uids: Sequence[Hashable | None]
) -> list[int]:
    """The cards both shoes show, in this shoe's order, as their rank in the reference's order.

    Only identities count (a tag seen twice counts once, where first seen). The result is a
    permutation of 0..c-1, c the number of cards shared; under a fair shuffle it is uniform
    whatever was dealt, which is what makes the nulls of the next two statistics exact.
    """
    there = _first_places(reference_uids)
    here = _first_places(uids)
    shared = sorted(
        (place, there[identity]) for identity, place in here.items() if identity in there
    )
    order = sorted(range(len(shared)), key=lambda index: shared[index][1])
    ranks = [0] * len(shared)
    for rank, index in enumerate(order):
        ranks[index] = rank
    return ranks


def rising_sequences_of(permutation: Sequence[int]) -> int:
    """Rising sequences of a permutation of 0..c-1: 1 + the values x with x + 1 placed before x."""
    if not permutation:
        return 0
    where = [0] * len(permutation)
    for place, value in enumerate(permutation):
        where[value] = place
    return 1 + sum(where[value + 1] < where[value] for value in range(len(where) - 1))


def successions_of(permutation: Sequence[int]) -> int:
    """Places where a value is followed at once by the next value."""
    return sum(after == before + 1 for before, after in pairwise(permutation))


def rising_sequences(
    uids: Sequence[Hashable | None], reference_uids: Sequence[Hashable | None]
) -> int:
    """Bayer-Diaconis rising sequences of the position map (0 when no card is shared)."""
    return rising_sequences_of(position_map(uids, reference_uids))


def successions(uids: Sequence[Hashable | None], reference_uids: Sequence[Hashable | None]) -> int:
    """Reference neighbours (among the cards both show) still adjacent, in the same order."""
    return successions_of(position_map(uids, reference_uids))


def factory_step(before: Card | None, after: Card | None) -> int:
    """+1 or -1 when `after` follows `before` in new-deck order up or down, else 0."""
    if before is None or after is None or before.suit is not after.suit:
        return 0
    step = after.rank - before.rank
    return step if step in (1, -1) else 0


def factory_stretches(cards: Sequence[Card | None], min_length: int = 1) -> list[Stretch]:
    """Every maximal stretch in new-deck order of `min_length` cards or more, longest first.

    Two stretches may share the card where the direction turns (7♠ 8♠ 7♠: 7♠ 8♠ and 8♠ 7♠).
    """
    found: list[Stretch] = []
    start, step = 0, 0  # the open stretch begins at index `start`, runs in direction `step`
    for index in range(len(cards) + 1):
        card = cards[index] if index < len(cards) else None
        following = factory_step(cards[index - 1], card) if index else 0
        if following and step in (0, following):
            step = following  # the open stretch grows (a single card takes its direction)
            continue
        length = index - start
        if index and cards[index - 1] is not None and length >= min_length:
            found.append(Stretch(length, (start + 1, index), None if step == 0 else step > 0))
        # A turn keeps the card before: it begins the stretch running the other way.
        start, step = (index - 1, following) if following else (index, 0)
    return sorted(found, key=lambda stretch: (-stretch.length, stretch.this))


def longest_factory_stretch(cards: Sequence[Card | None]) -> Stretch | None:
    """The longest stretch in new-deck order (a single card is one of 1); None without a card."""
    stretches = factory_stretches(cards)
    return stretches[0] if stretches else None
