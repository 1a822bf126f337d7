"""The journal: one transaction per input, seq without gaps, replay, queries, faults, retention."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.fs import small_tmpfs
from shoe_testkit.one_server import SERVER, backlog, delivered, open_journal

from shoe_controller.store.journal import (
    Journal,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalMismatch,
    RecordInvalid,
    ReplayMismatch,
    SinkMark,
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
    with open_journal(tmp_path / "journal.db", CONTROLLER, clock=clock) as opened:
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
    with open_journal(path, CONTROLLER) as journal:
        first = journal.record({"type": "a"}, [event("x", 1, 1), event("y", 1, 1)], 1)
        empty = journal.record({"type": "b"}, [], 1)  # inputs may cause no event
        assert [e.seq for e in first] == [1, 2]
        assert empty == []
    with open_journal(path, CONTROLLER) as journal:  # kept across restarts
        again = journal.record({"type": "c"}, [event("z", 1, 2)], 1)
        assert [(e.seq, e.id) for e in again] == [(3, f"{CONTROLLER}:3")]
        assert journal.reads.last_seq() == 3
        assert journal.reads.last_input() == 3


def test_record_returns_what_a_reader_sees(journal: Journal) -> None:
    ev = Event(EventType.CARD_DEALT, iso_time(1_800_000_000), 2, 7, {"position": "B1"})
    stored = journal.record({"type": "card"}, [ev], 2)
    assert journal.reads.events_after(0) == stored
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
    assert journal.reads.last_seq() == 1
    assert journal.reads.last_input() == 1
    assert journal.integrity.check() == []


def test_a_failure_inside_the_transaction_rolls_everything_back(
    journal: Journal, tmp_path: Path
) -> None:
    journal.record({"type": "a"}, [event("x", 1, 1)], 1, {"scanner": {"boot_id": 1, "seq": 5}})
    # another hand takes seq 2 behind the journal's back: the next record inserts its input
    # row, then collides on seq 2 halfway through the transaction
    tamper = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
    tamper.execute(
        "INSERT INTO events (seq, input_no, type, at, data, chain) VALUES (2, 1, 'z', 1, '{}', '')"
    )
    with pytest.raises(JournalError, match="UNIQUE"):
        journal.record({"type": "b"}, [event("y", 1, 1)], 1, {"scanner": {"boot_id": 1, "seq": 6}})
    assert journal.reads.last_input() == 1  # the input row went with the rest
    assert journal.reads.link_state("scanner") == {"boot_id": 1, "seq": 5}
    assert [e.type for e in journal.reads.events_after(0)] == ["x", "z"]
    tamper.execute("DELETE FROM events WHERE seq = 2")
    tamper.close()
    # the same call can simply be retried and gets the next seq
    assert [e.seq for e in journal.record({"type": "b"}, [event("y", 1, 1)], 1)] == [2]
    assert journal.integrity.check() == []


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
    assert journal.reads.link_state("scanner") == link["scanner"]
    broken = ({"type": "card"}, [{"type": "card.dealt"}], 1)  # an event without its fields
    with pytest.raises(RecordInvalid):
        journal.record_many([card, broken], {"scanner": {"session": {"last_seq": 5}}})
    assert journal.reads.last_seq() == 2
    assert journal.reads.link_state("scanner") == link["scanner"]
    assert len(journal.reads.replay_steps(from_input=1)) == 2


def test_link_state_is_stored_with_the_data_it_acknowledges(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with open_journal(path, CONTROLLER) as journal:
        journal.record({"type": "card"}, [event("x", 1, 1)], 1, {"scanner": {"boot": 9, "seq": 1}})
        journal.record({"type": "card"}, [], 1, {"scanner": {"boot": 9, "seq": 2}})
        journal.record_many([], {"shuffler": {"boot": 4, "seq": 0}})  # a heartbeat: no input
    with open_journal(path, CONTROLLER) as journal:
        assert journal.reads.link_state("scanner") == {"boot": 9, "seq": 2}
        assert journal.reads.link_states() == {
            "scanner": {"boot": 9, "seq": 2},
            "shuffler": {"boot": 4, "seq": 0},
        }
        assert journal.reads.link_state("nobody") is None


def test_boot_counter_counts_starts(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with open_journal(path, CONTROLLER) as journal:
        assert journal.reads.boot() == 0
        journal.record({"type": "controller_started", "boot": 1}, [], None)
        assert journal.reads.boot() == 1
    with open_journal(path, CONTROLLER) as journal:
        assert journal.reads.boot() == 1  # kept across restarts
        journal.record({"type": "card"}, [], None)
        assert journal.reads.boot() == 1  # only a start counts
        with pytest.raises(RecordInvalid):  # nothing stored: the count does not move either
            journal.record({"type": "controller_started", "boot": 2}, [{"type": "x"}], None)
        assert journal.reads.boot() == 1


def test_replay_covers_the_current_shoe_and_checks_events(journal: Journal) -> None:
    journal.record({"type": "device"}, [event("device.connected", None, None)], None)
    deal(journal, 1, 1)
    journal.record({"type": "end"}, [event("shoe.ended", 1, None, reason="cut_card")], 1)
    journal.record({"type": "device"}, [], None)
    deal(journal, 2, 1, cards=2)  # shoe 2 starts at input 8
    journal.record({"type": "device"}, [event("device.lost", None, None)], None)
    assert journal.reads.current_shoe() == 2
    assert journal.reads.replay_start() == 8
    steps = journal.reads.replay_steps()
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
    assert [s.input_no for s in journal.reads.replay_steps(from_input=1)] == list(range(1, 11))


def test_replay_starts_at_the_open_shoe_while_the_next_is_prepared(journal: Journal) -> None:
    # A batch shuffler reports the next shoe's shuffle while shoe 1 is still dealt: replay
    # must still start at shoe 1, the oldest shoe not ended.
    deal(journal, 1, 1)  # inputs 1-4
    journal.record({"type": "shuffle_started"}, [], 2)  # input 5, the next shoe's
    deal(journal, 1, 2)  # inputs 6-9
    assert journal.reads.current_shoe() == 2
    assert journal.reads.replay_start() == 1
    journal.record({"type": "end"}, [event("shoe.ended", 1, None, reason="cut_card")], 1)
    assert journal.reads.replay_start() == 5
    journal.record({"type": "card"}, [], 1)  # shoe 1 is over: this one is not replayed
    journal.record({"type": "shoe_state"}, [], 2)
    steps = journal.reads.replay_steps()
    assert [step.input_no for step in steps] == [5, 12]
    assert all(step.shoe == 2 for step in steps)


def test_replay_without_any_shoe_starts_at_the_first_input(journal: Journal) -> None:
    assert journal.reads.replay_steps() == []
    journal.record({"type": "device"}, [], None)
    assert journal.reads.replay_start() == 1
    assert len(journal.reads.replay_steps()) == 1


def test_rounds_and_round_events_for_the_cli(journal: Journal) -> None:
    deal(journal, 1, 1)
    deal(journal, 1, 2, cards=5)
    deal(journal, 2, 1, cards=1)
    rounds = journal.reads.rounds(1)
    assert [(r.round, r.first_seq, r.last_seq, r.events) for r in rounds] == [
        (1, 1, 4, 4),
        (2, 5, 9, 5),
    ]
    assert [e.seq for e in journal.reads.round_events(1, 2)] == [5, 6, 7, 8, 9]
    assert journal.reads.round_events(3, 1) == []
    assert [(s.shoe, s.first_input, s.last_input) for s in journal.reads.shoes()] == [
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
    assert (delivered(journal), backlog(journal)) == (0, 3)
    journal.sinks.mark_delivered(SERVER, 2)
    assert (delivered(journal), backlog(journal)) == (2, 1)
    assert [e.seq for e in journal.reads.events_after(2)] == [3]
    assert [e.seq for e in journal.reads.events_after(0, limit=2)] == [1, 2]
    journal.sinks.mark_delivered(SERVER, 1)  # the server lost data: we follow it down and resend
    assert backlog(journal) == 2
    with pytest.raises(RecordInvalid):
        journal.sinks.mark_delivered(
            SERVER, 4
        )  # beyond the last seq: never acknowledge what does not exist
    assert delivered(journal) == 1


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
    journal.sinks.mark_delivered(SERVER, 7)  # shoe 2 only partly delivered
    result = journal.prune(max_age_s=hour)
    assert result.shoes == (1,)
    assert (result.inputs, result.events) == (5, 5)
    assert journal.reads.first_seq() == 6
    journal.sinks.mark_delivered(SERVER, 14)
    assert journal.prune(max_age_s=3 * hour).shoes == ()  # shoe 2 ended only 2 h ago
    assert journal.prune(max_age_s=hour).shoes == (2,)
    assert journal.prune(max_age_s=0).shoes == ()  # the current shoe is never pruned
    assert [s.shoe for s in journal.reads.shoes()] == [3]
    assert journal.integrity.check() == []
    # numbering carries on: seqs are never reused
    assert [e.seq for e in journal.record({"type": "x"}, [event("x", 3, 2)], 3)] == [15]


def test_a_prune_keeps_each_sinks_numbering_of_the_events_kept(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A sink that takes only shoe ends has nothing left after the prune; the server keeps
    the numbers of the current shoe's events, and can be handed them again."""
    routes = {SERVER: lambda _type: True, "ends": lambda type_: type_ == "shoe.ended"}
    with Journal.open(tmp_path / "journal.db", CONTROLLER, routes=routes, clock=clock) as journal:
        deal(journal, 1, 1)
        journal.record({"type": "end"}, [event("shoe.ended", 1, None)], 1)  # seq 5, ends 1
        clock.now += 2 * 3600.0
        deal(journal, 2, 1)  # seq 6..9, the current shoe
        journal.sinks.mark_delivered(SERVER, 9)
        journal.sinks.mark_delivered("ends", 1)
        assert journal.prune(max_age_s=3600.0).shoes == (1,)
        journal.sinks.mark_delivered(SERVER, 7)  # the server lost data: it asks again
        assert [item.seq for item in journal.sinks.events_after(SERVER, 7)] == [8, 9]
        assert [item.seq for item in journal.sinks.events_after(SERVER, 5)] == [6, 7, 8, 9]
        assert journal.sinks.events_after("ends", 0) == []
        journal.record({"type": "end"}, [event("shoe.ended", 2, None)], 2)  # seq 10, ends 2
        assert [item.seq for item in journal.sinks.events_after("ends", 0)] == [2]
        assert journal.integrity.check() == []


