"""Serving an aiohttp application on host:port, for the daemon's small HTTP servers (the
scoreboard, the metrics, the inbound API): no signal handlers of its own, no access log, a
short shutdown."""

from __future__ import annotations

import ssl
from typing import Any

from aiohttp import web


async def serve(
    app: web.Application,
    host: str,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    **options: Any,
) -> web.AppRunner:
    """`app` listening on host:port (over TLS with `ssl_context`); OSError (nothing left
    running) if the address is taken. `options` go to the AppRunner (e.g.
    handler_cancellation)."""
    runner = web.AppRunner(
        app, handle_signals=False, access_log=None, shutdown_timeout=1.0, **options
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True, ssl_context=ssl_context)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner
