"""Shuffler driver: turns a batch shuffler's (or shuffler-dealer's) messages into typed inputs.

Sans-I/O like the scanner: `ShufflerTranslator.translate(message, now)` maps one message to
inputs. SHUFFLE_DONE's deck check becomes a list of problems naming cards ("missing 1 x QH",
"extra 1 x 7S") against `decks` copies of each card (R10.6: the shoe cannot start until the
check passes). A shuffler-dealer machine (kind 4) also deals: its CARD, SHOE and BUTTON
messages go to an inner `ScannerTranslator`, whose counter restarts at each SHUFFLE_DONE.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from drivers.translate.registry import DeckRegistry
from drivers.translate.scanner import (
    KIND_NAMES,
    KINDS,
    ScannerTranslator,
    connected_input,
    fault_input,
    unexpected_input,
)
from drivers.wire import messages as m
from shoe_controller.vocab.cards import from_index
from shoe_controller.vocab.inputs import Input, ShuffleDone, ShuffleStarted

CARDS_PER_DECK = 52
MAX_DECKS = 255  # SHUFFLE decks u8

RESULT_MEANINGS: dict[int, str] = {
    m.ShuffleResult.OK: "ok",
    m.ShuffleResult.CARDS_MISSING: "cards missing",
    m.ShuffleResult.EXTRA_CARDS: "extra cards",
    m.ShuffleResult.UNKNOWN_CARD: "unknown card",
    m.ShuffleResult.DAMAGED_CARD: "damaged card",
}

_DEALING = (m.Card, m.CutCard, m.Shoe, m.Button)
_STATE_VERSION = 1


def deck_problems(
    counts: Sequence[int],
    decks: int,
    *,
    result: int = m.ShuffleResult.OK,
    total: int | None = None,
    announced_decks: int | None = None,
) -> list[str]:
    """What is wrong with a deck check, in words: empty when it passed.

    `counts[(rank-1)*4 + suit]` cards of each kind against `decks` of each expected; `result`
    is the shuffler's own verdict, `total` its count of all cards, `announced_decks` the decks
    SHUFFLE_STARTED announced.
    """
    problems: list[str] = []
    if result != m.ShuffleResult.OK:
        meaning = RESULT_MEANINGS.get(result, "undefined result")
        problems.append(f"shuffler reports {meaning} (result {int(result)})")
    if decks < 1:
        problems.append(f"shuffler checked {decks} decks")
    if announced_decks is not None and announced_decks != decks:
        problems.append(f"checked {decks} decks, SHUFFLE_STARTED announced {announced_decks}")
    if len(counts) != CARDS_PER_DECK:
        problems.append(f"deck check has {len(counts)} counts, expected {CARDS_PER_DECK}")
        return problems
    for index, count in enumerate(counts):
        if count < decks:
            problems.append(f"missing {decks - count} x {from_index(index)}")
        elif count > decks:
            problems.append(f"extra {count - decks} x {from_index(index)}")
    counted = sum(counts)
    if total is not None and total != counted:
        problems.append(f"total {total} differs from the {counted} cards counted by kind")
    return problems


class ShufflerTranslator:
    """One batch shuffler or shuffler-dealer machine."""

    def __init__(
        self,
        *,
        device: str = "shuffler",
        kind: str | None = None,
        registry: DeckRegistry | None = None,
    ) -> None:
        """`kind` is "shuffler" or "shuffler_dealer" until HELLO says; `registry` is for an
        RFID shuffler-dealer's cards."""
        if kind is not None and kind not in ("shuffler", "shuffler_dealer"):
            raise ValueError(f"a shuffler's kind is 'shuffler' or 'shuffler_dealer', not {kind!r}")
        self.device = device
        self.kind = kind
        # The dealing side of a shuffler-dealer: the very same logic as a shoe's scanner.
        self.dealer = ScannerTranslator(device=device, registry=registry, kind=kind)
        self._started: m.ShuffleStarted | None = None

    def translate(self, message: m.Message, now: float) -> list[Input]:
        """The inputs one message stands for (often one, none for HEARTBEAT)."""
        if isinstance(message, m.ShuffleStarted):
            self._started = message
            return [
                ShuffleStarted(
                    at=now, device=self.device, shuffle_id=message.shuffle_id, decks=message.decks
                )
            ]
        if isinstance(message, m.ShuffleDone):
            return [self._done(message, now)]
        if isinstance(message, m.Hello):
            self.kind = KIND_NAMES.get(message.kind, self.kind)
            self.dealer.kind = self.kind
            return [connected_input(message, now, self.device)]
        if isinstance(message, m.Fault | m.FaultCleared):
            return [fault_input(message, now, self.device)]
        if isinstance(message, m.Heartbeat):
            return []
        if isinstance(message, _DEALING) and self.kind != "shuffler":
            return self.dealer.translate(message, now)
        return [unexpected_input(message, now, self.device)]

    @staticmethod
    def shuffle(decks: int) -> m.Shuffle:
        """SHUFFLE for `link.send`; ValueError unless 1-255 decks."""
        if not isinstance(decks, int) or not 1 <= decks <= MAX_DECKS:
            raise ValueError(f"SHUFFLE takes 1-{MAX_DECKS} decks, got {decks!r}")
        return m.Shuffle(decks)

    @staticmethod
    def status_request() -> m.StatusRequest:
        return m.StatusRequest()

    def export_state(self) -> dict[str, Any]:
        """JSON values: the shuffle in progress and the dealing side's state."""
        started = self._started
        return {
            "version": _STATE_VERSION,
            "kind": self.kind,
            "started": None if started is None else [started.shuffle_id, started.decks],
            "dealer": self.dealer.export_state(),
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take up a state from `export_state`; ValueError naming the fault if it is not one."""
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise ValueError(f"not a shuffler state of version {_STATE_VERSION}: {state!r}")
        kind, started = state.get("kind"), state.get("started")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"shuffler state kind {kind!r} is not one of {', '.join(KINDS)}")
        if started is not None:
            if not (isinstance(started, list) and len(started) == 2):
                raise ValueError(f"shuffler state started {started!r} is not [shuffle_id, decks]")
            try:
                restored = m.ShuffleStarted(*started)
                restored.encode_payload()  # range check of both fields
            except (TypeError, ValueError) as error:
                raise ValueError(f"shuffler state started {started!r}: {error}") from None
        self.dealer.restore_state(state.get("dealer"))  # type: ignore[arg-type]
        self.kind = kind
        self._started = None if started is None else m.ShuffleStarted(*started)

    def replay(self, inputs: Iterable[Input]) -> None:
        """Rebuild the state from stored inputs (the journal's, oldest first) of this device."""
        items = list(inputs)
        for item in items:
            if getattr(item, "device", None) != self.device:
                continue
            if isinstance(item, ShuffleStarted):
                self._started = m.ShuffleStarted(item.shuffle_id, item.decks)
            elif isinstance(item, ShuffleDone):
                self._started = None
        self.dealer.replay(items)
        self.kind = self.dealer.kind if self.dealer.kind is not None else self.kind

    def _done(self, message: m.ShuffleDone, now: float) -> ShuffleDone:
        started, self._started = self._started, None
        announced = None
        if started is not None and started.shuffle_id == message.shuffle_id:
            announced = started.decks
        problems = deck_problems(
            message.counts,
            message.decks,
            result=message.result,
            total=message.total,
            announced_decks=announced,
        )
        if self.kind == "shuffler_dealer":
            # docs/spec-protocol.md: counter 1 is the first card after it
            self.dealer.restart_counter()
        return ShuffleDone(
            at=now,
            device=self.device,
            shuffle_id=message.shuffle_id,
            ok=not problems,
            decks=message.decks,
            total=message.total,
            problems=tuple(problems),
        )
