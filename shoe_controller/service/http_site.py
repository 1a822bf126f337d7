"""Serving an aiohttp application on host:port, for the daemon's small HTTP servers (the
scoreboard, the metrics): no signal handlers of its own, no access log, a short shutdown."""

from __future__ import annotations

from typing import Any

from aiohttp import web


async def serve(app: web.Application, host: str, port: int, **options: Any) -> web.AppRunner:
    """`app` listening on host:port; OSError (nothing left running) if the address is taken.
    `options` go to the AppRunner (e.g. handler_cancellation)."""
    runner = web.AppRunner(
        app, handle_signals=False, access_log=None, shutdown_timeout=1.0, **options
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, reuse_address=True).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner
