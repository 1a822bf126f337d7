"""A commit whose outcome is unknown is not reported as failed (docs/control.md "The same
command twice"): the disk fails the supervisor's commit (strace injects EIO into fdatasync
of the real daemon), the daemon stops to check its journal, shoectl sends the command again
with its key, and it is carried out exactly once. Started while the disk fails, the daemon
stops the same way, at a bounded pace, and the next start after the disk heals deals on
(docs/journal.md "A commit of unknown outcome")."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.control import cli_env
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import deal_into_round

from shoe_controller.service.outcome import EXIT_OUTCOME_UNKNOWN, MIN_UPTIME_S

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def rig() -> Iterator[TableRig]:
    if shutil.which("strace") is None:
        pytest.skip("needs strace to make the disk fail a commit (.ci/run installs it)")
    with tempfile.TemporaryDirectory(prefix="eio-") as name:
        table = TableRig(Path(name), RigOptions()).start()
        try:
            yield table
        finally:
            table.close()


def test_a_void_whose_commit_the_disk_failed_is_done_once(rig: TableRig) -> None:
    assert rig.shoe is not None
    assert rig.daemon is not None
    deal_into_round(rig, 2)
    rig.shoe.request("silence", seconds=2.0)  # no heartbeat commits while the void goes in
    time.sleep(0.3)
    log = rig.directory / "strace.log"
    tracer = subprocess.Popen(
        ["strace", "-f", "-p", str(rig.daemon.pid), "-o", str(log),
         "-e", "trace=fsync,fdatasync", "-e", "inject=fsync,fdatasync:error=EIO"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert tracer.stderr is not None
    assert "attached" in tracer.stderr.readline()
    shoectl = subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", "void", "--by", "sup7",
         "--reason", "misdeal"],
        env=cli_env(str(rig.directory / "control.sock")),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert rig.daemon.wait(timeout=30) == 1  # it stopped to have its journal checked
    tracer.wait(timeout=30)
    assert "EIO (Input/output error) (INJECTED)" in log.read_text()
    rig.start_daemon()  # as systemd does (Restart=always)
    out, err = shoectl.communicate(timeout=90)
    assert shoectl.returncode == 0, err
    assert "outcome unknown" in err
    assert out.startswith("accepted: void by sup7"), out
    events = rig.records.journal_events()
    voids = [e for e in events if e.type == "supervisor.action" and e.data["action"] == "void"]
    assert len(voids) == 1
    assert len([e for e in events if e.type == "round.voided"]) == 1
    rig.dealer.settle()
    rig.dealer.deal(4)  # the table goes on: a new round
    assert [e for e in rig.records.journal_events() if e.type == "round.started"][-1].round == 2


# ------------------------------------------------------------------ started while the disk fails
# The test's restart loop stands in for systemd's Restart=always: each start
# is a process of its own, under strace (fsync and fdatasync fail with EIO from exec on) while
# the disk fails, plain once it has healed.

FAILING_DISK = ["strace", "-f", "--seccomp-bpf", "-e", "trace=fsync,fdatasync",
                "-e", "inject=fsync,fdatasync:error=EIO"]  # fmt: skip
RESTARTING = "journal commit failed on the disk: restarting to check the journal"
GUARD_S = 60.0  # a daemon that has not exited by then never will


class Starts:
    """The restart loop's starts of the rig's daemon, each with a log and a trace of its own."""

    def __init__(self, rig: TableRig) -> None:
        self.rig = rig
        self.logs: list[Path] = []
        self.traces: list[Path] = []
        self._running: list[subprocess.Popen[str]] = []

    def start(self, *, disk_fails: bool) -> subprocess.Popen[str]:
        number = len(self.logs) + 1
        log, trace = (self.rig.directory / f"start-{number}.{kind}" for kind in ("log", "trace"))
        self.logs.append(log)
        command = [sys.executable, "-m", "shoe_controller.cli.main", "run",
                   "--config", str(self.rig.config_path)]  # fmt: skip
        if disk_fails:
            self.traces.append(trace)
            command = [*FAILING_DISK, "-o", str(trace), *command]
        env = dict(os.environ, PYTHONPATH=str(REPO))
        with log.open("w") as stderr:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                env=env, text=True, start_new_session=True,
            )  # fmt: skip
        self._running.append(process)
        return process

    def lines(self, log: Path, message: str) -> int:
        """How many of the log's JSON lines say `message`."""
        count = 0
        for line in log.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                count += json.loads(line).get("event") == message
        return count

    def close(self) -> None:
        for process in self._running:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)  # strace and the daemon it started
                process.wait()


