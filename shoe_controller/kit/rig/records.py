"""What the rig's table stored: the daemon's journal (read-only) and the receiver's database."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from shoe_controller.kit.receiver.store import ReceiverStore
from shoe_controller.kit.rig.config import TABLE_ID
from shoe_controller.store.journal import Journal, JournalError, StoredEvent
from shoe_controller.store.schema import LEGACY_SINK
from shoe_controller.vocab.events import EventType


class TableRecords:
    """Readers of the journal and of the table server's database, opened once they exist."""

    def __init__(self, journal_path: Path, receiver_db: Path) -> None:
        self.journal_path = journal_path
        self.receiver_db = receiver_db
        self.shoes_ended = 0  # shoe.ended events seen in the journal
        self._journal: Journal | None = None
        self._store: ReceiverStore | None = None
        self._journaled = 0  # last journal seq read by poll_journal()

    def use_journal(self, path: str | os.PathLike[str]) -> None:
        """Read another journal file from now on (from its first event)."""
        if self._journal is not None:
            self._journal.close()
        self._journal, self._journaled, self.journal_path = None, 0, Path(path)

    def close(self) -> None:
        for reader in (self._journal, self._store):
            if reader is not None:
                reader.close()
        self._journal = self._store = None

    def journal(self) -> Journal | None:
        """The daemon's journal, read-only, once the daemon has made it (else None)."""
        if self._journal is None and self.journal_path.exists():
            with contextlib.suppress(JournalError):  # not initialised yet: try again later
                self._journal = Journal.open(self.journal_path, None, read_only=True)
        return self._journal

    def last_seq(self) -> int:
        journal = self.journal()
        return journal.reads.last_seq() if journal is not None else 0

    def poll_journal(self) -> list[StoredEvent]:
        """Events stored since the last poll; counts the shoes that ended."""
        journal = self.journal()
        if journal is None:
            return []
        events = journal.reads.events_after(self._journaled, limit=100_000)
        if events:
            self._journaled = events[-1].seq
        for event in events:
            self.shoes_ended += event.type == EventType.SHOE_ENDED
        return events

    def journal_events(self, after: int = 0) -> list[StoredEvent]:
        journal = self.journal()
        return [] if journal is None else journal.reads.events_after(after, limit=1_000_000)

    def journal_inputs(self) -> list[dict[str, Any]]:
        """Every input the journal holds, in order (as JSON, with its `type`)."""
        journal = self.journal()
        return [] if journal is None else [step.input for step in journal.reads.replay_steps(1)]

    def link_states(self) -> dict[str, dict[str, Any]]:
        """What the journal keeps of each device's link (session, identity)."""
        journal = self.journal()
        return {} if journal is None else journal.reads.link_states()

    def server_events(self) -> list[dict[str, Any]]:
        """What the table server is to get: the [server] sink's events, its seqs (every
        event but surveillance's, docs/delivery.md), in docs/spec-push-api.md form."""
        journal = self.journal()
        if journal is None:
            return []
        return [item.to_wire() for item in journal.sinks.events_after(LEGACY_SINK, 0, 10**7)]

    def server_last_seq(self) -> int:
        """The [server] sink's last seq (0 before the daemon stored anything)."""
        journal = self.journal()
        mark = None if journal is None else journal.sinks.marks().get(LEGACY_SINK)
        return 0 if mark is None else mark.last_seq

    def received_events(self, after: int = 0) -> list[dict[str, Any]]:
        """What the table server stored, in seq order (docs/spec-push-api.md form)."""
        if self._store is None:
            self._store = ReceiverStore(self.receiver_db)
        return self._store.events(TABLE_ID, after=after)

    def received_through(self) -> int:
        if self._store is None:
            self._store = ReceiverStore(self.receiver_db)
        return self._store.acked_through(TABLE_ID)
