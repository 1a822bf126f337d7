"""Durable journal: each input and the events it caused, stored in one SQLite transaction.

The journal is the controller's memory and its outbox. One `record()` call stores an input,
the events `table.apply(input)` produced, the link session state the drivers ACK against, and
assigns the controller-wide event `seq` of PUSH_API.md (1, 2, 3 ... no gaps, never reused,
kept across restarts and pruning). Recovery replays the inputs of the current shoe into a
fresh table; `ReplayStep.check()` proves the replayed events equal the stored ones.

Storage rules (after eventsourcing's SQLite recorder): WAL, `synchronous=FULL`, autocommit
off at the driver level (`isolation_level=None`) with explicit `BEGIN IMMEDIATE ... COMMIT`, so
the write lock is taken up front and a transaction is either all on disk or not at all.

Schema (see docs/journal.md for the reasoning):

    journal  one row: controller_id, schema_version, last_seq, last_input, acked_through, boot
    inputs   input_no PK, shoe, type, body (JSON), recorded_at, first_seq, event_count
    events   seq PK, input_no, type, at, shoe, round, data (JSON)
             index events_by_round (shoe, round, seq)    -- rounds(), round_events()
    shoes    shoe PK, first_input, last_input, ended_at  -- replay start and retention
             index shoes_by_first_input (first_input)
    links    device PK, state (JSON), input_no           -- driver link sessions

`events_after()` and `backlog()` ride the seq primary key; `last_seq`/`acked_through` live in
the one-row `journal` table so they survive pruning every event.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shoe_controller.vocab.events import EventType

SCHEMA_VERSION = 1
SHOE_ENDED = str(EventType.SHOE_ENDED)  # marks a shoe as finished, for retention
CONTROLLER_STARTED = "controller_started"  # the input whose `boot` is the boot counter
AT_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")
WAL_SIZE_LIMIT = 16 * 1024 * 1024  # bytes the WAL is truncated to after a checkpoint
LOW_SPACE_BYTES = 1024 * 1024  # an I/O error with less free space than this is a full disk

_SCHEMA = """
CREATE TABLE journal (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    schema_version INTEGER NOT NULL,
    controller_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_seq INTEGER NOT NULL,
    last_input INTEGER NOT NULL,
    acked_through INTEGER NOT NULL,
    boot INTEGER NOT NULL
);
CREATE TABLE inputs (
    input_no INTEGER PRIMARY KEY,
    shoe INTEGER,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    first_seq INTEGER,
    event_count INTEGER NOT NULL
);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    input_no INTEGER NOT NULL,
    type TEXT NOT NULL,
    at TEXT NOT NULL,
    shoe INTEGER,
    round INTEGER,
    data TEXT NOT NULL
);
CREATE INDEX events_by_round ON events (shoe, round, seq);
CREATE TABLE shoes (
    shoe INTEGER PRIMARY KEY,
    first_input INTEGER NOT NULL,
    last_input INTEGER NOT NULL,
    ended_at REAL
);
CREATE INDEX shoes_by_first_input ON shoes (first_input);
CREATE TABLE links (
    device TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    input_no INTEGER
);
"""

_EVENT_COLUMNS = "seq, type, at, shoe, round, data, input_no"


class JournalError(Exception):
    """The journal could not do what was asked; nothing was half-written, retry may work.

    The subclass names (JournalFull, JournalCorrupt, ...) are the daemon's interface, hence
    no "Error" suffix (N818).
    """


class JournalFull(JournalError):  # noqa: N818
    """The file system holding the journal is full: free space, then retry the same call."""


class JournalCorrupt(JournalError):  # noqa: N818
    """The journal file is damaged or is not a journal; it needs an operator."""


class JournalBusy(JournalError):  # noqa: N818
    """Another process holds the journal's write lock for too long."""


class JournalMismatch(JournalError):  # noqa: N818
    """The journal belongs to another controller or a newer schema."""


