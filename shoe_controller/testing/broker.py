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
environment). A watchdog process SIGKILLs the node and epmd and removes the directory if the
owning process dies without calling `stop()`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
CLI_TIMEOUT_S = 60.0
DEFAULT_WATERMARK = 0.4  # RabbitMQ's own default, restored by resume_confirms()
# Far below what any VM uses, so the memory alarm fires at once whatever the machine's RAM.
ALARM_WATERMARK = "0.0000001"
LOOPBACK = "127.0.0.1"
DEBIAN_SCRIPTS = Path("/usr/lib/rabbitmq/bin")
_ERL_LOOPBACK = "-kernel inet_dist_use_interface {127,0,0,1}"


class BrokerError(RuntimeError):
    """The broker could not be started, stopped or commanded; the message says why."""


def scripts_dir(explicit: Path | None = None) -> Path | None:
    """The directory holding the real RabbitMQ scripts (rabbitmq-server, rabbitmqctl, ...)."""
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(Path(explicit))
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
    found = shutil.which("rabbitmq-server", path=search)
    if found:
        # Debian's /usr/sbin/rabbitmq-server is a symlink to a wrapper that lives next to the
        # real scripts; a generic install's sbin/ holds them directly.
        candidates.append(Path(os.path.realpath(found)).parent)
    candidates.append(DEBIAN_SCRIPTS)
    for candidate in candidates:
        if all((candidate / name).exists() for name in ("rabbitmq-env", "rabbitmq-server")):
            return candidate
    return None


