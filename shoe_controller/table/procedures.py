"""The procedures of a baccarat table: inputs in, events out, every dealing rule enforced.

`Table` is the facade over the parts of this package: `apply(input)` is the whole game logic
(docs/architecture.md), deterministic, no I/O, no clock; an input the table cannot accept yields one
`procedure.alert` and changes nothing. The parts, by job:
- context: the state and the input being applied (emit, alert, refuse; the machines)
- lifecycle: the `transitions` machines (lifecycle, holds, the next shoe's preparation)
- books: the shoe's bookkeeping, plain data
- holds, screening, squeeze (R15), insurance (R16), shoes, dealing: the procedures
- device_inputs (+ device_counters), action_registry (+ card_actions, shoe_actions),
  edge_reports, shuffle_reports: what each input does
- view: the status view and the shoe's indicator
docs/table.md explains the procedures, the recovery contract and the squeeze guarantees;
docs/inputs.md the inputs and actions; docs/architecture.md the tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from shoe_controller.table import device_inputs
from shoe_controller.table.action_registry import on_supervisor
from shoe_controller.table.betting import on_betting
from shoe_controller.table.books import ShoeBook, to_plain
from shoe_controller.table.config import TableConfig
from shoe_controller.table.context import EPOCH, Context, DeviceBoard, Refusing
from shoe_controller.table.device_counters import time_went_back
from shoe_controller.table.edge_reports import on_report
from shoe_controller.table.holds import hold_after_bug
from shoe_controller.table.journal_checkpoint import on_checkpoint
from shoe_controller.table.settings import on_settings
from shoe_controller.table.shoe_times import carried, on_previous_shoe
from shoe_controller.table.shuffle_reports import on_findings
from shoe_controller.table.view import TableView, indicator, view
from shoe_controller.vocab.events import Event, iso_time
from shoe_controller.vocab.inputs import (
    BettingChanged,
    ButtonPressed,
    CardDrawn,
    CardsMissed,
    ControllerStarted,
    CutCardSeen,
    DeviceConnected,
    DeviceFault,
    DeviceFaultCleared,
    DeviceLost,
    Input,
    JournalCheckpoint,
    PreviousShoe,
    ShoeStateChanged,
    ShuffleDone,
    ShuffleFindings,
    ShuffleStarted,
    SupervisorCommand,
    SurveillanceReport,
    TableSettings,
)

# What each input type does: one entry per type of vocab.inputs.INPUT_TYPES (a test checks).
INPUT_HANDLERS: Mapping[type, Callable[[Context, Any], None]] = MappingProxyType(
    {
        CardDrawn: device_inputs.on_card,
        CardsMissed: device_inputs.on_missed,
        CutCardSeen: device_inputs.on_cut,
        ShoeStateChanged: device_inputs.on_shoe_state,
        ButtonPressed: device_inputs.on_button,
        ShuffleStarted: device_inputs.on_shuffle_started,
        ShuffleDone: device_inputs.on_shuffle_done,
        DeviceFault: device_inputs.on_fault,
        DeviceFaultCleared: device_inputs.on_fault_cleared,
        DeviceConnected: device_inputs.on_connected,
        DeviceLost: device_inputs.on_lost,
        ControllerStarted: device_inputs.on_started,
        SupervisorCommand: on_supervisor,
        SurveillanceReport: on_report,
        ShuffleFindings: on_findings,
        TableSettings: on_settings,
        BettingChanged: on_betting,
        PreviousShoe: on_previous_shoe,
        JournalCheckpoint: on_checkpoint,
    }
)
_CARD_INPUTS = (CardDrawn, CardsMissed, CutCardSeen)  # what the shoe sends as it deals
_LATEST_TIME = 253402300799.0  # 9999-12-31T23:59:59Z, the last time iso_time can write


def _iso_or_none(at: object) -> str | None:
    if isinstance(at, bool) or not isinstance(at, int | float):
        return None
    if not math.isfinite(at) or not 0 <= at <= _LATEST_TIME:
        return None
    return iso_time(at)


class Table:
    """One table's procedures: `apply` inputs, read `view()`, `indicator` and `shoe`."""

    def __init__(self, config: TableConfig, last_shoe: int = 0) -> None:
        if not isinstance(config, TableConfig):
            raise TypeError(f"config must be a TableConfig, got {type(config).__name__}")
        if isinstance(last_shoe, bool) or not isinstance(last_shoe, int) or last_shoe < 0:
            raise ValueError(f"last_shoe must be a whole number >= 0, got {last_shoe!r}")
        self._ctx = Context(config, last_shoe, DeviceBoard())
        # Accepted inputs of the open shoe and after, with their shoe, exactly as the journal
        # keeps them for recovery: replayed to undo an input the table's own logic fails on;
        # each with the settings in force before it (a table_settings input changes them).
        self._recorded: list[tuple[int, Input, TableConfig]] = []
        self._last_at: dict[int, float] = {}  # the last accepted input's time, per shoe
        self._carried: list[Input] = []  # for the controller to record next (take_carried)

    @property
    def config(self) -> TableConfig:
        """The settings in force: those given, until a table_settings input (table/settings.py)."""
        return self._ctx.config

    @property
    def shoe(self) -> int:
        """The shoe inputs now belong to: the open shoe, or the next one when none is open."""
        return self._ctx.book.number

    def shoe_of(self, item: Input) -> int:
        """The shoe this input belongs to, asked before applying it (context.shoe_of)."""
        return self._ctx.shoe_of(item)

    @property
    def state(self) -> str:
        """no_shoe, burning, ready, dealing, insurance, reveal, or held."""
        return self._ctx.state

    @property
    def lifecycle(self) -> str:
        """The lifecycle state beneath any hold: where dealing stands and goes on from."""
        return self._ctx.lifecycle

    @property
    def book(self) -> ShoeBook:
        """The shoe's bookkeeping, to inspect (invariant checks); it changes only by `apply`."""
        return self._ctx.book

    @property
    def holds_unrevealed_cards(self) -> bool:
        """R15: the round in play holds squeezed cards the dealer has not revealed yet."""
        current = self._ctx.book.round
        return current is not None and bool(current.hidden())

    @property
    def indicator(self) -> tuple[int, int]:
        """The INDICATE (pattern, arg) the shoe should show now (docs/spec-protocol.md)."""
        return indicator(self._ctx)

    def view(self) -> TableView:
        """JSON-able status for `shoectl status`; never an unrevealed card's identity (R15)."""
        return view(self._ctx)

    def snapshot(self) -> dict[str, Any]:
        """The whole state of the shoe (devices excluded), as plain data.

        Equal for two tables that applied the same inputs of the shoe: the recovery check.
        """
        ctx = self._ctx
        return {
            "lifecycle": ctx.lifecycle,
            "held": ctx.held,
            "preparation": ctx.preparation,
            "book": to_plain(ctx.book),
        }

    def apply(self, item: Input) -> list[Event]:
        """The events this input causes; never raises (docs/table.md)."""
        ctx = self._ctx
        start_shoe = ctx.book.number
        self._carried = []
        at = _iso_or_none(getattr(item, "at", None))
        config = ctx.config
        ctx.begin(at or EPOCH)
        try:
            belongs = ctx.shoe_of(item)
            if type(item) not in INPUT_HANDLERS:
                ctx.refuse("unknown_input", f"not a table input: {type(item).__name__}")
            elif at is None:
                ctx.refuse(
                    "bad_time",
                    f"{item.TYPE} input without a valid time "
                    f"(at={getattr(item, 'at', None)!r}): refused",
                )
            else:
                self._handle(item)
                # A settings input's time is the next input's; a checkpoint's the daemon's.
                if not isinstance(item, TableSettings | JournalCheckpoint):
                    self._note_time(belongs, item.at)
            self._note_refusing(item)
        except Exception as error:  # a bug of the table, never the input's: undo and report
            return self._refuse_after_bug(item, error, start_shoe, at or EPOCH)
        if not ctx.refused:
            self._recorded.append((belongs, item, config))
            number = ctx.book.number
            if number != start_shoe:  # the shoe ended: keep the next one's inputs
                self._carried = [*carried(ctx, start_shoe, item.at)]
                self._recorded = [entry for entry in self._recorded if entry[0] >= number]
                self._last_at = {shoe: at for shoe, at in self._last_at.items() if shoe >= number}
        return ctx.events

    def take_carried(self) -> list[Input]:
        """Inputs the table asks to be recorded right after the one it just applied, in the
        same transaction: a shoe's end, for the next shoe (`PreviousShoe`, table/shoe_times.py)
        on a table that keeps the round's clock. Applied like any input; asked once."""
        taken, self._carried = self._carried, []
        return taken

    def _handle(self, item: Input) -> None:
        INPUT_HANDLERS[type(item)](self._ctx, item)

    def _note_refusing(self, item: Input) -> None:
        """Whether the table is refusing the shoe's cards (context.Refusing)."""
        ctx = self._ctx
        book, refusing = ctx.book, ctx.refusing
        where = (book.number, book.open)
        if not isinstance(item, _CARD_INPUTS):
            if refusing is not None and refusing.where != where:
                ctx.refusing = None  # another shoe: the cards refused were the last one's
            return
        if ctx.refusal is None:
            ctx.refusing = None
            return
        code, text, needs_supervisor = ctx.refusal
        if not needs_supervisor:
            return  # a double read: nothing stops
        if refusing is None or refusing.where != where:
            ctx.refusing = Refusing(code, text, ctx.at, 1, where)
        else:
            ctx.refusing = Refusing(code, text, refusing.since, refusing.count + 1, where)

    def _note_time(self, shoe: int, at: float) -> None:
        """Report an accepted input whose time is before the last one's of its shoe.

        Per shoe, so that a shoe's inputs alone give the same reports (the recovery
        contract): the first input of a shoe is compared with nothing.
        """
        ctx = self._ctx
        if ctx.refused:
            return
        text = time_went_back(self._last_at.get(shoe), at)
        if text is not None:
            ctx.alert("time_went_back", text, False)
        self._last_at[shoe] = at  # once per step back, not for every input after it

    def _refuse_after_bug(
        self, item: Input, error: Exception, start_shoe: int, at: str
    ) -> list[Event]:
        kind = getattr(item, "TYPE", type(item).__name__)
        try:
            self._rebuild(start_shoe)
            outcome_text = "it was refused and the table is as it was before it"
        except Exception:  # the rebuild failed too: stop the table for a person to look
            outcome_text = "the table could not rebuild its state and is held"
            hold_after_bug(self._ctx)
        ctx = self._ctx
        ctx.begin(at)
        ctx.refusal = ("internal_error", "", True)
        ctx.alert(
            "internal_error",
            f"the controller failed on a {kind} input ({type(error).__name__}); {outcome_text};"
            " call the technician with the journal",
            True,
        )
        return ctx.events

    def _rebuild(self, shoe: int) -> None:
        """Put the table back as the inputs accepted so far left it (recovery contract): a
        fresh context, the accepted inputs applied again. The device status is no part of a
        shoe and stays as it is."""
        broken, recorded, times = self._ctx, self._recorded, self._last_at
        config = recorded[0][2] if recorded else broken.config  # in force before the first
        self._ctx, self._recorded = Context(config, shoe - 1, DeviceBoard()), []
        self._last_at = {}
        try:
            for _, item, _ in recorded:
                self.apply(item)
        except Exception:
            self._ctx, self._recorded, self._last_at = broken, recorded, times
            raise
        self._ctx.devices = broken.devices
