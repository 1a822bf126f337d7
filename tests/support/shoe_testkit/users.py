"""Running a command as another user (nobody, with groups of the test's: groups.py) and shoectl
as a process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from shoe_testkit.control import GUARD_S, REPO, cli_env

NOBODY = 65534


def can_switch_user() -> bool:
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def as_nobody(*groups: int) -> list[str]:
    """A setpriv prefix running the client as nobody with exactly these extra groups."""
    group_option = f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups"
    return ["setpriv", f"--reuid={NOBODY}", "--regid=nogroup", group_option]


def run_cli(socket_path: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", *args],
        cwd=REPO,
        env=cli_env(socket_path),
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
