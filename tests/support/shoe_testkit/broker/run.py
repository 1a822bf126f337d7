"""The node's processes: its private epmd and the Erlang VM, started, stopped and killed
whole, each one under the watchdog while it lives.

The VM's helpers (erl_child_setup, inet_gethost) call setsid, so a process-group kill would
miss them: a kill collects the VM's tree first, then kills every member (procs.py).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from shoe_testkit.broker.cli import BrokerError, NodeCli
from shoe_testkit.broker.node import NodeFiles, erlang_tool
from shoe_testkit.broker.procs import (
    LOOPBACK,
    alive,
    connects,
    descendants,
    kill_all,
    terminate,
)
from shoe_testkit.broker.watchdog import Watchdog

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
WAIT_PORT_S = 10.0


class NodeRun:
    """One node's epmd and VM, in the node's directory and environment."""

    def __init__(
        self,
        node: str,
        scripts: Path,
        *,
        files: NodeFiles,
        env: Mapping[str, str],
        cli: NodeCli,
        watchdog: Watchdog,
    ) -> None:
        self._node = node
        self._scripts = scripts
        self._files = files
        self._env = dict(env)
        self._cli = cli
        self._watchdog = watchdog
        self._server: subprocess.Popen[bytes] | None = None
        self._epmd: subprocess.Popen[bytes] | None = None

    @property
    def beam_pid(self) -> int | None:
        """The Erlang VM's pid while it runs, else None."""
        server = self._server
        return server.pid if server is not None and server.poll() is None else None

    def processes(self) -> list[int]:
        """Pids of the VM, everything it started, and the epmd (those still alive)."""
        pids = []
        if self.beam_pid is not None:
            pids.append(self.beam_pid)
            pids.extend(descendants(self.beam_pid))
        if self._epmd is not None and self._epmd.poll() is None:
            pids.append(self._epmd.pid)
        return [pid for pid in pids if alive(pid)]

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the node's log and of its console output."""
        parts = []
        for path in (self._files.log_file, self._files.directory / "console.out"):
            with contextlib.suppress(OSError):
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
                parts.append(f"--- {path} ---\n" + "\n".join(text[-lines:]))
        return "\n".join(parts) or "(no log written)"

    def ensure_epmd(self) -> None:
        if self._epmd is not None and self._epmd.poll() is None:
            return
        epmd = erlang_tool("epmd")
        assert epmd is not None  # node.missing() checked it
        epmd_port = self._files.epmd_port
        self._epmd = subprocess.Popen(
            [epmd, "-port", str(epmd_port), "-address", LOOPBACK],
            env=self._env,
            cwd=self._files.directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._watchdog.watch(self._epmd.pid)
        deadline = time.monotonic() + WAIT_PORT_S
        while not connects(epmd_port):
            if self._epmd.poll() is not None or time.monotonic() > deadline:
                raise BrokerError(f"epmd did not listen on {LOOPBACK}:{epmd_port}")
            time.sleep(0.01)

    def launch(self, start_timeout: float) -> None:
        """Boot the VM and return once the node has booted; BrokerError with the log if not."""
        console = (self._files.directory / "console.out").open("ab")
        try:
            server = subprocess.Popen(
                [str(self._scripts / "rabbitmq-server")],
                env=self._env,
                cwd=self._files.directory,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the terminal's Ctrl-C goes to the tests, not here
            )
        finally:
            console.close()
        self._server = server
        self._watchdog.watch(server.pid)
        deadline = time.monotonic() + start_timeout
        # First the VM registers with epmd, then the CLI can reach it; await_startup then
        # returns when the boot completed (or fails when the boot failed and the VM halted).
        while not self._files.registered():
            if server.poll() is not None:
                self._server = None
                raise BrokerError(
                    f"{self._node} exited with status {server.returncode} while starting:\n"
                    + self.log_tail()
                )
            if time.monotonic() > deadline:
                self.kill()
                raise BrokerError(
                    f"{self._node} did not come up within {start_timeout} s:\n" + self.log_tail()
                )
            time.sleep(0.02)
        remaining = max(1, int(deadline - time.monotonic()))
        try:
            self._cli.ctl("await_startup", "--timeout", str(remaining))
        except BrokerError as error:
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(5.0)  # a failed boot halts the VM; let it finish its log
            self.kill()
            raise BrokerError(
                f"{self._node} failed to start: {error}\n{self.log_tail()}"
            ) from error

    def stop(self) -> None:
        """SIGTERM, the VM's graceful stop (RabbitMQ's own handler shuts the node down);
        SIGKILL of the whole tree after STOP_TIMEOUT_S."""
        server = self._server
        if server is None:
            return
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(STOP_TIMEOUT_S)
        self.kill()

    def kill(self) -> None:
        """SIGKILL the VM and every process it started; wait until they are gone."""
        server = self._server
        if server is None:
            return
        tree = [server.pid, *descendants(server.pid)]
        kill_all(tree)
        server.wait()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while any(alive(pid) for pid in tree):
            if time.monotonic() > deadline:
                raise BrokerError(f"processes {tree} of {self._node} survived SIGKILL")
            time.sleep(0.01)
        self._watchdog.unwatch(server.pid)
        self._server = None

    def stop_epmd(self) -> None:
        if self._epmd is not None:
            terminate(self._epmd)
            self._watchdog.unwatch(self._epmd.pid)
            self._epmd = None