class ReplayMismatch(JournalError):  # noqa: N818
    """Replaying a stored input produced events that differ from the stored ones."""


class RecordInvalid(ValueError):  # noqa: N818
    """An input, event or link state cannot be stored as given (caller bug); nothing stored."""


@dataclasses.dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored, with its seq; `to_wire()` gives the PUSH_API.md form."""

    seq: int
    id: str
    type: str
    at: str
    shoe: int | None
    round: int | None
    data: dict[str, Any]
    input_no: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "id": self.id,
            "type": self.type,
            "at": self.at,
            "shoe": self.shoe,
            "round": self.round,
            "data": self.data,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class ReplayStep:
    """One stored input and the events it caused, for recovery by replay."""

    input_no: int
    shoe: int | None
    input: dict[str, Any]
    events: tuple[StoredEvent, ...]

    def mismatch(self, replayed: Sequence[Any]) -> str | None:
        """How `replayed` (events from table.apply) differs from the stored events, or None."""
        try:
            fresh = [_event_row(event) for event in replayed]
        except RecordInvalid as exc:
            return f"input {self.input_no}: replayed event is invalid: {exc}"
        if len(fresh) != len(self.events):
            return (
                f"input {self.input_no}: replay gave {len(fresh)} events, "
                f"journal holds {len(self.events)}"
            )
        for stored, (type_, at, shoe, round_, data) in zip(self.events, fresh, strict=True):
            got = (type_, at, shoe, round_, json.loads(data))
            want = (stored.type, stored.at, stored.shoe, stored.round, stored.data)
            if got != want:
                return f"input {self.input_no}: seq {stored.seq} stored {want!r}, replay {got!r}"
        return None

    def check(self, replayed: Sequence[Any]) -> None:
        """Raise ReplayMismatch unless `replayed` equals the stored events."""
        problem = self.mismatch(replayed)
        if problem is not None:
            raise ReplayMismatch(problem)


@dataclasses.dataclass(frozen=True, slots=True)
class RoundInfo:
    """A round of a shoe as the journal holds it (for `shoectl rounds`)."""

    shoe: int
    round: int
    first_seq: int
    last_seq: int
    events: int
    first_at: str
    last_at: str


@dataclasses.dataclass(frozen=True, slots=True)
class ShoeInfo:
    shoe: int
    first_input: int
    last_input: int
    ended_at: float | None  # journal clock (unix s) when shoe.ended was stored


@dataclasses.dataclass(frozen=True, slots=True)
class PruneResult:
    shoes: tuple[int, ...]
    inputs: int
    events: int


class Journal:
    """The journal file. One writer process; any number of readers (`read_only=True`)."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        controller_id: str,
        *,
        clock: Callable[[], float],
        read_only: bool,
    ) -> None:
        """Use `Journal.open()`; this only wraps an already checked connection."""
        self._conn = connection
        self.path = path
        self.controller_id = controller_id
        self._clock = clock
        self.read_only = read_only

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
    ) -> Journal:
        """Open (and create if new and writable) the journal at `path`.

        `controller_id` must match the one the journal was created with (ids are
        "{controller_id}:{seq}"); None accepts whatever is stored (for read-only tools).
        `quick_check` runs SQLite's page-level check and raises JournalCorrupt on damage.
        """
        path = Path(path)
        if read_only and not path.exists():
            raise JournalError(f"journal {path} does not exist")
        if not read_only and controller_id is None and not path.exists():
            raise JournalError("a new journal needs a controller_id")
        try:
            if read_only:
                uri = f"file:{path.resolve()}?mode=ro"
                conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=busy_timeout_s)
            else:
                conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_s)
        except sqlite3.Error as exc:
            raise _journal_error(exc, path) from exc
        try:
            stored_id = _prepare(
                conn,
                path=path,
                controller_id=controller_id,
                clock=clock,
                read_only=read_only,
                quick_check=quick_check,
            )
        except sqlite3.Error as exc:
            conn.close()
            raise _journal_error(exc, path) from exc
        except BaseException:
            conn.close()
            raise
        return cls(conn, path, stored_id, clock=clock, read_only=read_only)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "ro" if self.read_only else "rw"
        return f"Journal({str(self.path)!r}, {self.controller_id!r}, {mode})"

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
        """
        prepared = []
        boot = None
        for input, events, shoe in steps:
            _check_optional_int("shoe", shoe)
            prepared.append((*_input_row(input), [_event_row(event) for event in events], shoe))
            if input.get("type") == CONTROLLER_STARTED:
                boot = input.get("boot")
                _check_optional_int("boot", boot)
        links = _link_rows(link_state)
        now = self._clock()
        stored: list[StoredEvent] = []
        with self._write() as conn:
            last_seq, last_input = conn.execute(
                "SELECT last_seq, last_input FROM journal"
            ).fetchone()
            for input_type, input_body, rows, shoe in prepared:
                last_input += 1
                first_seq = last_seq + 1 if rows else None
                conn.execute(
                    "INSERT INTO inputs (input_no, shoe, type, body, recorded_at, first_seq,"
                    " event_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (last_input, shoe, input_type, input_body, now, first_seq, len(rows)),
                )
                conn.executemany(
                    "INSERT INTO events (seq, input_no, type, at, shoe, round, data)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(last_seq + 1 + i, last_input, *row) for i, row in enumerate(rows)],
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
                    _stored(self.controller_id, last_seq + 1 + i, last_input, row)
                    for i, row in enumerate(rows)
                )
                last_seq += len(rows)
            conn.execute("UPDATE journal SET last_seq = ?, last_input = ?", (last_seq, last_input))
            if boot is not None:  # counted with the very input that announces the start
                conn.execute("UPDATE journal SET boot = ?", (boot,))
            conn.executemany(
                "INSERT INTO links (device, state, input_no) VALUES (?, ?, ?)"
                " ON CONFLICT (device) DO UPDATE SET state = excluded.state,"
                " input_no = excluded.input_no",
                [(device, state, last_input) for device, state in links],
            )
        return stored

    def mark_acked(self, acked_through: int) -> None:
        """Store the table server's acked_through (it may go down if the server lost data)."""
        if not isinstance(acked_through, int) or isinstance(acked_through, bool):
            raise RecordInvalid(f"acked_through must be an int, not {acked_through!r}")
        # Not synced on its own: losing the last mark to a power cut only resends events the
        # server stores once anyway (and the start-up GET resyncs); the next card's commit
        # syncs it. One fsync less per batch on the loop the devices share.
        with self._write(durable=False) as conn:
            last_seq = conn.execute("SELECT last_seq FROM journal").fetchone()[0]
            if not 0 <= acked_through <= last_seq:
                raise RecordInvalid(
                    f"acked_through {acked_through} outside 0..{last_seq} (the last seq stored)"
                )
            conn.execute("UPDATE journal SET acked_through = ?", (acked_through,))

    def prune(self, max_age_s: float) -> PruneResult:
        """Delete whole shoes that ended more than `max_age_s` ago and are fully acked.

        Never deletes the current shoe (replay needs it), an unacked event, or anything
        recorded within `max_age_s`. Seq and input numbers are not reused afterwards.
        """
        if not (isinstance(max_age_s, int | float) and math.isfinite(max_age_s)) or max_age_s < 0:
            raise RecordInvalid(f"max_age_s must be a non-negative number, not {max_age_s!r}")
        horizon = self._clock() - max_age_s
        with self._write() as conn:
            keep_from = _prune_boundary(conn, horizon)
            shoes = tuple(
                row[0]
                for row in conn.execute(
                    "SELECT shoe FROM shoes WHERE last_input < ? ORDER BY shoe", (keep_from,)
                )
            )
            first_kept_seq = conn.execute(
                "SELECT min(first_seq) FROM inputs WHERE input_no >= ?", (keep_from,)
            ).fetchone()[0]
            if first_kept_seq is None:
                first_kept_seq = conn.execute("SELECT last_seq FROM journal").fetchone()[0] + 1
            events = conn.execute("DELETE FROM events WHERE seq < ?", (first_kept_seq,)).rowcount
            inputs = conn.execute("DELETE FROM inputs WHERE input_no < ?", (keep_from,)).rowcount
            conn.execute("DELETE FROM shoes WHERE last_input < ?", (keep_from,))
        return PruneResult(shoes=shoes, inputs=inputs, events=events)

    # ------------------------------------------------------------------ reading

    def last_seq(self) -> int:
        return int(self._one("SELECT last_seq FROM journal"))

    def acked_through(self) -> int:
        return int(self._one("SELECT acked_through FROM journal"))

    def backlog(self) -> int:
        """Events stored but not yet acknowledged by the table server."""
        return int(self._one("SELECT last_seq - acked_through FROM journal"))

    def last_input(self) -> int:
        """Highest input number assigned (inputs are numbered 1, 2, 3 ... like seqs)."""
        return int(self._one("SELECT last_input FROM journal"))

    def boot(self) -> int:
        return int(self._one("SELECT boot FROM journal"))

    def first_seq(self) -> int | None:
        """Lowest seq still held (earlier ones were pruned), None if no event is held."""
        return self._one("SELECT min(seq) FROM events")

    def events_after(self, seq: int, limit: int = 200) -> list[StoredEvent]:
        """Up to `limit` events with seq > `seq`, in seq order (the outbox read)."""
        rows = self._query(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
            (seq, limit),
        )
        return [self._event(row) for row in rows]

    def current_shoe(self) -> int | None:
        """The shoe of the latest shoe-bearing input (open, or ended with no successor)."""
        return self._one("SELECT shoe FROM shoes ORDER BY first_input DESC LIMIT 1")

    def shoes(self) -> list[ShoeInfo]:
        rows = self._query(
            "SELECT shoe, first_input, last_input, ended_at FROM shoes ORDER BY first_input"
        )
        return [ShoeInfo(*row) for row in rows]

    def rounds(self, shoe: int) -> list[RoundInfo]:
        rows = self._query(
            "SELECT shoe, round, min(seq), max(seq), count(*), min(at), max(at) FROM events"
            " WHERE shoe = ? AND round IS NOT NULL GROUP BY round ORDER BY round",
            (shoe,),
        )
        return [RoundInfo(*row) for row in rows]

    def round_events(self, shoe: int, round: int) -> list[StoredEvent]:
        rows = self._query(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE shoe = ? AND round = ? ORDER BY seq",
            (shoe, round),
        )
        return [self._event(row) for row in rows]

    def link_state(self, device: str) -> dict[str, Any] | None:
        encoded = self._one("SELECT state FROM links WHERE device = ?", (device,))
        return None if encoded is None else json.loads(encoded)

    def link_states(self) -> dict[str, dict[str, Any]]:
        return {
            device: json.loads(state)
            for device, state in self._query("SELECT device, state FROM links ORDER BY device")
        }

    def replay_start(self) -> int:
        """The input number replay starts from: the first input of the oldest shoe not ended
        (a batch shuffler prepares the next shoe while this one is still dealt), else of the
        latest shoe, else the oldest input held (when no shoe was ever recorded)."""
        start = self._one("SELECT min(first_input) FROM shoes WHERE ended_at IS NULL")
        if start is None:
            start = self._one("SELECT first_input FROM shoes ORDER BY first_input DESC LIMIT 1")
        if start is None:
            start = self._one("SELECT min(input_no) FROM inputs")
        return (
            int(start) if start is not None else self._one_int("SELECT last_input + 1 FROM journal")
        )

    def replay_steps(self, from_input: int | None = None) -> list[ReplayStep]:
        """The inputs from `from_input` (default: replay_start()) on, each with its events.

        By default only inputs of the replay start's shoe and later ones: the inputs of an
        earlier shoe recorded after the next shoe's first input (its last rounds, dealt while
        a batch shuffler prepared the next shoe) belong to a shoe that is over.
        """
        with self._read() as conn:
            start = self.replay_start() if from_input is None else from_input
            first_shoe = None
            if from_input is None:
                first_shoe = self._one("SELECT shoe FROM inputs WHERE input_no = ?", (start,))
            inputs = conn.execute(
                "SELECT input_no, shoe, body, first_seq FROM inputs WHERE input_no >= ?"
                " AND (? IS NULL OR shoe IS NULL OR shoe >= ?) ORDER BY input_no",
                (start, first_shoe, first_shoe),
            ).fetchall()
            first = next((row[3] for row in inputs if row[3] is not None), None)
            events: dict[int, list[StoredEvent]] = {}
            if first is not None:
                for row in conn.execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE seq >= ? ORDER BY seq", (first,)
                ):
                    event = self._event(row)
                    events.setdefault(event.input_no, []).append(event)
        return [
            ReplayStep(input_no, shoe, json.loads(body), tuple(events.get(input_no, ())))
            for input_no, shoe, body, _ in inputs
        ]

    def check(self) -> list[str]:
        """Integrity problems found (empty list: sound): pages, seq continuity, counters."""
        problems: list[str] = []
        with self._read() as conn:
            pages = [row[0] for row in conn.execute("PRAGMA quick_check")]
            if pages != ["ok"]:
                problems.extend(f"sqlite: {line}" for line in pages)
                return problems
            last_seq, last_input, acked = conn.execute(
                "SELECT last_seq, last_input, acked_through FROM journal"
            ).fetchone()
            low, high, count = conn.execute(
                "SELECT min(seq), max(seq), count(*) FROM events"
            ).fetchone()
            if count and high - low + 1 != count:
                problems.append(f"seq gap: {count} events held between {low} and {high}")
            if count and high != last_seq:
                problems.append(f"last seq stored {high} but counter says {last_seq}")
            if acked > last_seq:
                problems.append(f"acked_through {acked} beyond last seq {last_seq}")
            top_input = conn.execute("SELECT max(input_no) FROM inputs").fetchone()[0]
            if top_input is not None and top_input != last_input:
                problems.append(f"last input stored {top_input} but counter says {last_input}")
            torn = conn.execute(
                "SELECT i.input_no FROM inputs i WHERE i.event_count != (SELECT count(*)"
                " FROM events e WHERE e.seq >= i.first_seq"
                " AND e.seq < i.first_seq + i.event_count AND e.input_no = i.input_no) LIMIT 5"
            ).fetchall()
            problems.extend(f"input {row[0]} lacks some of its events" for row in torn)
        return problems

    # ------------------------------------------------------------------ internals

    def _event(self, row: tuple[Any, ...]) -> StoredEvent:
        seq, type_, at, shoe, round_, data, input_no = row
        return StoredEvent(
            seq, f"{self.controller_id}:{seq}", type_, at, shoe, round_, json.loads(data), input_no
        )

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self._query(sql, params)
        return rows[0][0] if rows else None

    def _one_int(self, sql: str) -> int:
        return int(self._one(sql))

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _journal_error(exc, self.path) from exc

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read transaction: several SELECTs see one snapshot."""
        return self._transaction("BEGIN")

    def _write(self, *, durable: bool = True) -> AbstractContextManager[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; any failure rolls the whole transaction back.

        `durable=False` commits without waiting for the disk (synchronous=NORMAL): the commit
        is kept in order and lands with the next durable one, or is lost to a power cut.
        """
        if self.read_only:
            raise JournalError(f"journal {self.path} is open read-only")
        return self._transaction("BEGIN IMMEDIATE", durable=durable)

    @contextmanager
    def _transaction(self, begin: str, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        try:
            if not durable:
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(begin)
            yield self._conn
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback_quietly()
            raise _journal_error(exc, self.path) from exc
        except BaseException:
            self._rollback_quietly()
            raise
        finally:
            if not durable:
                with suppress(sqlite3.Error):
                    self._conn.execute("PRAGMA synchronous=FULL")

    def _rollback_quietly(self) -> None:
        # SQLite may already have rolled back by itself (e.g. after SQLITE_FULL)
        if self._conn.in_transaction:
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")


# ---------------------------------------------------------------------- helpers


def _prepare(
    conn: sqlite3.Connection,
    *,
    path: Path,
    controller_id: str | None,
    clock: Callable[[], float],
    read_only: bool,
    quick_check: bool,
) -> str:
    """Set the pragmas, create the schema if new, check identity; return the controller id."""
    if not read_only:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise JournalError(f"journal {path}: cannot switch to WAL (got {mode})")
        conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
    conn.execute("PRAGMA synchronous=FULL")
    if quick_check:
        result = [row[0] for row in conn.execute("PRAGMA quick_check")]
        if result != ["ok"]:
            raise JournalCorrupt(f"journal {path} is damaged: {'; '.join(result[:5])}")
    exists = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'journal'"
    ).fetchone()[0]
    if not exists:
        if read_only:
            raise JournalMismatch(f"{path} is not a shoe-controller journal")
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise JournalMismatch(f"{path} is an SQLite file but not a shoe-controller journal")
        if not controller_id:
            raise JournalError("a new journal needs a controller_id")
        conn.execute("BEGIN IMMEDIATE")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            "INSERT INTO journal (id, schema_version, controller_id, created_at, last_seq,"
            " last_input, acked_through, boot) VALUES (1, ?, ?, ?, 0, 0, 0, 0)",
            (SCHEMA_VERSION, controller_id, clock()),
        )
        conn.execute("COMMIT")
    version, stored_id = conn.execute(
        "SELECT schema_version, controller_id FROM journal"
    ).fetchone()
    if version != SCHEMA_VERSION:
        raise JournalMismatch(
            f"journal {path} has schema {version}, this code knows {SCHEMA_VERSION}"
        )
    if controller_id is not None and stored_id != controller_id:
        raise JournalMismatch(
            f"journal {path} belongs to controller {stored_id!r}, not {controller_id!r}"
        )
    return str(stored_id)


