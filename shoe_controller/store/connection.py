"""The journal's connection for reading: one snapshot a question, SQLite errors as JournalErrors."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from shoe_controller.store.chain import ChainReport
from shoe_controller.store.records import StoredEvent, stored_event
from shoe_controller.store.transactions import query, transaction


class JournalConnection:
    """The connection to the journal file at `path` and the ways a question is put to it."""

    def __init__(
        self, connection: sqlite3.Connection, path: Path, controller_id: str, *, read_only: bool
    ) -> None:
        self._conn = connection
        self.path = path
        self.controller_id = controller_id
        self.read_only = read_only
        self._chain_report: ChainReport | None = None

    def limit_cache(self, kib: int) -> None:
        """At most `kib` KiB of page cache on this connection (SQLite's default: 2 MB)."""
        query(self._conn, self.path, f"PRAGMA cache_size = -{int(kib)}", ())

    def _event(self, row: tuple[Any, ...]) -> StoredEvent:
        return stored_event(self.controller_id, row)

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self._query(sql, params)
        return rows[0][0] if rows else None

    def _one_int(self, sql: str) -> int:
        return int(self._one(sql))

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return query(self._conn, self.path, sql, params)

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read transaction: several SELECTs see one snapshot."""
        return transaction(self._conn, self.path, "BEGIN")
