"""A broker sink's nodes: the URLs of a cluster's nodes, the order it tries them in, the one in
use, and each failover from one node to another (docs/amqp.md "A cluster").

Pure bookkeeping, no I/O and no aio-pika (the configuration checks URLs with it too). The
sink takes its nodes from `urls = [...]` or from the comma-separated hosts of one `url`
(`amqp://user@mq1:5672,mq2:5672,mq3/floor`), shuffles them once when it starts and then goes
round them in that order: a floor's tables, all configured alike, spread over the nodes
instead of all landing on the first one, and the tables of a node that fails spread over the
others instead of all moving to the next one in the list.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import dataclasses
import random
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from typing import Any

# Each scheme's port when a URL names none: AMQP 0-9-1, and RabbitMQ's stream protocol.
DEFAULT_PORTS = {"amqp": 5672, "amqps": 5671, "rabbitmq-stream": 5552, "rabbitmq-stream+tls": 5551}
AMQP = ("amqp", "amqps")
STREAM = ("rabbitmq-stream", "rabbitmq-stream+tls")
RECENT_FAILOVERS = 20  # kept for `shoectl outbox`; the count goes on


def node_urls(url: str, urls: Sequence[str] = (), schemes: Sequence[str] = AMQP) -> tuple[str, ...]:
    """Each node's own URL: `urls` as given, else one per host of `url` (its user, password,
    vhost and query shared), each of one of `schemes`; ValueError naming the URL at fault."""
    if urls:
        nodes = tuple(urls)
        for node in nodes:
            try:
                hosts = split_hosts(node, schemes)
            except ValueError as error:
                raise ValueError(f"urls: {error}") from None
            if len(hosts) != 1:
                raise ValueError(f"urls: one host per URL, got {safe_url(node)!r}")
    else:
        nodes = split_hosts(url, schemes)
    if len(set(nodes)) != len(nodes):
        raise ValueError("the same node is listed twice")
    return nodes


def split_hosts(url: str, schemes: Sequence[str] = AMQP) -> tuple[str, ...]:
    """`amqp://u:p@h1:5672,h2/vh` -> (`amqp://u:p@h1:5672/vh`, `amqp://u:p@h2/vh`)."""
    parts = urllib.parse.urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    prefix = f"{userinfo}@" if userinfo else ""
    nodes = []
    for host in hosts.split(","):
        node = parts._replace(netloc=prefix + host.strip()).geturl()
        problem = _url_problem(node, schemes)
        if problem:
            raise ValueError(f"url must be {problem}, got {safe_url(url)!r}")
        nodes.append(node)
    return tuple(nodes)


def _url_problem(url: str, schemes: Sequence[str]) -> str | None:
    parts = urllib.parse.urlsplit(url)
    try:
        parts.port  # noqa: B018 - reading it checks it
    except ValueError:
        return f"{schemes[0]}://host:port/vhost with a port of digits"
    if parts.scheme not in schemes or not parts.hostname:
        return f"{schemes[0]}://host:port/vhost or {schemes[1]}://..."
    return None


def safe_url(url: str) -> str:
    """The URL without its password, for status and logs (several hosts or one)."""
    parts = urllib.parse.urlsplit(url)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if ":" not in userinfo:
        return url
    user = userinfo.partition(":")[0]
    return parts._replace(netloc=f"{user}{at}{hosts}").geturl()


def node_name(url: str) -> str:
    """How status and logs name a node: host:port (the scheme's port when none is given)."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or DEFAULT_PORTS[parts.scheme]  # node_urls took only these schemes
    host = parts.hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def shuffled(nodes: Sequence[str], rand: Callable[[], float]) -> list[str]:
    """The nodes in the order one sink tries them, drawn from `rand` (the sink's own)."""
    order = list(nodes)
    random.Random(rand()).shuffle(order)
    return order


@dataclasses.dataclass(frozen=True)
class Failover:
    """The sink left one node for another."""

    at: float  # unix seconds: when it connected to the new node
    source: str  # node names (host:port)
    target: str
    reason: str  # why it left the old node: the failure of its last attempt there
    after_failures: int  # failed attempts in a row before the new node took the events

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "from": self.source,
            "to": self.target,
            "reason": self.reason,
            "after_failures": self.after_failures,
        }


