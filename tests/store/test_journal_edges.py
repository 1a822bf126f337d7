"""The journal's edges the mutation run found unread (docs/mutation-survivors.md): the
table settings in force at an input, a reader's page cache, a sink's latest events at the
ends of what memory holds (and only its last 256), a sink's outbox read by default, a routed
sink's mark before the journal's first write, a close whose marks cannot be stored, and a
schema-2 journal refused to a reader and migrated in vain."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.one_server import SERVER, open_journal

from shoe_controller.store.journal import (
    Journal,
    JournalError,
    JournalMismatch,
    RecordInvalid,
    SinkMark,
)
from shoe_controller.vocab.events import iso_time

CONTROLLER = "tbl-07-shoe"
STORED_V2 = Path(__file__).parents[1] / "data" / "journal-v2.sqlite3"


def event(type_: str, shoe: int | None, round_: int | None, **data: Any) -> dict[str, Any]:
    return {"type": type_, "at": iso_time(1_800_000_000.25), "shoe": shoe, "round": round_,
            "data": data}  # fmt: skip


@pytest.fixture
def journal(tmp_path: Path):
    with open_journal(tmp_path / "journal.db", CONTROLLER) as opened:
        yield opened


def test_the_settings_in_force_are_the_last_journaled_at_or_before_the_input(
    journal: Journal,
) -> None:
    journal.record({"type": "controller_started", "boot": 1}, [], None)  # input 1
    journal.record({"type": "table_settings", "settings": {"decks": 6}}, [], 1)  # input 2
    journal.record({"type": "card"}, [event("card.dealt", 1, 1)], 1)  # input 3
    journal.record({"type": "table_settings", "settings": {"decks": 8}}, [], 2)  # input 4
    journal.record({"type": "card"}, [event("card.dealt", 2, 1)], 2)  # input 5
    assert journal.reads.settings_in_force(1) is None  # none journaled that early
    assert journal.reads.settings_in_force(2) == (2, {"decks": 6})  # the input itself counts
    assert journal.reads.settings_in_force(3) == (2, {"decks": 6})
    assert journal.reads.settings_in_force(4) == (4, {"decks": 8})  # the later one, not the first
    assert journal.reads.settings_in_force(99) == (4, {"decks": 8})


def test_a_journals_page_cache_is_limited_to_what_it_is_told(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = open_journal(path, CONTROLLER)
    journal.limit_cache(256)
    assert journal._conn.execute("PRAGMA cache_size").fetchone()[0] == -256  # 256 KiB
    journal.close()
    with pytest.raises(
        JournalError, match=rf"^journal {re.escape(str(path))}: Cannot operate on a closed database"
    ):
        journal.limit_cache(256)


def test_a_sinks_latest_events_reach_back_to_the_first_held_and_no_further_ahead(
    journal: Journal,
) -> None:
    journal.record({"type": "card"}, [event("card.dealt", 1, 1)] * 3, 1)  # seqs 1-3, in memory
    handed = journal.sinks.recent_events(SERVER, 0, 200)  # from the very first one held
    assert handed is not None
    assert [item.seq for item in handed] == [1, 2, 3]
    assert journal.sinks.recent_events(SERVER, 3, 200) == []  # up to date: nothing new
    # A consumer that stands beyond the last seq is not handed "nothing new": it is sent to
    # the file, which tells it the journal never had that.
    assert journal.sinks.recent_events(SERVER, 4, 200) is None


def test_a_routed_sink_has_seq_0_and_takes_a_mark_of_0_before_the_first_write(
    journal: Journal,
) -> None:
    assert journal.sinks.last_seq(SERVER) == 0
    assert journal.sinks.marks() == {}  # no row until the first write
    journal.sinks.mark_delivered(SERVER, 0)  # a consumer that has nothing says so
    assert journal.sinks.marks() == {SERVER: SinkMark(SERVER, 0, 0)}
    with pytest.raises(
        RecordInvalid,
        match=r"^sink server: delivered_through 1 outside 0\.\.0 \(its last seq stored\)$",
    ):
        journal.sinks.mark_delivered(SERVER, 1)
    with pytest.raises(RecordInvalid, match=r"^no sink named 'nobody' in this journal$"):
        journal.sinks.mark_delivered("nobody", 0)


def test_a_schema_2_migration_that_fails_changes_nothing_and_names_the_file(
    tmp_path: Path,
) -> None:
    old = tmp_path / "old.db"
    old.write_bytes(STORED_V2.read_bytes())
    conn = sqlite3.connect(old)
    conn.execute("CREATE TABLE sink_events (sink TEXT)")  # half a migration, by hand
    conn.commit()
    conn.close()
    with pytest.raises(
        JournalError, match=rf"^journal {re.escape(str(old))}: table sink_events already exists$"
    ):
        open_journal(old, CONTROLLER)
    conn = sqlite3.connect(old)
    assert conn.execute("SELECT schema_version, acked_through FROM journal").fetchone() == (2, 4)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "sinks" not in tables  # the transaction rolled back whole


def test_a_sinks_outbox_read_gives_200_events_at_a_time_by_default(journal: Journal) -> None:
    journal.record({"type": "burst"}, [event("x", 1, 1)] * 250, 1)
    assert [item.seq for item in journal.sinks.events_after(SERVER, 0)] == list(range(1, 201))
    assert len(journal.sinks.events_after(SERVER, 200)) == 50


def test_a_journal_that_cannot_store_its_marks_closes_all_the_same(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = open_journal(path, CONTROLLER, busy_timeout_s=0.05)
    journal.record({"type": "card"}, [event("card.dealt", 1, 1)] * 2, 1)
    journal.sinks.mark_delivered(SERVER, 2)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another hand holds the write lock
    try:
        journal.close()  # the mark cannot be stored: closed anyway, the events sent again
    finally:
        other.execute("ROLLBACK")
        other.close()
    with pytest.raises(JournalError, match=r"Cannot operate on a closed database"):
        journal.reads.last_seq()
    with open_journal(path, CONTROLLER) as reopened:
        assert reopened.sinks.marks()[SERVER] == SinkMark(SERVER, 2, 0)


def test_a_reader_of_a_schema_2_journal_is_told_it_is_migrated_when_opened_for_writing(
    tmp_path: Path,
) -> None:
    old = tmp_path / "old.db"
    old.write_bytes(STORED_V2.read_bytes())
    with pytest.raises(JournalMismatch) as refused:
        open_journal(old, None, read_only=True)
    assert str(refused.value) == (
        f"journal {old} has schema 2, before one outbox per sink: it is migrated to schema 3"
        " when opened for writing (shoe-controller run opens it so)"
    )


def test_a_sinks_latest_events_are_its_last_256_and_a_sink_further_back_reads_the_file(
    journal: Journal,
) -> None:
    journal.record({"type": "burst"}, [event("x", 1, 1)] * 300, 1)  # seqs 1-300
    assert journal.sinks.recent_events(SERVER, 0, 200) is None  # seq 1 is no longer held
    assert journal.sinks.recent_events(SERVER, 43, 200) is None  # nor 44
    handed = journal.sinks.recent_events(SERVER, 44, 3)  # 45-300 are: the last 256
    assert handed is not None
    assert [item.seq for item in handed] == [45, 46, 47]


def test_a_mark_stored_before_the_first_write_gives_the_sink_its_row(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with open_journal(path, CONTROLLER) as journal:
        journal.sinks.mark_delivered(SERVER, 0)
        journal.sinks.store_marks()  # the journal's first write
        assert journal.sinks.marks() == {SERVER: SinkMark(SERVER, 0, 0)}
    with open_journal(path, None, read_only=True) as reader:
        assert reader.sinks.marks() == {SERVER: SinkMark(SERVER, 0, 0)}
