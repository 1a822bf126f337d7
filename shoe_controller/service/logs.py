"""Log set-up: the journal's own protocol under systemd, JSON lines or colour elsewhere; nothing
secret, no card before its reveal.

Under systemd (stderr is the journal's stream: $JOURNAL_STREAM) or with `format = "journald"`,
each record goes to journald's native socket as one datagram: its syslog PRIORITY and
structured fields (TABLE, SHOE, ROUND, EVENT, CODE, and every other key upper-cased), so that
`journalctl -u shoe-controller -p warning` and `journalctl TABLE=07` work. Elsewhere JSON lines
(`json`) or readable colour on a terminal (`console`); `auto` picks.

In squeeze mode (R15) a card's identity must not reach the logs at info level before its
reveal: the redaction step drops card-bearing keys below debug, whatever the caller passed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import struct
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, TextIO

import structlog

from shoe_controller.service.config import LogSection

CARD_KEYS = frozenset({"card", "cards", "uid", "player", "banker", "first_card"})
SECRET_KEYS = frozenset({"key", "secret", "signature", "password", "token"})
JOURNAL_SOCKET = "/run/systemd/journal/socket"
IDENTIFIER = "shoe-controller"
# syslog priorities (journalctl -p): structlog's method names to their numbers
PRIORITIES = {"debug": 7, "info": 6, "warning": 4, "warn": 4, "error": 3, "exception": 3,
              "critical": 2}  # fmt: skip
# The keys that become journal fields of their own name (the rest upper-cased as they are).
RENAMED = {"type": "EVENT", "event": "MESSAGE", "round": "ROUND", "shoe": "SHOE"}
_NOT_A_FIELD = re.compile(r"[^A-Z0-9_]")


def _redactor(squeeze: bool) -> structlog.types.Processor:
    def redact(_: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        for key in SECRET_KEYS & event.keys():
            event[key] = "[redacted]"
        if squeeze and method != "debug":
            for key in CARD_KEYS & event.keys():
                event[key] = "[squeeze]"
        return event

    return redact


def journal_fields(method: str, event: Mapping[str, Any]) -> dict[str, str]:
    """A record as journal fields: PRIORITY, MESSAGE, SYSLOG_IDENTIFIER and one field a key
    (an event's `code` inside `data` becomes CODE as well)."""
    fields = {
        "PRIORITY": str(PRIORITIES.get(method, 6)),
        "SYSLOG_IDENTIFIER": IDENTIFIER,
    }
    for key, value in event.items():
        if key in ("level", "timestamp"):
            continue  # the journal has its own
        name = RENAMED.get(key) or _NOT_A_FIELD.sub("_", key.upper()).lstrip("_") or "FIELD"
        fields[name] = value if isinstance(value, str) else json.dumps(value, default=str)
    data = event.get("data")
    if isinstance(data, Mapping) and "code" in data and "CODE" not in fields:
        fields["CODE"] = str(data["code"])
    return fields


def journal_datagram(fields: Mapping[str, str]) -> bytes:
    """The native protocol: KEY=value lines; a value with a newline in the binary form."""
    out = bytearray()
    for name, value in fields.items():
        raw = value.encode("utf-8", "replace")
        if b"\n" in raw:
            out += name.encode() + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n"
        else:
            out += name.encode() + b"=" + raw + b"\n"
    return bytes(out)


class JournalLogger:
    """Sends each record to journald's socket; a record the journal cannot take at once (no
    socket, or its queue full) goes to the fallback stream as a JSON line, never lost."""

    def __init__(self, path: str, fallback: TextIO) -> None:
        self._path = path
        self._fallback = fallback
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        # Never wait for the journal: a full socket must not stop the table's loop.
        self._sock.setblocking(False)

    def _send(self, message: tuple[str, dict[str, str]]) -> None:
        method, fields = message
        try:
            self._sock.sendto(journal_datagram(fields), self._path)
        except OSError:
            print(json.dumps({"level": method, **fields}), file=self._fallback, flush=True)

    msg = debug = info = warning = warn = error = critical = exception = fatal = _send


def _journal_renderer(_: Any, method: str, event: MutableMapping[str, Any]) -> Any:
    return ((method, journal_fields(method, event)),), {}


def under_journald(stream: TextIO) -> bool:
    """systemd connected this stream to the journal ($JOURNAL_STREAM names its device:inode)."""
    named = os.environ.get("JOURNAL_STREAM", "")
    try:
        device, inode = (int(part) for part in named.split(":"))
        info = os.fstat(stream.fileno())
    except (ValueError, OSError, AttributeError):
        return False
    return (info.st_dev, info.st_ino) == (device, inode)


def configure(
    *,
    format: str = "auto",
    level: str = "info",
    squeeze: bool = False,
    stream: TextIO | None = None,
    journal_socket: str = JOURNAL_SOCKET,
    table: str | None = None,
) -> None:
    """Set structlog up for this process (the daemon's entry point, and SIGHUP)."""
    stream = stream or sys.stderr
    journald = format == "journald" or (format == "auto" and under_journald(stream))
    console = not journald and (format == "console" or (format == "auto" and stream.isatty()))
    if journald:
        renderer: structlog.types.Processor = _journal_renderer
        factory: Any = lambda *_: JournalLogger(journal_socket, stream)  # noqa: E731
    else:
        renderer = (
            structlog.dev.ConsoleRenderer(colors=stream.isatty())
            if console
            else structlog.processors.JSONRenderer()
        )
        factory = structlog.PrintLoggerFactory(stream)
    structlog.contextvars.clear_contextvars()
    if table is not None:
        structlog.contextvars.bind_contextvars(table=table)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _redactor(squeeze),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )


def apply(settings: LogSection, *, squeeze: bool, table: str) -> None:
    """`configure` with the [log] section: the daemon's start and its SIGHUP."""
    configure(
        format=settings.format,
        level=settings.level,
        squeeze=squeeze,
        journal_socket=settings.journal_socket,
        table=table,
    )
