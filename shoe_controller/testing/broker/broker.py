"""A private RabbitMQ node on 127.0.0.1 for tests and benches, with faults a real broker has.

`Broker` runs Debian's `rabbitmq-server` (or any RabbitMQ whose scripts directory holds
`rabbitmq-env`) as a child process with everything of its own: a temporary directory for the
database, logs, configuration and Erlang cookie (a private HOME), a unique node name
(`shoetest-<random>@localhost`), free ports bound to 127.0.0.1 only (AMQP, Erlang distribution,
and a private epmd), and a user and vhost of its own. Nothing under /etc/rabbitmq or
/var/lib/rabbitmq is read or written, so it runs as root or as any user, next to a system
broker or another `Broker`.

Faults, each one real broker behaviour (issue 16's "done when"):
- `kill()`: SIGKILL of the Erlang VM itself (beam.smp is our direct child: the server script
  `exec`s into it) and of every process it started; `restart()` boots the same node on the
  same data and port, so durable queues and persistent messages come back.
- `refuse_connections(seconds)`: `rabbitmq-upgrade drain` (maintenance mode) closes the client
  connections and closes the AMQP listener, so connects get ECONNREFUSED while the node and its
  queues live on; `rabbitmq-upgrade revive` reopens it, after `seconds` in the background.
- `pause_confirms()`: `rabbitmqctl set_vm_memory_high_watermark 0.0000001` raises the memory
  alarm. The broker then sends `connection.blocked` and stops reading from every connection that
  publishes, so a published message is neither routed nor confirmed (it does so even to a client
  that ignores `connection.blocked`; tests/test_broker_harness.py proves it on a raw socket).
  `resume_confirms()` restores the configured watermark; the held messages are then read,
  routed and confirmed.

No pytest in here: benches import it too. The scripts are called directly from their directory,
bypassing Debian's /usr/sbin wrapper (which `su`s to the `rabbitmq` user and drops our
environment). The node's files are node.py's, its processes procs.py's; a watchdog process
(watchdog.py) SIGKILLs the node and epmd and removes the directory if the owning process dies
without calling `stop()`.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from shoe_controller.testing.broker.cli import CLI_TIMEOUT_S, BrokerError, NodeCli
from shoe_controller.testing.broker.node import NodeFiles, erlang_tool, missing, scripts_dir
from shoe_controller.testing.broker.procs import (
    LOOPBACK,
    alive,
    connects,
    descendants,
    free_ports,
    kill_all,
    terminate,
)
from shoe_controller.testing.broker.watchdog import Watchdog

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
DEFAULT_WATERMARK = 0.4  # RabbitMQ's own default, restored by resume_confirms()
# Far below what any VM uses, so the memory alarm fires at once whatever the machine's RAM.
ALARM_WATERMARK = "0.0000001"


class Broker:
    """One private RabbitMQ node; see the module docstring. Use as a context manager.

    Every method blocks (a CLI call takes ~0.3 s, a boot a few seconds): from asyncio code,
    call them through `asyncio.to_thread` so the code under test keeps running meanwhile.
    """

    def __init__(
        self,
        *,
        user: str = "shoe",
        password: str | None = None,
        vhost: str = "shoe",
        port: int | None = None,
        base_dir: Path | None = None,
        memory_watermark: float = DEFAULT_WATERMARK,
        start_timeout: float = START_TIMEOUT_S,
        scripts: Path | None = None,
    ) -> None:
        for name, value in (("user", user), ("password", password or ""), ("vhost", vhost)):
            if any(char.isspace() or char == "#" for char in value):
                raise ValueError(f"{name} must not hold white space or '#' (rabbitmq.conf)")
        self.user = user
        self.password = password if password is not None else secrets.token_urlsafe(12)
        self.vhost = vhost
        self.host = LOOPBACK
        self.node = f"shoetest-{secrets.token_hex(4)}@localhost"
        self.memory_watermark = memory_watermark
        self.start_timeout = start_timeout
        self._scripts = scripts_dir(scripts)
        self._base_parent = base_dir
        self._wanted_port = port
        self._files: NodeFiles | None = None
        self._cli: NodeCli | None = None
        self._env: dict[str, str] = {}
        self.port = 0
        self._server: subprocess.Popen[bytes] | None = None
        self._epmd: subprocess.Popen[bytes] | None = None
        self._watchdog: Watchdog | None = None
        self._lock = threading.RLock()
        self._refusing = False
        self._revive_timer: threading.Timer | None = None
        self._paused = False

    # ----------------------------------------------------------------- properties

    @property
    def url(self) -> str:
        """amqp://user:pass@127.0.0.1:PORT/vhost for this broker's own user."""
        credentials = f"{quote(self.user, safe='')}:{quote(self.password, safe='')}"
        return f"amqp://{credentials}@{self.host}:{self.port}/{quote(self.vhost, safe='')}"

    @property
    def files(self) -> NodeFiles:
        if self._files is None:
            raise BrokerError("the broker was never started")
        return self._files

    @property
    def cli(self) -> NodeCli:
        """The node's rabbitmqctl and what it reads (memory, queues, alarms)."""
        if self._cli is None:
            raise BrokerError("the broker was never started")
        return self._cli

    @property
    def directory(self) -> Path:
        """The node's private directory (database, logs, config, cookie)."""
        return self.files.directory

    @property
    def log_file(self) -> Path:
        return self.files.log_file

    @property
    def beam_pid(self) -> int | None:
        """The Erlang VM's pid while the node runs, else None."""
        server = self._server
        return server.pid if server is not None and server.poll() is None else None

    @property
    def running(self) -> bool:
        return self.beam_pid is not None

    @property
    def refusing(self) -> bool:
        return self._refusing

    @property
    def confirms_paused(self) -> bool:
        return self._paused

    # ----------------------------------------------------------------- lifecycle

    def __enter__(self) -> Broker:
        try:
            self.start()
        except BaseException:
            self.stop()  # __exit__ does not run when __enter__ fails
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Boot the node and return once it serves AMQP; BrokerError (with the log) if not."""
        with self._lock:
            if self.running:
                return
            reason = missing(self._scripts)
            if reason is not None:
                raise BrokerError(reason)
            if self._files is None:
                self._prepare()
            assert self._watchdog is not None
            self._watchdog.ensure()
            self._ensure_epmd()
            self._launch()
            self._refusing = False  # a fresh boot opens its listener and has no alarm
            self._paused = False

    def restart(self) -> None:
        """Start again on the same data, node and port (a running node is stopped cleanly)."""
        with self._lock:
            if self.running:
                self._stop_node()
            self.start()

    def kill(self) -> None:
        """SIGKILL the Erlang VM and every process it started; wait until they are gone."""
        with self._lock:
            self._cancel_revive()
            server = self._server
            if server is None or server.poll() is not None:
                return
            self._kill_tree(server)

    def stop(self) -> None:
        """Stop the node cleanly (SIGKILL after a while), then epmd, then remove the directory."""
        with self._lock:
            self._cancel_revive()
            if self.running:
                self._stop_node()
            if self._epmd is not None:
                terminate(self._epmd)
                self._watched(self._epmd.pid, False)
                self._epmd = None
            if self._watchdog is not None:
                self._watchdog.release()
                self._watchdog = None
            if self._files is not None:
                shutil.rmtree(self._files.directory, ignore_errors=True)
                self._files = self._cli = None

    def heal(self) -> None:
        """Undo every fault this object caused: running, accepting, confirming."""
        with self._lock:
            if not self.running:
                self.start()
            if self._refusing:
                self.accept_connections()
            if self._paused:
                self.resume_confirms()

    # ----------------------------------------------------------------- faults

    def refuse_connections(self, seconds: float | None = None) -> None:
        """Close client connections and the AMQP port now; reopen it after `seconds`
        (in a background thread) or at `accept_connections()` when `seconds` is None."""
        with self._lock:
            self._require_running()
            self._cancel_revive()
            self.cli.run("rabbitmq-upgrade", "drain")
            self._refusing = True
            self._wait_port(accepting=False)
            if seconds is not None:
                self._revive_timer = threading.Timer(seconds, self._revive_later)
                self._revive_timer.daemon = True
                self._revive_timer.start()

    def accept_connections(self) -> None:
        """Reopen the AMQP port now (ends `refuse_connections`)."""
        with self._lock:
            self._cancel_revive()
            self._require_running()
            self.cli.run("rabbitmq-upgrade", "revive")
            self._wait_port(accepting=True)
            self._refusing = False

    def wait_accepting(self, timeout: float = START_TIMEOUT_S) -> None:
        """Block until a timed refusal is over and the AMQP port accepts again."""
        deadline = time.monotonic() + timeout
        while self._refusing or not self._port_accepts():
            if time.monotonic() > deadline:
                raise BrokerError(f"{self.node} did not accept connections within {timeout} s")
            time.sleep(0.02)

    def pause_confirms(self) -> None:
        """Raise the memory alarm: publishers are blocked and nothing they publish is
        confirmed until `resume_confirms()`."""
        with self._lock:
            self._require_running()
            self.cli.ctl("set_vm_memory_high_watermark", ALARM_WATERMARK)
            self._paused = True
            self._wait_memory_alarm(raised=True)

    def resume_confirms(self) -> None:
        """Restore the configured memory watermark; held publishes are read and confirmed."""
        with self._lock:
            self._require_running()
            self.cli.ctl("set_vm_memory_high_watermark", repr(self.memory_watermark))
            self._wait_memory_alarm(raised=False)
            self._paused = False

    # ----------------------------------------------------------------- readings

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the node's log and of its console output."""
        parts = []
        for path in (self.log_file, self.directory / "console.out"):
            with contextlib.suppress(OSError):
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
                parts.append(f"--- {path} ---\n" + "\n".join(text[-lines:]))
        return "\n".join(parts) or "(no log written)"

    def processes(self) -> list[int]:
        """Pids of the VM, everything it started, and our epmd (those still alive)."""
        pids = []
        if self.beam_pid is not None:
            pids.append(self.beam_pid)
            pids.extend(descendants(self.beam_pid))
        if self._epmd is not None and self._epmd.poll() is None:
            pids.append(self._epmd.pid)
        return [pid for pid in pids if alive(pid)]

    # ----------------------------------------------------------------- internals

    def _prepare(self) -> None:
        if self._base_parent is not None:
            Path(self._base_parent).mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix="shoe-rabbitmq-", dir=self._base_parent))
        port, dist_port, epmd_port = free_ports(3)
        files = NodeFiles(directory, self.node, self._wanted_port or port, dist_port, epmd_port)
        files.write(
            user=self.user, password=self.password, vhost=self.vhost,
            watermark=self.memory_watermark,
        )  # fmt: skip
        self._files, self.port, self._env = files, files.port, files.environment()
        assert self._scripts is not None
        self._cli = NodeCli(self._scripts, files, self._env, self.vhost, lambda: self.running)
        self._watchdog = Watchdog(directory, STOP_TIMEOUT_S)

    def _watched(self, pid: int, guard: bool) -> None:
        if self._watchdog is not None:
            (self._watchdog.watch if guard else self._watchdog.unwatch)(pid)

    def _ensure_epmd(self) -> None:
        if self._epmd is not None and self._epmd.poll() is None:
            return
        epmd = erlang_tool("epmd")
        assert epmd is not None  # missing() checked it
        epmd_port = self.files.epmd_port
        self._epmd = subprocess.Popen(
            [epmd, "-port", str(epmd_port), "-address", LOOPBACK],
            env=self._env,
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._watched(self._epmd.pid, True)
        deadline = time.monotonic() + 10.0
        while not connects(epmd_port):
            if self._epmd.poll() is not None or time.monotonic() > deadline:
                raise BrokerError(f"epmd did not listen on {LOOPBACK}:{epmd_port}")
            time.sleep(0.01)

    def _launch(self) -> None:
        assert self._scripts is not None
        console = (self.directory / "console.out").open("ab")
        try:
            server = subprocess.Popen(
                [str(self._scripts / "rabbitmq-server")],
                env=self._env,
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the terminal's Ctrl-C goes to the tests, not here
            )
        finally:
            console.close()
        self._server = server
        self._watched(server.pid, True)
        deadline = time.monotonic() + self.start_timeout
        # First the VM registers with epmd, then the CLI can reach it; await_startup then
        # returns when the boot completed (or fails when the boot failed and the VM halted).
        while not self.files.registered():
            if server.poll() is not None:
                self._server = None
                raise BrokerError(
                    f"{self.node} exited with status {server.returncode} while starting:\n"
                    + self.log_tail()
                )
            if time.monotonic() > deadline:
                self._kill_tree(server)
                raise BrokerError(
                    f"{self.node} did not come up within {self.start_timeout} s:\n"
                    + self.log_tail()
                )
            time.sleep(0.02)
        remaining = max(1, int(deadline - time.monotonic()))
        try:
            self.cli.ctl("await_startup", "--timeout", str(remaining))
        except BrokerError as error:
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(5.0)  # a failed boot halts the VM; let it finish its log
            self._kill_tree(server)
            raise BrokerError(f"{self.node} failed to start: {error}\n{self.log_tail()}") from error
        # A completed boot has its listener open (a listener that cannot bind fails the boot).
        self._wait_port(accepting=True)

    def _stop_node(self) -> None:
        server = self._server
        if server is None:
            return
        self._cancel_revive()
        # SIGTERM is the VM's graceful stop (RabbitMQ's own handler shuts the node down).
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(STOP_TIMEOUT_S)
        self._kill_tree(server)

    def _kill_tree(self, server: subprocess.Popen[bytes]) -> None:
        # The VM's helpers (erl_child_setup, inet_gethost) call setsid, so a process-group
        # kill misses them: collect the tree first, then kill every member.
        tree = [server.pid, *descendants(server.pid)]
        kill_all(tree)
        server.wait()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while any(alive(pid) for pid in tree):
            if time.monotonic() > deadline:
                raise BrokerError(f"processes {tree} of {self.node} survived SIGKILL")
            time.sleep(0.01)
        self._watched(server.pid, False)
        if self._server is server:
            self._server = None
        self._refusing = False
        self._paused = False

    def _revive_later(self) -> None:
        with self._lock:
            if self._revive_timer is None or not self.running:
                return  # cancelled, or the node died meanwhile: restart() opens the port
            self._revive_timer = None
            with contextlib.suppress(BrokerError):
                self.accept_connections()

    def _cancel_revive(self) -> None:
        timer, self._revive_timer = self._revive_timer, None
        if timer is not None:
            timer.cancel()

    def _require_running(self) -> None:
        if not self.running:
            raise BrokerError(f"{self.node} is not running")

    def _wait_memory_alarm(self, *, raised: bool) -> None:
        deadline = time.monotonic() + CLI_TIMEOUT_S
        while True:
            memory_alarm, alarms = self.cli.memory_alarm()
            if memory_alarm == raised:
                return
            if time.monotonic() > deadline:
                wanted = "raised" if raised else "cleared"
                raise BrokerError(f"memory alarm of {self.node} not {wanted}: {alarms}")
            time.sleep(0.05)

    def _wait_port(self, *, accepting: bool) -> None:
        deadline = time.monotonic() + CLI_TIMEOUT_S
        while self._port_accepts() != accepting:
            if time.monotonic() > deadline:
                state = "open" if accepting else "close"
                raise BrokerError(f"{self.host}:{self.port} did not {state}")
            time.sleep(0.01)

    def _port_accepts(self) -> bool:
        return connects(self.port)
