"""Delivery under faults, with real processes: after each, the receiver holds every event once.

A receiver process (`python -m shoe_controller.kit.receiver`) and a writer process
(shoe_testkit/journal_writer.py: journal + publisher, standing in for the daemon) are killed,
slowed and starved of disk. docs/spec-push-api.md: "It never drops or reorders an event."
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from shoe_testkit.delivery import (
    CONTROLLER_ID,
    ReceiverProcess,
    assert_delivered_exactly_once,
    receiver_events,
    running,
    start_writer,
    write_key,
)
from shoe_testkit.fs import small_tmpfs
from shoe_testkit.one_server import delivered
from shoe_testkit.waiting import wait_until

from shoe_controller.store.journal import Journal

pytestmark = pytest.mark.slow


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    return write_key(tmp_path)


def test_receiver_down_for_a_while_then_back(tmp_path: Path, key_file: Path) -> None:
    db, journal = tmp_path / "receiver.db", tmp_path / "journal.db"
    receiver = ReceiverProcess(db, key_file)
    port = receiver.port
    receiver.stop()  # the table server goes down before the controller sends anything
    writer = start_writer(
        journal,
        "--inputs", "40", "--exit-when-delivered",
        receiver=receiver, key_file=key_file,
    )  # fmt: skip
    with running(writer):
        writer.wait_line(lambda line: line.startswith("recorded 40 "), "all 40 inputs recorded")
        assert not any(line.startswith("acked") for line in writer.lines)  # nobody to ack
        back = ReceiverProcess(db, key_file, port=port)
        with running(back):
            assert writer.wait() == 0
            assert writer.lines[-1] == "delivered 120"
            assert back.control("stats")["duplicates"] == 0
    assert assert_delivered_exactly_once(db, journal) == 120


@pytest.mark.parametrize(
    ("fault", "count"),
    [
        (["--fail-mode", "status", "--fail-status", "500"], 4),
        (["--fail-mode", "status", "--fail-status", "503", "--fail-target", "events"], 3),
        (["--fail-mode", "garbage", "--fail-target", "ack"], 2),  # start-up resync gets junk
        # stores, then answers non-JSON or after the client's timeout: resends are deduped
        (["--fail-mode", "garbage", "--fail-target", "events"], 3),
        (["--fail-mode", "slow", "--delay", "1.5", "--fail-target", "events"], 2),
        (["--fail-mode", "reset"], 3),  # drops the connection without an answer
    ],
    ids=["500", "503", "garbage-ack", "garbage-events", "slow", "reset"],
)
def test_receiver_misbehaving_loses_nothing(
    tmp_path: Path, key_file: Path, fault: list[str], count: int
) -> None:
    db, journal = tmp_path / "receiver.db", tmp_path / "journal.db"
    with running(ReceiverProcess(db, key_file, *fault, "--fail-count", str(count))) as receiver:
        writer = start_writer(
            journal,
            "--inputs", "30", "--exit-when-delivered", "--timeout", "0.5",
            receiver=receiver, key_file=key_file,
        )  # fmt: skip
        with running(writer):
            assert writer.wait() == 0
        stats = receiver.control("stats")
    assert stats["faults_injected"] == count  # the faults really happened
    assert stats["conflicts"] == 0
    if fault[1] in ("garbage", "slow") and fault[-1] == "events":
        assert stats["duplicates"] > 0  # stored-but-unanswered batches were resent ...
    assert assert_delivered_exactly_once(db, journal) == 90  # ... and stored once


def test_client_error_raises_a_fault_then_clears(tmp_path: Path, key_file: Path) -> None:
    db, journal = tmp_path / "receiver.db", tmp_path / "journal.db"
    options = ("--fail-mode", "status", "--fail-status", "403", "--fail-count", "3")
    with running(ReceiverProcess(db, key_file, *options)) as receiver:
        writer = start_writer(
            journal, "--inputs", "5", "--exit-when-delivered", receiver=receiver, key_file=key_file
        )
        with running(writer):
            assert writer.wait() == 0
    faults = [line for line in writer.lines if line.startswith("fault")]
    assert faults == ["fault http_403", "fault cleared"]  # raised once, cleared on success
    assert assert_delivered_exactly_once(db, journal) == 15


def test_server_gap_409_resends_from_its_acked_through(tmp_path: Path, key_file: Path) -> None:
    db, journal = tmp_path / "receiver.db", tmp_path / "journal.db"
    with running(ReceiverProcess(db, key_file)) as receiver:
        writer = start_writer(
            journal, "--inputs", "10", "--commands", receiver=receiver, key_file=key_file
        )
        with running(writer):
            writer.wait_line(lambda line: line == "acked 30", "the first 30 events acked")
            # the server is restored from an old backup: it forgot seq 13..30
            assert receiver.control("rewind", {"acked_through": 12}) == {"acked_through": 12}
            writer.send("record 2")  # the next batch starts at 31: a gap for the server
            writer.send("finish")
            assert writer.wait() == 0
        stats = receiver.control("stats")
    assert stats["gaps"] >= 1
    assert stats["duplicates"] == 0
    assert assert_delivered_exactly_once(db, journal) == 36


def test_publisher_killed_mid_delivery_and_restarted(tmp_path: Path, key_file: Path) -> None:
    db, journal = tmp_path / "receiver.db", tmp_path / "journal.db"
    with running(ReceiverProcess(db, key_file)) as receiver:
        first = start_writer(
            journal, "--inputs", "10", "--commands", receiver=receiver, key_file=key_file
        )
        with running(first):
            first.wait_line(lambda line: line == "acked 30", "the first 30 events acked")
            # the next batch is stored, but its answer is held back ...
            receiver.control("faults", {"mode": "slow", "delay_s": 60, "count": 1})
            first.send("record 4")
            first.wait_line(lambda line: line == "recorded 14 42", "four more inputs")
            wait_until(lambda: receiver.control("stats")["in_flight"] == 1, "a held answer")
            first.kill()  # ... and the controller dies waiting for it
        held = len(receiver_events(db))
        with Journal.open(journal, CONTROLLER_ID, read_only=True) as before:
            assert delivered(before) == 30 < held  # the server has more than we know
        second = start_writer(
            journal, "--inputs", "2", "--exit-when-delivered", receiver=receiver, key_file=key_file
        )
        with running(second):
            assert second.wait() == 0
        assert second.lines[0] == "started 14 42 30"  # resumes the same journal
        # start-up resync (GET .../ack) learned `held` instead of resending 31..held
        acks = [line for line in second.lines if line.startswith("acked")]
        assert acks[0] == f"acked {held}"
        assert receiver.control("stats")["duplicates"] == 0
    assert assert_delivered_exactly_once(db, journal) == 48


def test_writer_killed_mid_transaction_leaves_whole_transactions(
    tmp_path: Path, key_file: Path
) -> None:
    """SIGKILL at random moments of a write-heavy loop: no half transaction, no seq gap."""
    journal = tmp_path / "journal.db"
    rng = random.Random(5)
    last_seq = last_input = 0
    for _ in range(6):
        writer = start_writer(
            journal, "--inputs", "1000000", "--events-per-input", "40", "--payload", "400",
            key_file=None,
        )  # fmt: skip
        with running(writer):
            started = writer.wait_line(lambda line: line.startswith("started"), "start")
            assert started == f"started {last_input} {last_seq} 0"  # resumes where it died
            writer.wait_line(lambda line: line.startswith("recorded"), "a first commit")
            time.sleep(rng.uniform(0.0, 0.05))  # somewhere inside a later transaction
            writer.kill()
        with Journal.open(journal, CONTROLLER_ID) as opened:
            assert opened.integrity.check() == []
            last_seq, last_input = opened.reads.last_seq(), opened.reads.last_input()
            assert last_seq == 40 * last_input  # every input has all of its 40 events
            steps = opened.reads.replay_steps(from_input=1)
            assert [step.input_no for step in steps] == list(range(1, last_input + 1))
            assert all([e.data["index"] for e in step.events] == list(range(40)) for step in steps)
    # what the killed writers left is delivered whole, and numbering carries on without a gap
    with running(ReceiverProcess(tmp_path / "receiver.db", key_file)) as receiver:
        final = start_writer(
            journal, "--inputs", "1", "--events-per-input", "40", "--exit-when-delivered",
            receiver=receiver, key_file=key_file,
        )  # fmt: skip
        with running(final):
            assert final.wait() == 0
    assert assert_delivered_exactly_once(tmp_path / "receiver.db", journal) == 40 * (last_input + 1)


@pytest.fixture
def small_filesystem(tmp_path: Path):
    """A 3 MiB tmpfs: the journal runs out of space quickly and safely."""
    with small_tmpfs(tmp_path / "small", "3m") as mount_point:
        yield mount_point


def test_journal_on_a_nearly_full_file_system(
    tmp_path: Path, key_file: Path, small_filesystem: Path
) -> None:
    journal = small_filesystem / "journal.db"
    ballast = small_filesystem / "ballast"
    ballast.write_bytes(b"\0" * (2 * 1024 * 1024))  # leave about 1 MiB for the journal
    db = tmp_path / "receiver.db"
    with running(ReceiverProcess(db, key_file)) as receiver:
        writer = start_writer(
            journal, "--inputs", "1000000", "--events-per-input", "10", "--payload", "1000",
            receiver=receiver, key_file=key_file,
        )  # fmt: skip
        with running(writer):
            writer.wait_line(lambda line: line == "journal-full", "the journal to fill up")
            recorded = [line for line in writer.lines if line.startswith("recorded")]
            stalled_at = len(recorded)
            with Journal.open(journal, CONTROLLER_ID, read_only=True) as full:
                assert full.integrity.check() == []  # nothing half-written
                assert full.reads.last_seq() == 10 * full.reads.last_input() == 10 * stalled_at
            ballast.unlink()  # the operator frees space: the same record is retried and lands
            writer.wait_line(
                lambda line: line.startswith(f"recorded {stalled_at + 1} "), "recording again"
            )
            writer.kill()
        with Journal.open(journal, CONTROLLER_ID) as after:
            assert after.integrity.check() == []
            last_input = after.reads.last_input()
        assert last_input > stalled_at
        final = start_writer(
            journal, "--inputs", "1", "--events-per-input", "10", "--exit-when-delivered",
            receiver=receiver, key_file=key_file,
        )  # fmt: skip
        with running(final):
            assert final.wait() == 0
    assert assert_delivered_exactly_once(db, journal) == 10 * (last_input + 1)
