"""The servers beside the table: the control socket, the live scoreboard page, /metrics and the
inbound API, each started and stopped here for the daemon (service/daemon.py).

The table runs without any of them rather than not at all: one that cannot start is logged
(and the control socket's fault said in systemd's status line), never raised. A server that
follows the commits is handed the daemon's listeners, to join while it serves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import structlog

from shoe_controller.service.config import Config
from shoe_controller.service.control import ControlError, ControlServer, ControlService
from shoe_controller.store.journal import JournalError, StoredEvent
from shoe_controller.table.config import SHUFFLER_DEALER

log = structlog.get_logger("daemon")

Listeners = list[Callable[[list[StoredEvent]], None]]


async def serve_control(
    config: Config, service: ControlService
) -> tuple[ControlServer, str | None]:
    """The control socket for shoectl, and why it is not available (None: it is)."""
    control = ControlServer(config.control.socket, service, config.control)
    try:
        await control.start()
    except (ControlError, OSError) as error:
        log.error("control socket not available", socket=config.control.socket,
                  error=str(error))  # fmt: skip
        return control, str(error)
    return control, None


async def serve_scoreboard(config: Config, journal: Any, listeners: Listeners) -> Any:
    """The live scoreboard page, if [scoreboard] listen is set (docs/scoreboard.md)."""
    listen = config.scoreboard.listen
    if not listen:
        return None
    # aiohttp is loaded only by a daemon that serves the page.
    from shoe_controller.service.scoreboard.server import ScoreboardServer  # noqa: PLC0415

    procedures = config.procedures
    scoreboard = ScoreboardServer(
        listen,
        config.table.id,
        None if procedures.mode == SHUFFLER_DEALER else procedures.cards_in_shoe,
        journal.reads,
    )
    listeners.append(scoreboard.on_stored)
    try:
        await scoreboard.start()
    except (OSError, JournalError) as error:
        listeners.remove(scoreboard.on_stored)
        log.error("scoreboard page not available", listen=listen, error=str(error))
        return None
    return scoreboard


async def serve_metrics(config: Config, metrics: Any, listeners: Listeners) -> Any:
    """/metrics on [metrics] listen (docs/metrics.md), for the daemon's collector (None: none)."""
    if metrics is None:
        return None
    from shoe_controller.service.metrics_http import MetricsServer  # noqa: PLC0415

    listen = config.metrics.listen
    server = MetricsServer(listen, metrics.exposition)
    listeners.append(metrics.on_stored)
    try:
        await server.start()
    except OSError as error:
        log.error("metrics not available", listen=listen, error=str(error))
        return None
    return server


async def close_all(servers: Iterable[Any]) -> None:
    """Stop each server that was started (None: it was not)."""
    for server in servers:
        if server is not None:
            await server.close()
