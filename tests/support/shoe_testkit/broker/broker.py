"""A private RabbitMQ node on 127.0.0.1 for tests and benches, with faults a real broker has.

`Broker` runs Debian's `rabbitmq-server` (or any RabbitMQ whose scripts directory holds
`rabbitmq-env`) as a child process with everything of its own: a temporary directory for the
database, logs, configuration and Erlang cookie (a private HOME), a unique node name
(`shoetest-<random>@localhost`), free ports bound to 127.0.0.1 only (AMQP, Erlang distribution,
and a private epmd), and a user and vhost of its own. Nothing under /etc/rabbitmq or
/var/lib/rabbitmq is read or written, so it runs as root or as any user, next to a system
broker or another `Broker`.

Faults, each one real broker behaviour (what delivery through a broker must survive):
`kill()`, SIGKILL of the
Erlang VM itself (beam.smp is our direct child: the server script `exec`s into it) and of every
process it started; `restart()` boots the same node on the same data and port, so durable
queues and persistent messages come back. The faults of a running node, its AMQP port refused
and its confirms held, are `broker.faults` (faults.py).

No pytest in here: benches import it too. The scripts are called directly from their directory,
bypassing Debian's /usr/sbin wrapper (which `su`s to the `rabbitmq` user and drops our
environment). The node's files are node.py's, its processes run.py's (on procs.py's /proc
readings); a watchdog process (watchdog.py) SIGKILLs the node and epmd and removes the
directory if the owning process dies without calling `stop()`.
"""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from shoe_testkit.broker.cli import BrokerError, NodeCli
from shoe_testkit.broker.faults import Faults
from shoe_testkit.broker.node import NodeFiles, missing, scripts_dir
from shoe_testkit.broker.procs import LOOPBACK, free_ports
from shoe_testkit.broker.run import START_TIMEOUT_S, STOP_TIMEOUT_S, NodeRun
from shoe_testkit.broker.watchdog import Watchdog

DEFAULT_WATERMARK = 0.4  # RabbitMQ's own default, restored by faults.resume_confirms()


@dataclasses.dataclass(frozen=True)
class ClusterSeat:
    """What a cluster's node shares with the others (cluster.py)."""

    epmd_port: int  # the cluster's one epmd: the nodes find each other through it
    cookie: str  # the Erlang cookie they all hold
    peers: tuple[str, ...] = ()  # the nodes a blank node joins on its first boot


