"""The journal's connection: how a question or a write is put to the file, SQLite errors as
JournalErrors. The journal's parts (queries.py, integrity.py, backlogs.py, journal.py) share one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from shoe_controller.store.errors import JournalError, JournalOutcomeUnknown
from shoe_controller.store.records import StoredEvent, stored_event
from shoe_controller.store.transactions import query, transaction


class JournalConnection:
    """The connection to the journal file at `path`, opened by `Journal.open()`."""

    def __init__(
        self, connection: sqlite3.Connection, path: Path, controller_id: str, *, read_only: bool
    ) -> None:
        self.sqlite = connection
        self.path = path
        self.controller_id = controller_id
        self.read_only = read_only
        # Set by the first commit the disk failed: no later commit through this connection
        # may seem to settle it (docs/journal.md "A commit of unknown outcome").
        self.outcome_unknown: str | None = None

    def limit_cache(self, kib: int) -> None:
        """At most `kib` KiB of page cache on this connection (SQLite's default: 2 MB)."""
        query(self.sqlite, self.path, f"PRAGMA cache_size = -{int(kib)}", ())

    def event(self, row: tuple[Any, ...]) -> StoredEvent:
        """The stored event of a row of records.EVENT_COLUMNS."""
        return stored_event(self.controller_id, row)

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """The first column of the first row (None: no row)."""
        rows = self.query(sql, params)
        return rows[0][0] if rows else None

    def one_int(self, sql: str) -> int:
        return int(self.one(sql))

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """All rows of one statement, in SQLite's implicit read transaction."""
        return query(self.sqlite, self.path, sql, params)

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read transaction: several SELECTs see one snapshot."""
        return transaction(self.sqlite, self.path, "BEGIN")

    def write(self, *, durable: bool = True) -> AbstractContextManager[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT: the write lock is taken up front; `durable` as in
        transactions.transaction()."""
        self.require_writable()
        if self.outcome_unknown is not None:
            raise JournalOutcomeUnknown(
                f"an earlier commit's outcome is unknown: {self.outcome_unknown}"
            )
        return self._noting_unknown(durable)

    @contextmanager
    def _noting_unknown(self, durable: bool) -> Iterator[sqlite3.Connection]:
        try:
            with transaction(self.sqlite, self.path, "BEGIN IMMEDIATE", durable=durable) as conn:
                yield conn
        except JournalOutcomeUnknown as error:
            self.outcome_unknown = str(error)
            raise

    def require_writable(self) -> None:
        if self.read_only:
            raise JournalError(f"journal {self.path} is open read-only")
