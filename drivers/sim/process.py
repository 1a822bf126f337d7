"""Starts a simulator in its own process (``python -m drivers.sim``) and talks to it.

For integration tests and the daemon's demo: the device lives in another process behind a
real pty, exactly as hardware would, and can be killed. ``SimProcess`` waits for the
``ready <path>`` line, then offers ``request(cmd, **fields)`` over the control socket.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from drivers.sim.control import SimControlClient


class SimProcess:
    """A simulator subprocess with a pty symlink and a control socket in ``directory``."""

    def __init__(
        self,
        *args: str,
        directory: str | os.PathLike[str] | None = None,
        name: str = "sim",
        python: str = sys.executable,
        ready_timeout: float = 15.0,
    ) -> None:
        self._own_directory = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="shoe-sim-"))
        self.pty_link = self.directory / f"{name}.tty"
        self.control_path = self.directory / f"{name}.ctl"
        self.args = list(args)
        self.python = python
        self.ready_timeout = ready_timeout
        self.process: subprocess.Popen[str] | None = None
        self._client: SimControlClient | None = None

    @property
    def path(self) -> str:
        """The serial port path the host opens (a symlink that survives unplug/replug)."""
        return str(self.pty_link)

    def start(self) -> SimProcess:
        command = [
            self.python,
            "-m",
            "drivers.sim",
            "--pty-link",
            str(self.pty_link),
            "--control",
            str(self.control_path),
            *self.args,
        ]
        repo_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [repo_root, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        assert self.process.stdout is not None
        line = _readline(self.process, self.ready_timeout)
        if not line.startswith("ready "):
            self.stop()
            raise RuntimeError(f"simulator did not start: {line!r}")
        self._client = SimControlClient(self.control_path)
        return self

    def request(self, cmd: str, **fields: Any) -> dict[str, Any]:
        if self._client is None:
            raise RuntimeError("simulator not started")
        return self._client.request(cmd, **fields)

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM, then SIGKILL if it does not end; returns the exit code."""
        if self._client is not None:
            self._client.close()
            self._client = None
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)
        return process.returncode

    def kill(self) -> None:
        """SIGKILL, as a power cut would (the pty vanishes with the process)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> SimProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _readline(process: subprocess.Popen[str], timeout: float) -> str:
    """First stdout line of the process, or what it said on stderr if it died or hung."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            _, err = process.communicate()
            return f"no ready line within {timeout} s; stderr: {err.strip()}"
    line = process.stdout.readline()
    if not line:
        process.wait()
        err = process.stderr.read() if process.stderr is not None else ""
        return f"exited {process.returncode}; stderr: {err.strip()}"
    return line.strip()
