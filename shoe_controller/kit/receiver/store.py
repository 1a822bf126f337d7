"""The reference table server's SQLite file: each (table, seq) stored once, durably."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT PRIMARY KEY,
    acked_through INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    table_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    controller_id TEXT NOT NULL,
    type TEXT NOT NULL,
    at TEXT NOT NULL,
    shoe INTEGER,
    round INTEGER,
    data TEXT NOT NULL,
    received_at REAL NOT NULL,
    PRIMARY KEY (table_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_by_type ON events (table_id, type, seq);
"""
CHECKPOINT = "journal.checkpoint"  # docs/journal.md "Checkpoints": kept, and given out


@dataclasses.dataclass(frozen=True)
class StoreResult:
    acked_through: int
    stored: int
    duplicates: int
    conflicts: int  # resent seqs whose content differs from what is stored (a controller bug)
    gap: bool  # the batch started after acked_through + 1: nothing stored, answer 409


class ReceiverStore:
    """The receiver's SQLite file. Every (table_id, seq) is stored once; acked_through is the
    highest seq below which nothing is missing. Safe to share between threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")  # 200 means "stored durably"
        self._conn.execute("PRAGMA busy_timeout=5000")
        with self._lock:
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def acked_through(self, table_id: str) -> int:
        with self._lock:
            return self._acked(table_id)

    def store(
        self, table_id: str, controller_id: str, events: Sequence[dict[str, Any]]
    ) -> StoreResult:
        """Store a validated batch (consecutive seqs) in one transaction."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                acked = self._acked(table_id)
                if events and events[0]["seq"] > acked + 1:
                    self._conn.execute("ROLLBACK")
                    return StoreResult(acked, 0, 0, 0, gap=True)
                stored = duplicates = conflicts = 0
                now = time.time()
                for event in events:
                    if event["seq"] <= acked:
                        duplicates += 1
                        conflicts += self._conflicts(table_id, event)
                        continue
                    self._conn.execute(
                        "INSERT INTO events (table_id, seq, id, controller_id, type, at, shoe,"
                        " round, data, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            table_id,
                            event["seq"],
                            event["id"],
                            controller_id,
                            event["type"],
                            event["at"],
                            event["shoe"],
                            event["round"],
                            _canonical(event["data"]),
                            now,
                        ),
                    )
                    stored += 1
                    acked = event["seq"]
                self._conn.execute(
                    "INSERT INTO tables (table_id, acked_through) VALUES (?, ?)"
                    " ON CONFLICT (table_id) DO UPDATE SET acked_through = excluded.acked_through",
                    (table_id, acked),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        return StoreResult(acked, stored, duplicates, conflicts, gap=False)

    def rewind(self, table_id: str, acked_through: int) -> None:
        """Forget every event after `acked_through` (a server restored from an old backup)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute(
                "DELETE FROM events WHERE table_id = ? AND seq > ?", (table_id, acked_through)
            )
            self._conn.execute(
                "UPDATE tables SET acked_through = min(acked_through, ?) WHERE table_id = ?",
                (acked_through, table_id),
            )
            self._conn.execute("COMMIT")

    def events(self, table_id: str, after: int = 0) -> list[dict[str, Any]]:
        """The stored events of a table with seq > `after`, in seq order, in docs/spec-push-api.md
        form."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, id, type, at, shoe, round, data FROM events"
                " WHERE table_id = ? AND seq > ? ORDER BY seq",
                (table_id, after),
            ).fetchall()
        return [_event(row) for row in rows]

    def checkpoints(self, table_id: str) -> list[dict[str, Any]]:
        """The table's `journal.checkpoint` events, in seq order, in docs/spec-push-api.md form: the
        CP file `shoe-controller verify --checkpoints` reads (docs/delivery.md)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, id, type, at, shoe, round, data FROM events"
                " WHERE table_id = ? AND type = ? ORDER BY seq",
                (table_id, CHECKPOINT),
            ).fetchall()
        return [_event(row) for row in rows]

    def _acked(self, table_id: str) -> int:
        row = self._conn.execute(
            "SELECT acked_through FROM tables WHERE table_id = ?", (table_id,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _conflicts(self, table_id: str, event: dict[str, Any]) -> int:
        row = self._conn.execute(
            "SELECT id, type, at, shoe, round, data FROM events WHERE table_id = ? AND seq = ?",
            (table_id, event["seq"]),
        ).fetchone()
        if row is None:
            return 0
        resent = (
            event["id"],
            event["type"],
            event["at"],
            event["shoe"],
            event["round"],
            _canonical(event["data"]),
        )
        return int(tuple(row) != resent)


def _event(row: tuple[Any, ...]) -> dict[str, Any]:
    seq, id_, type_, at, shoe, round_, data = row
    return {"seq": seq, "id": id_, "type": type_, "at": at, "shoe": shoe, "round": round_,
            "data": json.loads(data)}  # fmt: skip


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
