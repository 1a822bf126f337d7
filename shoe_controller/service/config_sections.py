"""The configuration's sections: one frozen dataclass each, whose fields are the section's keys
and whose `__post_init__` checks each value by itself (ValueError says what is wrong), and the
value checks they share (`listen_address`, `url_problem`).

Read them through service.config, which builds them from the TOML file and names the key at
fault (ConfigError); config/shoe-controller.toml documents every key.
"""

from __future__ import annotations

import math
import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import Literal

from shoe_controller.delivery.amqp_nodes import AMQP, STREAM, node_urls
from shoe_controller.delivery.routing import HTTP_EXCLUDES_BY_DEFAULT, EventFilter, pattern_problem
from shoe_controller.store.schema import LEGACY_SINK

_ID = r"[A-Za-z0-9_.-]{1,64}"  # table and controller ids: URL path, header and event id safe
SOCKET_PATH_MAX = 107  # bytes: a Unix socket's sun_path holds 108 with the closing NUL
BAUD_MIN, BAUD_MAX = 50, 12_000_000  # POSIX's lowest rate; the fastest USB serial chips
TIMEOUT_MAX_S = 3600.0
_AMQP_URL = "amqp://127.0.0.1:5672/"  # an amqp sink's url by default
_STREAM_URL = "rabbitmq-stream://127.0.0.1:5552/"  # an amqp-stream sink's


@dataclass(frozen=True)
class TableSection:
    """[table]: which table this is; the procedures' own settings go to TableConfig."""

    id: str = "01"
    controller_id: str = ""  # default: "tbl-{id}-shoe"

    def __post_init__(self) -> None:
        if not re.fullmatch(_ID, self.id):
            raise ValueError("id must be 1-64 letters, digits, '.', '_' or '-'")
        # It goes into an HTTP header and into every event id ("{controller_id}:{seq}"):
        # a space, a colon or a non-ASCII letter would fail or confuse every delivery.
        if self.controller_id and not re.fullmatch(_ID, self.controller_id):
            raise ValueError("controller_id must be 1-64 letters, digits, '.', '_' or '-'")


@dataclass(frozen=True)
class DeviceSection:
    """[scanner] and [shuffler]: how to reach a device, by serial URL or by USB id."""

    protocol: Literal["slp", "beetek", "linecode"] = "slp"
    port: str = ""  # a pyserial URL or device path
    usb: str = ""  # "VID:PID" in hex, instead of port
    usb_serial: str = ""  # which one, when several devices share VID:PID
    baud: int = 0  # 0: the protocol's default (115200 for slp, 9600 for the ASCII ones)
    kind: Literal["rfid", "optical", "shuffler", "shuffler_dealer"] = "optical"
    registry: str = ""  # RFID deck registry directory (kind = "rfid")

    def __post_init__(self) -> None:
        if bool(self.port) == bool(self.usb):
            raise ValueError("give exactly one of port (a serial URL) or usb (VID:PID)")
        if self.usb and not re.fullmatch(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}", self.usb):
            raise ValueError(f"usb must be VID:PID in hex, like 1d50:6018, got {self.usb!r}")
        if self.usb and self.protocol != "slp":
            raise ValueError("USB devices speak protocol 'slp' only")
        if self.kind == "rfid" and not self.registry:
            raise ValueError("an RFID scanner needs registry = the deck registry directory")
        # pyserial fails on a rate outside this when the port opens (OverflowError above
        # 2**31): that would be a device task dying at every restart, not a clear refusal.
        if self.baud != 0 and not BAUD_MIN <= self.baud <= BAUD_MAX:
            raise ValueError(
                f"baud must be 0 (the protocol's default) or {BAUD_MIN} to {BAUD_MAX}, "
                f"got {self.baud}"
            )

    @property
    def baud_rate(self) -> int:
        return self.baud or (115200 if self.protocol == "slp" else 9600)


@dataclass(frozen=True)
class SinkKeys:
    """The keys of every kind of sink: its name (its mark in the journal) and which event
    types it takes (delivery/routing.py: patterns like "round.*")."""

    name: str = ""
    events: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()

    def event_filter(self) -> EventFilter:
        return EventFilter(self.events, self.exclude)

    @property
    def label(self) -> str:
        """How messages name the sink's section: `sink NAME`, `server` for [server]."""
        return "server" if self.name == LEGACY_SINK else f"sink {self.name}"


