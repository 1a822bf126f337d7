"""The journal: one transaction per input, seq without gaps, replay, queries, faults, retention."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fs_support import small_tmpfs

from shoe_controller.store.journal import (
    Journal,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalMismatch,
    RecordInvalid,
    ReplayMismatch,
)
from shoe_controller.vocab.events import Event, EventType, iso_time

CONTROLLER = "tbl-07-shoe"


def event(type_: str, shoe: int | None, round_: int | None, **data: Any) -> dict[str, Any]:
    return {"type": type_, "at": iso_time(1_800_000_000.25), "shoe": shoe, "round": round_,
            "data": data}  # fmt: skip


class FakeClock:
    """The journal's wall clock (retention ages), stepped by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def journal(tmp_path: Path, clock: FakeClock):
    with Journal.open(tmp_path / "journal.db", CONTROLLER, clock=clock) as opened:
        yield opened


def deal(journal: Journal, shoe: int, round_: int, cards: int = 4) -> list[int]:
    """Record one round's inputs; returns the seqs given."""
    seqs = []
    for n in range(cards):
        stored = journal.record(
            {"type": "card", "shoe": shoe, "round": round_, "n": n},
            [event("card.dealt", shoe, round_, position=f"P{n}", card="QH")],
            shoe,
        )
        seqs += [e.seq for e in stored]
    return seqs