def _prune_boundary(conn: sqlite3.Connection, horizon: float) -> int:
    """The lowest input number that must be kept; everything below it may go."""
    (last_input, acked) = conn.execute("SELECT last_input, acked_through FROM journal").fetchone()
    candidates = [last_input + 1]
    current = conn.execute(
        "SELECT first_input FROM shoes ORDER BY first_input DESC LIMIT 1"
    ).fetchone()
    if current is not None:
        candidates.append(current[0])
    for sql, params in (
        # shoes still open or ended too recently
        (
            "SELECT min(first_input) FROM shoes WHERE ended_at IS NULL OR ended_at > ?",
            (horizon,),
        ),
        # the first event the server has not acknowledged
        ("SELECT input_no FROM events WHERE seq > ? ORDER BY seq LIMIT 1", (acked,)),
        # anything recorded within the retention age
        ("SELECT min(input_no) FROM inputs WHERE recorded_at > ?", (horizon,)),
    ):
        row = conn.execute(sql, params).fetchone()
        if row is not None and row[0] is not None:
            candidates.append(row[0])
    keep_from = min(candidates)
    # never cut a shoe in two: move the boundary to the start of a shoe it falls inside
    inside = conn.execute(
        "SELECT min(first_input) FROM shoes WHERE first_input < ? AND last_input >= ?",
        (keep_from, keep_from),
    ).fetchone()[0]
    return keep_from if inside is None else min(keep_from, inside)


