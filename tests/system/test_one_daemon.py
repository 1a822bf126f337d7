"""One daemon a journal, with real processes: the table's daemon (the rig's), and a
second `shoe-controller run` or `demo --dir` on its journal.

Before, the second ran: it took over nothing, yet its start wrote the journal, so the first
one's next input number was taken and it ACKed no card and refused every action from then on
("UNIQUE constraint failed: inputs.input_no"). Now the second is refused before it opens a
device, the control socket or the journal: one line naming the journal and the PID holding
it, exit 75, the journal's rows as they were, and the first deals on and takes a supervisor's
action. A SIGKILLed holder's lock is free at once; readers and `check` work beside a running
daemon; and a daemon whose journal another process wrote behind its back (no lock kept that
one out) says so and exits for systemd to restart it, and the restart deals on.
docs/journal.md "One daemon a journal".
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.config import run_daemon, toml_text
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import check_card_inputs

from shoe_controller.service.config import load
from shoe_controller.service.journal_lock import EXIT_IN_USE, lock_path
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.vocab.events import EventType

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 60.0
TABLES = ("inputs", "events", "shoes", "links", "sinks", "sink_events")


@pytest.fixture
def directory() -> Iterator[Path]:
    # Not tmp_path: the simulators' control sockets need a path under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="one-") as name:
        yield Path(name)


@pytest.fixture
def rig(directory: Path) -> Iterator[TableRig]:
    """The table's daemon, whose supervisors are this user's group (the demo's way)."""
    control = {}
    with contextlib.suppress(KeyError):
        control = {"supervisor_group": grp.getgrgid(os.getgid()).gr_name}
    table = TableRig(directory, RigOptions(control=control)).start()
    try:
        yield table
    finally:
        table.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`shoe-controller ARGS` as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.main", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )


def shoectl(rig: TableRig, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", "--socket",
         str(rig.directory / "control.sock"), *args],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=GUARD_S, check=False,
    )  # fmt: skip