@dataclasses.dataclass(frozen=True)
class _Parts:
    """What the first start() makes for the node and stop() removes."""

    files: NodeFiles
    cli: NodeCli
    watchdog: Watchdog
    run: NodeRun
    faults: Faults


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
        node: str | None = None,
        cluster: ClusterSeat | None = None,
        streams: bool = False,
    ) -> None:
        """`cluster`: this node's seat in a Cluster (cluster.py): the cluster's epmd, cookie,
        and the nodes it joins on its first boot; None for a node of its own. `streams`: the
        stream protocol's plugin on, on a port of its own (`stream_port`)."""
        for name, value in (("user", user), ("password", password or ""), ("vhost", vhost)):
            if any(char.isspace() or char == "#" for char in value):
                raise ValueError(f"{name} must not hold white space or '#' (rabbitmq.conf)")
        self.user = user
        self.password = password if password is not None else secrets.token_urlsafe(12)
        self.vhost = vhost
        self.host = LOOPBACK
        self.node = node or f"shoetest-{secrets.token_hex(4)}@localhost"
        self._seat = cluster
        self.memory_watermark = memory_watermark
        self.start_timeout = start_timeout
        self._scripts = scripts_dir(scripts)
        self._base_parent = base_dir
        self._wanted_port = port
        self.port = 0
        self.stream_port = 0
        self._streams = streams
        self._lock = threading.RLock()
        self._parts: _Parts | None = None

    # ----------------------------------------------------------------- properties

    @property
    def url(self) -> str:
        """amqp://user:pass@127.0.0.1:PORT/vhost for this broker's own user."""
        credentials = f"{quote(self.user, safe='')}:{quote(self.password, safe='')}"
        return f"amqp://{credentials}@{self.host}:{self.port}/{quote(self.vhost, safe='')}"

    @property
    def files(self) -> NodeFiles:
        return self._started().files

    @property
    def cli(self) -> NodeCli:
        """The node's rabbitmqctl and what it reads (memory, queues, alarms)."""
        return self._started().cli

    @property
    def faults(self) -> Faults:
        """Its AMQP port refused, its confirms held (faults.py)."""
        return self._started().faults

    @property
    def directory(self) -> Path:
        """The node's private directory (database, logs, config, cookie)."""
        return self.files.directory

    @property
    def beam_pid(self) -> int | None:
        """The Erlang VM's pid while the node runs, else None."""
        return self._parts.run.beam_pid if self._parts is not None else None

    @property
    def running(self) -> bool:
        return self.beam_pid is not None

    def processes(self) -> list[int]:
        """Pids of the VM, everything it started, and our epmd (those still alive)."""
        return self._parts.run.processes() if self._parts is not None else []

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the node's log and of its console output."""
        return self._started().run.log_tail(lines)

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
            if self._parts is None:
                self._parts = self._prepare()
            parts = self._parts
            parts.watchdog.ensure()
            if self._seat is None:  # a cluster's nodes share the cluster's epmd
                parts.run.ensure_epmd()
            parts.faults.node_gone()  # a fresh boot opens its listener and has no alarm
            parts.run.launch(self.start_timeout)
            # A completed boot has its listener open (one that cannot bind fails the boot).
            parts.faults.wait_port(accepting=True)

    def restart(self) -> None:
        """Start again on the same data, node and port (a running node is stopped cleanly)."""
        with self._lock:
            self.shutdown()
            self.start()

    def shutdown(self) -> None:
        """Stop the node cleanly (RabbitMQ's own shutdown: clients are told, a cluster's
        other nodes too), keeping its data, port and name for `start()`."""
        with self._lock:
            if self._parts is not None and self.running:
                self._parts.faults.node_gone()
                self._parts.run.stop()

    def kill(self) -> None:
        """SIGKILL the Erlang VM and every process it started; wait until they are gone."""
        with self._lock:
            if self._parts is not None and self.running:
                self._parts.faults.node_gone()
                self._parts.run.kill()

    def stop(self) -> None:
        """Stop the node cleanly (SIGKILL after a while), then epmd, then remove the directory."""
        with self._lock:
            parts, self._parts = self._parts, None
            if parts is None:
                return
            parts.faults.node_gone()
            parts.run.stop()
            parts.run.stop_epmd()  # none started for a cluster's node
            parts.watchdog.release()
            shutil.rmtree(parts.files.directory, ignore_errors=True)

    def heal(self) -> None:
        """Undo every fault this object caused: running, accepting, confirming."""
        with self._lock:
            if not self.running:
                self.start()
            self.faults.heal()

    # ----------------------------------------------------------------- internals

    def _prepare(self) -> _Parts:
        if self._base_parent is not None:
            Path(self._base_parent).mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix="shoe-rabbitmq-", dir=self._base_parent))
        port, dist_port, epmd_port, stream_port = free_ports(4)
        seat = self._seat
        if seat is not None:
            epmd_port = seat.epmd_port
        self.stream_port = stream_port if self._streams else 0
        files = NodeFiles(
            directory, self.node, self._wanted_port or port, dist_port, epmd_port,
            self.stream_port,
        )  # fmt: skip
        files.write(
            user=self.user, password=self.password, vhost=self.vhost,
            watermark=self.memory_watermark,
            cookie=seat.cookie if seat is not None else None,
            peers=seat.peers if seat is not None else (),
        )  # fmt: skip
        self.port, env = files.port, files.environment()
        assert self._scripts is not None  # missing() checked it
        cli = NodeCli(self._scripts, files, env, self.vhost, lambda: self.running)
        watchdog = Watchdog(directory, STOP_TIMEOUT_S)
        run = NodeRun(self.node, self._scripts, files=files, env=env, cli=cli, watchdog=watchdog)
        faults = Faults(
            self.node, self.port, cli, self._lock,
            running=lambda: self.running, memory_watermark=self.memory_watermark,
        )  # fmt: skip
        return _Parts(files, cli, watchdog, run, faults)

    def _started(self) -> _Parts:
        if self._parts is None:
            raise BrokerError("the broker was never started")
        return self._parts