@dataclass(frozen=True)
class ServerSection(SinkKeys):
    """[server], or a [[sink]] of kind "http": a table server the events go to
    (docs/spec-push-api.md).
    By default it gets every event but surveillance's (docs/delivery.md)."""

    name: str = LEGACY_SINK
    url: str = "http://127.0.0.1:8700"
    key_file: str = "/etc/shoe-controller/table.key"
    ca_file: str = ""
    client_cert: str = ""
    client_key: str = ""
    timeout: float = 10.0
    exclude: tuple[str, ...] = HTTP_EXCLUDES_BY_DEFAULT

    def __post_init__(self) -> None:
        problem = url_problem(self.url)
        if problem:
            raise ValueError(f"url {self.url!r}: {problem}")
        _check_sink(self)


@dataclass(frozen=True)
class BrokerKeys(SinkKeys):
    """The keys a broker sink takes alike for an exchange and a stream (docs/amqp.md)."""

    url: str = ""  # each kind's own default; several nodes as its hosts
    urls: tuple[str, ...] = ()  # a cluster's nodes, one URL each, instead of url (docs/amqp.md)
    password_file: str = ""
    # signs each message as docs/spec-push-api.md does
    key_file: str = "/etc/shoe-controller/table.key"
    ca_file: str = ""
    client_cert: str = ""
    client_key: str = ""
    timeout: float = 10.0
    window: int = 200  # messages awaiting the broker's confirm at once

    def _check_broker(self, default_url: str, schemes: tuple[str, ...]) -> None:
        if self.urls and self.url != default_url:
            raise ValueError("give url or urls, not both (url may list several hosts)")
        node_urls(
            self.url, self.urls, schemes
        )  # ValueError: which URL is wrong, without its password
        if not 1 <= self.window <= 10_000:
            raise ValueError("window must be 1 to 10000")
        _check_sink(self)


def _check_name(key: str, value: str) -> None:
    """An exchange's or a stream's name, as RabbitMQ takes it."""
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,255}", value):
        raise ValueError(f"{key} must be 1-255 letters, digits, '.', '_', ':' or '-'")


@dataclass(frozen=True)
class AmqpSinkSection(BrokerKeys):
    """A [[sink]] of kind "amqp": a message broker's topic exchange (docs/amqp.md)."""

    name: str = "broker"
    url: str = _AMQP_URL  # amqps:// for TLS; a password here or in password_file
    exchange: str = "shoe.events"

    def __post_init__(self) -> None:
        self._check_broker(_AMQP_URL, AMQP)
        _check_name("exchange", self.exchange)


@dataclass(frozen=True)
class StreamSinkSection(BrokerKeys):
    """A [[sink]] of kind "amqp-stream": a RabbitMQ stream, which drops a republished
    duplicate itself (docs/amqp.md "A queue or a stream")."""

    name: str = "stream"
    url: str = _STREAM_URL  # rabbitmq-stream+tls:// for TLS
    stream: str = "shoe.events"  # declared when missing (give it a retention yourself)

    def __post_init__(self) -> None:
        self._check_broker(_STREAM_URL, STREAM)
        _check_name("stream", self.stream)


SinkSection = ServerSection | AmqpSinkSection | StreamSinkSection
SINK_KINDS: dict[str, type[SinkSection]] = {
    "http": ServerSection,
    "amqp": AmqpSinkSection,
    "amqp-stream": StreamSinkSection,
}


def _check_sink(sink: SinkSection) -> None:
    """What every kind of sink asks of its keys."""
    if not re.fullmatch(_ID, sink.name):
        raise ValueError("name must be 1-64 letters, digits, '.', '_' or '-'")
    for key in ("events", "exclude"):
        for pattern in getattr(sink, key):
            problem = pattern_problem(pattern)
            if problem:
                raise ValueError(f"{key}: {problem}")
    if bool(sink.client_cert) != bool(sink.client_key):
        raise ValueError("client_cert and client_key go together")
    if not 0 < sink.timeout <= TIMEOUT_MAX_S:  # TOML has nan and inf: neither is a timeout
        raise ValueError(
            f"timeout must be a finite number of seconds above 0 and at most {TIMEOUT_MAX_S:g}"
        )


