"""A private RabbitMQ cluster on 127.0.0.1: N nodes (three by default) joined into one, for
the tests and benches of a floor's broker.

Each node is a `Broker` (broker.py) with its own name (`shoetest-<random>-<n>@localhost`),
data directory, AMQP and distribution ports; they share what a cluster must: one Erlang
cookie and one private epmd (the nodes find each other's distribution ports through it), and
the user, password and vhost (the cluster's database is one). The first node boots alone;
the others boot with classic peer discovery naming it, so each joins on its first boot, with
no stop_app / join_cluster / start_app round. Later boots of a node come back into the
cluster from its own data.

Everything lives in one temporary directory. A watchdog of the cluster's own kills the epmd
and removes the directory if the owner dies without `stop()`; each node's watchdog kills its
VM (broker.py), so no process and no directory outlives the owner.
"""

from __future__ import annotations

import concurrent.futures
import json
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from shoe_testkit.broker.broker import Broker, ClusterSeat
from shoe_testkit.broker.cli import BrokerError
from shoe_testkit.broker.node import erlang_tool, missing
from shoe_testkit.broker.procs import LOOPBACK, alive, connects, free_ports, terminate
from shoe_testkit.broker.run import START_TIMEOUT_S, STOP_TIMEOUT_S
from shoe_testkit.broker.watchdog import Watchdog

POLL_S = 0.2