def test_seq_starts_at_one_and_has_no_gaps_across_restarts(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with Journal.open(path, CONTROLLER) as journal:
        first = journal.record({"type": "a"}, [event("x", 1, 1), event("y", 1, 1)], 1)
        empty = journal.record({"type": "b"}, [], 1)  # inputs may cause no event
        assert [e.seq for e in first] == [1, 2]
        assert empty == []
    with Journal.open(path, CONTROLLER) as journal:  # kept across restarts
        again = journal.record({"type": "c"}, [event("z", 1, 2)], 1)
        assert [(e.seq, e.id) for e in again] == [(3, f"{CONTROLLER}:3")]
        assert journal.last_seq() == 3
        assert journal.last_input() == 3


def test_record_returns_what_a_reader_sees(journal: Journal) -> None:
    ev = Event(EventType.CARD_DEALT, iso_time(1_800_000_000), 2, 7, {"position": "B1"})
    stored = journal.record({"type": "card"}, [ev], 2)
    assert journal.events_after(0) == stored
    assert type(stored[0].type) is str
    assert stored[0].type == "card.dealt"
    assert stored[0].to_wire() == {
        "seq": 1, "id": f"{CONTROLLER}:1", "type": "card.dealt",
        "at": "2027-01-15T08:00:00.000000Z", "shoe": 2, "round": 7, "data": {"position": "B1"},
    }  # fmt: skip


def test_invalid_input_or_event_stores_nothing(journal: Journal) -> None:
    journal.record({"type": "ok"}, [event("x", 1, 1)], 1)
    bad_cases = [
        ({"no": "type"}, [event("x", 1, 1)]),
        ({"type": "t"}, [event("x", 1, 1), {"type": "y", "at": "2026-11-30T10:00:00Z",
                                            "shoe": 1, "round": 1, "data": {}}]),  # no µs
        ({"type": "t"}, [event("x", 1, 1), event("y", 1, 1, bad=object())]),
        ({"type": "t"}, [event("x", "1", 1)]),  # type: ignore[arg-type]
        ({"type": "t", "nan": float("nan")}, []),
        ({"type": "t", "by": "\udcff"}, []),  # a lone surrogate: JSON-able, not SQLite-able
        ({"type": "t"}, [event("x", 1, 1, reason="\ud800")]),
    ]  # fmt: skip
    for input_, events in bad_cases:
        with pytest.raises(RecordInvalid):
            journal.record(input_, events, 1)
    assert journal.last_seq() == 1
    assert journal.last_input() == 1
    assert journal.check() == []


def test_a_failure_inside_the_transaction_rolls_everything_back(
    journal: Journal, tmp_path: Path
) -> None:
    journal.record({"type": "a"}, [event("x", 1, 1)], 1, {"scanner": {"boot_id": 1, "seq": 5}})
    # another hand winds the seq counter back: the next record inserts its input row, then
    # collides on seq 1 halfway through the transaction
    tamper = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
    tamper.execute("UPDATE journal SET last_seq = 0")
    with pytest.raises(JournalError, match="UNIQUE"):
        journal.record({"type": "b"}, [event("y", 1, 1)], 1, {"scanner": {"boot_id": 1, "seq": 6}})
    assert journal.last_input() == 1  # the input row went with the rest
    assert journal.link_state("scanner") == {"boot_id": 1, "seq": 5}
    assert [e.type for e in journal.events_after(0)] == ["x"]
    tamper.execute("UPDATE journal SET last_seq = 1")
    tamper.close()
    # the same call can simply be retried and gets the next seq
    assert [e.seq for e in journal.record({"type": "b"}, [event("y", 1, 1)], 1)] == [2]
    assert journal.check() == []


def test_several_inputs_of_one_frame_are_stored_together_or_not_at_all(
    journal: Journal,
) -> None:
    # A counter gap and the card after it come from one frame: one transaction for both.
    missed = ({"type": "cards_missed", "count": 1}, [event("procedure.alert", 1, 3)], 1)
    card = ({"type": "card", "n": 2}, [event("card.dealt", 1, 3, position="P1")], 1)
    link = {"scanner": {"session": {"boot_id": 9, "last_seq": 4}}}
    stored = journal.record_many([missed, card], link)
    assert [e.seq for e in stored] == [1, 2]
    assert [e.input_no for e in stored] == [1, 2]
    assert journal.link_state("scanner") == link["scanner"]
    broken = ({"type": "card"}, [{"type": "card.dealt"}], 1)  # an event without its fields
    with pytest.raises(RecordInvalid):
        journal.record_many([card, broken], {"scanner": {"session": {"last_seq": 5}}})
    assert journal.last_seq() == 2
    assert journal.link_state("scanner") == link["scanner"]
    assert len(journal.replay_steps(from_input=1)) == 2


def test_link_state_is_stored_with_the_data_it_acknowledges(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with Journal.open(path, CONTROLLER) as journal:
        journal.record({"type": "card"}, [event("x", 1, 1)], 1, {"scanner": {"boot": 9, "seq": 1}})
        journal.record({"type": "card"}, [], 1, {"scanner": {"boot": 9, "seq": 2}})
        journal.record_many([], {"shuffler": {"boot": 4, "seq": 0}})  # a heartbeat: no input
    with Journal.open(path, CONTROLLER) as journal:
        assert journal.link_state("scanner") == {"boot": 9, "seq": 2}
        assert journal.link_states() == {
            "scanner": {"boot": 9, "seq": 2},
            "shuffler": {"boot": 4, "seq": 0},
        }
        assert journal.link_state("nobody") is None


def test_boot_counter_counts_starts(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with Journal.open(path, CONTROLLER) as journal:
        assert journal.boot() == 0
        journal.record({"type": "controller_started", "boot": 1}, [], None)
        assert journal.boot() == 1
    with Journal.open(path, CONTROLLER) as journal:
        assert journal.boot() == 1  # kept across restarts
        journal.record({"type": "card"}, [], None)
        assert journal.boot() == 1  # only a start counts
        with pytest.raises(RecordInvalid):  # nothing stored: the count does not move either
            journal.record({"type": "controller_started", "boot": 2}, [{"type": "x"}], None)
        assert journal.boot() == 1


def test_replay_covers_the_current_shoe_and_checks_events(journal: Journal) -> None:
    journal.record({"type": "device"}, [event("device.connected", None, None)], None)
    deal(journal, 1, 1)
    journal.record({"type": "end"}, [event("shoe.ended", 1, None, reason="cut_card")], 1)
    journal.record({"type": "device"}, [], None)
    deal(journal, 2, 1, cards=2)  # shoe 2 starts at input 8
    journal.record({"type": "device"}, [event("device.lost", None, None)], None)
    assert journal.current_shoe() == 2
    assert journal.replay_start() == 8
    steps = journal.replay_steps()
    assert [s.input_no for s in steps] == [8, 9, 10]
    assert steps[0].input == {"type": "card", "shoe": 2, "round": 1, "n": 0}
    same = [event("card.dealt", 2, 1, position="P0", card="QH")]
    assert steps[0].mismatch(same) is None
    steps[0].check(same)
    different = [event("card.dealt", 2, 1, position="P0", card="KH")]
    assert "seq" in (steps[0].mismatch(different) or "")
    with pytest.raises(ReplayMismatch):
        steps[0].check(different)
    with pytest.raises(ReplayMismatch):
        steps[2].check([])  # the stored device.lost is missing from the replay
    assert [s.input_no for s in journal.replay_steps(from_input=1)] == list(range(1, 11))


def test_replay_starts_at_the_open_shoe_while_the_next_is_prepared(journal: Journal) -> None:
    # A batch shuffler reports the next shoe's shuffle while shoe 1 is still dealt: replay
    # must still start at shoe 1, the oldest shoe not ended.
    deal(journal, 1, 1)  # inputs 1-4
    journal.record({"type": "shuffle_started"}, [], 2)  # input 5, the next shoe's
    deal(journal, 1, 2)  # inputs 6-9
    assert journal.current_shoe() == 2
    assert journal.replay_start() == 1
    journal.record({"type": "end"}, [event("shoe.ended", 1, None, reason="cut_card")], 1)
    assert journal.replay_start() == 5
    journal.record({"type": "card"}, [], 1)  # shoe 1 is over: this one is not replayed
    journal.record({"type": "shoe_state"}, [], 2)
    steps = journal.replay_steps()
    assert [step.input_no for step in steps] == [5, 12]
    assert all(step.shoe == 2 for step in steps)


def test_replay_without_any_shoe_starts_at_the_first_input(journal: Journal) -> None:
    assert journal.replay_steps() == []
    journal.record({"type": "device"}, [], None)
    assert journal.replay_start() == 1
    assert len(journal.replay_steps()) == 1


def test_rounds_and_round_events_for_the_cli(journal: Journal) -> None:
    deal(journal, 1, 1)
    deal(journal, 1, 2, cards=5)
    deal(journal, 2, 1, cards=1)
    rounds = journal.rounds(1)
    assert [(r.round, r.first_seq, r.last_seq, r.events) for r in rounds] == [
        (1, 1, 4, 4),
        (2, 5, 9, 5),
    ]
    assert [e.seq for e in journal.round_events(1, 2)] == [5, 6, 7, 8, 9]
    assert journal.round_events(3, 1) == []
    assert [(s.shoe, s.first_input, s.last_input) for s in journal.shoes()] == [
        (1, 1, 9),
        (2, 10, 10),
    ]


def test_cli_queries_use_indexes(journal: Journal, tmp_path: Path) -> None:
    deal(journal, 1, 1)
    conn = sqlite3.connect(tmp_path / "journal.db")
    plans = {
        "events_after": "SELECT * FROM events WHERE seq > 5 ORDER BY seq LIMIT 200",
        "rounds": "SELECT round, min(seq) FROM events WHERE shoe = 1 AND round IS NOT NULL"
        " GROUP BY round ORDER BY round",
        "round_events": "SELECT * FROM events WHERE shoe = 1 AND round = 2 ORDER BY seq",
        "current_shoe": "SELECT shoe FROM shoes ORDER BY first_input DESC LIMIT 1",
    }
    for name, sql in plans.items():
        steps = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        # every step walks an index or the primary key; no full scan, no sorting afterwards
        assert all("USING" in step for step in steps), (name, steps)
        assert not any("TEMP B-TREE" in step for step in steps), (name, steps)
    conn.close()


def test_outbox_counters(journal: Journal) -> None:
    deal(journal, 1, 1, cards=3)
    assert (journal.acked_through(), journal.backlog()) == (0, 3)
    journal.mark_acked(2)
    assert (journal.acked_through(), journal.backlog()) == (2, 1)
    assert [e.seq for e in journal.events_after(2)] == [3]
    assert [e.seq for e in journal.events_after(0, limit=2)] == [1, 2]
    journal.mark_acked(1)  # the server lost data: we follow it down and resend
    assert journal.backlog() == 2
    with pytest.raises(RecordInvalid):
        journal.mark_acked(4)  # beyond the last seq: never acknowledge what does not exist
    assert journal.acked_through() == 1


def test_prune_removes_only_old_delivered_ended_shoes(journal: Journal, clock: FakeClock) -> None:
    hour = 3600.0
    deal(journal, 1, 1)
    journal.record({"type": "end"}, [event("shoe.ended", 1, None)], 1)  # seq 5
    clock.now += 2 * hour
    deal(journal, 2, 1)  # seq 6..9
    journal.record({"type": "end"}, [event("shoe.ended", 2, None)], 2)  # seq 10
    clock.now += 2 * hour
    deal(journal, 3, 1)  # seq 11..14, the current shoe
    nothing = journal.prune(max_age_s=hour)
    assert (nothing.shoes, nothing.events) == ((), 0)  # nothing delivered yet
    journal.mark_acked(7)  # shoe 2 only partly delivered
    result = journal.prune(max_age_s=hour)
    assert result.shoes == (1,)
    assert (result.inputs, result.events) == (5, 5)
    assert journal.first_seq() == 6
    journal.mark_acked(14)
    assert journal.prune(max_age_s=3 * hour).shoes == ()  # shoe 2 ended only 2 h ago
    assert journal.prune(max_age_s=hour).shoes == (2,)
    assert journal.prune(max_age_s=0).shoes == ()  # the current shoe is never pruned
    assert [s.shoe for s in journal.shoes()] == [3]
    assert journal.check() == []
    # numbering carries on: seqs are never reused
    assert [e.seq for e in journal.record({"type": "x"}, [event("x", 3, 2)], 3)] == [15]


def test_controller_id_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    Journal.open(path, CONTROLLER).close()
    with pytest.raises(JournalMismatch):
        Journal.open(path, "another-controller")
    with Journal.open(path, None, read_only=True) as journal:
        assert journal.controller_id == CONTROLLER


def test_read_only_journal_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with Journal.open(path, CONTROLLER) as journal:
        deal(journal, 1, 1)
    with Journal.open(path, CONTROLLER, read_only=True) as reader:
        assert reader.last_seq() == 4
        with pytest.raises(JournalError):
            reader.record({"type": "x"}, [], None)
    with pytest.raises(JournalError):
        Journal.open(tmp_path / "missing.db", CONTROLLER, read_only=True)


def test_a_file_that_is_not_a_journal_is_corrupt(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not an SQLite file at all" * 200)
    with pytest.raises(JournalCorrupt):
        Journal.open(garbage, CONTROLLER)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(JournalMismatch):
        Journal.open(other, CONTROLLER)


def test_damaged_pages_are_reported_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with Journal.open(path, CONTROLLER) as journal:
        for round_ in range(1, 60):
            deal(journal, 1, round_)
        journal._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(path.read_bytes())
    page = 4096
    assert len(raw) > 8 * page
    raw[5 * page : 7 * page] = b"\xa5" * (2 * page)  # scribble over two b-tree pages
    path.write_bytes(bytes(raw))
    with pytest.raises(JournalCorrupt):
        Journal.open(path, CONTROLLER)


@pytest.fixture
def tiny_filesystem(tmp_path: Path):
    with small_tmpfs(tmp_path / "tiny", "1m") as mount_point:
        yield mount_point


def test_disk_full_is_a_clear_error_and_the_same_call_can_be_retried(
    tiny_filesystem: Path,
) -> None:
    ballast = tiny_filesystem / "ballast"
    ballast.write_bytes(b"\0" * (700 * 1024))
    journal = Journal.open(tiny_filesystem / "journal.db", CONTROLLER)
    pad = "x" * 2000
    recorded = 0
    failure: JournalError | None = None
    while failure is None and recorded < 10_000:
        try:
            journal.record({"type": "card", "n": recorded}, [event("x", 1, 0, pad=pad)] * 3, 1)
            recorded += 1
        except JournalError as exc:
            failure = exc
    assert isinstance(failure, JournalFull)
    assert recorded > 0
    assert journal.last_seq() == 3 * recorded  # nothing half-written
    assert journal.check() == []
    with pytest.raises(JournalFull):  # still full: still refused, still whole
        journal.record({"type": "card", "n": recorded}, [event("x", 1, 0, pad=pad)] * 3, 1)
    ballast.unlink()
    stored = journal.record({"type": "card", "n": recorded}, [event("x", 1, 0, pad=pad)] * 3, 1)
    assert [e.seq for e in stored] == [3 * recorded + 1, 3 * recorded + 2, 3 * recorded + 3]
    journal.close()
    with Journal.open(tiny_filesystem / "journal.db", CONTROLLER) as reopened:
        assert reopened.check() == []
        assert reopened.last_seq() == 3 * (recorded + 1)


def test_only_the_ack_mark_skips_the_sync_and_full_sync_comes_back(journal: Journal) -> None:
    journal.record({"type": "card"}, [event("card.dealt", 1, 1)], 1)
    journal.mark_acked(1)
    assert journal.acked_through() == 1
    # Inputs and events still commit with synchronous=FULL (2) after the mark.
    assert journal._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    with pytest.raises(RecordInvalid):
        journal.mark_acked(5)  # a refused mark restores it too
    assert journal._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
