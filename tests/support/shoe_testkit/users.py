"""Running a command as another user (nobody, a temporary group) and shoectl as a process."""

from __future__ import annotations

import contextlib
import grp
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

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


@contextlib.contextmanager
def temporary_group() -> Iterator[tuple[str, int]]:
    name = f"shoectl-t{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["groupadd", name], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot create a group for the test: {made.stderr.strip()}")
    try:
        yield name, grp.getgrnam(name).gr_gid
    finally:
        subprocess.run(["groupdel", name], capture_output=True, check=False)
