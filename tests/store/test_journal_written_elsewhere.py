"""A journal written behind its writer's back (docs/journal.md "One daemon a
journal"): the writer keeps the counters in memory, so its next record collides with what the
other one stored ("UNIQUE constraint failed: inputs.input_no"). That collision is told apart
from any other as JournalWrittenElsewhere, naming the numbers; the controller stores nothing
more through that journal, for the daemon to restart and read the file afresh. The lock that
keeps a second daemon out is tests/service/test_journal_lock.py; both, with real daemons,
tests/system/test_one_daemon.py.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal, JournalError, JournalWrittenElsewhere
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.events import iso_time
from shoe_controller.vocab.inputs import SupervisorCommand

CONTROLLER = "tbl-07-shoe"


def card(n: int) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    at = iso_time(1_800_000_000.0 + n)
    return (
        {"type": "card", "n": n},
        [{"type": "card.dealt", "at": at, "shoe": 1, "round": 1, "data": {"n": n}}],
        1,
    )


def counts(path: Path) -> tuple[int, ...]:
    with sqlite3.connect(path) as conn:
        return tuple(
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("inputs", "events", "sink_events")
        )


def test_a_second_writer_that_moved_the_counters_is_named_with_the_numbers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.db"
    with Journal.open(path, CONTROLLER) as first:
        first.record(*card(1))
        with Journal.open(path, CONTROLLER) as second:  # what a second daemon's start did
            second.record(*card(2))
        before = counts(path)
        with pytest.raises(JournalWrittenElsewhere) as caught:
            first.record(*card(3))
        assert str(caught.value) == (
            f"journal {path} was written by another process: it holds input 2 and event 2,"
            " this process stored through input 1 and event 1; only a fresh start reads it"
            f" right (journal {path}: UNIQUE constraint failed: inputs.input_no)"
        )
        assert counts(path) == before  # rolled back whole
    with Journal.open(path, CONTROLLER) as fresh:  # a fresh open reads the counters right
        assert [event.seq for event in fresh.record(*card(3))] == [3]


def test_a_row_written_by_hand_without_the_counters_is_found_by_its_number(
    tmp_path: Path,
) -> None:
    """sqlite3 at the file: an input row with the next number, the journal row untouched."""
    path = tmp_path / "journal.db"
    with Journal.open(path, CONTROLLER) as journal:
        journal.record(*card(1))
        with sqlite3.connect(path) as other:
            other.execute(
                "INSERT INTO inputs (input_no, shoe, type, body, recorded_at, first_seq,"
                " event_count, chain) VALUES (2, 1, 'card', '{}', 0, NULL, 0, 'x')"
            )
        with pytest.raises(JournalWrittenElsewhere, match="it holds input 2 and event 1,"):
            journal.record(*card(2))


def test_a_collision_with_the_counters_in_step_stays_what_it_was(tmp_path: Path) -> None:
    """Not every constraint failure is another writer: with the file as this writer left
    it, the error stays the plain JournalError it was."""
    path = tmp_path / "journal.db"
    with Journal.open(path, CONTROLLER) as journal:
        journal.record(*card(1))
        with sqlite3.connect(path) as other:  # a constraint that fails with no other writer
            other.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON inputs"
                " BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: refused'); END"
            )
        with pytest.raises(JournalError) as caught:
            journal.record(*card(2))
        assert not isinstance(caught.value, JournalWrittenElsewhere)


def test_the_controller_stores_nothing_more_through_that_journal(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    config = TableConfig(decks=8)
    with Journal.open(path, CONTROLLER) as journal:
        controller = Controller(config, journal)
        controller.start("first", time.time())
        with Journal.open(path, CONTROLLER) as second:  # a second daemon's start
            Controller(config, second).start("second", time.time())
        hold = SupervisorCommand(time.time(), "hold", "sup1", "dispute", {})
        with pytest.raises(JournalWrittenElsewhere):
            controller.submit(hold)
        assert controller.table.view()["state"] != "held"  # memory is not ahead of the file
        with sqlite3.connect(path) as other:  # the collision gone: still nothing more
            other.execute("DELETE FROM events WHERE input_no > 2")
            other.execute("DELETE FROM inputs WHERE input_no > 2")
        with pytest.raises(JournalWrittenElsewhere, match="written by another process"):
            controller.submit(hold)
