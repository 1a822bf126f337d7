"""The journal's hash chain: every stored input and event linked to the one before
by SHA-256; an edit, a deletion or a reorder made with sqlite3 in the file is found and the
first bad record named; migration of schema-1 journals; pruning keeps an anchor; a broken
chain is CRITICAL health, never repaired."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.one_server import SERVER, open_journal
from shoe_testkit.perfect_dealer import deal_shoe

from shoe_controller.service.config import from_mapping
from shoe_controller.service.control import ControlService
from shoe_controller.service.health import CRITICAL, OK, assess
from shoe_controller.store.chain import (
    GENESIS,
    ChainRecord,
    ChainReport,
    in_chain_order,
    link,
    walk,
)
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import (
    Journal,
    JournalBusy,
    JournalError,
    JournalMismatch,
    PruneResult,
    RecordInvalid,
)
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import iso_time

CONTROLLER = "tbl-07-shoe"
STORED_V1 = Path(__file__).parents[1] / "data" / "journal-v1.sqlite3"
NOW = 1_800_000_000.0


def event(type_: str, shoe: int | None, round_: int | None, **data: Any) -> dict[str, Any]:
    return {"type": type_, "at": iso_time(NOW + 0.25), "shoe": shoe, "round": round_,
            "data": data}  # fmt: skip


def by_hand(previous: str, fields: list[Any]) -> str:
    """docs/journal.md "The hash chain", written again from the page: SHA-256 over the
    previous link's hex and the record's compact JSON array."""
    text = json.dumps(fields, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((previous + text).encode("utf-8")).hexdigest()


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def fill(journal: Journal) -> None:
    """Inputs 1-6 (seqs 1-10): input 4 causes no event, input 6 ends shoe 1; shoe 2 after."""
    for n in range(3):  # inputs 1-3, seqs 1-6
        journal.record({"type": "card", "n": n}, [event("card.dealt", 1, 1, n=n),
                       event("insurance.offered", 1, 1, n=n)], 1)  # fmt: skip
    journal.record({"type": "quiet"}, [], 1)  # input 4
    journal.record({"type": "card", "n": 3}, [event("card.dealt", 1, 2, n=3)], 1)  # seq 7
    journal.record({"type": "end"}, [event("shoe.ended", 1, None)], 1)  # input 6, seq 8
    for n in range(2):  # inputs 7-8, seqs 9-10
        journal.record({"type": "card", "n": n}, [event("card.dealt", 2, 1, n=n)], 2)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    where = tmp_path / "journal.db"
    with open_journal(where, CONTROLLER, clock=Clock()) as journal:
        fill(journal)
    return where


def tampered_copy(path: Path, *statements: str) -> Path:
    """A copy of the journal changed by another hand, with sqlite3 as anyone could."""
    copy = path.with_name(f"copy-{abs(hash(statements))}.db")
    shutil.copy(path, copy)
    conn = sqlite3.connect(copy, isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()
    return copy


def report_of(path: Path) -> Any:
    with open_journal(path, None, read_only=True) as reader:
        return reader.integrity.verify_chain()


# ---- the links, as the page specifies them -------------------------------------------------


def test_each_record_is_linked_to_the_one_before_as_the_page_says(path: Path) -> None:
    conn = sqlite3.connect(path)
    inputs = {row[0]: row for row in conn.execute("SELECT input_no, shoe, type, body,"
              " recorded_at, first_seq, event_count, chain FROM inputs")}  # fmt: skip
    events = {row[0]: row for row in conn.execute("SELECT seq, input_no, type, at, shoe, round,"
              " data, chain FROM events")}  # fmt: skip
    anchor, head = conn.execute("SELECT chain_anchor, chain_head FROM journal").fetchone()
    conn.close()
    assert anchor == GENESIS == "0" * 64
    order = [("i", 1), ("e", 1), ("e", 2), ("i", 2), ("e", 3), ("e", 4), ("i", 3), ("e", 5),
             ("e", 6), ("i", 4), ("i", 5), ("e", 7), ("i", 6), ("e", 8), ("i", 7), ("e", 9),
             ("i", 8), ("e", 10)]  # fmt: skip
    previous = GENESIS
    for kind, number in order:
        if kind == "i":
            *fields, stored = inputs[number]
            fields[4] = float(fields[4])
            expected = by_hand(previous, ["input", *fields])
        else:
            *fields, stored = events[number]
            expected = by_hand(previous, ["event", *fields])
        assert stored == expected, (kind, number)
        previous = stored
    assert head == previous
    report = report_of(path)
    assert (report.intact, report.records, report.head) == (True, 18, head)
    assert report.first_bad is None
    assert report.problem is None


def test_the_chain_goes_on_across_restarts_and_an_int_clock(tmp_path: Path) -> None:
    where = tmp_path / "journal.db"
    with open_journal(where, CONTROLLER, clock=lambda: 1_800_000_000) as journal:  # an int
        journal.record({"type": "a"}, [event("x", 1, 1)], 1)
    with open_journal(where, CONTROLLER, clock=lambda: 1_800_000_001) as journal:
        journal.record({"type": "b"}, [event("y", 1, 1), event("z", 1, 1)], 1)
        report = journal.integrity.verify_chain()
        assert (report.intact, report.records) == (True, 5)
        assert journal.integrity.chain_report is report
        assert journal.integrity.chain_status() == report.to_json()
        assert journal.integrity.chain_state()["head"] == report.head


def test_a_failed_transaction_leaves_the_chain_where_it_was(path: Path) -> None:
    with open_journal(path, CONTROLLER, busy_timeout_s=0.05) as journal:
        with pytest.raises(RecordInvalid):
            journal.record({"type": "bad"}, [{"type": "x"}], 1)  # refused before the file
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(JournalBusy):
            journal.record({"type": "late"}, [event("x", 2, 2)], 2)
        blocker.execute("ROLLBACK")
        blocker.close()
        journal.record({"type": "later"}, [event("x", 2, 2)], 2)
        report = journal.integrity.verify_chain()
    assert (report.intact, report.records) == (True, 20)


def test_an_empty_journal_is_an_intact_chain_of_nothing(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.db", CONTROLLER) as journal:
        report = journal.integrity.verify_chain()
    assert (report.intact, report.records, report.head) == (True, 0, GENESIS)


# ---- another hand in the file ----------------------------------------------------------------


TAMPERING = {
    "an event's data edited": (
        ["UPDATE events SET data = '{\"n\":9}' WHERE seq = 5"],
        "event seq 5 (input 3)",
        "event seq 5 (input 3) does not follow input 3: it was changed, or moved",
    ),
    "an event's time edited": (
        ["UPDATE events SET at = '2027-01-15T08:00:00.000000Z' WHERE seq = 9"],
        "event seq 9 (input 7)",
        "does not follow input 7",
    ),
    "an input's body edited": (
        ['UPDATE inputs SET body = \'{"type":"card","n":7}\' WHERE input_no = 2'],
        "input 2",
        "input 2 does not follow event seq 2 (input 1): it was changed, or moved",
    ),
    "an input's recorded time edited": (
        ["UPDATE inputs SET recorded_at = recorded_at + 1 WHERE input_no = 4"],
        "input 4",
        "input 4 does not follow event seq 6 (input 3)",
    ),
    "the first event of an input deleted": (
        ["DELETE FROM events WHERE seq = 3"],
        "event seq 4 (input 2)",
        "event seq 3 missing before event seq 4 (input 2): removed, or moved elsewhere",
    ),
    "the last event of an input deleted": (
        ["DELETE FROM events WHERE seq = 4"],
        "input 3",
        "event seq 4 missing before input 3: removed, or moved elsewhere",
    ),
    "an input deleted, its events left": (
        ["DELETE FROM inputs WHERE input_no = 3"],
        "input 4",  # the next input held comes first: it owns no seq
        "input 3 missing before input 4: removed, or moved elsewhere",
    ),
    "an input deleted, its events left, the next input with events": (
        ["DELETE FROM inputs WHERE input_no = 2"],
        "event seq 3 (input 2)",
        "input 2 missing before event seq 3 (input 2): removed, or moved elsewhere",
    ),
    "an input deleted with its events": (
        ["DELETE FROM inputs WHERE input_no = 2", "DELETE FROM events WHERE input_no = 2"],
        "input 3",
        "input 2 missing before input 3: removed, or moved elsewhere",
    ),
    "an input without events deleted": (
        ["DELETE FROM inputs WHERE input_no = 4"],
        "input 5",
        "input 4 missing before input 5",
    ),
    "two events swapped": (
        [
            "UPDATE events SET seq = 100 WHERE seq = 5",
            "UPDATE events SET seq = 5 WHERE seq = 7",
            "UPDATE events SET seq = 7 WHERE seq = 100",
        ],
        "event seq 5 (input 5)",
        "event seq 5 (input 5) stands among the events of input 3: it was moved, or changed",
    ),
    "two events' contents swapped": (
        [
            "UPDATE events SET data = CASE seq WHEN 1 THEN (SELECT data FROM events WHERE seq = 3)"
            " ELSE (SELECT data FROM events WHERE seq = 1) END WHERE seq IN (1, 3)"
        ],
        "event seq 1 (input 1)",
        "event seq 1 (input 1) does not follow input 1",
    ),
    "two inputs swapped": (
        [
            "UPDATE inputs SET input_no = 100 WHERE input_no = 7",
            "UPDATE inputs SET input_no = 7 WHERE input_no = 8",
            "UPDATE inputs SET input_no = 8 WHERE input_no = 100",
        ],
        "event seq 9 (input 7)",  # its input is not where it belongs
        "input 7 missing before event seq 9 (input 7): removed, or moved elsewhere",
    ),
    "two inputs' bodies swapped": (
        [
            "UPDATE inputs SET body = CASE input_no WHEN 7 THEN (SELECT body FROM inputs WHERE"
            " input_no = 8) ELSE (SELECT body FROM inputs WHERE input_no = 7) END"
            " WHERE input_no IN (7, 8)"
        ],
        "input 7",
        "input 7 does not follow event seq 8 (input 6): it was changed, or moved",
    ),
    "an input after one without events deleted": (
        ["DELETE FROM inputs WHERE input_no = 5"],
        "event seq 7 (input 5)",
        "input 5 missing before event seq 7 (input 5): removed, or moved elsewhere",
    ),
    "the last event cut off": (
        ["DELETE FROM events WHERE seq = 10"],
        "event seq 10 (input 8)",
        "event seq 10 missing at the end of the chain: removed",
    ),
    "the last input and its event cut off": (
        ["DELETE FROM inputs WHERE input_no = 8", "DELETE FROM events WHERE seq = 10"],
        "the end",
        "the chain stops after event seq 9 (input 7), but its head says more records followed",
    ),
    "a hash blanked": (
        ["UPDATE events SET chain = NULL WHERE seq = 6"],
        "event seq 6 (input 3)",
        "event seq 6 (input 3) carries no hash",
    ),
    "the first input deleted": (
        ["DELETE FROM inputs WHERE input_no = 1"],
        "event seq 1 (input 1)",
        "input 1 missing before event seq 1 (input 1), the first record held",
    ),
    "the first input and its events deleted": (
        ["DELETE FROM inputs WHERE input_no = 1", "DELETE FROM events WHERE input_no = 1"],
        "input 2",
        "input 2 does not follow the start of the chain: it was changed, or records before it",
    ),
}


@pytest.mark.parametrize("case", TAMPERING, ids=list(TAMPERING))
def test_a_change_made_with_sqlite3_is_found_and_named(path: Path, case: str) -> None:
    statements, first_bad, problem = TAMPERING[case]
    report = report_of(tampered_copy(path, *statements))
    assert report.intact is False
    assert report.first_bad == first_bad
    assert problem in str(report.problem)
    assert report_of(path).intact  # the original is untouched


def test_a_record_changed_with_its_own_hash_recomputed_breaks_the_next_link(path: Path) -> None:
    conn = sqlite3.connect(path)
    row = conn.execute("SELECT seq, input_no, type, at, shoe, round, data FROM events"
                       " WHERE seq = 7").fetchone()  # fmt: skip
    previous = conn.execute("SELECT chain FROM inputs WHERE input_no = 5").fetchone()[0]
    conn.close()
    forged_data = '{"n":8}'
    forged = by_hand(previous, ["event", *row[:6], forged_data])
    copy = tampered_copy(
        path, f"UPDATE events SET data = '{forged_data}', chain = '{forged}' WHERE seq = 7"
    )
    report = report_of(copy)
    assert (report.intact, report.first_bad) == (False, "input 6")  # the next record


def test_a_damaged_file_is_a_broken_chain_not_an_intact_one(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    with open_journal(path, CONTROLLER) as journal:
        for n in range(400):
            journal.record({"type": "card", "pad": "x" * 200}, [event("e", 1, n, n=n)], 1)
    raw = bytearray(path.read_bytes())
    middle = len(raw) // 2 // 4096 * 4096
    raw[middle : middle + 8192] = b"\x5a" * 8192  # pages of the inputs and events
    path.write_bytes(bytes(raw))
    with open_journal(path, None, read_only=True, quick_check=False) as reader:
        report = reader.integrity.verify_chain()
    assert report == ChainReport(False, 0, "", "", "the file", report.problem)
    assert str(report.problem).startswith("sqlite: journal ")


# ---- start-up, health, never repaired --------------------------------------------------------


def dealt(where: Path, inputs: int = 20) -> Path:
    """A journal of a real table: the first inputs of a correctly dealt shoe."""
    config = from_mapping({"table": {"id": "07"}}).procedures
    cards = [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]
    random.Random(7).shuffle(cards)
    shoe = deal_shoe(cards, config)
    with open_journal(where, CONTROLLER, clock=Clock()) as journal:
        controller = Controller(config, journal)
        for item in shoe.inputs[:inputs]:
            controller.submit(item)
    return where


def test_a_broken_chain_is_critical_at_start_up_and_stays_so(tmp_path: Path) -> None:
    path = dealt(tmp_path / "journal.db")
    copy = tampered_copy(path, "UPDATE events SET at = '2027-01-15T08:00:00.000000Z' WHERE seq = 9")
    config = from_mapping({"table": {"id": "07"}})
    with open_journal(copy, CONTROLLER) as journal:
        controller = Controller(config.procedures, journal)
        service = ControlService(controller, list, list, config, lambda: NOW)
        status = service.health_status()
        chain = status["controller"]["journal_chain"]
        bad = chain["first_bad"]
        assert chain["intact"] is False
        assert bad.startswith("event seq 9 (input ")
        assert status["health"]["level"] == CRITICAL
        [problem] = [p for p in status["health"]["problems"] if "chain" in p["text"]]
        assert problem["text"].startswith(f"journal chain broken at {bad}: ")
        assert "shoe-controller verify" in problem["action"]
        # New records are stored and chained on, the break stays where it was: not repaired.
        journal.record({"type": "more"}, [event("x", 2, 2)], 2)
        assert journal.integrity.verify_chain().first_bad == bad
        assert journal.prune(0).shoes == ()  # the evidence is not pruned away either
    conn = sqlite3.connect(copy)
    assert conn.execute("SELECT at FROM events WHERE seq = 9").fetchone() == (
        "2027-01-15T08:00:00.000000Z",
    )
    conn.close()


def test_an_intact_chain_is_healthy(tmp_path: Path) -> None:
    path = dealt(tmp_path / "journal.db")
    config = from_mapping({"table": {"id": "07"}})
    with open_journal(path, CONTROLLER) as journal:
        controller = Controller(config.procedures, journal)
        status = ControlService(controller, list, list, config).health_status()
    assert status["controller"]["journal_chain"]["intact"] is True
    assert not [p for p in status["health"]["problems"] if "chain" in p["text"]]
    answer = {**status, "controller": {**status["controller"], "journal_chain": None}}
    assert not [p for p in assess(answer, config.health)["problems"] if "chain" in p["text"]]
    assert status["health"]["level"] == OK


# ---- pruning keeps an anchor -----------------------------------------------------------------


def test_pruning_keeps_the_chain_through_an_anchor(path: Path) -> None:
    clock = Clock()
    with open_journal(path, CONTROLLER, clock=clock) as journal:
        journal.sinks.mark_delivered(SERVER, journal.reads.last_seq())
        last_pruned = journal._conn.execute("SELECT chain FROM events WHERE seq = 8").fetchone()[0]
        clock.now += 7200
        result = journal.prune(max_age_s=3600)
        assert (result.shoes, result.inputs, result.events) == ((1,), 6, 8)
        assert result.chain is not None
        assert result.chain.intact
        assert result.chain.records == 14
        state = journal.integrity.chain_state()
        assert state["anchor"] == last_pruned
        report = journal.integrity.verify_chain()
        assert (report.intact, report.records, report.anchor) == (True, 4, last_pruned)
        journal.record({"type": "after"}, [event("x", 2, 2)], 2)
        assert journal.integrity.verify_chain().intact
    report = report_of(tampered_copy(path, "UPDATE events SET data = '{}' WHERE seq = 9"))
    assert report.first_bad == "event seq 9 (input 7)"
    assert "does not follow the chain's anchor" not in str(report.problem)
    cut = report_of(tampered_copy(path, "DELETE FROM inputs WHERE input_no = 7"))
    assert (cut.first_bad, cut.problem) == (
        "event seq 9 (input 7)",
        "input 7 missing before event seq 9 (input 7), the first record held: removed, or"
        " moved elsewhere",
    )
    anchored = report_of(
        tampered_copy(
            path, "DELETE FROM inputs WHERE input_no = 7", "DELETE FROM events WHERE input_no = 7"
        )
    )
    assert anchored.first_bad == "input 8"
    assert "does not follow the chain's anchor" in str(anchored.problem)


def test_records_that_do_not_chain_are_never_pruned(path: Path) -> None:
    copy = tampered_copy(path, 'UPDATE inputs SET body = \'{"type":"x"}\' WHERE input_no = 2')
    clock = Clock()
    with open_journal(copy, CONTROLLER, clock=clock) as journal:
        journal.sinks.mark_delivered(SERVER, journal.reads.last_seq())
        clock.now += 7200
        result = journal.prune(max_age_s=3600)
        assert (result.shoes, result.inputs, result.events) == ((), 0, 0)
        assert result.chain is not None
        assert result.chain.first_bad == "input 2"
        assert journal.integrity.chain_report is result.chain
        assert journal.reads.first_seq() == 1  # all still there
        assert journal.prune(max_age_s=3600).shoes == ()  # known broken: nothing pruned


# ---- schema 1 journals -------------------------------------------------------------------------


def test_a_schema_1_journal_is_migrated_and_chained_once(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    old.write_bytes(STORED_V1.read_bytes())
    with pytest.raises(JournalMismatch, match="has schema 1, before the hash chain"):
        open_journal(old, None, read_only=True)  # a reader never rewrites a file
    clock = Clock()
    clock.now = NOW + 99
    with open_journal(old, CONTROLLER, clock=clock) as journal:
        state = journal.integrity.chain_state()
        assert state["chained_from"] == journal.reads.last_input() + 1 == 9
        assert state["migrated_at"] == NOW + 99
        assert state["anchor"] == GENESIS
        report = journal.integrity.verify_chain()
        assert (report.intact, report.records) == (True, 8 + 8)
        journal.record({"type": "card"}, [event("card.dealt", 2, 1)], 2)
        head = journal.integrity.verify_chain().head
    conn = sqlite3.connect(old)
    assert conn.execute("SELECT schema_version FROM journal").fetchone() == (3,)
    conn.close()
    clock.now += 50
    with open_journal(old, CONTROLLER, clock=clock) as again:  # not migrated twice
        assert again.integrity.chain_state()["migrated_at"] == NOW + 99
        assert again.integrity.verify_chain().head == head
    with open_journal(old, None, read_only=True) as reader:
        assert reader.integrity.verify_chain().intact
    report = report_of(tampered_copy(old, "DELETE FROM events WHERE seq = 3"))
    assert (report.first_bad, report.problem) == (
        "input 4",
        "event seq 3 missing before input 4: removed, or moved elsewhere",
    )


# ---- the walk itself --------------------------------------------------------------------------


def records(*items: tuple[str, int, int, str | None]) -> list[ChainRecord]:
    return [ChainRecord(kind, number, owner, "x", stored) for kind, number, owner, stored in items]


def test_walk_checks_the_expected_head_only_when_given() -> None:
    first = link(GENESIS, "x")
    chain = records(("input", 1, 1, first))
    assert walk(chain, GENESIS).intact
    assert walk(chain, GENESIS, first).intact
    broken = walk(chain, GENESIS, "f" * 64)
    assert (broken.intact, broken.first_bad) == (False, "the end")
    assert broken.problem is not None
    assert broken.problem.startswith("the chain stops after input 1")
    empty = walk([], GENESIS, "f" * 64)
    assert empty.problem is not None
    assert empty.problem.startswith("the chain stops at its start")
    assert walk([], "a" * 64, "a" * 64).intact


def test_events_are_placed_by_their_seq_among_the_inputs_that_own_them() -> None:
    inputs = [ChainRecord("input", 1, 1, "", None, range(1, 3)),
              ChainRecord("input", 2, 2, "", None, range(0)),
              ChainRecord("input", 3, 3, "", None, range(4, 5))]  # fmt: skip
    events = [ChainRecord("event", seq, owner, "", None) for seq, owner in
              ((1, 1), (2, 1), (3, 9), (4, 3), (5, 7))]  # fmt: skip
    order = [(r.kind[0], r.number) for r in in_chain_order(inputs, events)]
    assert order == [("i", 1), ("e", 1), ("e", 2), ("i", 2), ("e", 3), ("i", 3), ("e", 4),
                     ("e", 5)]  # fmt: skip


def linked(*items: tuple[str, int, int, range]) -> list[ChainRecord]:
    """Records whose links are all right (each canonical text is its own name)."""
    out, previous = [], GENESIS
    for kind, number, owner, seqs in items:
        text = f"{kind} {number} {owner}"
        previous = link(previous, text)
        out.append(ChainRecord(kind, number, owner, text, previous, seqs))
    return out


def broken(record: ChainRecord) -> ChainRecord:
    return ChainRecord(
        record.kind, record.number, record.input_no, record.canonical, "0" * 64, record.seqs
    )


def test_the_story_of_a_broken_link_comes_from_the_numbering_around_it() -> None:
    start = linked(("input", 1, 1, range(1, 3)), ("event", 1, 1, range(0)),
                   ("event", 2, 1, range(0)))  # fmt: skip
    cases = {
        # an event of input 1 after its last own seq, with a gap: seqs 3-4 are missing
        ("event", 5, 1): "event seqs 3-4 missing before event seq 5 (input 1): removed, or"
        " moved elsewhere",
        # one seq missing
        ("event", 4, 1): "event seq 3 missing before event seq 4 (input 1): removed, or moved"
        " elsewhere",
        # the next seq, still numbered for input 1, not owned: changed or moved
        ("event", 3, 1): "event seq 3 (input 1) does not follow event seq 2 (input 1): it was"
        " changed, or moved",
        # inputs 2 and 3 gone
        ("input", 4, 4): "inputs 2-3 missing before input 4: removed, or moved elsewhere",
        ("event", 7, 3): "inputs 2-3 missing before event seq 7 (input 3): removed, or moved"
        " elsewhere",
    }
    for (kind, number, owner), problem in cases.items():
        [bad] = linked((kind, number, owner, range(0)))
        report = walk([*start, broken(bad)], GENESIS)
        assert report.problem == problem, (kind, number)
        assert (report.records, report.anchor, report.head) == (4, GENESIS, start[-1].stored)
    # An input that owns seqs not following the last one walked (as crafted): its own
    # events are said missing, from its first seq.
    odd = linked(*[(r.kind, r.number, r.input_no, r.seqs) for r in start],
                 ("input", 2, 2, range(5, 7)))  # fmt: skip
    [bad] = linked(("input", 3, 3, range(0)))
    report = walk([*odd, broken(bad)], GENESIS)
    assert report.problem == "event seqs 5-6 missing before input 3: removed, or moved elsewhere"
    # Before any event: an unowned event of the same input, no gap to tell
    first = linked(("input", 1, 1, range(0)))
    [bad] = linked(("event", 3, 1, range(0)))
    report = walk([*first, broken(bad)], GENESIS)
    assert (
        report.problem == "event seq 3 (input 1) does not follow input 1: it was changed, or moved"
    )


def test_every_field_of_a_report_says_where_the_walk_stopped() -> None:
    chain = linked(("input", 1, 1, range(1, 3)), ("event", 1, 1, range(0)))
    unfinished = walk(chain, GENESIS)
    assert unfinished == ChainReport(
        False, 2, GENESIS, chain[-1].stored or "", "event seq 2 (input 1)",
        "event seq 2 missing at the end of the chain: removed",
    )  # fmt: skip
    headless = walk(chain[:1] + linked(("input", 2, 2, range(0)))[:0], GENESIS, "f" * 64)
    assert headless.to_json() == {
        "intact": False,
        "records": 1,
        "first_bad": "event seq 1 (input 1)",
        "problem": "event seqs 1-2 missing at the end of the chain: removed",
        "anchor": GENESIS,
        "head": chain[0].stored,
    }
    ended = linked(("input", 1, 1, range(0)))
    cut = walk(ended, GENESIS, "f" * 64)
    assert cut == ChainReport(
        False, 1, GENESIS, ended[0].stored or "", "the end",
        "the chain stops after input 1, but its head says more records followed: the last"
        " record(s) were removed, or the head was changed",
    )  # fmt: skip
    assert walk(ended, GENESIS).intact  # an input without events ends a chain well


def test_the_merge_keeps_every_event_to_the_last() -> None:
    inputs = [ChainRecord("input", 1, 1, "", None, range(1, 3)),
              ChainRecord("input", 2, 2, "", None, range(5, 7))]  # fmt: skip
    events = [ChainRecord("event", 1, 1, "", None), ChainRecord("event", 3, 1, "", None)]
    assert [(r.kind[0], r.number) for r in in_chain_order(inputs, events)] == [
        ("i", 1), ("e", 1), ("e", 3), ("i", 2)
    ]  # fmt: skip
    trailing = [ChainRecord("event", seq, 2, "", None) for seq in (5, 6, 7, 8)]
    assert [r.number for r in in_chain_order(inputs[1:], trailing)] == [2, 5, 6, 7, 8]


def test_nothing_to_prune_is_nothing_walked_and_a_shoe_of_one_input_goes(tmp_path: Path) -> None:
    clock = Clock()
    with open_journal(tmp_path / "j.db", CONTROLLER, clock=clock) as journal:
        assert journal.prune(0) == PruneResult(shoes=(), inputs=0, events=0)
        journal.record({"type": "shuffle"}, [], 1)  # shoe 1: one input, no event
        journal.record({"type": "end"}, [], 1)
        journal.record({"type": "open"}, [event("shoe.ended", 1, None)], 1)
        journal.record({"type": "quiet"}, [], 2)  # shoe 2 holds no event yet
        journal.sinks.mark_delivered(SERVER, journal.reads.last_seq())
        clock.now += 10
        result = journal.prune(max_age_s=1)
        assert (result.shoes, result.inputs, result.events) == ((1,), 3, 1)
        assert journal.reads.first_seq() is None  # every event went with its shoe
        assert journal.integrity.verify_chain().intact


def test_the_latest_shoe_is_kept_however_old_it_is(tmp_path: Path) -> None:
    clock = Clock()
    with open_journal(tmp_path / "j.db", CONTROLLER, clock=clock) as journal:
        journal.record({"type": "card"}, [event("card.dealt", 1, 1)], 1)
        journal.record({"type": "end"}, [event("shoe.ended", 1, None)], 1)
        journal.sinks.mark_delivered(SERVER, journal.reads.last_seq())
        clock.now += 10_000
        assert journal.prune(max_age_s=1) == PruneResult(shoes=(), inputs=0, events=0)
        assert journal.reads.first_seq() == 1  # replay and `shoectl rounds` still need it


def test_a_journal_known_broken_is_not_pruned_even_where_it_chains(path: Path) -> None:
    copy = tampered_copy(path, "UPDATE events SET data = '{}' WHERE seq = 10")  # in shoe 2
    clock = Clock()
    with open_journal(copy, CONTROLLER, clock=clock) as journal:
        known = journal.integrity.verify_chain()
        assert known.first_bad == "event seq 10 (input 8)"
        journal.sinks.mark_delivered(SERVER, journal.reads.last_seq())
        clock.now += 7200
        assert journal.prune(max_age_s=3600) == PruneResult((), 0, 0, chain=known)
        assert journal.reads.first_seq() == 1  # shoe 1, which chains, is kept too: the evidence
    with open_journal(copy, CONTROLLER, clock=clock) as fresh:  # not walked: prunes shoe 1
        assert fresh.prune(max_age_s=3600).shoes == (1,)


def test_a_migration_that_fails_changes_nothing_and_names_the_file(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    old.write_bytes(STORED_V1.read_bytes())
    conn = sqlite3.connect(old)
    conn.execute("ALTER TABLE events ADD COLUMN chain TEXT")  # half a migration, by hand
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match=f"journal {re.escape(str(old))}: duplicate column"):
        open_journal(old, CONTROLLER)
    conn = sqlite3.connect(old)
    assert conn.execute("SELECT schema_version FROM journal").fetchone() == (1,)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(inputs)")]
    conn.close()
    assert "chain" not in columns  # the transaction rolled back whole