@pytest.fixture
def starts(rig: TableRig) -> Iterator[Starts]:
    made = Starts(rig)
    try:
        yield made
    finally:
        made.close()


def check(rig: TableRig) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", "check"],
        env=cli_env(str(rig.directory / "control.sock")),
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_a_daemon_started_while_the_disk_fails_recovers_by_itself_once_it_heals(
    rig: TableRig, starts: Starts
) -> None:
    assert rig.shoe is not None
    deal_into_round(rig, 2)
    before = [event.to_wire() for event in rig.records.journal_events()]
    dealt = rig.shoe.request("status")["dealt"]
    assert rig.stop_daemon() == 0  # the restart loop starts the daemon from now on
    failing = starts.start(disk_fails=True)
    rig.dealer.deal(1, wait=False)  # the dealer goes on while the disk fails
    seen = check(rig)
    while seen.returncode != 2 and failing.poll() is None:
        seen = check(rig)  # 3 (UNKNOWN) until the control socket answers
    assert seen.returncode == 2, seen.stdout  # CRITICAL while the disk fails
    assert "journal" in seen.stdout
    # It stops by itself for the restart loop (systemd) to start it again: before 2026-12-02
    # it stayed up refusing every commit, for good.
    assert failing.wait(timeout=GUARD_S) == EXIT_OUTCOME_UNKNOWN
    assert "EIO (Input/output error) (INJECTED)" in starts.traces[0].read_text()
    status = rig.shoe.request("status")
    assert (status["dealt"], status["pending"] > 0) == (dealt + 1, True)  # not ACKed
    assert starts.lines(starts.logs[0], RESTARTING) == 1
    rig.start_daemon()  # the loop's next start: the disk has healed; nobody acts
    rig.dealer.settle()  # the card the shoe kept resending is ACKed
    after = [event.to_wire() for event in rig.records.journal_events()]
    assert after[: len(before)] == before  # nothing stored before is lost or changed
    cards = [event for event in after if event["type"] == "card.dealt"]
    assert len(cards) == len([e for e in before if e["type"] == "card.dealt"]) + 1


def test_a_disk_that_keeps_failing_restarts_the_daemon_at_a_bounded_pace(
    rig: TableRig, starts: Starts
) -> None:
    assert rig.stop_daemon() == 0  # the restart loop starts the daemon from now on
    # No pause between starts (systemd's RestartSec=2 would only slow it further): each start
    # waits out MIN_UPTIME_S since its own start before it exits, so at most
    # ceil(window / MIN_UPTIME_S) starts fit in the window, however fast the machine.
    window = 2 * MIN_UPTIME_S + 2.0
    codes = []
    began = time.monotonic()
    while time.monotonic() - began < window:
        codes.append(starts.start(disk_fails=True).wait(timeout=GUARD_S))
    assert codes == [EXIT_OUTCOME_UNKNOWN] * len(codes)
    assert 2 <= len(codes) <= math.ceil(window / MIN_UPTIME_S)
    for log in starts.logs:  # one line each, no line every few seconds
        assert starts.lines(log, RESTARTING) == 1, log.read_text()
        assert starts.lines(log, "controller.started not stored") == 0
    assert rig.records.journal() is not None