class Cluster:
    """N private RabbitMQ nodes joined into one cluster; see the module docstring. Use as a
    context manager. Every method blocks (boots take seconds): call them from asyncio code
    through `asyncio.to_thread`."""

    def __init__(
        self,
        size: int = 3,
        *,
        user: str = "shoe",
        vhost: str = "shoe",
        base_dir: Path | None = None,
        start_timeout: float = START_TIMEOUT_S,
        streams: bool = False,
    ) -> None:
        """`streams`: every node with the stream protocol on (Broker's `stream_port`)."""
        if size < 1:
            raise ValueError("a cluster needs at least one node")
        self.size = size
        self.user = user
        self.vhost = vhost
        self.password = secrets.token_urlsafe(12)
        self.start_timeout = start_timeout
        self.streams = streams
        self._base_parent = base_dir
        self._names = [f"shoetest-{secrets.token_hex(3)}-{n}@localhost" for n in range(size)]
        self.directory: Path | None = None
        self.nodes: list[Broker] = []
        self._epmd: subprocess.Popen[bytes] | None = None
        self._watchdog: Watchdog | None = None

    # ----------------------------------------------------------------- what it offers

    @property
    def urls(self) -> list[str]:
        """Each node's amqp:// URL, with the cluster's user and password."""
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """One URL naming every node as its hosts (amqp://user:pass@h:p1,h:p2,h:p3/vhost)."""
        first = self.nodes[0].url
        prefix, rest = first.split("@", 1)
        path = rest[rest.index("/") :]
        hosts = ",".join(f"{node.host}:{node.port}" for node in self.nodes)
        return f"{prefix}@{hosts}{path}"

    def index_of(self, port: int) -> int:
        """Which node listens for AMQP on `port`."""
        return next(n for n, node in enumerate(self.nodes) if node.port == port)

    def processes(self) -> list[int]:
        """Every node's VM and what it started, and the epmd (those still alive)."""
        pids = [pid for node in self.nodes for pid in node.processes()]
        if self._epmd is not None and alive(self._epmd.pid):
            pids.append(self._epmd.pid)
        return pids

    def running_nodes(self) -> set[str]:
        """The names of the nodes the cluster counts as running (asked of a running node)."""
        status = json.loads(self._any_running().cli.ctl("cluster_status", "--formatter", "json"))
        return set(status["running_nodes"])

    def leader(self, queue: str) -> int:
        """Which node leads the quorum queue `queue` now (its index in `nodes`)."""
        listed = self._any_running().cli.ctl(
            "list_queues", "-p", self.vhost, "name", "leader", "--formatter", "json"
        )
        for row in json.loads(listed):
            if row["name"] == queue:
                return self._names.index(row["leader"])
        raise KeyError(f"no queue {queue!r} in vhost {self.vhost!r}")

    def quorum_critical(self, index: int) -> bool:
        """Whether stopping node `index` now would leave some quorum queue without a
        majority (`rabbitmq-queues check_if_node_is_quorum_critical`, the rolling-upgrade
        check): a node just back has not caught its replicas up yet."""
        try:
            self.nodes[index].cli.run("rabbitmq-queues", "check_if_node_is_quorum_critical")
        except BrokerError as error:
            if "timed out" in str(error) or "not running" in str(error):
                raise
            return True
        return False

    # ----------------------------------------------------------------- life cycle

    def __enter__(self) -> Cluster:
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
        """Boot every node and return once all run as one cluster; BrokerError if not."""
        reason = missing()
        if reason is not None:
            raise BrokerError(reason)
        if self.directory is None:
            self._prepare()
        first, *others = self.nodes
        first.start()
        _each(lambda node: node.start(), others)
        self.wait_running()

    def heal(self) -> None:
        """Start every node that is not running (together) and undo their faults; return once
        the cluster counts all of them as running."""
        _each(lambda node: node.heal(), self.nodes)
        self.wait_running()

    def wait_running(self, names: set[str] | None = None, patience: float | None = None) -> None:
        """Until the cluster counts `names` (default: every node) as running."""
        names = set(self._names) if names is None else names
        deadline = time.monotonic() + (patience or self.start_timeout)
        while True:
            try:
                if self.running_nodes() >= names:
                    return
            except BrokerError:
                pass  # the node asked went down meanwhile: ask another
            if time.monotonic() > deadline:
                raise BrokerError(f"the cluster did not count {sorted(names)} as running")
            time.sleep(POLL_S)

    def wait_not_quorum_critical(self, index: int, patience: float | None = None) -> None:
        """Until node `index` may be stopped without a quorum queue losing its majority."""
        deadline = time.monotonic() + (patience or self.start_timeout)
        while self.quorum_critical(index):
            if time.monotonic() > deadline:
                raise BrokerError(f"{self._names[index]} stayed quorum critical")
            time.sleep(POLL_S)

    def stop(self) -> None:
        """Stop every node, then the epmd; remove the directory."""
        _each(lambda node: node.stop(), self.nodes)
        if self._epmd is not None:
            terminate(self._epmd)
            if self._watchdog is not None:
                self._watchdog.unwatch(self._epmd.pid)
            self._epmd = None
        if self._watchdog is not None:
            self._watchdog.release()
            self._watchdog = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.directory = None
        self.nodes = []

    # ----------------------------------------------------------------- internals

    def _prepare(self) -> None:
        if self._base_parent is not None:
            Path(self._base_parent).mkdir(parents=True, exist_ok=True)
        self.directory = Path(
            tempfile.mkdtemp(prefix="shoe-rabbitmq-cluster-", dir=self._base_parent)
        )
        self._watchdog = Watchdog(self.directory, STOP_TIMEOUT_S)
        self._watchdog.ensure()
        (epmd_port,) = free_ports(1)
        self._start_epmd(epmd_port)
        cookie = secrets.token_hex(20)
        self.nodes = [
            Broker(
                user=self.user,
                password=self.password,
                vhost=self.vhost,
                base_dir=self.directory,
                start_timeout=self.start_timeout,
                node=name,
                cluster=ClusterSeat(epmd_port, cookie, peers=() if n == 0 else (self._names[0],)),
                streams=self.streams,
            )
            for n, name in enumerate(self._names)
        ]

    def _start_epmd(self, port: int) -> None:
        epmd = erlang_tool("epmd")
        assert epmd is not None  # missing() checked it
        assert self.directory is not None
        assert self._watchdog is not None
        self._epmd = subprocess.Popen(
            [epmd, "-port", str(port), "-address", LOOPBACK],
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._watchdog.watch(self._epmd.pid)
        deadline = time.monotonic() + 10.0
        while not connects(port):
            if self._epmd.poll() is not None or time.monotonic() > deadline:
                raise BrokerError(f"the cluster's epmd did not listen on {LOOPBACK}:{port}")
            time.sleep(0.01)

    def _any_running(self) -> Broker:
        for node in self.nodes:
            if node.running:
                return node
        raise BrokerError("no node of the cluster is running")


def _each(action: Callable[[Broker], Any], nodes: Iterable[Broker]) -> None:
    """`action` on every node at once (boots and stops take seconds each); the first error
    raised after all have finished."""
    nodes = list(nodes)
    if not nodes:
        return
    with concurrent.futures.ThreadPoolExecutor(len(nodes)) as pool:
        futures = [pool.submit(action, node) for node in nodes]
    errors = [future.exception() for future in futures if future.exception() is not None]
    if errors:
        raise errors[0]  # type: ignore[misc]
