"""`MetricsServer`: the daemon's `/metrics` page for Prometheus, on `[metrics] listen` (aiohttp).

A server of its own, not the scoreboard's: the monitoring network and the display's are often
not the same, and either one runs without the other (docs/metrics.md). A scrape is answered
on the daemon's loop, between cards, from the live objects (service.metrics); GET only.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from aiohttp import web

from shoe_controller.service.config import listen_address
from shoe_controller.service.http_site import serve

log = structlog.get_logger("metrics")

Exposition = Callable[[str | None], tuple[bytes, str]]  # Accept header -> (body, content type)
INDEX = b"shoe-controller: Prometheus metrics at /metrics (docs/metrics.md)\n"


class MetricsServer:
    """`/metrics` on `listen`, from `exposition` (DaemonMetrics.exposition)."""

    def __init__(self, listen: str, exposition: Exposition) -> None:
        self.host, self.port = listen_address(listen)
        self._exposition = exposition
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    async def start(self) -> None:
        """Listen (OSError if the address is taken)."""
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/", self._index)
        self._runner = await serve(app, self.host, self.port)
        log.info("metrics", url=self.url)

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _metrics(self, request: web.Request) -> web.Response:
        body, content_type = self._exposition(request.headers.get("Accept"))
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(body=INDEX, content_type="text/plain")
