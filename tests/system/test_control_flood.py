"""The control socket is not a way to stop the table: one local user flooding it with idle
connections, with a real daemon process (docs/control.md "Limits")."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.control import cli_env
from shoe_testkit.groups import can_make_groups, temporary_group
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.users import as_nobody, can_switch_user

pytestmark = pytest.mark.slow

# Opens COUNT connections and holds them: prints how many got which first answer (or none
# until two seconds pass without one), then waits for stdin to close.
FLOOD = textwrap.dedent(
    """
    import json, select, socket, sys
    path, count = sys.argv[1], int(sys.argv[2])
    held, opened = [], 0
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.connect(path)
        except OSError as error:
            print(json.dumps({"connect_error": str(error)}), flush=True)
            break
        held.append(sock)
    answers = {}
    poller = select.poll()
    by_fd = {sock.fileno(): sock for sock in held}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    ready = set()
    quiet = 0
    while quiet < 20:  # until two seconds pass with no answer (accepts come as they can)
        events = poller.poll(100)
        quiet = 0 if events else quiet + 1
        for fd, _ in events:
            poller.unregister(fd)
            ready.add(fd)
            line = by_fd[fd].makefile("rb").readline()
            code = json.loads(line)["error"]["code"] if line else "closed"
            answers[code] = answers.get(code, 0) + 1
    answers["silent"] = len(held) - len(ready)
    print(json.dumps(answers), flush=True)
    sys.stdin.read()
    """
)


def _enough_files() -> None:
    """The attacker raised his own limit (the child runs no thread: safe before exec)."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))


@pytest.fixture
def directory() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="flood-") as name:
        os.chmod(name, 0o755)  # nobody reaches the socket inside it
        yield Path(name)


def test_a_flood_of_idle_connections_leaves_the_table_and_root_served(directory: Path) -> None:
    if not can_switch_user() or not can_make_groups():
        pytest.skip("needs root, setpriv and groupadd to flood as an unprivileged viewer")
    with temporary_group() as (viewers, gid):
        options = RigOptions(control={"viewer_group": viewers, "max_connections_per_user": 8})
        rig = TableRig(directory, options).start()
        flood = None
        try:
            rig.dealer.deal(4)
            assert rig.daemon is not None
            fds = lambda: len(os.listdir(f"/proc/{rig.daemon.pid}/fd"))  # noqa: E731
            before = fds()
            flood = subprocess.Popen(
                [*as_nobody(gid), sys.executable, "-c", FLOOD, str(directory / "control.sock"),
                 "1100"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                preexec_fn=_enough_files,  # noqa: PLW1509
            )  # fmt: skip
            assert flood.stdout is not None
            answers = json.loads(flood.stdout.readline())
            assert answers == {"busy": 1100 - 8, "silent": 8}  # 8 held; the rest told, closed
            assert fds() <= before + 8 + 4  # the flood holds no more of the daemon's files
            status = subprocess.run(
                [sys.executable, "-m", "shoe_controller.cli.shoectl", "status", "--json"],
                env=cli_env(str(directory / "control.sock")),
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
            assert status.returncode == 0, status.stderr  # root is served
            seq = rig.records.last_seq()
            rig.dealer.deal(4)  # the table deals and the table server gets it all
            assert rig.wait_delivered() > seq
            log = (directory / "daemon.log").read_text()
            assert log.count("control connections refused") == 1  # once a minute, not 1092
        finally:
            if flood is not None:
                flood.communicate(timeout=30)
            rig.close()