def missing(explicit: Path | None = None) -> str | None:
    """Why no broker can be started here, or None when one can."""
    if sys.platform != "linux":
        return "the RabbitMQ test broker needs Linux (/proc)"
    if scripts_dir(explicit) is None:
        return "rabbitmq-server is not installed (Debian: apt-get install rabbitmq-server)"
    for tool in ("erl", "epmd"):
        if _erlang_tool(tool) is None:
            return f"Erlang's {tool} is not installed"
    return None


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
        self._dir: Path | None = None
        self._env: dict[str, str] = {}
        self.port = 0
        self._dist_port = 0
        self._epmd_port = 0
        self._server: subprocess.Popen[bytes] | None = None
        self._epmd: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
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
    def directory(self) -> Path:
        """The node's private directory (database, logs, config, cookie)."""
        if self._dir is None:
            raise BrokerError("the broker was never started")
        return self._dir

    @property
    def log_file(self) -> Path:
        return self.directory / "log" / f"{self.node}.log"

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
            if self._dir is None:
                self._prepare()
            self._ensure_watchdog()
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
                _terminate(self._epmd)
                self._unwatch(self._epmd.pid)
                self._epmd = None
            if self._watchdog is not None:
                # Closing its stdin is the "all is well" signal: it has nothing left to kill
                # and only removes the directory, which we do here anyway.
                with contextlib.suppress(OSError):
                    assert self._watchdog.stdin is not None
                    self._watchdog.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._watchdog.wait(STOP_TIMEOUT_S)
                self._watchdog = None
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None

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
            self._cli("rabbitmq-upgrade", "drain")
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
            self._cli("rabbitmq-upgrade", "revive")
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
            self._ctl("set_vm_memory_high_watermark", ALARM_WATERMARK)
            self._paused = True
            self._wait_memory_alarm(raised=True)

    def resume_confirms(self) -> None:
        """Restore the configured memory watermark; held publishes are read and confirmed."""
        with self._lock:
            self._require_running()
            self._ctl("set_vm_memory_high_watermark", repr(self.memory_watermark))
            self._wait_memory_alarm(raised=False)
            self._paused = False

    # ----------------------------------------------------------------- readings

    def memory_bytes(self) -> int:
        """The node's total memory as it reports it (by its calculation strategy, RSS here)."""
        status = json.loads(self._ctl("status", "--formatter", "json"))
        memory = status["memory"]
        return int(memory["total"][memory.get("strategy", "rss")])

    def queue_messages(self, queue: str, vhost: str | None = None) -> int:
        """Messages in `queue` (ready + unacknowledged); KeyError if there is no such queue."""
        rows = json.loads(
            self._ctl(
                "list_queues",
                "-p",
                vhost or self.vhost,
                "name",
                "messages",
                "--formatter",
                "json",
            )
        )
        for row in rows:
            if row["name"] == queue:
                return int(row["messages"])
        raise KeyError(f"no queue {queue!r} in vhost {vhost or self.vhost!r} on {self.node}")

    def ctl(self, *args: str) -> str:
        """Run `rabbitmqctl` against this node; its stdout, or BrokerError with its stderr."""
        return self._ctl(*args)

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
            pids.extend(_descendants(self.beam_pid))
        if self._epmd is not None and self._epmd.poll() is None:
            pids.append(self._epmd.pid)
        return [pid for pid in pids if _alive(pid)]

    # ----------------------------------------------------------------- internals

    def _prepare(self) -> None:
        if self._base_parent is not None:
            Path(self._base_parent).mkdir(parents=True, exist_ok=True)
        self._dir = Path(tempfile.mkdtemp(prefix="shoe-rabbitmq-", dir=self._base_parent))
        self.port, self._dist_port, self._epmd_port = _free_ports(3)
        if self._wanted_port is not None:
            self.port = self._wanted_port
        home = self._dir / "home"
        home.mkdir(mode=0o700)
        cookie = home / ".erlang.cookie"
        cookie.write_text(secrets.token_hex(20), encoding="ascii")
        cookie.chmod(0o400)  # Erlang refuses a cookie others can read
        (self._dir / "enabled_plugins").write_text("[].\n", encoding="ascii")
        (self._dir / "rabbitmq-env.conf").write_text("", encoding="ascii")
        (self._dir / "rabbitmq.conf").write_text(self._config(), encoding="utf-8")
        self._env = self._environment()

    def _config(self) -> str:
        # The default user/vhost are created on the first boot only, on an empty database;
        # restarts keep them (and everything else) from the database.
        return "\n".join(
            [
                f"listeners.tcp.default = {LOOPBACK}:{self.port}",
                f"default_user = {self.user}",
                f"default_pass = {self.password}",
                f"default_vhost = {self.vhost}",
                "default_user_tags.administrator = true",
                "default_permissions.configure = .*",
                "default_permissions.read = .*",
                "default_permissions.write = .*",
                f"vm_memory_high_watermark.relative = {self.memory_watermark!r}",
                # A nearly full CI disk must not raise the disk alarm and block publishers by
                # surprise; pause_confirms() is the one way publishers get blocked here.
                "disk_free_limit.absolute = 1MB",
                "log.console = false",
                "log.file.level = info",
                "",
            ]
        )

    def _environment(self) -> dict[str, str]:
        directory = self.directory
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("RABBITMQ_", "ERL_"))
        }
        env.setdefault("LANG", "C.UTF-8")  # the CLI warns about latin1 otherwise
        env.update(
            HOME=str(directory / "home"),
            ERL_EPMD_PORT=str(self._epmd_port),
            ERL_EPMD_ADDRESS=LOOPBACK,
            ERL_CRASH_DUMP=str(directory / "erl_crash.dump"),
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_MNESIA_BASE=str(directory / "mnesia"),
            RABBITMQ_LOG_BASE=str(directory / "log"),
            RABBITMQ_CONFIG_FILE=str(directory / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(directory / "advanced.config"),
            RABBITMQ_CONF_ENV_FILE=str(directory / "rabbitmq-env.conf"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(directory / "enabled_plugins"),
            RABBITMQ_PID_FILE=str(directory / "node.pid"),
            RABBITMQ_DIST_PORT=str(self._dist_port),
            # ALLOW_INPUT makes the script `exec` erl, so the VM is our child (kill() hits
            # beam.smp itself); -noinput keeps the Erlang shell off.
            RABBITMQ_ALLOW_INPUT="true",
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=f"-noinput {_ERL_LOOPBACK}",
            RABBITMQ_CTL_ERL_ARGS=_ERL_LOOPBACK,
        )
        return env

    def _ensure_watchdog(self) -> None:
        if self._watchdog is not None and self._watchdog.poll() is None:
            return
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(self.directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C aimed at the tests must not reach it first
        )

    def _watch(self, pid: int) -> None:
        self._tell_watchdog(f"+ {pid} {_start_time(pid)}")

    def _unwatch(self, pid: int) -> None:
        self._tell_watchdog(f"- {pid}")

    def _tell_watchdog(self, line: str) -> None:
        if self._watchdog is None or self._watchdog.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._watchdog.stdin.write(line.encode("ascii") + b"\n")
            self._watchdog.stdin.flush()

    def _ensure_epmd(self) -> None:
        if self._epmd is not None and self._epmd.poll() is None:
            return
        epmd = _erlang_tool("epmd")
        assert epmd is not None  # missing() checked it
        self._epmd = subprocess.Popen(
            [epmd, "-port", str(self._epmd_port), "-address", LOOPBACK],
            env=self._env,
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._watch(self._epmd.pid)
        deadline = time.monotonic() + 10.0
        while not _connects(self._epmd_port):
            if self._epmd.poll() is not None or time.monotonic() > deadline:
                raise BrokerError(f"epmd did not listen on {LOOPBACK}:{self._epmd_port}")
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
        self._watch(server.pid)
        deadline = time.monotonic() + self.start_timeout
        # First the VM registers with epmd, then the CLI can reach it; await_startup then
        # returns when the boot completed (or fails when the boot failed and the VM halted).
        while not self._registered():
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
            self._ctl("await_startup", "--timeout", str(remaining))
        except BrokerError as error:
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(5.0)  # a failed boot halts the VM; let it finish its log
            self._kill_tree(server)
            raise BrokerError(f"{self.node} failed to start: {error}\n{self.log_tail()}") from error
        # A completed boot has its listener open (a listener that cannot bind fails the boot).
        self._wait_port(accepting=True)

    def _registered(self) -> bool:
        """True once the node's name is registered with our epmd."""
        short_name = self.node.split("@", 1)[0]
        try:
            with socket.create_connection((LOOPBACK, self._epmd_port), timeout=1.0) as sock:
                sock.sendall(b"\x00\x01n")  # NAMES_REQ: epmd answers and closes
                reply = b""
                while chunk := sock.recv(4096):
                    reply += chunk
        except OSError:
            return False
        names = reply[4:].decode("utf-8", errors="replace").splitlines()
        return any(line.split()[1:2] == [short_name] for line in names)

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
        tree = [server.pid, *_descendants(server.pid)]
        for pid in tree:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        server.wait()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while any(_alive(pid) for pid in tree):
            if time.monotonic() > deadline:
                raise BrokerError(f"processes {tree} of {self.node} survived SIGKILL")
            time.sleep(0.01)
        self._unwatch(server.pid)
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
            alarms = json.loads(self._ctl("status", "--formatter", "json"))["alarms"]
            memory_alarm = any(
                isinstance(alarm, dict) and alarm.get("resource") == "memory" for alarm in alarms
            )
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
        return _connects(self.port)

    def _ctl(self, *args: str) -> str:
        return self._cli("rabbitmqctl", *args)

    def _cli(self, tool: str, *args: str) -> str:
        assert self._scripts is not None
        self._require_running()
        argv = [str(self._scripts / tool), "-n", self.node, "-q", *args]
        try:
            done = subprocess.run(
                argv,
                env=self._env,
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise BrokerError(f"{tool} {' '.join(args)} timed out") from error
        if done.returncode != 0:
            raise BrokerError(
                f"{tool} {' '.join(args)} failed ({done.returncode}): "
                f"{done.stderr.strip() or done.stdout.strip()}"
            )
        return done.stdout


def _erlang_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    fallback = Path("/usr/lib/erlang/bin") / name
    return str(fallback) if fallback.exists() else None


def _free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 right now (all held open while choosing)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((LOOPBACK, 0))
            ports.append(sock.getsockname()[1])
        return ports


def _connects(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1.0):
            return True
    except OSError:
        return False


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # Fields after the command name, which is in parentheses and may hold spaces.
    return raw[raw.rindex(")") + 2 :].split()


def _alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a zombie is dead, merely unreaped)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def _start_time(pid: int) -> str:
    fields = _stat_fields(pid)
    return fields[19] if fields is not None else "0"


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def _descendants(pid: int) -> list[int]:
    children = _children_map()
    found: list[int] = []
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return found


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# Runs in its own process for the Broker's lifetime. Lines on stdin: "+ PID STARTTIME" to
# guard a process, "- PID" to let go of it. At EOF (stop() closed the pipe, or the owner died)
# it SIGKILLs what it still guards, with their descendants, and removes the directory.
_WATCHDOG = r"""
import os, shutil, signal, sys
from pathlib import Path

def stat(pid):
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()

guarded = {}
for line in sys.stdin:
    parts = line.split()
    if len(parts) == 3 and parts[0] == "+":
        guarded[int(parts[1])] = parts[2]
    elif len(parts) == 2 and parts[0] == "-":
        guarded.pop(int(parts[1]), None)
if guarded:
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat(entry.name)
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    victims = []
    for pid, started in guarded.items():
        fields = stat(pid)
        if fields and fields[19] == started:  # the same process, not a reused pid
            stack = [pid]
            while stack:
                victim = stack.pop()
                victims.append(victim)
                stack.extend(children.get(victim, []))
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except OSError:
            pass
shutil.rmtree(sys.argv[1], ignore_errors=True)
"""
