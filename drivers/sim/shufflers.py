"""Simulated shufflers: a batch shuffler (shuffle, deck check) and a shuffler-dealer machine,
which is the shoe plus the shuffle unit (R2.5)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from drivers.sim.base import CARDS_PER_DECK, SimCard, SimConfig, SimDevice
from drivers.sim.shoe import ShoeSim
from drivers.wire.messages import (
    CardFlags,
    ShoeState,
    ShuffleDone,
    ShuffleResult,
    ShuffleStarted,
)


@dataclass(slots=True)
class DeckCheck:
    """What the next SHUFFLE_DONE reports (the default: every card ``decks`` times, OK)."""

    result: ShuffleResult | None = None  # None: derived from missing/extra
    missing: list[tuple[int, int]] = field(default_factory=list)
    extra: list[tuple[int, int]] = field(default_factory=list)


class ShuffleUnit:
    """The shuffling mechanism shared by the batch shuffler and the shuffler-dealer."""

    def __init__(self, shuffle_time: float) -> None:
        self.shuffle_time = shuffle_time
        self.shuffle_id = 0
        self.decks = 0
        self.next_check = DeckCheck()
        self.checks: list[ShuffleDone] = []
        self.done_at: float | None = None

    def start(self, decks: int, now: float) -> ShuffleStarted:
        self.shuffle_id = (self.shuffle_id + 1) & 0xFFFFFFFF
        self.decks = decks
        self.done_at = now + self.shuffle_time
        return ShuffleStarted(self.shuffle_id, decks)

    def finish_if_due(self, now: float) -> ShuffleDone | None:
        if self.done_at is None or now < self.done_at:
            return None
        self.done_at = None
        check, self.next_check = self.next_check, DeckCheck()
        counts = [self.decks] * CARDS_PER_DECK
        for rank, suit in check.missing:
            counts[ShuffleDone.index(rank, suit)] -= 1
        for rank, suit in check.extra:
            counts[ShuffleDone.index(rank, suit)] += 1
        result = check.result
        if result is None:
            if check.missing:
                result = ShuffleResult.CARDS_MISSING
            elif check.extra:
                result = ShuffleResult.EXTRA_CARDS
            else:
                result = ShuffleResult.OK
        counts = [min(max(count, 0), 255) for count in counts]
        done = ShuffleDone(self.shuffle_id, result, self.decks, sum(counts), tuple(counts))
        self.checks.append(done)
        return done


class _Shuffling:
    """What both shuffling devices answer about their `ShuffleUnit` (the control's `check`)."""

    unit: ShuffleUnit

    @property
    def shuffle_id(self) -> int:
        return self.unit.shuffle_id

    def set_next_check(
        self,
        result: ShuffleResult | None = None,
        missing: Iterable[tuple[int, int]] = (),
        extra: Iterable[tuple[int, int]] = (),
    ) -> None:
        """What the next SHUFFLE_DONE reports (missing/extra cards as (rank, suit))."""
        self.unit.next_check = DeckCheck(result, list(missing), list(extra))


class ShufflerSim(_Shuffling, SimDevice):
    """A batch shuffler (kind 3): SHUFFLE → SHUFFLE_STARTED, then SHUFFLE_DONE with the check."""

    def __init__(self, config: SimConfig) -> None:
        super().__init__(config)
        self.unit = ShuffleUnit(config.shuffle_time)
        self.ready = False

    def on_shuffle(self, decks: int) -> None:
        self.start_shuffle(decks)

    def start_shuffle(self, decks: int | None = None) -> None:
        self.ready = False
        self.send(self.unit.start(self.config.decks if decks is None else decks, self.now))

    def next_behaviour(self) -> float | None:
        return self.unit.done_at

    def behave(self, now: float) -> None:
        done = self.unit.finish_if_due(now)
        if done is not None:
            self.ready = True
            self.send(done)

    def shoe_state(self) -> ShoeState:
        return ShoeState.LOADED if self.ready else ShoeState.EMPTY

    def status(self) -> dict[str, Any]:
        status = super().status()
        status.update(shuffle_id=self.shuffle_id, ready=self.ready, shuffles=len(self.unit.checks))
        return status


class ShufflerDealerSim(_Shuffling, ShoeSim):
    """A continuous shuffler-dealer (kind 4, R2.5): shuffles, then deals every card face up.

    No cut card, no SHOE frames. The counter restarts at 1 after each SHUFFLE_DONE; when its
    shuffled batch runs out it shuffles again (the cards of each round go back into it).
    """

    def __init__(self, config: SimConfig) -> None:
        super().__init__(config)
        self.unit = ShuffleUnit(config.shuffle_time)

    def on_start(self) -> None:
        if self.config.autoload:
            self.on_shuffle(self.config.decks)

    def on_shuffle(self, decks: int) -> None:
        self.state = ShoeState.EMPTY
        self.cards.clear()
        self.send(self.unit.start(decks, self.now))

    def load(self, cards: Iterable[Any] | None = None, cut_after: int | None = None) -> None:
        """A scripted batch (tests) is dealt like a shuffled one: no SHOE frame, no cut card."""
        self.shoes += 1
        sequence = (
            self._shuffled_shoe()
            if cards is None
            else self._assign_decks([SimCard.parse(item) for item in cards])
        )
        self.cards = deque(sequence)
        self.cut_after = 0
        self.counter = 0
        self._physical = 0
        self.dealt = []
        self.state = ShoeState.LOADED
        self._next_deal = self.now + self.config.pace

    def next_behaviour(self) -> float | None:
        times = [t for t in (super().next_behaviour(), self.unit.done_at) if t is not None]
        return min(times) if times else None

    def behave(self, now: float) -> None:
        done = self.unit.finish_if_due(now)
        if done is not None:
            self.send(done)
            if done.result == ShuffleResult.OK:
                self.load()
        super().behave(now)

    def on_exhausted(self) -> None:
        self.on_shuffle(self.config.decks)

    def _implicit_flags(self) -> CardFlags:
        return CardFlags.FACE_UP

    def _uses_cut_card(self) -> bool:
        return False

    def status(self) -> dict[str, Any]:
        status = super().status()
        status.update(shuffle_id=self.shuffle_id, shuffles=len(self.unit.checks))
        return status