def _journal_error(exc: sqlite3.Error, path: Path) -> JournalError:
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = f"journal {path}: {exc}"
    if name.startswith("SQLITE_FULL"):
        return JournalFull(text)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return JournalCorrupt(text)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return JournalBusy(text)
    if name.startswith("SQLITE_IOERR") and _low_on_space(path):
        # some writes (the WAL index, fsync of a grown file) report ENOSPC as an I/O error
        return JournalFull(f"{text} (file system nearly full)")
    return JournalError(text)


def _low_on_space(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.resolve().parent).free < LOW_SPACE_BYTES
    except OSError:
        return False


def _stored(controller_id: str, seq: int, input_no: int, row: tuple[Any, ...]) -> StoredEvent:
    type_, at, shoe, round_, data = row
    return StoredEvent(
        seq, f"{controller_id}:{seq}", type_, at, shoe, round_, json.loads(data), input_no
    )


def _encode_json(value: Any, what: str) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        # A lone surrogate (json.loads of "\udcff", argv bytes that are not UTF-8) passes
        # json.dumps but not SQLite, which would raise a UnicodeEncodeError mid-transaction.
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RecordInvalid(f"{what} holds text that is not valid Unicode: {exc.reason}") from None
    except (TypeError, ValueError) as exc:
        raise RecordInvalid(f"{what} is not JSON-able: {exc}") from None
    return text