def journal_rows(path: Path) -> dict[str, Any]:
    """Every table's row count and the counters' row, read-only."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        rows: dict[str, Any] = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES
        }
        rows["journal"] = conn.execute("SELECT last_seq, last_input, boot FROM journal").fetchone()
    return rows


def refusal_line(
    journal: Path, pid: int, holder: str = "the daemon", lock: Path | None = None
) -> str:
    """The one line of a refused `run` or `demo` (the lock: the journal's, else `lock`)."""
    return (
        f"Error: journal {journal} is in use by {holder} of PID {pid}, which holds"
        f" {lock or lock_path(journal)}: one daemon a journal; stop that one first"
    )


def stored_types(rig: TableRig, after: int) -> list[str]:
    return [event.type for event in rig.records.journal_events(after)]


def test_a_second_daemon_is_refused_before_it_opens_anything_and_the_first_deals_on(
    rig: TableRig, directory: Path
) -> None:
    rig.dealer.deal(5)
    journal = rig.records.journal_path
    before = journal_rows(journal)
    control = (directory / "control.sock").stat()
    # The same configuration, and one whose scanner is a port this
    # test listens on: a second daemon that opened its device would connect to it.
    raw = tomllib.loads(rig.config_path.read_text())
    with socket.create_server(("127.0.0.1", 0)) as device:
        raw["scanner"]["port"] = f"socket://127.0.0.1:{device.getsockname()[1]}"
        on_a_port = directory / "second.toml"
        on_a_port.write_text(toml_text(raw))
        for config in (rig.config_path, on_a_port):
            refused = run_daemon(config, directory / "notify")
            (directory / "notify").unlink()
            assert refused.returncode == EXIT_IN_USE, refused.stderr
            assert refused.lines == [refusal_line(journal, rig.daemon.pid)]  # type: ignore[union-attr]
            assert not refused.told_ready
        assert select.select([device], [], [], 0)[0] == []  # the device port was never opened
    assert journal_rows(journal) == before  # the refused ones wrote nothing
    after = (directory / "control.sock").stat()
    assert (after.st_ino, after.st_mtime_ns) == (control.st_ino, control.st_mtime_ns)
    assert rig.daemon is not None
    assert rig.daemon.poll() is None

    last = rig.records.last_seq()
    rig.dealer.deal(5)  # the first deals on: every card ACKed once stored
    check_card_inputs(rig, [rig.dealer.dealt_cards()])  # all ten, each once
    held = shoectl(rig, "hold", "--by", "sup7", "--reason", "a second daemon was tried")
    assert held.returncode == 0, held.stderr
    resumed = shoectl(rig, "resume", "--by", "sup7", "--reason", "the table is fine")
    assert resumed.returncode == 0, resumed.stderr
    assert stored_types(rig, last).count(EventType.SUPERVISOR_ACTION) == 2
    rig.dealer.deal(1)


def test_a_sigkilled_daemons_lock_is_free_at_once(rig: TableRig) -> None:
    rig.dealer.deal(2)
    lock_file = lock_path(rig.records.journal_path)
    assert rig.daemon is not None
    assert lock_file.read_text() == f"{rig.daemon.pid}\n"
    killed = rig.daemon.pid
    rig.kill_daemon()  # nothing cleaned up: the kernel lets go of the flock
    rig.start_daemon()  # at once: no stale lock, no waiting
    assert rig.daemon.pid != killed
    assert lock_file.read_text() == f"{rig.daemon.pid}\n"
    rig.dealer.deal(2)
    check_card_inputs(rig, [rig.dealer.dealt_cards()])


def test_readers_and_check_work_beside_a_running_daemon(rig: TableRig, directory: Path) -> None:
    rig.dealer.deal(12)
    config = str(rig.config_path)
    exported = directory / "shoe-1.jsonl"
    assert cli("export", "--config", config, "--shoe", "1", "-o", str(exported)).returncode == 0
    verified = cli("verify", str(exported))
    assert verified.returncode == 0, verified.stdout
    journal = cli("verify", "--journal", str(rig.records.journal_path))
    assert journal.returncode == 0, journal.stdout
    report = cli("report", "--config", config, "--since", "-1h", "--format", "json")
    assert report.returncode == 0, report.stderr
    assert cli("replay", str(exported)).returncode == 0

    checked = cli("check", "--config", config)
    assert checked.returncode == 0, checked.stderr  # the configuration is not at fault
    assert rig.daemon is not None
    note = (
        f"shoe-controller: note: a daemon runs on journal {rig.records.journal_path} now (PID"
        f" {rig.daemon.pid} holds {lock_path(rig.records.journal_path)}); the configuration is"
        f" not at fault, but a second `shoe-controller run` is refused (exit {EXIT_IN_USE})"
        " until that one stops"
    )
    assert note in checked.stdout.splitlines()
    assert checked.stdout.splitlines()[-1].endswith("starts with it once that daemon has stopped")
    assert rig.stop_daemon() == 0
    alone = cli("check", "--config", config)
    assert alone.returncode == 0
    assert "note: a daemon runs" not in alone.stdout
    assert alone.stdout.splitlines()[-1].endswith("`shoe-controller run` starts with it")


def test_a_demo_beside_a_daemon_or_a_demo_is_refused_and_changes_nothing(
    rig: TableRig, directory: Path
) -> None:
    """`demo --dir D --fresh` on the folder a daemon runs in would have deleted its journal."""
    rig.dealer.deal(1)  # the shoe connected and loaded: the daemon stores nothing meanwhile
    files = {path.name: path.stat().st_mtime_ns for path in directory.iterdir()}
    config = rig.config_path.read_text()
    rows = journal_rows(rig.records.journal_path)
    refused = cli("demo", "--dir", str(directory), "--fresh", "--fast")
    assert refused.returncode == EXIT_IN_USE
    assert rig.daemon is not None
    assert refused.stderr.splitlines() == [refusal_line(rig.records.journal_path, rig.daemon.pid)]
    assert refused.stdout == ""
    assert set(files) <= {path.name for path in directory.iterdir()}  # nothing deleted
    assert rig.config_path.read_text() == config
    assert journal_rows(rig.records.journal_path) == rows
    rig.dealer.deal(1)

    # A demo in a folder of its own, and a second one there while the first starts.
    other = directory / "demo"
    first = subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.main", "demo", "--dir", str(other)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        held = other / "demo.lock"
        deadline = time.monotonic() + GUARD_S
        while not (held.exists() and held.read_text() == f"{first.pid}\n"):
            assert first.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.01)
        second = cli("demo", "--dir", str(other), "--fresh")
        assert second.returncode == EXIT_IN_USE
        assert second.stderr.splitlines() == [
            refusal_line(other / "journal.db", first.pid, "the demo", held)
        ]
    finally:
        first.send_signal(signal.SIGTERM)
        _, stderr = first.communicate(timeout=GUARD_S)
    assert "Traceback" not in stderr


def test_a_journal_written_behind_the_daemons_back_makes_it_restart_and_deal_on(
    rig: TableRig, directory: Path
) -> None:
    """No lock keeps out a writer that takes none: what a second daemon's start stored before
    the report (the table settings and controller.started), written by this test's process."""
    rig.dealer.deal(6)
    config = load(rig.config_path)
    with Journal.open(rig.records.journal_path, config.controller_id) as behind:
        Controller(config.procedures, behind).start("another", time.time())
    assert rig.daemon is not None
    daemon = rig.daemon
    rig.dealer.deal(1, wait=False)  # a card: its input number is the other's
    assert daemon.wait(GUARD_S) != 0  # exits for systemd to restart it, not refusing forever
    said = [json.loads(line) for line in (directory / "daemon.log").read_text().splitlines()
            if line.startswith("{")]  # fmt: skip
    critical = [line for line in said if line.get("level") == "critical"]
    assert [line["event"] for line in critical] == [
        "the journal was written by another process: restarting to rebuild the table from it"
    ]
    assert "was written by another process: it holds input" in critical[0]["error"]

    rig.start_daemon()  # what systemd's Restart=always does
    rig.dealer.settle()  # the card the shoe kept (never ACKed) is stored now
    rig.dealer.deal(2)
    check_card_inputs(rig, [rig.dealer.dealt_cards()])  # the 9 cards, each once