CHECKPOINT_EVERY_S = (10.0, 3600.0)  # [journal] checkpoint_every_s: its range


@dataclass(frozen=True)
class JournalSection:
    """[journal]: where inputs and events are kept, and for how long once delivered."""

    path: str = "/var/lib/shoe-controller/journal.db"
    retention_days: int = 90
    min_free_mb: int = 256  # below this free on its disk the table is held (docs/delivery.md)
    # The signed checkpoints (docs/journal.md "Checkpoints"): the Ed25519 key (absent: none
    # are taken, and the log says so at every start) and how often while the table deals.
    checkpoint_key: str = "/etc/shoe-controller/checkpoint.key"
    checkpoint_every_s: float = 300.0

    def __post_init__(self) -> None:
        if self.retention_days < 1:
            raise ValueError("retention_days must be 1 or more")
        if self.min_free_mb < 1:
            raise ValueError("min_free_mb must be 1 or more")
        low, high = CHECKPOINT_EVERY_S
        if not low <= self.checkpoint_every_s <= high:  # nan fails too
            raise ValueError(f"checkpoint_every_s must be {low:g} to {high:g} seconds")


@dataclass(frozen=True)
class ControlSection:
    """[control]: the socket shoectl talks to, who may look and act, and how many may."""

    socket: str = "/run/shoe-controller/control.sock"
    supervisor_group: str = "shoe-supervisors"
    viewer_group: str = "shoe-viewers"  # the socket's group: members (and supervisors) look
    max_connections: int = 64  # in all; root has a few more, so that it always gets in
    max_connections_per_user: int = 8
    idle_timeout_s: float = 300.0  # a connection that asks nothing this long is closed
    # The requests that read the journal are answered by a reader process: an
    # answer longer than this is refused `too_large`, one not built in this time `too_slow`.
    max_answer_bytes: int = 8 * 1024 * 1024
    answer_time_limit_s: float = 10.0

    def __post_init__(self) -> None:
        # Longer, and binding fails once the daemon runs: it would run without shoectl.
        if len(os.fsencode(self.socket)) > SOCKET_PATH_MAX:
            raise ValueError(
                f"socket {self.socket!r} has {len(os.fsencode(self.socket))} bytes; a Unix "
                f"socket's path may have at most {SOCKET_PATH_MAX}"
            )
        if not 1 <= self.max_connections <= 1000:
            raise ValueError("max_connections must be 1 to 1000")
        if not 1 <= self.max_connections_per_user <= self.max_connections:
            raise ValueError("max_connections_per_user must be 1 to max_connections")
        if not 1 <= self.idle_timeout_s < math.inf:
            raise ValueError("idle_timeout_s must be a finite number of seconds, 1 or more")
        if not 1024 <= self.max_answer_bytes <= 1024**3:
            raise ValueError("max_answer_bytes must be 1024 to 1073741824 (1 GiB)")
        if not 0.1 <= self.answer_time_limit_s <= TIMEOUT_MAX_S:
            raise ValueError(f"answer_time_limit_s must be 0.1 to {TIMEOUT_MAX_S:g} seconds")


@dataclass(frozen=True)
class LogSection:
    """[log]: the journal's own protocol under systemd, JSON lines or readable colour
    elsewhere ("auto" picks; docs/install.md "Logs")."""

    format: Literal["auto", "journald", "json", "console"] = "auto"
    level: Literal["debug", "info", "warning", "error"] = "info"
    journal_socket: str = "/run/systemd/journal/socket"  # journald's native socket


