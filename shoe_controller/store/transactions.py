"""Transactions on the journal's connection: all or nothing, SQLite errors as JournalErrors."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from shoe_controller.store.errors import journal_error


@contextmanager
def transaction(
    conn: sqlite3.Connection, path: Path, begin: str, *, durable: bool = True
) -> Iterator[sqlite3.Connection]:
    """`begin` ... COMMIT on `conn` (the journal at `path`); any failure rolls it all back.

    `durable=False` commits without waiting for the disk (synchronous=NORMAL): the commit
    is kept in order and lands with the next durable one, or is lost to a power cut.
    """
    committing = False
    try:
        if not durable:
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(begin)
        yield conn
        committing = True
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        _rollback_quietly(conn)
        raise journal_error(exc, path, committing=committing) from exc
    except BaseException:
        _rollback_quietly(conn)
        raise
    finally:
        if not durable:
            with suppress(sqlite3.Error):
                conn.execute("PRAGMA synchronous=FULL")


def query(
    conn: sqlite3.Connection, path: Path, sql: str, params: tuple[Any, ...] = ()
) -> list[tuple[Any, ...]]:
    """All rows of one statement run on its own (SQLite's implicit read transaction)."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise journal_error(exc, path) from exc


def _rollback_quietly(conn: sqlite3.Connection) -> None:
    # SQLite may already have rolled back by itself (e.g. after SQLITE_FULL)
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
