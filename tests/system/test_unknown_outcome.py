"""A commit whose outcome is unknown is not reported as failed (docs/control.md "The same
command twice"): the disk fails the supervisor's commit (strace injects EIO into fdatasync
of the real daemon), the daemon stops to check its journal, shoectl sends the command again
with its key, and it is carried out exactly once."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.control import cli_env
from shoe_testkit.rig_checks import deal_into_round

from shoe_controller.kit.rig import RigOptions, TableRig

pytestmark = pytest.mark.slow


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
