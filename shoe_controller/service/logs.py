"""Log set-up: JSON lines under systemd, readable colour on a terminal, nothing secret or early.

In squeeze mode (R15) a card's identity must not reach the logs at info level before its
reveal: the redaction step drops card-bearing keys below debug, whatever the caller passed.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

CARD_KEYS = frozenset({"card", "cards", "uid", "player", "banker", "first_card"})
SECRET_KEYS = frozenset({"key", "secret", "signature", "password", "token"})


def _redactor(squeeze: bool) -> structlog.types.Processor:
    def redact(_: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        for key in SECRET_KEYS & event.keys():
            event[key] = "[redacted]"
        if squeeze and method != "debug":
            for key in CARD_KEYS & event.keys():
                event[key] = "[squeeze]"
        return event

    return redact


def configure(
    *,
    format: str = "auto",
    level: str = "info",
    squeeze: bool = False,
    stream: TextIO | None = None,
) -> None:
    """Set structlog up for this process (called once by the daemon's entry point)."""
    stream = stream or sys.stderr
    console = format == "console" or (format == "auto" and stream.isatty())
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=stream.isatty())
        if console
        else structlog.processors.JSONRenderer()
    )
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
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )
