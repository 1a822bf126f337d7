"""The journal file's schema and pragmas, and opening it: connect, create if new, check identity.

Storage rules (after eventsourcing's SQLite recorder): WAL, `synchronous=FULL`, autocommit
off at the driver level (`isolation_level=None`) with explicit `BEGIN IMMEDIATE ... COMMIT`, so
the write lock is taken up front and a transaction is either all on disk or not at all.

Schema (see docs/journal.md for the reasoning):

    journal  one row: controller_id, schema_version, last_seq, last_input, boot,
             chain_anchor, chain_head, chained_from, migrated_at     -- the hash chain (chain.py)
    inputs   input_no PK, shoe, type, body (JSON), recorded_at, first_seq, event_count, chain
    events   seq PK, input_no, type, at, shoe, round, data (JSON), chain
             index events_by_round (shoe, round, seq)    -- rounds(), round_events()
    shoes    shoe PK, first_input, last_input, ended_at  -- replay start and retention
             index shoes_by_first_input (first_input)
    links    device PK, state (JSON), input_no           -- driver link sessions
    sinks    name PK, last_seq, delivered_through, added_at       -- each delivery sink
    sink_events  (sink, seq) PK, event_seq               -- its own numbering (backlogs.py)

`events_after()` rides the seq primary key, a sink's backlog read the (sink, seq) key;
`last_seq` lives in the one-row `journal` table and a sink's marks in `sinks`, so they
survive pruning every event.

Schema 2 added the hash chain. A schema-1 journal is migrated when opened for writing: the
columns are added and its rows linked in one transaction, and `chained_from` says from which
input on each record was linked as it was stored (docs/journal.md "Schema 1 journals").
Schema 3 gave each delivery sink its own numbering and mark; a schema-2 journal's one
`acked_through` becomes the mark of the sink named "server" (the `[server]` section), whose
numbering of the events held is their seq (docs/journal.md "Schema 2 journals").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from shoe_controller.store.chain import (
    EVENT_CHAIN_COLUMNS,
    GENESIS,
    INPUT,
    INPUT_CHAIN_COLUMNS,
    ChainRecord,
    event_record,
    in_chain_order,
    input_record,
    link,
)
from shoe_controller.store.errors import (
    JournalCorrupt,
    JournalError,
    JournalMismatch,
    journal_error,
)
from shoe_controller.store.transactions import transaction

SCHEMA_VERSION = 3
LEGACY_SINK = "server"  # the one sink a schema-2 journal delivered to
WAL_SIZE_LIMIT = 16 * 1024 * 1024  # bytes the WAL is truncated to after a checkpoint

_SCHEMA = """
CREATE TABLE journal (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    schema_version INTEGER NOT NULL,
    controller_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_seq INTEGER NOT NULL,
    last_input INTEGER NOT NULL,
    boot INTEGER NOT NULL,
    chain_anchor TEXT NOT NULL,
    chain_head TEXT NOT NULL,
    chained_from INTEGER NOT NULL,
    migrated_at REAL
);
CREATE TABLE inputs (
    input_no INTEGER PRIMARY KEY,
    shoe INTEGER,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    first_seq INTEGER,
    event_count INTEGER NOT NULL,
    chain TEXT
);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    input_no INTEGER NOT NULL,
    type TEXT NOT NULL,
    at TEXT NOT NULL,
    shoe INTEGER,
    round INTEGER,
    data TEXT NOT NULL,
    chain TEXT
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
CREATE TABLE sinks (
    name TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    delivered_through INTEGER NOT NULL,
    added_at REAL NOT NULL
);
CREATE TABLE sink_events (
    sink TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event_seq INTEGER NOT NULL,
    PRIMARY KEY (sink, seq)
) WITHOUT ROWID;
"""


def connect(
    path: Path,
    controller_id: str | None,
    *,
    clock: Callable[[], float],
    read_only: bool,
    quick_check: bool,
    busy_timeout_s: float,
) -> tuple[sqlite3.Connection, str]:
    """A checked connection to the journal at `path` (created if new and writable) and the
    controller id stored in it; JournalError subclasses on every failure (see Journal.open)."""
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
        raise journal_error(exc, path) from exc
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
        raise journal_error(exc, path) from exc
    except BaseException:
        conn.close()
        raise
    return conn, stored_id


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
            " last_input, boot, chain_anchor, chain_head, chained_from)"
            " VALUES (1, ?, ?, ?, 0, 0, 0, ?, ?, 1)",
            (SCHEMA_VERSION, controller_id, clock(), GENESIS, GENESIS),
        )
        conn.execute("COMMIT")
    version, stored_id = conn.execute(
        "SELECT schema_version, controller_id FROM journal"
    ).fetchone()
    if version == 1 and not read_only:
        _migrate_from_1(conn, path, clock())
        version = 2
    if version == 2 and not read_only:
        _migrate_from_2(conn, path, clock())
        version = SCHEMA_VERSION
    if version in (1, 2):
        raise JournalMismatch(
            f"journal {path} has schema {version}, before "
            f"{'the hash chain' if version == 1 else 'one outbox per sink'}: it is migrated to"
            f" schema {SCHEMA_VERSION} when opened for writing (shoe-controller run opens it so)"
        )
    if version != SCHEMA_VERSION:
        raise JournalMismatch(
            f"journal {path} has schema {version}, this code knows {SCHEMA_VERSION}"
        )
    if controller_id is not None and stored_id != controller_id:
        raise JournalMismatch(
            f"journal {path} belongs to controller {stored_id!r}, not {controller_id!r}"
        )
    return str(stored_id)


_MIGRATE_FROM_1 = f"""
ALTER TABLE inputs ADD COLUMN chain TEXT;
ALTER TABLE events ADD COLUMN chain TEXT;
ALTER TABLE journal ADD COLUMN chain_anchor TEXT NOT NULL DEFAULT '{GENESIS}';
ALTER TABLE journal ADD COLUMN chain_head TEXT NOT NULL DEFAULT '{GENESIS}';
ALTER TABLE journal ADD COLUMN chained_from INTEGER NOT NULL DEFAULT 1;
ALTER TABLE journal ADD COLUMN migrated_at REAL
"""


def _migrate_from_1(conn: sqlite3.Connection, path: Path, now: float) -> None:
    """Schema 1 -> 2 in one transaction: the chain columns, every held record linked from
    GENESIS in stored order, `chained_from` the next input (the ones before were linked by
    this migration, not as they were stored), `migrated_at` now (journal clock)."""
    with transaction(conn, path, "BEGIN IMMEDIATE"):
        if conn.execute("SELECT schema_version FROM journal").fetchone()[0] != 1:
            return  # another process migrated it while this one waited for the write lock
        for statement in _MIGRATE_FROM_1.split(";"):
            conn.execute(statement)
        inputs = conn.execute(
            f"SELECT {INPUT_CHAIN_COLUMNS} FROM inputs ORDER BY input_no"
        ).fetchall()
        events = conn.execute(f"SELECT {EVENT_CHAIN_COLUMNS} FROM events ORDER BY seq").fetchall()
        head = GENESIS
        for record in in_chain_order(map(input_record, inputs), map(event_record, events)):
            head = _link_record(conn, record, head)
        conn.execute(
            "UPDATE journal SET schema_version = 2, chain_head = ?, chained_from = last_input + 1,"
            " migrated_at = ?",
            (head, now),
        )


def _migrate_from_2(conn: sqlite3.Connection, path: Path, now: float) -> None:
    """Schema 2 -> 3 in one transaction: the sink tables; the one table server a schema-2
    journal delivered to becomes the sink "server", numbering the events held by their seq
    (what that server was sent), its mark the old `acked_through`, which goes."""
    with transaction(conn, path, "BEGIN IMMEDIATE"):
        if conn.execute("SELECT schema_version FROM journal").fetchone()[0] != 2:
            return  # another process migrated it while this one waited for the write lock
        for statement in _SCHEMA.split(";"):
            if "CREATE TABLE sink" in statement:
                conn.execute(statement)
        conn.execute(
            "INSERT INTO sinks (name, last_seq, delivered_through, added_at)"
            " SELECT ?, last_seq, acked_through, ? FROM journal",
            (LEGACY_SINK, now),
        )
        conn.execute(
            "INSERT INTO sink_events (sink, seq, event_seq) SELECT ?, seq, seq FROM events",
            (LEGACY_SINK,),
        )
        conn.execute("ALTER TABLE journal DROP COLUMN acked_through")
        conn.execute("UPDATE journal SET schema_version = ?", (SCHEMA_VERSION,))


def _link_record(conn: sqlite3.Connection, record: ChainRecord, previous: str) -> str:
    """Store `record`'s link following `previous` (migration); return the link."""
    value = link(previous, record.canonical)
    table, key = ("inputs", "input_no") if record.kind == INPUT else ("events", "seq")
    conn.execute(f"UPDATE {table} SET chain = ? WHERE {key} = ?", (value, record.number))
    return value