def test_controller_id_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    open_journal(path, CONTROLLER).close()
    with pytest.raises(JournalMismatch):
        open_journal(path, "another-controller")
    with open_journal(path, None, read_only=True) as journal:
        assert journal.controller_id == CONTROLLER


def test_read_only_journal_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with open_journal(path, CONTROLLER) as journal:
        deal(journal, 1, 1)
    with open_journal(path, CONTROLLER, read_only=True) as reader:
        assert reader.reads.last_seq() == 4
        with pytest.raises(JournalError):
            reader.record({"type": "x"}, [], None)
    with pytest.raises(JournalError):
        open_journal(tmp_path / "missing.db", CONTROLLER, read_only=True)


def test_a_file_that_is_not_a_journal_is_corrupt(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not an SQLite file at all" * 200)
    with pytest.raises(JournalCorrupt):
        open_journal(garbage, CONTROLLER)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(JournalMismatch):
        open_journal(other, CONTROLLER)


def test_damaged_pages_are_reported_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with open_journal(path, CONTROLLER) as journal:
        for round_ in range(1, 60):
            deal(journal, 1, round_)
        journal._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(path.read_bytes())
    page = 4096
    assert len(raw) > 8 * page
    raw[5 * page : 7 * page] = b"\xa5" * (2 * page)  # scribble over two b-tree pages
    path.write_bytes(bytes(raw))
    with pytest.raises(JournalCorrupt):
        open_journal(path, CONTROLLER)


@pytest.fixture
def tiny_filesystem(tmp_path: Path):
    with small_tmpfs(tmp_path / "tiny", "1m") as mount_point:
        yield mount_point


def test_disk_full_is_a_clear_error_and_the_same_call_can_be_retried(
    tiny_filesystem: Path,
) -> None:
    ballast = tiny_filesystem / "ballast"
    ballast.write_bytes(b"\0" * (700 * 1024))
    journal = open_journal(tiny_filesystem / "journal.db", CONTROLLER)
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
    assert journal.reads.last_seq() == 3 * recorded  # nothing half-written
    assert journal.integrity.check() == []
    with pytest.raises(JournalFull):  # still full: still refused, still whole
        journal.record({"type": "card", "n": recorded}, [event("x", 1, 0, pad=pad)] * 3, 1)
    ballast.unlink()
    stored = journal.record({"type": "card", "n": recorded}, [event("x", 1, 0, pad=pad)] * 3, 1)
    assert [e.seq for e in stored] == [3 * recorded + 1, 3 * recorded + 2, 3 * recorded + 3]
    journal.close()
    with open_journal(tiny_filesystem / "journal.db", CONTROLLER) as reopened:
        assert reopened.integrity.check() == []
        assert reopened.reads.last_seq() == 3 * (recorded + 1)


def test_only_the_ack_mark_skips_the_sync_and_full_sync_comes_back(journal: Journal) -> None:
    journal.record({"type": "card"}, [event("card.dealt", 1, 1)], 1)
    journal.sinks.mark_delivered(SERVER, 1)
    assert delivered(journal) == 1
    # Inputs and events still commit with synchronous=FULL (2) after the mark.
    assert journal._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    with pytest.raises(RecordInvalid):
        journal.sinks.mark_delivered(SERVER, 5)  # a refused mark restores it too
    assert journal._conn.execute("PRAGMA synchronous").fetchone()[0] == 2


# ---- integrity check on journals that are not sound ------------------------------------


def tampered(path: Path, *statements: str) -> None:
    """Another hand changes the journal file under the controller (a bug, a bad restore)."""
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()


def test_check_reports_a_seq_gap_and_the_input_that_lost_its_event(
    journal: Journal, tmp_path: Path
) -> None:
    deal(journal, 1, 1)  # seqs 1-4, inputs 1-4
    tampered(tmp_path / "journal.db", "DELETE FROM events WHERE seq = 2")
    assert journal.integrity.check() == [
        "seq gap: 3 events held between 1 and 4",
        "input 2 lacks some of its events",
    ]


def test_check_reports_counters_that_disagree_with_what_is_stored(
    journal: Journal, tmp_path: Path
) -> None:
    deal(journal, 1, 1)
    journal.sinks.mark_delivered(SERVER, 4)
    assert journal.integrity.check() == []  # acked_through == last seq is sound
    tampered(tmp_path / "journal.db", "UPDATE journal SET last_seq = 6, last_input = 9")
    assert journal.integrity.check() == [
        "last seq stored 4 but counter says 6",
        "last input stored 4 but counter says 9",
    ]


def test_check_reports_an_ack_mark_beyond_the_last_seq(journal: Journal, tmp_path: Path) -> None:
    deal(journal, 1, 1, cards=2)
    tampered(tmp_path / "journal.db", "UPDATE sinks SET delivered_through = 3")
    assert journal.integrity.check() == ["sink server: delivered through 3, beyond its last seq 2"]


def test_check_of_a_pruned_journal_with_no_event_left_is_sound(
    journal: Journal, tmp_path: Path
) -> None:
    # Every event pruned, the counters kept: no seq is held, nothing to compare with.
    deal(journal, 1, 1, cards=2)
    tampered(tmp_path / "journal.db", "DELETE FROM events", "DELETE FROM inputs")
    assert journal.integrity.check() == []
    assert journal.reads.first_seq() is None
    assert journal.reads.last_seq() == 2


def test_check_reports_an_input_whose_events_are_numbered_for_another(
    journal: Journal, tmp_path: Path
) -> None:
    deal(journal, 1, 1, cards=2)
    tampered(tmp_path / "journal.db", "UPDATE events SET input_no = 1 WHERE seq = 2")
    assert journal.integrity.check() == ["input 2 lacks some of its events"]


def damage(path: Path, start: int, end: int, fill: bytes) -> None:
    raw = bytearray(path.read_bytes())
    assert len(raw) > end
    raw[start:end] = fill * (end - start)
    path.write_bytes(bytes(raw))


PAGE = 4096


@pytest.mark.parametrize(
    ("start", "end", "fill"),
    [
        (5 * PAGE, 7 * PAGE, b"\xa5"),  # b-tree pages scribbled over: SQLite cannot read on
        (4 * PAGE, 5 * PAGE, b"\xa5"),  # one page: quick_check lists what it found
        (9 * PAGE + 100, 10 * PAGE, b"\x00"),  # the cells of a table page zeroed
    ],
)
def test_check_reports_damaged_pages_of_a_journal_opened_without_the_quick_check(
    tmp_path: Path, start: int, end: int, fill: bytes
) -> None:
    path = tmp_path / "journal.db"
    with open_journal(path, CONTROLLER) as journal:
        for round_ in range(1, 60):
            deal(journal, 1, round_)
        journal._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damage(path, start, end, fill)
    try:  # what SQLite itself says of the file
        expected = [f"sqlite: {finding}" for finding in quick_check_rows(path)]
    except sqlite3.DatabaseError as error:  # too damaged to check page by page
        expected = [f"sqlite: journal {path}: {error}"]
    with open_journal(path, CONTROLLER, quick_check=False) as opened:
        problems = opened.integrity.check()  # never raises, never says sound
    assert problems == expected
    assert "sqlite: ok" not in problems


# ---- replay start, opening ---------------------------------------------------------------


def test_replay_starts_at_the_latest_shoe_when_every_shoe_has_ended(journal: Journal) -> None:
    deal(journal, 1, 1)  # inputs 1-4
    journal.record({"type": "end"}, [event("shoe.ended", 1, None)], 1)  # input 5
    deal(journal, 2, 1, cards=2)  # inputs 6-7
    journal.record({"type": "end"}, [event("shoe.ended", None, None)], 2)  # input 8
    journal.record({"type": "device"}, [], None)  # input 9: no shoe
    assert all(shoe.ended_at is not None for shoe in journal.reads.shoes())
    assert journal.reads.replay_start() == 6
    assert [step.input_no for step in journal.reads.replay_steps()] == [6, 7, 8, 9]


def test_replay_of_an_empty_journal_starts_after_the_last_input(
    journal: Journal, tmp_path: Path
) -> None:
    assert journal.reads.replay_start() == 1
    journal.record({"type": "device"}, [], None)
    journal.record({"type": "device"}, [], None)
    tampered(tmp_path / "journal.db", "DELETE FROM inputs")  # all pruned, numbering kept
    assert journal.reads.replay_start() == 3
    assert journal.reads.replay_steps() == []


def test_a_journal_that_cannot_be_opened_is_a_journal_error(tmp_path: Path) -> None:
    where = tmp_path / "no-such-directory" / "journal.db"
    with pytest.raises(JournalError, match="no-such-directory") as raised:
        open_journal(where, CONTROLLER)
    assert type(raised.value) is JournalError
    assert not where.parent.exists()
    with pytest.raises(JournalError, match="needs a controller_id"):
        open_journal(tmp_path / "new.db", None)
    assert not (tmp_path / "new.db").exists()


def test_an_sqlite_file_that_is_not_a_journal_is_refused_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.execute("INSERT INTO recipes VALUES ('bread')")
    conn.commit()
    conn.close()
    with pytest.raises(JournalMismatch, match="an SQLite file but not a shoe-controller journal"):
        open_journal(other, CONTROLLER)
    with pytest.raises(JournalMismatch, match="is not a shoe-controller journal"):
        open_journal(other, None, read_only=True)
    conn = sqlite3.connect(other)
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
    assert tables == ["recipes"]  # no journal table was slipped in
    assert conn.execute("SELECT name FROM recipes").fetchall() == [("bread",)]
    conn.close()


def test_an_empty_sqlite_file_becomes_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    with open_journal(path, CONTROLLER) as journal:
        assert (journal.reads.last_seq(), journal.reads.last_input(), journal.reads.boot()) == (
            0,
            0,
            0,
        )
        assert journal.controller_id == CONTROLLER


def test_a_journal_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    open_journal(path, CONTROLLER).close()
    tampered(path, "UPDATE journal SET schema_version = 4")  # a later release's
    with pytest.raises(JournalMismatch, match="has schema 4, this code knows 3"):
        open_journal(path, CONTROLLER)
    with pytest.raises(JournalMismatch, match="has schema 4"):
        open_journal(path, None, read_only=True)


def test_a_new_journal_is_in_wal_mode_with_full_sync(journal: Journal) -> None:
    conn = journal._conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA journal_size_limit").fetchone()[0] == 16 * 1024 * 1024
    assert repr(journal) == f"Journal({str(journal.path)!r}, {CONTROLLER!r}, rw)"


# ---- a journal written by an earlier release must still open ------------------------------

STORED_V1 = Path(__file__).parents[1] / "data" / "journal-v1.sqlite3"


def fill_like_the_stored_v1(journal: Journal) -> None:
    """What tests/data/journal-v1.sqlite3 holds: it was written by this function with the
    code of schema 1 (`fill_like_the_stored_v1(open_journal(path, CONTROLLER,
    clock=FakeClock()))`, then closed) and is kept as it was written, never rewritten."""
    started = [event("controller.started", None, None)]
    journal.record({"type": "controller_started", "boot": 1}, started, None)
    deal(journal, 1, 1)
    link = {"scanner": {"session": {"boot_id": 4660, "last_seq": 5}}}
    journal.record({"type": "end"}, [event("shoe.ended", 1, None, reason="cut_card")], 1, link)
    deal(journal, 2, 1, cards=2)
    journal.sinks.mark_delivered(SERVER, 3)


def test_a_journal_stored_by_schema_1_opens_and_reads_as_written(
    tmp_path: Path, clock: FakeClock
) -> None:
    # A copy: opening for writing switches on WAL beside it, and the stored file stays as is.
    old = tmp_path / "old.db"
    old.write_bytes(STORED_V1.read_bytes())
    raw = sqlite3.connect(old)
    assert raw.execute("SELECT schema_version, controller_id FROM journal").fetchone() == (
        1,
        CONTROLLER,
    )
    raw.close()
    with open_journal(tmp_path / "new.db", CONTROLLER, clock=clock) as new:
        fill_like_the_stored_v1(new)
        expected = (
            new.reads.events_after(0),
            new.reads.shoes(),
            new.reads.link_states(),
            new.reads.replay_steps(),
            (new.reads.last_seq(), new.reads.last_input(), delivered(new), new.reads.boot()),
            new.reads.rounds(1),
        )
    with open_journal(old, CONTROLLER, clock=clock) as journal:
        assert journal.integrity.check() == []
        assert (
            journal.reads.events_after(0),
            journal.reads.shoes(),
            journal.reads.link_states(),
            journal.reads.replay_steps(),
            (
                journal.reads.last_seq(),
                journal.reads.last_input(),
                delivered(journal),
                journal.reads.boot(),
            ),
            journal.reads.rounds(1),
        ) == expected
        assert journal.reads.replay_start() == 7  # shoe 2, the open one
        # Migrated to schema 2 at this open: every held record linked, in stored order.
        assert journal.integrity.chain_state() == {
            "anchor": "0" * 64,
            "head": journal.integrity.verify_chain().head,
            "chained_from": 9,
            "migrated_at": clock.now,
        }
        assert (journal.integrity.chain_report.intact, journal.integrity.chain_report.records) == (
            True,
            16,
        )
        stored = journal.record({"type": "card"}, [event("card.dealt", 2, 1)], 2)
        assert [e.seq for e in stored] == [expected[4][0] + 1]  # numbering goes on
        assert (
            journal.integrity.verify_chain().intact,
            journal.integrity.chain_report.records,
        ) == (True, 18)
    with open_journal(old, None, read_only=True) as reader:
        assert reader.controller_id == CONTROLLER
        assert reader.integrity.verify_chain().intact
    raw = sqlite3.connect(old)
    assert raw.execute("SELECT schema_version FROM journal").fetchone() == (3,)
    assert raw.execute("SELECT count(*) FROM events WHERE chain IS NULL").fetchone() == (0,)
    raw.close()


STORED_V2 = Path(__file__).parents[1] / "data" / "journal-v2.sqlite3"


def fill_like_the_stored_v2(journal: Journal) -> None:
    """What tests/data/journal-v2.sqlite3 holds: written by this function with the code of
    schema 2 (one table server, one `acked_through`) and kept as it was written."""
    started = [event("controller.started", None, None)]
    journal.record({"type": "controller_started", "boot": 1}, started, None)
    deal(journal, 1, 1)
    edge = [event("surveillance.edge", 1, None, bet="tie")]
    journal.record({"type": "surveillance_report"}, edge, 1)
    journal.record({"type": "end"}, [event("shoe.ended", 1, None, reason="cut_card")], 1)
    deal(journal, 2, 1, cards=2)


def test_a_schema_2_journal_delivers_on_to_its_table_server_from_where_it_was(
    tmp_path: Path, clock: FakeClock
) -> None:
    old = tmp_path / "old.db"
    old.write_bytes(STORED_V2.read_bytes())
    raw = sqlite3.connect(old)
    assert raw.execute("SELECT schema_version, acked_through FROM journal").fetchone() == (2, 4)
    raw.close()
    with open_journal(tmp_path / "new.db", CONTROLLER, clock=clock) as new:
        fill_like_the_stored_v2(new)
        expected = (
            new.reads.events_after(0),
            new.reads.shoes(),
            new.reads.replay_steps(),
            new.reads.last_seq(),
        )
    # The daemon now keeps surveillance's events from the table server: the events held
    # keep the numbers the server knows them by, the ones stored from now on skip them.
    routes = {SERVER: lambda type_: not type_.startswith("surveillance.")}
    with Journal.open(old, CONTROLLER, clock=clock, routes=routes) as journal:
        assert journal.integrity.check() == []
        assert (
            journal.reads.events_after(0),
            journal.reads.shoes(),
            journal.reads.replay_steps(),
            journal.reads.last_seq(),
        ) == expected
        assert journal.sinks.marks() == {SERVER: SinkMark(SERVER, 9, 4)}
        waiting = journal.sinks.events_after(SERVER, 4)
        assert [(item.seq, item.event.seq) for item in waiting] == [(n, n) for n in range(5, 10)]
        assert [item.event.type for item in waiting][1:3] == ["surveillance.edge", "shoe.ended"]
        assert journal.integrity.verify_chain().intact  # the chain never covered delivery marks
        journal.record({"type": "x"}, [event("surveillance.edge", 2, 1), event("x", 2, 1)], 2)
        last = journal.sinks.events_after(SERVER, 9)
        assert [(item.seq, item.event.seq, item.event.type) for item in last] == [(10, 11, "x")]
    raw = sqlite3.connect(old)
    assert raw.execute("SELECT schema_version FROM journal").fetchone() == (3,)
    columns = [row[1] for row in raw.execute("PRAGMA table_info(journal)")]
    assert "acked_through" not in columns
    raw.close()


# ---- what the journal refuses, and how it says so ------------------------------------------


@pytest.mark.parametrize("shoe", ["1", 1.0, True])
def test_a_shoe_that_is_not_an_int_is_refused_by_name(journal: Journal, shoe: object) -> None:
    with pytest.raises(RecordInvalid, match=r"^shoe must be an int or None, not "):
        journal.record({"type": "card"}, [], shoe)  # type: ignore[arg-type]
    with pytest.raises(RecordInvalid, match=r"^boot must be an int or None, not "):
        journal.record({"type": "controller_started", "boot": shoe}, [], None)
    assert (journal.reads.last_input(), journal.reads.boot()) == (0, 0)


@pytest.mark.parametrize("mark", ["3", 3.0, True, None])
def test_an_ack_mark_that_is_not_an_int_is_refused(journal: Journal, mark: object) -> None:
    deal(journal, 1, 1)
    with pytest.raises(RecordInvalid, match=r"^delivered_through must be an int, not "):
        journal.sinks.mark_delivered(SERVER, mark)  # type: ignore[arg-type]
    assert delivered(journal) == 0


def test_ack_marks_from_zero_to_the_last_seq_only(journal: Journal) -> None:
    deal(journal, 1, 1, cards=3)
    journal.sinks.mark_delivered(SERVER, 3)
    journal.sinks.mark_delivered(SERVER, 0)  # a server that lost everything: resend it all
    assert backlog(journal) == 3
    for outside in (-1, 4):
        with pytest.raises(
            RecordInvalid, match=rf"^sink server: delivered_through {outside} outside 0\.\.3 "
        ):
            journal.sinks.mark_delivered(SERVER, outside)
    with pytest.raises(RecordInvalid, match=r"^no sink named 'nobody' in this journal"):
        journal.sinks.mark_delivered("nobody", 0)


@pytest.mark.parametrize("age", [-1, float("nan"), float("inf"), "3600", None])
def test_prune_refuses_an_age_that_is_not_a_finite_non_negative_number(
    journal: Journal, age: object
) -> None:
    with pytest.raises(RecordInvalid, match=r"^max_age_s must be a non-negative number, not "):
        journal.prune(age)  # type: ignore[arg-type]


def test_only_the_ack_mark_commits_without_waiting_for_the_disk(journal: Journal) -> None:
    statements: list[str] = []
    journal._conn.set_trace_callback(statements.append)
    journal.record({"type": "card"}, [event("card.dealt", 1, 1)], 1)
    journal.prune(3600)
    assert "PRAGMA synchronous=NORMAL" not in statements  # inputs and prunes: durable
    before = len(statements)
    journal.sinks.mark_delivered(SERVER, 1)
    assert "COMMIT" not in statements[before:]  # noted, not written: no transaction of its own
    journal.sinks.store_marks()
    assert statements.count("PRAGMA synchronous=NORMAL") == 1
    journal._conn.set_trace_callback(None)


def test_a_mark_is_shown_at_once_and_stored_with_the_next_commit(
    journal: Journal, tmp_path: Path
) -> None:
    """A batch's confirmation rides on the next card's commit (or store_marks),
    not a transaction of its own; sinks.marks() shows it at once; close stores it."""
    deal(journal, 1, 1, cards=2)

    def on_disk() -> int:
        raw = sqlite3.connect(tmp_path / "journal.db")
        try:
            query = "SELECT delivered_through FROM sinks WHERE name = ?"
            return raw.execute(query, (SERVER,)).fetchone()[0]
        finally:
            raw.close()

    journal.sinks.mark_delivered(SERVER, 2)
    assert journal.sinks.marks()[SERVER].delivered_through == 2
    assert on_disk() == 0
    journal.record({"type": "card"}, [event("card.dealt", 1, 1)], 1)
    assert on_disk() == 2
    journal.sinks.mark_delivered(SERVER, 3)
    journal.close()
    assert on_disk() == 3


def test_an_input_without_events_stores_no_first_seq(journal: Journal, tmp_path: Path) -> None:
    # The file's format is a contract: first_seq is NULL for an input that caused nothing.
    journal.record({"type": "device"}, [], None)
    journal.record({"type": "card"}, [event("card.dealt", 1, 1)], 1)
    raw = sqlite3.connect(tmp_path / "journal.db")
    rows = raw.execute("SELECT input_no, first_seq, event_count FROM inputs").fetchall()
    raw.close()
    assert rows == [(1, None, 0), (2, 1, 1)]


def test_shoe_ended_marks_the_shoe_the_event_names(journal: Journal, clock: FakeClock) -> None:
    # A batch shuffler's input of shoe 2 may end shoe 1: the event's shoe is the one ended.
    deal(journal, 1, 1)
    journal.record({"type": "shuffle_done"}, [], 2)
    journal.record({"type": "end"}, [event("shoe.ended", 1, None)], 2)
    ended = {shoe.shoe: shoe.ended_at for shoe in journal.reads.shoes()}
    assert ended == {1: clock.now, 2: None}
    assert journal.reads.replay_start() == 5  # shoe 2, the one still open


def test_the_outbox_reads_200_events_at_a_time_by_default(journal: Journal) -> None:
    journal.record({"type": "burst"}, [event("x", 1, 1)] * 250, 1)
    assert len(journal.reads.events_after(0)) == 200
    assert len(journal.reads.events_after(200)) == 50


def test_replay_from_a_given_input_gets_every_input_after_it(journal: Journal) -> None:
    deal(journal, 1, 1)  # inputs 1-4
    journal.record({"type": "shuffle_started"}, [], 2)  # input 5, the next shoe's
    deal(journal, 1, 2)  # inputs 6-9, shoe 1's last round
    assert [step.input_no for step in journal.reads.replay_steps(from_input=5)] == [5, 6, 7, 8, 9]


def test_read_only_journal_says_so(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    open_journal(path, CONTROLLER).close()
    with open_journal(path, None, read_only=True) as reader:
        assert (reader.path, reader.read_only) == (path, True)
        assert repr(reader) == f"Journal({str(path)!r}, {CONTROLLER!r}, ro)"
        with pytest.raises(JournalError, match=rf"^journal {path} is open read-only$"):
            reader.sinks.mark_delivered(SERVER, 0)
    with pytest.raises(JournalError, match=r"^journal .*missing\.db does not exist$"):
        open_journal(tmp_path / "missing.db", None, read_only=True)
    with open_journal(path, CONTROLLER) as writer:
        assert (writer.path, writer.read_only) == (path, False)


def test_errors_name_the_journal_file(journal: Journal, tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal.record({"type": "a"}, [event("x", 1, 1)], 1)
    taken = "INSERT INTO events (seq, input_no, type, at, data) VALUES (2, 1, 'z', 1, '{}')"
    tampered(path, taken)  # the next seq collides: another writer's (JournalWrittenElsewhere)
    with pytest.raises(JournalError, match=rf"^journal {path} .*: UNIQUE constraint failed"):
        journal.record({"type": "b"}, [event("y", 1, 1)], 1)
    tampered(path, "DELETE FROM events WHERE seq = 2", "DROP TABLE links")
    with pytest.raises(JournalError, match=rf"^journal {path}: no such table: links"):
        journal.reads.link_states()
    with pytest.raises(JournalError, match=rf"^journal {path}: no such table: links"):
        journal.record({"type": "c"}, [], 1, {"scanner": {"last_seq": 1}})


def test_opening_errors_say_what_is_wrong_and_where(tmp_path: Path) -> None:
    where = tmp_path / "no-such-directory" / "journal.db"
    with pytest.raises(JournalError, match=rf"^journal {where}: unable to open database file$"):
        open_journal(where, CONTROLLER)
    with pytest.raises(JournalError, match=r"^a new journal needs a controller_id$"):
        open_journal(tmp_path / "new.db", None)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(JournalError, match=r"^a new journal needs a controller_id$"):
        open_journal(empty, "")
    path = tmp_path / "journal.db"
    open_journal(path, CONTROLLER).close()
    with pytest.raises(
        JournalMismatch,
        match=rf"^journal {path} belongs to controller '{CONTROLLER}', not 'another'$",
    ):
        open_journal(path, "another")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not an SQLite file at all" * 200)
    with pytest.raises(JournalCorrupt, match=rf"^journal {garbage}: file is not a database$"):
        open_journal(garbage, CONTROLLER)


def test_a_journal_that_cannot_keep_a_wal_is_refused() -> None:
    # An in-memory database cannot be switched to WAL: no durable journal there.
    with pytest.raises(
        JournalError, match=r"^journal :memory:: cannot switch to WAL \(got memory\)$"
    ):
        open_journal(":memory:", CONTROLLER)


def test_the_busy_timeout_and_the_connection_mode_are_as_configured(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with open_journal(path, CONTROLLER) as journal:
        assert journal._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
        assert journal._conn.isolation_level is None  # BEGIN ... COMMIT are ours alone
    with open_journal(path, CONTROLLER, busy_timeout_s=0.25) as journal:
        assert journal._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 250
    with open_journal(path, None, read_only=True, busy_timeout_s=0.5) as reader:
        assert reader._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 500
        assert reader._conn.isolation_level is None


def quick_check_rows(path: Path) -> list[str]:
    """What SQLite's own quick_check says of the file, on a connection of the test's."""
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("PRAGMA quick_check")]
    finally:
        conn.close()


def test_damage_found_at_open_is_reported_with_the_first_five_findings(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with open_journal(path, CONTROLLER) as journal:
        for round_ in range(1, 60):
            deal(journal, 1, round_)
        journal._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for page in (6, 8, 10, 12):  # the cells of four table pages zeroed
        damage(path, page * PAGE + 100, (page + 1) * PAGE, b"\x00")
    findings = quick_check_rows(path)
    assert len(findings) > 5
    with pytest.raises(JournalCorrupt) as raised:
        open_journal(path, CONTROLLER)
    assert str(raised.value) == f"journal {path} is damaged: {'; '.join(findings[:5])}"
    with open_journal(path, CONTROLLER, quick_check=False) as opened:
        assert opened.integrity.check() == [f"sqlite: {finding}" for finding in findings]


def _command(key: str, action: str = "void") -> dict[str, Any]:
    return {"type": "supervisor", "at": 1.0, "action": action, "by": "sup7", "reason": "x",
            "args": {}, "os_user": "", "key": key}  # fmt: skip


def test_a_command_is_found_by_its_key_with_the_events_it_caused(journal: Journal) -> None:
    deal(journal, 1, 1)
    journal.record(_command(""), [event("supervisor.action", 1, 1, action="void")], 1)
    caused = [event("supervisor.action", 1, 1, action="void"), event("round.voided", 1, 1)]
    stored = journal.record(_command("k-1"), caused, 1)
    journal.record(_command("k-2", "hold"), [event("supervisor.action", 1, None)], 1)
    deal(journal, 1, 2)  # events after it are not its
    found = journal.reads.command_outcome("k-1")
    assert found == stored
    assert [e.type for e in found] == ["supervisor.action", "round.voided"]
    assert journal.reads.command_outcome("k-3") is None
    assert journal.reads.command_outcome("") is None  # a command without a key is not "found"


def test_a_command_outside_the_window_is_not_found(journal: Journal) -> None:
    journal.record(_command("old"), [event("supervisor.action", 1, None)], 1)
    for _ in range(3):
        deal(journal, 1, 1, cards=1)
    assert journal.reads.command_outcome("old", window=3) is None
    assert journal.reads.command_outcome("old", window=4) is not None


def test_a_refused_command_is_found_with_its_refusal(journal: Journal) -> None:
    refusal = event("procedure.alert", 1, None, code="command_refused", text="no",
                    needs_supervisor=False)  # fmt: skip
    journal.record(_command("k-9"), [refusal], 1)
    (found,) = journal.reads.command_outcome("k-9") or []
    assert found.data["code"] == "command_refused"


def test_a_command_stored_without_events_is_found_with_none(journal: Journal) -> None:
    journal.record(_command("quiet"), [], 1)
    deal(journal, 1, 1)
    assert journal.reads.command_outcome("quiet") == []


# ---- the hash chain's reads (docs/journal.md "The hash chain"; test_journal_chain.py) ----


def test_what_is_recorded_is_chained_and_the_chain_is_read_back(journal: Journal) -> None:
    assert journal.integrity.chain_status() is None  # not walked yet
    journal.record({"type": "started"}, [event("controller.started", None, None)], None)  # 1
    deal(journal, 1, 1, cards=2)  # inputs 2-3, seqs 2-3
    journal.record({"type": "quiet"}, [], 1)  # input 4: no event
    journal.record_many(
        [({"type": "gap"}, [event("x", 1, 2), event("y", 1, 2)], 1), ({"type": "c"}, [], 1)]
    )  # inputs 5-6, seqs 4-5
    report = journal.integrity.verify_chain()
    assert (report.intact, report.records, report.anchor) == (True, 11, "0" * 64)
    assert journal.integrity.chain_status() == report.to_json()
    state = journal.integrity.chain_state()
    assert (state["head"], state["chained_from"], state["migrated_at"]) == (report.head, 1, None)
    raw = sqlite3.connect(journal.path)
    links = dict(raw.execute("SELECT 'i' || input_no, chain FROM inputs").fetchall())
    links |= dict(raw.execute("SELECT 'e' || seq, chain FROM events").fetchall())
    raw.close()
    assert len(set(links.values())) == 11  # one link a record, all different
    previous, inputs, events = journal.integrity.chain_rows(2, 3)
    assert previous == links["e1"]  # the last event of the input before
    assert [row[0] for row in inputs] == [2, 3]
    assert [(row[0], row[-1]) for row in events] == [(2, links["e2"]), (3, links["e3"])]
    assert journal.integrity.chain_rows(5, 6)[0] == links["i4"]  # an input without events before
    assert journal.integrity.chain_rows(6, 6)[0] == links["e5"]  # input 5's last event: seqs 4-5
    assert journal.integrity.chain_rows(1, 1)[0] == "0" * 64  # the first record held: the anchor
    assert journal.integrity.chain_rows(4, 4)[2] == []  # no event to read
    assert journal.reads.round_last_input(1, 2) == 5
    assert journal.reads.round_last_input(1, 9) is None
    assert journal.reads.first_input_since(0) == 1
    assert journal.reads.first_input_since(1_800_000_000.5) is None  # FakeClock: all at 1.8e9
    assert journal.reads.first_input_since(1_800_000_000.0) == 1


def test_a_changed_record_is_found_by_the_walk(journal: Journal, tmp_path: Path) -> None:
    deal(journal, 1, 1, cards=3)
    tampered(tmp_path / "journal.db", "DELETE FROM events WHERE seq = 3")
    assert journal.integrity.chain_rows(4, 4)[0] == ""  # what input 4 follows is gone: nothing
    assert journal.integrity.verify_chain().first_bad == "event seq 3 (input 3)"
    deal(journal, 1, 2, cards=1)
    tampered(tmp_path / "journal.db", "UPDATE events SET round = 2 WHERE seq = 2")
    report = journal.integrity.verify_chain()
    assert (report.intact, report.first_bad, report.records) == (
        False, "event seq 2 (input 2)", 4
    )  # fmt: skip
    assert report.problem == (
        "event seq 2 (input 2) does not follow input 2: it was changed, or moved"
    )
    assert journal.integrity.chain_report is report
