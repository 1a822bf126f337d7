"""Durable journal: each input and the events it caused, stored in one SQLite transaction.

The journal is the controller's memory and every sink's backlog. One `record()` call stores an
input, the events `table.apply(input)` produced, the link session state the drivers ACK against,
and assigns the controller-wide event `seq` of docs/spec-push-api.md (1, 2, 3 ... no gaps, never
reused, kept across restarts and pruning). Recovery replays the inputs of the current shoe into
a fresh table; `ReplayStep.mismatch()` says how the replayed events differ from the stored ones.

`Journal` is the one entry point: this module holds its opening and its write side (record,
retention); it owns the connection (connection.py) and holds the rest as parts: `journal.reads`
(queries.py: events, shoes, rounds, links, replay), `journal.integrity` (integrity.py: the
check, the hash chain) and `journal.sinks` (backlogs.py: each sink's backlog, its events and its
mark). Below them: store/schema.py (schema, pragmas, opening), rows.py (what may be stored),
records.py (what comes back), retention.py (what prune deletes), transactions.py and errors.py.
The value and error types are re-exported here, where users import them from.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from shoe_controller.store.backlogs import Backlogs, SinkMark, SinkRoutes
from shoe_controller.store.chain import (
    ChainPoint,
    ChainReport,
    event_canonical,
    input_canonical,
    link,
)
from shoe_controller.store.connection import JournalConnection
from shoe_controller.store.errors import (
    JournalBusy,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalMismatch,
    JournalWrittenElsewhere,
    RecordInvalid,
    ReplayMismatch,
)
from shoe_controller.store.integrity import JournalIntegrity
from shoe_controller.store.queries import JournalReader
from shoe_controller.store.records import (
    BacklogEvent,
    PruneResult,
    ReplayStep,
    RoundInfo,
    ShoeInfo,
    StoredEvent,
    stored_event,
)
from shoe_controller.store.retention import prune_before
from shoe_controller.store.rows import check_optional_int, event_row, input_row, link_rows
from shoe_controller.store.schema import connect
from shoe_controller.vocab.events import EventType

SHOE_ENDED = str(EventType.SHOE_ENDED)  # marks a shoe as finished, for retention
CONTROLLER_STARTED = "controller_started"  # the input whose `boot` is the boot counter

__all__ = [
    "BacklogEvent",
    "Backlogs",
    "ChainPoint",
    "ChainReport",
    "Journal",
    "JournalBusy",
    "JournalCorrupt",
    "JournalError",
    "JournalFull",
    "JournalIntegrity",
    "JournalMismatch",
    "JournalReader",
    "JournalWrittenElsewhere",
    "PruneResult",
    "RecordInvalid",
    "ReplayMismatch",
    "ReplayStep",
    "RoundInfo",
    "ShoeInfo",
    "SinkMark",
    "SinkRoutes",
    "StoredEvent",
]


class Journal:
    """The journal file. One writer process; any number of readers (`read_only=True`).

    Its questions are its parts': `reads` (last_seq, events_after, replay_steps ...),
    `integrity` (check, verify_chain ...), `sinks` (marks, events_after, mark_delivered ...).
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        controller_id: str,
        *,
        clock: Callable[[], float],
        read_only: bool,
        routes: SinkRoutes | None = None,
    ) -> None:
        """Use `Journal.open()`; this only wraps an already checked connection."""
        self._conn = connection
        self._connection = JournalConnection(connection, path, controller_id, read_only=read_only)
        self.path = path
        self.controller_id = controller_id
        self.read_only = read_only
        self._clock = clock
        self._routes = dict(routes or {})
        self.reads = JournalReader(self._connection)
        self.integrity = JournalIntegrity(self._connection)
        self.sinks = Backlogs(self._connection, self._routes, clock)
        # The link of the last record stored (the next record follows it: store/chain.py)
        # and the last event seq and input number: kept here, not read back per commit,
        # as this process is the journal's one writer.
        ((head, last_seq, last_input),) = self._connection.query(
            "SELECT chain_head, last_seq, last_input FROM journal"
        )
        self._chain_head: str = head
        self._last_seq: int = last_seq
        self._last_input: int = last_input

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: str | Path,
        controller_id: str | None,
        *,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
        quick_check: bool = True,
        busy_timeout_s: float = 5.0,
        routes: SinkRoutes | None = None,
    ) -> Journal:
        """Open (and create if new and writable) the journal at `path`.

        `controller_id` must match the one the journal was created with (ids are
        "{controller_id}:{seq}"); None accepts whatever is stored (for read-only tools).
        `quick_check` runs SQLite's page-level check and raises JournalCorrupt on damage.
        `routes` names the delivery sinks and which event types each takes: every event
        stored gets a seq of each sink that takes it (store/backlogs.py), and retention
        keeps what these sinks have not confirmed. A sink stored but not named here
        numbers nothing more and holds nothing back.
        """
        path = Path(path)
        conn, stored_id = connect(
            path,
            controller_id,
            clock=clock,
            read_only=read_only,
            quick_check=quick_check,
            busy_timeout_s=busy_timeout_s,
        )
        try:
            return cls(conn, path, stored_id, clock=clock, read_only=read_only, routes=routes)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        """Store the marks noted (a journal that cannot is closed all the same: the sinks
        are sent those events again), and close the file."""
        if not self.read_only:
            with contextlib.suppress(JournalError):
                self.sinks.store_marks()
        self._conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "ro" if self.read_only else "rw"
        return f"Journal({str(self.path)!r}, {self.controller_id!r}, {mode})"

    @property
    def chain_point(self) -> ChainPoint:
        """Where the chain stands: the last input and event seq stored and the link of the
        last record, as this process committed them (what a checkpoint signs)."""
        return ChainPoint(self._last_input, self._last_seq, self._chain_head)

    def limit_cache(self, kib: int) -> None:
        """At most `kib` KiB of page cache on this connection (SQLite's default: 2 MB)."""
        self._connection.limit_cache(kib)

    # ------------------------------------------------------------------ writing

    def record(
        self,
        input: Mapping[str, Any],
        events: Sequence[Any],
        shoe: int | None,
        link_state: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[StoredEvent]:
        """Store one input, its events and link states in ONE transaction; return the events.

        `events` are `events.Event` objects or dicts with type, at, shoe, round, data.
        `shoe` is the shoe the input belongs to: the first input recorded with a new
        shoe number starts that shoe (replay starts there). `link_state` maps a device name
        to its JSON-able link session (e.g. {"boot_id": ..., "last_seq": ...}), stored with
        the data the driver is about to ACK. Raises RecordInvalid before touching the file,
        JournalError subclasses (nothing stored, seq unchanged) on storage faults.
        """
        return self.record_many([(input, events, shoe)], link_state)

    def record_many(
        self,
        steps: Sequence[tuple[Mapping[str, Any], Sequence[Any], int | None]],
        link_state: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[StoredEvent]:
        """Store several (input, events, shoe) steps and the link states in ONE transaction.

        One device frame can stand for several inputs (a counter gap and the card after it):
        they are stored together with the session that frame's ACK depends on, or not at all.
        JournalWrittenElsewhere when another process stored records behind this one's back.
        """
        try:
            return self._record_many(steps, link_state)
        except JournalError as error:
            # Numbers taken from memory collide only with rows this writer did not store.
            if isinstance(error.__cause__, sqlite3.IntegrityError):
                self._raise_if_written_elsewhere(error)
            raise

    def _raise_if_written_elsewhere(self, error: JournalError) -> None:
        """JournalWrittenElsewhere if the file holds more than this writer stored in it (the
        other writer may not have moved the counters: the highest numbers stored count too)."""
        try:
            ((last_seq, last_input, head),) = self._connection.query(
                "SELECT max(last_seq, (SELECT coalesce(max(seq), 0) FROM events)),"
                " max(last_input, (SELECT coalesce(max(input_no), 0) FROM inputs)),"
                " chain_head FROM journal"
            )
        except JournalError:
            return  # the file cannot say: the first error stands
        if (last_seq, last_input, head) == (self._last_seq, self._last_input, self._chain_head):
            return
        raise JournalWrittenElsewhere(
            f"journal {self.path} was written by another process: it holds input {last_input}"
            f" and event {last_seq}, this process stored through input {self._last_input} and"
            f" event {self._last_seq}; only a fresh start reads it right ({error})"
        ) from error

    def _record_many(
        self,
        steps: Sequence[tuple[Mapping[str, Any], Sequence[Any], int | None]],
        link_state: Mapping[str, Mapping[str, Any]] | None,
    ) -> list[StoredEvent]:
        prepared = []
        boot = None
        for input, events, shoe in steps:
            check_optional_int("shoe", shoe)
            prepared.append((*input_row(input), [event_row(event) for event in events], shoe))
            if input.get("type") == CONTROLLER_STARTED:
                boot = input.get("boot")
                check_optional_int("boot", boot)
        links = link_rows(link_state)
        now = float(self._clock())
        stored: list[StoredEvent] = []
        typed: list[tuple[int, str]] = []  # (seq, type) of each event, for the sinks
        head, last_seq, last_input = self._chain_head, self._last_seq, self._last_input
        with self._connection.write() as conn:
            for input_type, input_body, rows, shoe in prepared:
                last_input += 1
                first_seq = last_seq + 1 if rows else None
                count = len(rows)
                stored_input = (last_input, shoe, input_type, input_body, now, first_seq, count)
                head = link(head, input_canonical(stored_input))
                conn.execute(
                    "INSERT INTO inputs (input_no, shoe, type, body, recorded_at, first_seq,"
                    " event_count, chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (*stored_input, head),
                )
                event_rows = []
                for i, row in enumerate(rows):
                    typed.append((last_seq + 1 + i, row[0]))
                    stored_row = (last_seq + 1 + i, last_input, *row)
                    head = link(head, event_canonical(stored_row))
                    event_rows.append((*stored_row, head))
                conn.executemany(
                    "INSERT INTO events (seq, input_no, type, at, shoe, round, data, chain)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    event_rows,
                )
                if shoe is not None:
                    conn.execute(
                        "INSERT INTO shoes (shoe, first_input, last_input) VALUES (?, ?, ?)"
                        " ON CONFLICT (shoe) DO UPDATE SET last_input = excluded.last_input",
                        (shoe, last_input, last_input),
                    )
                for type_, _at, event_shoe, _round, _data in rows:
                    if type_ == SHOE_ENDED:
                        ended = event_shoe if event_shoe is not None else shoe
                        conn.execute("UPDATE shoes SET ended_at = ? WHERE shoe = ?", (now, ended))
                stored.extend(
                    stored_event(self.controller_id, (last_seq + 1 + i, *row, last_input))
                    for i, row in enumerate(rows)
                )
                last_seq += count
            conn.execute(
                "UPDATE journal SET last_seq = ?, last_input = ?, chain_head = ?",
                (last_seq, last_input, head),
            )
            if boot is not None:  # counted with the very input that announces the start
                conn.execute("UPDATE journal SET boot = ?", (boot,))
            conn.executemany(
                "INSERT INTO links (device, state, input_no) VALUES (?, ?, ?)"
                " ON CONFLICT (device) DO UPDATE SET state = excluded.state,"
                " input_no = excluded.input_no",
                [(device, state, last_input) for device, state in links],
            )
            backlogs = self.sinks.write(conn, typed)  # the sinks' rows, and the marks noted
        # committed: the next record follows this one
        self._chain_head, self._last_seq, self._last_input = head, last_seq, last_input
        self.sinks.committed(backlogs, stored)
        return stored

    def prune(self, max_age_s: float) -> PruneResult:
        """Delete whole shoes that ended more than `max_age_s` ago and every sink has.

        Never deletes the current shoe (replay needs it), an event a routed sink has not
        confirmed, or anything
        recorded within `max_age_s`. Seq and input numbers are not reused afterwards.
        The chain survives: the link of the last record pruned becomes the anchor the first
        record kept follows. Nothing is pruned while the chain is known to be broken, or when
        the records to prune do not chain (the evidence stays; `chain_report` says why).
        """
        if not (isinstance(max_age_s, int | float) and math.isfinite(max_age_s)) or max_age_s < 0:
            raise RecordInvalid(f"max_age_s must be a non-negative number, not {max_age_s!r}")
        known = self.integrity.chain_report
        if known is not None and not known.intact:
            return PruneResult(shoes=(), inputs=0, events=0, chain=known)
        horizon = self._clock() - max_age_s
        with self._connection.write() as conn:
            backlogs = self.sinks.write(conn)  # what the sinks have decides what goes
            result = prune_before(conn, horizon, self._routes)
        self.sinks.committed(backlogs)
        if result.events:
            self.sinks.forget_recent()
        if result.chain is not None and not result.chain.intact:
            self.integrity.note_chain(result.chain)
        return result
