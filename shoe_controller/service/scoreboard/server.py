"""`ScoreboardServer`: the live scoreboard page, served by the daemon on its own asyncio loop
(aiohttp), read-only, its updates pushed to every browser as server-sent events.

What it costs the cards (a card is ACKed only after its commit, and everything here shares
that loop): the commit listener `on_stored` (the daemon calls it once the card's ACK has
gone) only keeps the events it is handed and arms a timer; `FLUSH_DELAY_S` later one task
folds every event that came meanwhile into the board (game.board), encodes one message
(stream.BoardStream) and writes those same bytes to every client. The journal is read once,
at start (scoreboard.history), never per event or per client. A client whose socket does not
keep up is dropped (its browser reconnects and redraws), never buffered without bound.

R15: the board is folded from journaled events only, which name no card before its reveal
(table.squeeze); no route takes an action (GET only).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import structlog
from aiohttp import web

from shoe_controller.game.board import Board
from shoe_controller.game.roads import RoadError
from shoe_controller.service.config import listen_address
from shoe_controller.service.http_site import serve
from shoe_controller.service.scoreboard.history import recent_events
from shoe_controller.service.scoreboard.stream import KEEPALIVE, RETRY_MS, BoardStream
from shoe_controller.store.journal import StoredEvent

log = structlog.get_logger("scoreboard")

FLUSH_DELAY_S = 0.005  # after a commit: past the card's ACK, and commits close together batch
KEEPALIVE_S = 15.0  # a comment line this often finds dead connections and keeps proxies open
MAX_CLIENTS = 64
MAX_BUFFERED = 1 << 20  # bytes a client may leave unread before it is dropped
HIGH_WATER = 4 << 20  # the socket's own limit: writes never wait on a slow reader (see _send)
# The kernel's share of what a client leaves unread, kept small so that a reader falling
# behind shows in the transport's buffer, where MAX_BUFFERED sees it (not autotuned to MBs).
SEND_BUFFER = 128 << 10
STATIC = {
    "/": ("index.html", "text/html"),
    "/board.css": ("board.css", "text/css"),
    "/board.js": ("board.js", "text/javascript"),
}


@dataclass(eq=False)
class _Client:
    response: web.StreamResponse
    transport: asyncio.Transport
    gone: asyncio.Event = field(default_factory=asyncio.Event)


class ScoreboardServer:
    """The page, its files and its event stream on `listen`; fed by the daemon's commits."""

    def __init__(
        self,
        listen: str,
        table_id: str,
        cards_in_shoe: int | None,
        journal: Any,
        *,
        flush_delay_s: float = FLUSH_DELAY_S,
        max_clients: int = MAX_CLIENTS,
        max_buffered: int = MAX_BUFFERED,
    ) -> None:
        self.host, self.port = listen_address(listen)
        self._journal = journal
        self._stream = BoardStream(Board(cards_in_shoe), table_id)
        self._flush_delay_s = flush_delay_s
        self._max_clients = max_clients
        self._max_buffered = max_buffered
        self._clients: set[_Client] = set()
        self._pending: list[StoredEvent] = []
        self._timer: asyncio.TimerHandle | None = None
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._runner: web.AppRunner | None = None
        self._files = {
            path: (resources.files(__package__).joinpath("static", name).read_bytes(), kind)
            for path, (name, kind) in STATIC.items()
        }
        self.dropped = 0  # clients dropped for not keeping up
        self.messages = 0  # messages fanned out

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def clients(self) -> int:
        return len(self._clients)

    @property
    def stream(self) -> BoardStream:
        return self._stream

    # ------------------------------------------------------------------ life cycle

    async def start(self) -> None:
        """Draw the board from the journal, then listen (OSError if the address is taken)."""
        self._fold(recent_events(self._journal))
        app = web.Application()
        for path in STATIC:
            app.router.add_get(path, self._file)
        app.router.add_get("/events", self._events)
        app.router.add_get("/board.json", self._board_json)
        app.router.add_get("/board.svg", self._board_svg)
        self._runner = await serve(app, self.host, self.port, handler_cancellation=True)
        self._tasks = [
            asyncio.create_task(self._broadcast(), name="scoreboard-broadcast"),
            asyncio.create_task(self._keep_alive(), name="scoreboard-keepalive"),
        ]
        log.info("scoreboard page", url=self.url, shoe=self._stream.board.shoe)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for client in list(self._clients):
            client.gone.set()  # each stream ends; its handler returns
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ------------------------------------------------------------------ events in

    def on_stored(self, stored: list[StoredEvent]) -> None:
        """The daemon's commit listener: keep the events, and come back once the card's ACK
        is on its way (nothing is read, encoded or written here)."""
        self._pending.extend(stored)
        if self._timer is None and stored:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._flush_delay_s, self._wake.set)

    def _fold(self, events: list[StoredEvent]) -> bytes | None:
        try:
            return self._stream.feed(events)
        except RoadError as error:  # a stored result the roads cannot take: say so, go on
            log.error("scoreboard cannot draw a round result", error=str(error))
            if events:
                self._stream.board.seq = max(self._stream.board.seq, events[-1].seq)
            return None

    async def _broadcast(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            self._timer = None
            events, self._pending = self._pending, []
            message = self._fold(events)
            if message is not None and self._clients:
                self.messages += 1
                await self._send_all(message)

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_S)
            await self._send_all(KEEPALIVE)

    async def _send_all(self, message: bytes) -> None:
        for client in list(self._clients):
            await self._send(client, message)

    async def _send(self, client: _Client, message: bytes) -> None:
        """Write to one client, or drop it: closed, or too far behind. The socket's high-water
        mark is far above the drop limit, so the write never waits on a slow reader."""
        transport = client.transport
        if transport.is_closing():
            self._drop(client)
            return
        if transport.get_write_buffer_size() > self._max_buffered:
            self.dropped += 1
            log.warning("scoreboard client too slow: dropped", peer=_peer(transport))
            transport.abort()
            self._drop(client)
            return
        try:
            await client.response.write(message)
        except (ConnectionError, RuntimeError):
            self._drop(client)

    def _drop(self, client: _Client) -> None:
        self._clients.discard(client)
        client.gone.set()

    # ------------------------------------------------------------------ routes

    async def _file(self, request: web.Request) -> web.Response:
        body, kind = self._files[request.path]
        return web.Response(
            body=body,
            content_type=kind,
            charset="utf-8",
            headers={
                "Cache-Control": "no-cache",
                "X-Content-Type-Options": "nosniff",
                # Nothing from anywhere else, ever (the table PC is offline anyway).
                "Content-Security-Policy": "default-src 'self'",
            },
        )

    async def _board_json(self, request: web.Request) -> web.Response:
        return web.Response(
            text=json.dumps(self._stream.board_json(), ensure_ascii=False),
            content_type="application/json",
            headers={"Cache-Control": "no-store"},
        )

    async def _board_svg(self, request: web.Request) -> web.Response:
        return web.Response(
            text=self._stream.board_svg(),
            content_type="image/svg+xml",
            headers={"Cache-Control": "no-store"},
        )

    async def _events(self, request: web.Request) -> web.StreamResponse:
        """The event stream: the whole board at once, then every change as it is stored."""
        transport = request.transport
        if transport is None:
            raise web.HTTPServiceUnavailable(text="connection closed")
        if len(self._clients) >= self._max_clients:
            raise web.HTTPServiceUnavailable(
                text=f"the scoreboard serves at most {self._max_clients} pages at once",
                headers={"Retry-After": "10"},
            )
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        await response.prepare(request)
        transport.set_write_buffer_limits(high=HIGH_WATER)
        client = _Client(response, transport)
        try:
            await response.write(f"retry: {RETRY_MS}\n\n".encode() + self._stream.snapshot())
        except (ConnectionError, RuntimeError):
            return response  # gone already
        self._clients.add(client)
        try:
            await client.gone.wait()
        finally:
            self._clients.discard(client)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await response.write_eof()
        return response


def _peer(transport: asyncio.Transport) -> str:
    peer = transport.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "?"
