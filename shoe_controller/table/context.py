"""What every part of the procedures works on: the table's state and the context of one input.

A `Context` holds the shoe's bookkeeping (`book`), the three machines of `lifecycle.py`, the
device status, and, for the input being applied, its time and the events it caused. The parts
(holds, screening, dealing, the input handlers, the supervisor actions) read and change it;
`emit`, `alert` and `refuse` are the only ways events come out, and `go`, `hold_go` and
`prep_go` the only ways a machine moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shoe_controller.table.books import ShoeBook
from shoe_controller.table.config import SHUFFLER_DEALER, TableConfig
from shoe_controller.table.lifecycle import (
    HELD,
    MachineModel,
    build_holds,
    build_lifecycle,
    build_preparation,
)
from shoe_controller.vocab.events import Event, EventType, iso_time
from shoe_controller.vocab.inputs import (
    DeviceFault,
    Input,
    ShuffleDone,
    ShuffleStarted,
    SupervisorCommand,
)
from shoe_controller.vocab.protocol import FaultCode

EPOCH = iso_time(0)
UNSET: Any = object()  # "no round number given": the round in progress, if any


class BugError(RuntimeError):
    """The table's own logic went wrong (never the input's fault)."""


@dataclass(slots=True)
class DeviceBoard:
    """What the devices last reported: no part of a shoe's state (they report it again on
    reconnect), so it survives the rebuild of a shoe."""

    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    faults: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Refusing:
    """The table is refusing the shoe's cards: the last card input was refused with the
    supervisor needed. It lasts until a card is taken, or the shoe it was refused in (`where`:
    number, open) gives way to another: play is stopped meanwhile (health)."""

    code: str
    text: str
    since: str
    count: int
    where: tuple[int, bool]

    def view(self) -> dict[str, Any]:
        return {"code": self.code, "text": self.text, "since": self.since, "count": self.count}


class Context:
    """The table's state and the input being applied: what the parts share."""

    def __init__(self, config: TableConfig, last_shoe: int, devices: DeviceBoard) -> None:
        self.config = config
        self.book = ShoeBook(number=last_shoe + 1)
        self.devices = devices
        # Each machine lives on through the trigger it gives its model.
        self._life = MachineModel()
        build_lifecycle(self._life)
        self._holds = MachineModel()
        build_holds(self._holds)
        self._prep = MachineModel()
        build_preparation(self._prep)
        self.events: list[Event] = []
        self.at = EPOCH
        self.refusal: tuple[str, str, bool] | None = None  # why the input is refused
        self.refusing: Refusing | None = None

    def begin(self, at: str) -> None:
        """Start applying an input that happened at `at`."""
        self.events = []
        self.refusal = None
        self.at = at

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    # ------------------------------------------------------------------ states

    @property
    def state(self) -> str:
        """What the table shows: `held` while held, else the lifecycle state."""
        return HELD if self.held else self._life.state

    @property
    def lifecycle(self) -> str:
        """The lifecycle state, held or not: where dealing stands (and goes on from)."""
        return self._life.state

    @property
    def held(self) -> bool:
        return self._holds.state == HELD

    @property
    def preparation(self) -> str:
        """The next shoe's cards: unchecked, shuffling, checked or blocked."""
        return self._prep.state

    @property
    def continuous(self) -> bool:
        """A shuffler-dealer machine (R2.5): no cut card, no burn, cards back after a round."""
        return self.config.mode == SHUFFLER_DEALER

    def go(self, trigger: str) -> None:
        """Fire a lifecycle trigger the procedures already validated; a refusal is a bug.

        The lifecycle stands still while the table is held, except that a shoe may end.
        """
        if self.held and trigger != "end_shoe":
            raise BugError(f"lifecycle trigger {trigger} while the table is held")
        if not self._life.trigger(trigger):
            raise BugError(f"lifecycle refused {trigger} in state {self._life.state}")

    def hold_go(self, trigger: str) -> None:
        if not self._holds.trigger(trigger):
            raise BugError(f"holds machine refused {trigger} in state {self._holds.state}")

    def prep_go(self, trigger: str) -> None:
        if not self._prep.trigger(trigger):
            raise BugError(f"preparation refused {trigger} in state {self._prep.state}")

    def shoe_of(self, item: Input) -> int:
        """The shoe this input belongs to, asked before applying it.

        The open shoe (or the next one when none is open), except a shuffler's report (shuffle
        started or done, card dropped during the shuffle) while a shoe is open in manual or
        batch mode: that shuffle prepares the next shoe's cards, so it belongs to the next shoe.
        """
        preparing = isinstance(item, ShuffleStarted | ShuffleDone) or (
            isinstance(item, DeviceFault) and item.code == FaultCode.CARD_DROPPED_DURING_SHUFFLE
        )
        if preparing and self.book.open and not self.continuous:
            return self.book.number + 1
        return self.book.number

    # ------------------------------------------------------------------ events

    def emit(
        self,
        kind: EventType,
        data: dict[str, Any],
        *,
        round_number: int | None = UNSET,
        shoe: int | None = None,
    ) -> None:
        number = self.book.number if shoe is None else shoe
        if round_number is UNSET:
            current = self.book.round
            # An event of the next shoe (its shuffle) has no round of this one.
            round_number = current.number if current and number == self.book.number else None
        self.events.append(Event(kind, self.at, number, round_number, data))

    def alert(
        self, code: str, text: str, needs_supervisor: bool, *, shoe: int | None = None
    ) -> None:
        data = {"code": code, "text": text, "needs_supervisor": needs_supervisor}
        self.emit(EventType.PROCEDURE_ALERT, data, shoe=shoe)

    def acknowledge(self, command: SupervisorCommand, details: dict[str, Any]) -> None:
        """The supervisor.action event of a command carried out (with the OS user who sent it)."""
        self.emit(
            EventType.SUPERVISOR_ACTION,
            {
                "action": command.action,
                "by": command.by,
                "reason": command.reason,
                "details": {**details, "os_user": command.os_user} if command.os_user else details,
            },
        )

    def refuse(self, code: str, text: str, needs_supervisor: bool = False) -> None:
        """Refuse the input: one alert, nothing changed (so nothing may have been emitted)."""
        if self.events:
            raise BugError(f"refusing ({code}) after events were emitted")
        self.refusal = (code, text, needs_supervisor)
        self.alert(code, text, needs_supervisor)
