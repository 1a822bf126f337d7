"""What the two broker sinks share, the exchange's (amqp.py) and the stream's (amqp_stream.py):
the nodes and the login to reach each, the routing key, each message's signed body, and the
sink's set-up and close (`BrokerSink`).

No client library here: each sink turns a `Login` into its client's keywords, and a signed
message into its client's message.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import ssl
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from yarl import URL

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.amqp_nodes import DEFAULT_PORTS, NodeLink, Nodes, node_urls, safe_url
from shoe_controller.delivery.sink import Backoff, Sink
from shoe_controller.delivery.tls import client_context
from shoe_controller.store.records import BacklogEvent

HEADER_SEQ = "X-Shoe-Seq"
_ROUTING_SAFE = str.maketrans({".": "_", "*": "_", "#": "_"})


def routing_key(table_id: str, event_type: str) -> str:
    """`table.<table id>.<event type>`."""
    # A table id with a dot would shift every binding's words: routing keys are dotted.
    return f"table.{table_id.translate(_ROUTING_SAFE)}.{event_type}"


class AmqpConfigError(ValueError):
    """A broker URL or credentials file that cannot be used; the message names it."""


@dataclasses.dataclass(frozen=True, slots=True)
class Login:
    """How to reach and log in to one node, whatever the client."""

    host: str
    port: int
    user: str
    password: str
    vhost: str
    tls: ssl.SSLContext | None  # None: a plain connection


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    """Which nodes, and how to sign. Holds file paths, never a secret."""

    schemes: ClassVar[tuple[str, str]]  # the plain one first, then the TLS one

    url: str  # <scheme>://user@host:port/vhost, a password in it allowed; a cluster's nodes
    # as its hosts (<scheme>://user@mq1:5672,mq2:5672,mq3:5672/vhost), or `urls`
    table_id: str
    controller_id: str
    key_file: Path  # the table's docs/spec-push-api.md key: signs each message
    password_file: Path | None = None  # the broker password, instead of one in the url
    ca_file: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    timeout_s: float = 10.0  # to connect, and for a window's confirms
    window: int = 200  # messages awaiting the broker's confirm at once
    backoff: Backoff = dataclasses.field(default_factory=Backoff)
    urls: tuple[str, ...] = ()  # a cluster's nodes, one URL each (then `url` is not used)

    def __post_init__(self) -> None:
        try:
            node_urls(self.url, self.urls, self.schemes)
        except ValueError as error:
            raise AmqpConfigError(str(error)) from None
        if not 1 <= self.window <= 10_000:
            raise AmqpConfigError("window must be 1..10000")

    def __str__(self) -> str:
        return ", ".join(safe_url(url) for url in self.urls) if self.urls else safe_url(self.url)

    @property
    def nodes(self) -> tuple[str, ...]:
        """Each node's URL (one for a single broker)."""
        return node_urls(self.url, self.urls, self.schemes)

    def routing_key(self, event_type: str) -> str:
        return routing_key(self.table_id, event_type)

    def login(self, node: str | None = None) -> Login:
        """How to reach `node` (default: the first): the password from its file, TLS from
        the files for the TLS scheme; AmqpConfigError when the password file cannot be read."""
        parts = URL(node if node is not None else self.nodes[0])
        password = parts.password or ""
        if self.password_file is not None:
            try:
                password = self.password_file.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as error:
                raise AmqpConfigError(f"password_file {self.password_file}: {error}") from None
        secure = parts.scheme == self.schemes[1]
        return Login(
            host=parts.host or "",
            port=parts.port or DEFAULT_PORTS[parts.scheme],
            user=parts.user or "guest",
            password=password or "guest",
            vhost=parts.path[1:] or "/",
            tls=client_context(self.ca_file, self.client_cert, self.client_key) if secure else None,
        )


def signed_message(
    key: pushapi.SigningKey, controller_id: str, at: float, item: BacklogEvent
) -> tuple[bytes, dict[str, Any]]:
    """An event's body, exactly as in docs/spec-push-api.md's `events` array, and the headers every
    broker message carries: this sink's seq, and the docs/spec-push-api.md signature of the body."""
    body = json.dumps(
        item.to_wire(), separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")
    signed = pushapi.signed_headers(key, controller_id, at, body)
    return body, {HEADER_SEQ: item.seq, **{name: signed[name] for name in pushapi.SIGNED_HEADERS}}


C = TypeVar("C", bound=BrokerConfig)
L = TypeVar("L", bound=NodeLink)


class BrokerSink(Sink, Generic[C, L]):
    """A sink to a broker's nodes: its signing key and login checked at start, the link that
    goes from node to node, a window of messages at once, and the link closed at the end."""

    def __init__(self, name: str, backlog: Any, config: C, **options: Any) -> None:
        super().__init__(name, backlog, backoff=config.backoff, **options)
        self._config = config
        self._key = pushapi.SigningKey.from_file(config.key_file)
        self._link = self._link_for(config, Nodes(config.nodes, self._rand))

    @abc.abstractmethod
    def _link_for(self, config: C, nodes: Nodes) -> L:
        """The client's link to `nodes`, once its login options are read (a password file
        that cannot be read refuses the sink at start)."""

    def _batch_size(self) -> int:
        return self._config.window

    async def _close(self) -> None:
        await self._link.close()  # each connection's close takes its own failure (NodeLink)
