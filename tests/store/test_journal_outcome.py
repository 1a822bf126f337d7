"""A commit the disk failed (fsync EIO) leaves its outcome unknown, and the journal's connection
says so for good: no later write through it may seem to settle the question
(docs/journal.md "A commit of unknown outcome"). Only a fresh open can tell what the file holds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.store.errors import JournalOutcomeUnknown
from shoe_controller.store.journal import Journal
from shoe_controller.vocab.events import iso_time

CONTROLLER = "tbl-07-shoe"


class DiskFailsNextCommit:
    """The journal's SQLite connection with the disk failing the next COMMIT's fsync, as
    SQLite reports it (SQLITE_IOERR_FSYNC); every other call goes to the real connection."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self.failing = True

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.failing:
            self.failing = False  # the disk heals at once: only the connection remembers
            error = sqlite3.OperationalError("disk I/O error")
            error.sqlite_errorname = "SQLITE_IOERR_FSYNC"  # type: ignore[misc]
            raise error
        return self._connection.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def card(n: int) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    at = iso_time(1_800_000_000.0 + n)
    return (
        {"type": "card", "n": n},
        [{"type": "card.dealt", "at": at, "shoe": 1, "round": 1, "data": {"n": n}}],
        1,
    )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.db"


def test_after_a_commit_the_disk_failed_no_write_goes_through_that_connection(path: Path) -> None:
    with Journal.open(path, CONTROLLER, routes={"server": lambda _type: True}) as journal:
        journal.record(*card(1))
        journal.sinks.mark_delivered("server", 1)  # noted, to be stored by the next commit
        connection = journal._connection  # the disk's edge: the connection's SQLite calls
        connection.sqlite = DiskFailsNextCommit(connection.sqlite)  # type: ignore[assignment]
        with pytest.raises(JournalOutcomeUnknown, match="may or may not be on disk"):
            journal.record(*card(2))
        for write in (lambda: journal.record(*card(3)), lambda: journal.prune(0.0),
                      journal.sinks.store_marks):  # fmt: skip
            with pytest.raises(JournalOutcomeUnknown, match="an earlier commit's outcome"):
                write()
        assert journal.reads.last_input() == 1  # the one before, and nothing after it
    with Journal.open(path, CONTROLLER) as fresh:  # a fresh open tells, and writes again
        assert fresh.reads.last_input() == 1
        assert [event.seq for event in fresh.record(*card(3))] == [2]