@dataclass(frozen=True)
class HealthSection:
    """[health]: when delivery and the device links count as degraded (WARNING) or stopped
    (CRITICAL); docs/control.md "What counts as a problem"."""

    backlog_warning_s: float = 60.0
    backlog_critical_s: float = 300.0
    link_errors_per_minute: float = 20.0  # retransmits or CRC errors on one device link

    def __post_init__(self) -> None:
        for name in ("backlog_warning_s", "backlog_critical_s", "link_errors_per_minute"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number above 0")
        if self.backlog_critical_s < self.backlog_warning_s:
            raise ValueError("backlog_critical_s must be at least backlog_warning_s")


@dataclass(frozen=True)
class ScoreboardSection:
    """[scoreboard]: the live scoreboard page (docs/scoreboard.md); off while listen is empty."""

    listen: str = ""  # host:port, e.g. "127.0.0.1:8080"; an address beyond loopback is a choice

    def __post_init__(self) -> None:
        if self.listen:
            listen_address(self.listen)


@dataclass(frozen=True)
class MetricsSection:
    """[metrics]: Prometheus metrics on http://listen/metrics (docs/metrics.md); off while
    listen is empty."""

    listen: str = ""  # host:port, e.g. "127.0.0.1:9720"; not the scoreboard's address

    def __post_init__(self) -> None:
        if self.listen:
            listen_address(self.listen)


@dataclass(frozen=True)
class ApiSection:
    """[api]: the daemon's inbound API, where the table server says bets are open or closed and
    dealers sign in (docs/inbound-api.md); signed with the table's key as docs/spec-push-api.md
    signs,
    over TLS when tls_cert is set; off while listen is empty."""

    listen: str = ""  # host:port, e.g. "0.0.0.0:8710"; not the scoreboard's or the metrics'
    key_file: str = "/etc/shoe-controller/table.key"  # the table's key, as [server]'s
    tls_cert: str = ""  # PEM certificate chain: https instead of http
    tls_key: str = ""
    client_ca: str = ""  # CA file: only clients with a certificate it signed (mutual TLS)
    window_s: int = 300  # a timestamp further than this from the daemon's clock is refused

    def __post_init__(self) -> None:
        if self.listen:
            listen_address(self.listen)
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("tls_cert and tls_key go together")
        if self.client_ca and not self.tls_cert:
            raise ValueError("client_ca needs tls_cert and tls_key (mutual TLS is over TLS)")
        if not 30 <= self.window_s <= 3600:
            raise ValueError("window_s must be 30 to 3600 seconds")


@dataclass(frozen=True)
class SurveillanceSection:
    """[surveillance]: who sees the edge of every bet on the cards left (`shoectl edge`, the
    surveillance events) and may report it, and the edge that raises an event
    (docs/surveillance.md)."""

    group: str = "shoe-surveillance"  # members (and root, and the daemon's user) see and report
    threshold: float = 0.0  # a bet's player edge above this raises surveillance.edge

    def __post_init__(self) -> None:
        # -1 would be a bet that loses every stake: every bet is above it, nothing is news.
        if not math.isfinite(self.threshold) or not -1 < self.threshold < 1:
            raise ValueError("threshold must be a player edge above -1 and below 1 (0.01: 1 %)")


def listen_address(listen: str) -> tuple[str, int]:
    """`host:port` (`[::1]:8080` for IPv6) as (host, port); ValueError says what is wrong."""
    host, sep, port = listen.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"listen {listen!r}: an IPv6 address goes in brackets, like [::1]:8080")
    if not sep or not re.fullmatch(r"[A-Za-z0-9.:_-]{1,253}", host):
        raise ValueError(f"listen must be host:port, like 127.0.0.1:8080, got {listen!r}")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"listen {listen!r}: the port must be a number from 1 to 65535")
    return host, int(port)


def url_problem(url: str) -> str | None:
    """Why `url` is not an http:// or https:// base URL a table server's sink can use, or None.

    The sink appends docs/spec-push-api.md's paths to it, so a query or fragment would end up in
    the middle of every request; a user or password in it would show in every log line that
    names the server (the key file is the table's secret).
    """
    scheme, sep, _ = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or re.search(r"\s", url):
        return "must be an http:// or https:// base URL"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as error:  # "Invalid IPv6 URL" for an unclosed [
        return f"is not a URL ({error})"
    try:
        port = parts.port  # ValueError for a port out of 0-65535 or not a number
    except ValueError:
        port = 0
    if port == 0:
        return "the port must be a number from 1 to 65535"
    if not parts.hostname:
        return "names no host"
    if parts.username is not None or parts.password is not None:
        return "must not hold a user or password (key_file holds the table's secret)"
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return "a base URL has no ?query or #fragment"
    return None
