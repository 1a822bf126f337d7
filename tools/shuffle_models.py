"""The shuffles of the study (docs/shuffle.md): each returns the new order of the pile.

The pile is the previous shoe's 416 cards as they come back: the dealt ones in dealt order,
the undealt after them, card t being tag t. A model returns the tags in the new shoe's order
(top first); `factory_deck` brings 52 new tags, 416 to 467.
"""

from __future__ import annotations

import numpy as np

SHOE, DEALT = 416, 402


def riffles(rng: np.random.Generator, k: int) -> np.ndarray:
    """k Gilbert-Shannon-Reeds riffles at once (a 2**k-shuffle): each place of the new order
    draws a packet label; the pile's cards fill the places of label 0, then 1, ... in order."""
    labels = rng.integers(0, 2**k, SHOE)
    order = np.empty(SHOE, np.int64)
    order[np.argsort(labels, kind="stable")] = np.arange(SHOE)
    return order


def strip(rng: np.random.Generator) -> np.ndarray:
    """Packets of 5 to 25 cards taken off the top, each laid on the one before."""
    cuts, at = [], 0
    while at < SHOE:
        cuts.append(at)
        at += int(rng.integers(5, 26))
    packets = np.split(np.arange(SHOE), cuts[1:])
    return np.concatenate(packets[::-1])


def zone(rng: np.random.Generator, zones: int = 8) -> np.ndarray:
    """The pile split into 8 zones of 52; each shuffled well within itself; zones kept in place."""
    return np.concatenate([rng.permutation(part) for part in np.split(np.arange(SHOE), zones)])


def slug(rng: np.random.Generator, size: int) -> tuple[np.ndarray, int, int]:
    """A run of the previous shoe's dealt cards carried over in order into a fair rest."""
    start = int(rng.integers(0, DEALT - size + 1))
    rest = rng.permutation(np.concatenate([np.arange(start), np.arange(start + size, SHOE)]))
    at = int(rng.integers(0, SHOE - size + 1))
    return np.concatenate([rest[:at], np.arange(start, start + size), rest[at:]]), start, at


def factory_deck(rng: np.random.Generator, kinds: np.ndarray) -> np.ndarray:
    """One deck of the pile replaced by a new deck, in factory order, dropped in the shoe whole."""
    taken = [int(rng.choice(np.nonzero(kinds[:SHOE] == kind)[0])) for kind in range(52)]
    rest = rng.permutation(np.setdiff1d(np.arange(SHOE), taken))
    at = int(rng.integers(0, len(rest) + 1))
    return np.concatenate([rest[:at], np.arange(SHOE, SHOE + 52), rest[at:]])


def shelf(rng: np.random.Generator, shelves: int = 10) -> np.ndarray:
    """Diaconis-Fulman-Holmes (2013): cards dealt from the bottom of the pile, each to a random
    shelf, above or below the cards there; the shelves' piles stacked in a random order."""
    above: list[list[int]] = [[] for _ in range(shelves)]
    below: list[list[int]] = [[] for _ in range(shelves)]
    choices, sides = rng.integers(0, shelves, SHOE), rng.random(SHOE) < 0.5
    for card in range(SHOE - 1, -1, -1):
        (above if sides[card] else below)[choices[card]].append(card)
    stacks = [above[s][::-1] + below[s] for s in range(shelves)]
    return np.array([card for s in rng.permutation(shelves) for card in stacks[s]])
