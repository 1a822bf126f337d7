"""The table and its journal as one: each input applied and stored in one step; recovery by replay.

This is the one place inputs enter the game. `submit()` applies an input to the table and
stores the input, its events and the device's link session in a single journal transaction;
only when it returns may the caller ACK the device (the card is then on disk). If the journal
cannot store (disk full, corrupt file), the table is rebuilt from the journal so that memory
never runs ahead of the disk, and the error goes to the caller, who does not ACK.

The table settings are journaled too, as a `table_settings` input (docs/journal.md "The table
settings"): at `start()` and before the first input of every shoe, in that input's
transaction, so that each shoe's inputs begin with the settings they were dealt by.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from shoe_controller.store.errors import (
    JournalOutcomeUnknown,
    JournalWrittenElsewhere,
    RecordInvalid,
)
from shoe_controller.store.journal import Journal, JournalError, ReplayMismatch, StoredEvent
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.inputs import (
    ControllerStarted,
    Input,
    JournalCheckpoint,
    TableSettings,
    input_from_json,
    input_to_json,
)

log = structlog.get_logger("controller")


@dataclass(frozen=True, slots=True)
class Recovery:
    """What start-up found in the journal."""

    inputs: tuple[Input, ...]  # the open shoe's inputs, replayed (the drivers rebuild from them)
    shoe: int | None
    mismatch: str | None  # replayed events differ from the stored ones (code changed?)


class Controller:
    """Owns the Table and the Journal; the daemon's single writer."""

    def __init__(
        self,
        table_config: TableConfig,
        journal: Journal,
        on_stored: Callable[[list[StoredEvent]], None] | None = None,
        on_commit_time: Callable[[float], None] | None = None,
    ) -> None:
        """`on_stored(events)` follows every commit; `on_commit_time(seconds)` is told how
        long each commit's journal transaction took (the metrics' histogram)."""
        self._config = table_config
        self.journal = journal
        self._on_stored = on_stored
        self._on_commit_time = on_commit_time
        # A journal this controller can no longer trust stores nothing more through it
        # (a commit the disk failed, the file written by another process): the error to give.
        self._untrusted: tuple[type[JournalError], str] | None = None
        self._settings_shoe: int | None = None  # the last shoe its settings were stored for
        self.table, self.recovery = self._rebuild()
        # The hash chain is walked once at start-up (and on demand: `shoe-controller verify
        # --journal`); a broken one is reported, never repaired (docs/journal.md).
        chain = journal.integrity.verify_chain()
        if not chain.intact:
            log.critical("journal chain broken", first_bad=chain.first_bad, problem=chain.problem)

    def _rebuild(self) -> tuple[Table, Recovery]:
        """A fresh table with the open shoe's inputs replayed (docs/table.md, recovery)."""
        steps = self.journal.reads.replay_steps()
        shoe = steps[0].shoe if steps else self.journal.reads.current_shoe()
        table = Table(self._config, last_shoe=max((shoe or 1) - 1, 0))
        mismatch = None
        inputs = []
        for step in steps:
            item = input_from_json(step.input)
            inputs.append(item)
            replayed = table.apply(item)
            if mismatch is None:
                mismatch = step.mismatch(replayed)
        return table, Recovery(tuple(inputs), shoe, mismatch)

    def start(self, version: str, at: float) -> list[StoredEvent]:
        """Count this boot and record the settings and controller.started (recovered when
        state was rebuilt), in one transaction."""
        boot = self.journal.reads.boot() + 1  # stored with controller.started, in its transaction
        recovered = bool(self.recovery.inputs)
        return self.submit_many(
            [
                self._settings(at),
                ControllerStarted(at=at, version=version, boot=boot, recovered=recovered),
            ]
        )

    def _settings(self, at: float) -> TableSettings:
        """This controller's table settings as an input (the replay's may have been others)."""
        return TableSettings(at=at, settings=dataclasses.asdict(self._config))

    def submit(
        self, item: Input, link_state: Mapping[str, Mapping[str, Any]] | None = None
    ) -> list[StoredEvent]:
        """Apply and store one input; raises JournalError when it could not be stored."""
        return self.submit_many([item], link_state)

    def submit_many(
        self, items: Sequence[Input], link_state: Mapping[str, Mapping[str, Any]] | None = None
    ) -> list[StoredEvent]:
        """Apply and store inputs that stand or fall together (one device frame) in one
        transaction with the link state; raises JournalError (storage) or RecordInvalid (an
        input the journal cannot hold) when they were not stored, and only then;
        JournalOutcomeUnknown when the disk failed the commit: from then on nothing more is
        stored through this journal (a later commit must not seem to settle the question);
        the same from JournalWrittenElsewhere on (another process wrote the file: the
        journal's counters in memory are stale, only a fresh start reads them right)."""
        if self._untrusted is not None:
            kind, text = self._untrusted
            raise kind(text)
        settings_shoe = self._settings_shoe
        try:
            steps = []
            queue = list(items)
            while queue:
                item = queue.pop(0)
                if isinstance(item, JournalCheckpoint):
                    # Belongs to no shoe: never a shoe's first input, nor its settings' cue.
                    self._check_checkpoint(item, first=not steps)
                    steps.append((input_to_json(item), self.table.apply(item), None))
                    continue
                shoe = self.table.shoe_of(item)
                if isinstance(item, TableSettings):
                    settings_shoe = max(shoe, settings_shoe or 0)
                elif settings_shoe is None or shoe > settings_shoe:
                    # A shoe's first input: its settings go first, stored with its shoe.
                    settings = self._settings(item.at)
                    steps.append((input_to_json(settings), self.table.apply(settings), shoe))
                    settings_shoe = shoe
                steps.append((input_to_json(item), self.table.apply(item), shoe))
                # What the table asks to record with it: a shoe's end, for the next shoe.
                queue[:0] = self.table.take_carried()
            began = time.perf_counter()
            stored = self.journal.record_many(steps, link_state)
            if self._on_commit_time is not None:
                self._on_commit_time(time.perf_counter() - began)
            self._settings_shoe = settings_shoe
        except JournalOutcomeUnknown as error:
            self._untrusted = (
                JournalOutcomeUnknown,
                f"an earlier commit's outcome is unknown: {error}",
            )
            raise
        except Exception as error:
            if isinstance(error, JournalWrittenElsewhere):
                self._untrusted = (JournalWrittenElsewhere, str(error))
            # The table moved but the disk did not (storage fault, or an input the journal
            # refuses as RecordInvalid): go back to what the disk holds.
            self.table, _ = self._rebuild()
            raise
        if self._on_stored is not None and stored:
            try:
                self._on_stored(stored)
            except Exception:
                # Stored is stored: raising now would tell the caller "not stored", and a
                # supervisor would repeat an action the table already took.
                log.exception("a listener failed after the commit", seqs=[e.seq for e in stored])
        return stored

    def _check_checkpoint(self, item: JournalCheckpoint, *, first: bool) -> None:
        """A checkpoint is journaled only where it says the chain stands: first in its
        transaction, after the last record committed (docs/journal.md "Checkpoints")."""
        point = self.journal.chain_point
        if not first or (item.input_no, item.seq, item.head) != (
            point.input_no,
            point.seq,
            point.head,
        ):
            raise RecordInvalid(
                f"a checkpoint of input {item.input_no}, seq {item.seq} is not where the chain"
                f" stands (input {point.input_no}, seq {point.seq}): not journaled"
            )


__all__ = ["Controller", "JournalError", "Recovery", "ReplayMismatch"]
