"""The test broker's watchdog: whatever happens to its owner, no node outlives it.

Runs as its own process for the Broker's lifetime (`python -m
shoe_testkit.broker.watchdog DIRECTORY`). Lines on stdin: "+ PID STARTTIME" to
guard a process, "- PID" to let go of it. At EOF (the owner's `stop()` closed the pipe, or
the owner died) it SIGKILLs what it still guards, with their descendants, and removes the
directory. `Watchdog` is the owner's side.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from shoe_testkit.broker.procs import descendants, kill_all, start_time


class Watchdog:
    """The owner's handle on its watchdog process."""

    def __init__(self, directory: Path, timeout_s: float) -> None:
        self._directory = directory
        self._timeout_s = timeout_s
        self._process: subprocess.Popen[bytes] | None = None

    def ensure(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(self._directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C aimed at the tests must not reach it first
        )

    def watch(self, pid: int) -> None:
        self._tell(f"+ {pid} {start_time(pid)}")

    def unwatch(self, pid: int) -> None:
        self._tell(f"- {pid}")

    def release(self) -> None:
        """All is well: it has nothing left to kill and only removes the directory."""
        if self._process is None:
            return
        with contextlib.suppress(OSError):
            assert self._process.stdin is not None
            self._process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(self._timeout_s)
        self._process = None

    def _tell(self, line: str) -> None:
        if self._process is None or self._process.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._process.stdin.write(line.encode("ascii") + b"\n")
            self._process.stdin.flush()


def guard(lines: TextIO, directory: str) -> None:
    """Read the owner's lines until EOF, then kill what is still guarded and clean up."""
    guarded: dict[int, str] = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "+":
            guarded[int(parts[1])] = parts[2]
        elif len(parts) == 2 and parts[0] == "-":
            guarded.pop(int(parts[1]), None)
    victims: list[int] = []
    for pid, started in guarded.items():
        if start_time(pid) == started:  # the same process, not a reused pid
            victims += [pid, *descendants(pid)]
    kill_all(victims)
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    guard(sys.stdin, sys.argv[1])
