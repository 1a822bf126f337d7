"""The rig's child processes: spawned with a log each in one directory, watched, killed, waited on.

A process the rig `watch`es must not die: every wait checks them and raises RigError, naming
the log to read, as soon as one has exited.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

START_TIMEOUT_S = 30.0  # a process that has not started by then is not going to
POLL_S = 0.002  # how often a wait looks again (the demo's --fast pace)
_REPO_ROOT = Path(__file__).resolve().parents[3]


class RigError(RuntimeError):
    """A rig process died or the table stopped answering; the message says where the logs are."""


class RigProcesses:
    """`python` children with their stderr in `<directory>/<name>.log`: watched, stopped."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._alive: dict[str, subprocess.Popen[str]] = {}  # processes that must not die

    def watch(self, name: str, process: subprocess.Popen[str]) -> None:
        """From now on `process` must not die (until killed, stopped or forgotten)."""
        self._alive[name] = process

    def forget(self, name: str) -> None:
        """`name` may exit from now on (it is being stopped on purpose)."""
        self._alive.pop(name, None)

    def wait_until(
        self, condition: Callable[[], bool], what: str, timeout: float = START_TIMEOUT_S
    ) -> None:
        """Poll `condition`; RigError if a process dies or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while not condition():
            self.check_alive()
            if time.monotonic() > deadline:
                raise RigError(f"waited {timeout} s for {what}; see the logs in {self.directory}")
            time.sleep(POLL_S)

    def check_alive(self) -> None:
        for name, process in self._alive.items():
            if process.poll() is not None:
                raise RigError(
                    f"the {name} stopped (exit code {process.returncode}); see "
                    f"{self.directory / (name + '.log')}"
                )

    def kill(self, name: str, process: subprocess.Popen[str] | None) -> None:
        self._alive.pop(name, None)
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def stop(self, processes: Iterable[subprocess.Popen[str]]) -> None:
        """SIGTERM every process still running (SIGKILL if it hangs), in the order given."""
        processes = list(processes)
        self._alive.clear()
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()

    def spawn(
        self,
        name: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdout: int = subprocess.PIPE,
        prefix: Sequence[str] = (),
        python: str = sys.executable,
    ) -> subprocess.Popen[str]:
        """`python args`, after `prefix` when given: a command it runs under (`strace -f`)."""
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(_REPO_ROOT), environment.get("PYTHONPATH")])
        )
        environment.update(env or {})
        with (self.directory / f"{name}.log").open("a") as log:
            return subprocess.Popen(
                [*prefix, python, *args],
                stdout=stdout,
                stderr=log,
                stdin=subprocess.DEVNULL,
                text=True,
                env=environment,
            )

    def first_line(self, process: subprocess.Popen[str], what: str) -> str:
        """The first line a child prints (its port, or `ready <path>`)."""
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(START_TIMEOUT_S)
        line = process.stdout.readline().strip() if ready else ""
        if not line:
            process.kill()
            process.wait()
            raise RigError(
                f"{what} did not start (exit code {process.returncode}); see the logs in "
                f"{self.directory}"
            )
        return line