def _input_row(input: Mapping[str, Any]) -> tuple[str, str]:
    if not isinstance(input, Mapping):
        raise RecordInvalid(
            f"input must be a JSON dict (input_to_json), not {type(input).__name__}"
        )
    input_type = input.get("type")
    if not isinstance(input_type, str) or not input_type:
        raise RecordInvalid("input has no 'type' string")
    return input_type, _encode_json(dict(input), "input")


def _event_row(event: Any) -> tuple[str, str, int | None, int | None, str]:
    """(type, at, shoe, round, data JSON) of an Event object or an event dict, validated."""
    if isinstance(event, Mapping):
        missing = {"type", "at", "shoe", "round", "data"} - set(event)
        if missing:
            raise RecordInvalid(f"event lacks {sorted(missing)}")
        type_, at, shoe, round_, data = (event[k] for k in ("type", "at", "shoe", "round", "data"))
    else:
        try:
            type_, at, shoe, round_, data = (
                getattr(event, name) for name in ("type", "at", "shoe", "round", "data")
            )
        except AttributeError as exc:
            raise RecordInvalid(f"not an event: {exc}") from None
    if not isinstance(type_, str) or not type_:
        raise RecordInvalid(f"event type must be a non-empty string, not {type_!r}")
    type_ = str(type_)  # an EventType member stores as its plain value
    if isinstance(at, datetime):
        if at.utcoffset() is None:
            raise RecordInvalid(f"event {type_}: 'at' datetime has no time zone")
        at = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if not isinstance(at, str) or not AT_PATTERN.fullmatch(at):
        raise RecordInvalid(
            f"event {type_}: 'at' must be ISO-8601 UTC with microseconds and Z, not {at!r}"
        )
    _check_optional_int(f"event {type_}: shoe", shoe)
    _check_optional_int(f"event {type_}: round", round_)
    if not isinstance(data, Mapping):
        raise RecordInvalid(f"event {type_}: data must be a dict, not {type(data).__name__}")
    return type_, at, shoe, round_, _encode_json(dict(data), f"event {type_} data")


def _link_rows(link_state: Mapping[str, Mapping[str, Any]] | None) -> list[tuple[str, str]]:
    if link_state is None:
        return []
    if not isinstance(link_state, Mapping):
        raise RecordInvalid("link_state must map device names to dicts")
    rows = []
    for device, state in link_state.items():
        if not isinstance(device, str) or not device:
            raise RecordInvalid(f"link_state device name must be a string, not {device!r}")
        if not isinstance(state, Mapping):
            raise RecordInvalid(f"link_state of {device} must be a dict")
        rows.append((device, _encode_json(dict(state), f"link_state of {device}")))
    return rows


def _check_optional_int(what: str, value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise RecordInvalid(f"{what} must be an int or None, not {value!r}")