class Nodes:
    """Which node a sink uses and tries next, and the failovers between them."""

    def __init__(self, urls: Sequence[str], rand: Callable[[], float]) -> None:
        self._order = shuffled(urls, rand)
        self._next = 0  # where the next connection attempt starts
        self._connected = False  # a connection to node `_next` is open
        self._last_used: int | None = None  # the last node that took a connection
        self._leaving_reason = ""
        self._failovers: collections.deque[Failover] = collections.deque(maxlen=RECENT_FAILOVERS)
        self.failover_count = 0

    @property
    def in_use(self) -> str | None:
        return self._order[self._next] if self._connected else None

    def attempts(self) -> Iterator[tuple[int, str]]:
        """Every node once, from the one to try next: (its index, its URL)."""
        for step in range(len(self._order)):
            index = (self._next + step) % len(self._order)
            yield index, self._order[index]

    def connected(self, index: int, at: float, failures: int) -> Failover | None:
        """A connection to node `index` is open; the Failover if it replaces another node."""
        self._next, self._connected = index, True
        previous, self._last_used = self._last_used, index
        if previous is None or previous == index:
            return None
        failover = Failover(
            at,
            node_name(self._order[previous]),
            node_name(self._order[index]),
            self._leaving_reason or "the connection was closed",
            failures,
        )
        self._failovers.append(failover)
        self.failover_count += 1
        return failover

    def failed(self, reason: str) -> None:
        """The node in use (or the one last tried) failed: the next attempt starts at the
        node after it."""
        self._connected = False
        self._next = (self._next + 1) % len(self._order)
        self._leaving_reason = reason

    def released(self) -> None:
        """The connection was closed on purpose (the sink stops): no failure."""
        self._connected = False

    def to_json(self) -> dict[str, Any]:
        """For `shoectl outbox`: the nodes in this sink's order, the one in use, failovers."""
        return {
            "nodes": [node_name(url) for url in self._order],
            "in_use": node_name(self.in_use) if self.in_use is not None else None,
            "failovers": self.failover_count,
            "recent_failovers": [failover.to_json() for failover in self._failovers],
        }


class NodeLink(abc.ABC):
    """What a sink's link to one node at a time does the same whatever its client: a node
    that failed is left and its connection closed in the background (a dead or blocked node
    may never answer a close), so the next attempt goes to the next node at once."""

    def __init__(self, nodes: Nodes, log: Any, timeout_s: float) -> None:
        self.nodes = nodes
        self._log = log
        self._timeout_s = timeout_s
        self._closing: set[asyncio.Task[None]] = set()

    @abc.abstractmethod
    def _leave(self) -> None:
        """Forget the connection in use, closing it with `_close_later` (the client's own)."""

    def failed(self, reason: str) -> None:
        """The node in use failed (`reason`): leave it; the next attempt tries the next."""
        self.nodes.failed(reason)
        self._leave()

    def _close_later(self, connection: Any) -> None:
        task = asyncio.get_running_loop().create_task(self._close_quietly(connection))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close_quietly(self, connection: Any) -> None:
        try:
            await asyncio.wait_for(connection.close(), self._timeout_s)
        except Exception as error:  # a dead node's connection may fail to close: it is gone
            self._log.debug("delivery.close_failed", error=repr(error))

    async def close(self) -> None:
        """Close the connection (the sink stops) and wait for those still closing."""
        self.nodes.released()
        self._leave()
        if self._closing:  # each one takes its own failure (_close_quietly)
            await asyncio.gather(*self._closing)
