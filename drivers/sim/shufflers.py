"""Simulated shufflers: a batch shuffler (shuffle, deck check) and a shuffler-dealer machine,
which is the shoe plus the shuffle unit (R2.5).

Both hold a `ShuffleUnit` (`device.unit`); their mechanisms are `BatchShuffle` and
`ShufflingDealer` (the latter also holds the machine's `DealingShoe`, shoe.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from drivers.sim.base import CARDS_PER_DECK, DeviceVoice, SimConfig, SimDevice
from drivers.sim.shoe import DealingShoe, ShoeSim
from drivers.wire.messages import (
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

    def set_next_check(
        self,
        result: ShuffleResult | None = None,
        missing: Iterable[tuple[int, int]] = (),
        extra: Iterable[tuple[int, int]] = (),
    ) -> None:
        """What the next SHUFFLE_DONE reports (missing/extra cards as (rank, suit))."""
        self.next_check = DeckCheck(result, list(missing), list(extra))

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


class BatchShuffle:
    """A batch shuffler's mechanism: SHUFFLE → SHUFFLE_STARTED, then SHUFFLE_DONE with the check;
    loaded (ready to take out) once the check is done."""

    def __init__(self, config: SimConfig, voice: DeviceVoice, unit: ShuffleUnit) -> None:
        self._config = config
        self._voice = voice
        self.unit = unit
        self.ready = False

    def start(self) -> None:
        """A batch shuffler waits for SHUFFLE."""

    def shuffle(self, decks: int) -> None:
        self.ready = False
        self._voice.send(self.unit.start(decks, self._voice.now))

    def next_behaviour(self) -> float | None:
        return self.unit.done_at

    def behave(self, now: float) -> None:
        done = self.unit.finish_if_due(now)
        if done is not None:
            self.ready = True
            self._voice.send(done)

    def shoe_state(self) -> ShoeState:
        return ShoeState.LOADED if self.ready else ShoeState.EMPTY

    def status(self) -> dict[str, Any]:
        unit = self.unit
        return {"shuffle_id": unit.shuffle_id, "ready": self.ready, "shuffles": len(unit.checks)}


class ShufflerSim(SimDevice):
    """A batch shuffler (kind 3): SHUFFLE → SHUFFLE_STARTED, then SHUFFLE_DONE with the check."""

    def __init__(self, config: SimConfig) -> None:
        self.unit = ShuffleUnit(config.shuffle_time)
        self.batch = BatchShuffle(config, self, self.unit)
        super().__init__(config, self.batch)

    def start_shuffle(self, decks: int | None = None) -> None:
        self.batch.shuffle(self.config.decks if decks is None else decks)

    def set_next_check(
        self,
        result: ShuffleResult | None = None,
        missing: Iterable[tuple[int, int]] = (),
        extra: Iterable[tuple[int, int]] = (),
    ) -> None:
        """What the next SHUFFLE_DONE reports (missing/extra cards as (rank, suit))."""
        self.unit.set_next_check(result, missing, extra)


class ShufflingDealer:
    """A shuffler-dealer's mechanism (kind 4, R2.5): it shuffles, then deals every card face up.

    No cut card, no SHOE frames. The counter restarts at 1 after each SHUFFLE_DONE; when its
    shuffled batch runs out it shuffles again (the cards of each round go back into it).
    """

    def __init__(self, config: SimConfig, voice: DeviceVoice, unit: ShuffleUnit) -> None:
        self._config = config
        self._voice = voice
        self.unit = unit
        self.shoe = DealingShoe(config, voice, reshuffle=lambda: self.shuffle(config.decks))

    def start(self) -> None:
        if self._config.autoload:
            self.shuffle(self._config.decks)

    def shuffle(self, decks: int) -> None:
        self.shoe.take_back()
        self._voice.send(self.unit.start(decks, self._voice.now))

    def next_behaviour(self) -> float | None:
        times = [t for t in (self.shoe.next_behaviour(), self.unit.done_at) if t is not None]
        return min(times) if times else None

    def behave(self, now: float) -> None:
        done = self.unit.finish_if_due(now)
        if done is not None:
            self._voice.send(done)
            if done.result == ShuffleResult.OK:
                self.shoe.load()
        self.shoe.behave(now)

    def shoe_state(self) -> ShoeState:
        return self.shoe.shoe_state()

    def status(self) -> dict[str, Any]:
        unit = self.unit
        return {
            **self.shoe.status(),
            "shuffle_id": unit.shuffle_id,
            "shuffles": len(unit.checks),
        }


class ShufflerDealerSim(ShoeSim):
    """A continuous shuffler-dealer (kind 4, R2.5): a shoe whose mechanism also shuffles
    (`ShufflingDealer`); it deals every card face up, without cut card or SHOE frames."""

    def __init__(self, config: SimConfig) -> None:
        self.unit = ShuffleUnit(config.shuffle_time)
        self.machine = ShufflingDealer(config, self, self.unit)
        super().__init__(config, shoe=self.machine.shoe, mechanism=self.machine)
