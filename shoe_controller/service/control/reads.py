"""The control socket's requests that read the journal, answered away from the daemon's loop:
queued fairly, built by a reader process (reader.py) on a read-only connection of its own,
written back to each client in pieces, bounded in size and in time (docs/control.md
"Requests that read the journal").

On the loop, each costs what it must: the request's line parsed, what the live objects say of
it (journal_answers.Live: memory only), a frame to the reader, and the answer's bytes handed
to the client's socket 64 KiB a turn as they come. A process, not a thread: a thread building
answers holds the interpreter's lock the card's ACK needs (up to its 5 ms switch interval a
time; docs/performance.md measures both). WAL lets the reader read beside the writer.

Fairness: one request at a time in the reader, taken user by user in turn (a user's
connections in turn among themselves), and a connection's next request is read only once its
answer is written: one user's flood cannot starve another's, and each connection's answers
come in order. All of them together take at most READER_SHARE of the time: after an answer
that took t, the next request goes to the reader (1 / READER_SHARE - 1) t later (at most
READER_PAUSE_MAX_S), so that a flood of looks leaves the table's CPU (two cores on a table
PC) and the loop to the cards.
An answer the reader has not built within `[control] answer_time_limit_s` is
answered `too_slow` and the reader killed (started again for the next request); one longer
than `[control] max_answer_bytes` is answered `too_large` (reader.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import structlog

import shoe_controller
from shoe_controller.service.config import ControlSection
from shoe_controller.service.control import journal_answers
from shoe_controller.service.control.reader_link import ANSWER, READY, ReaderSettings, frame
from shoe_controller.service.control.service import ControlService
from shoe_controller.service.control.wire import encode, error_answer
from shoe_controller.service.peers import Peer

log = structlog.get_logger("control")

PIECE = 64 * 1024  # bytes of an answer handed to its client's socket per turn of the loop
READER_MODULE = "shoe_controller.service.control.reader"
READER_START_S = 60.0  # a reader not ready this long after its start is killed
READER_IDLE_S = 300.0  # a reader asked nothing this long is stopped (started again if asked)
READER_SHARE = 0.25  # of the time at most, the reader builds answers while requests wait
READER_PAUSE_MAX_S = 1.0  # ... but no request waits longer than this for the share's sake


class ReaderLostError(Exception):
    """The reader process went away before its answer was whole."""


@dataclasses.dataclass(eq=False)
class _Asked:
    """A request waiting for, or being given, its answer."""

    request: dict[str, Any]
    peer: Peer
    writer: asyncio.StreamWriter
    done: asyncio.Future[None]  # the connection waits on it (cancelled: the connection went)
    number: int = 0


class _ReaderLink(asyncio.BufferedProtocol):
    """The daemon's end of the reader's socket: each answer's header, then its bytes, handed
    to the asking client's socket piece by piece as they come."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self._buffer = memoryview(bytearray(PIECE))
        self._header = bytearray()
        self._left = 0  # bytes of the answer still to come, once its header came
        self._asked: _Asked | None = None
        self.transport: asyncio.Transport | None = None
        self.ready: asyncio.Future[None] = loop.create_future()
        self.began: asyncio.Future[None] = loop.create_future()  # the answer's header came
        self.ended: asyncio.Future[None] = loop.create_future()  # ... and all of its bytes
        self.lost: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.ready, self.began, self.ended, self.lost):
            if not future.done():
                future.set_exception(ReaderLostError(str(exc or "its socket closed")))
        for future in (self.ready, self.began, self.ended, self.lost):
            if not future.cancelled():
                future.exception()  # retrieved: nobody may be waiting on each of them

    def ask(self, asked: _Asked, message: bytes) -> None:
        loop = asyncio.get_running_loop()
        self._asked = asked
        self.began, self.ended = loop.create_future(), loop.create_future()
        assert self.transport is not None
        self.transport.write(message)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        data = self._buffer[:nbytes]
        while data:
            if not self._left:
                need = ANSWER.size - len(self._header)
                self._header += data[:need]
                data = data[need:]
                if len(self._header) == ANSWER.size:
                    self._headed(bytes(self._header))
                    self._header.clear()
                continue
            piece, data = data[: self._left], data[self._left :]
            self._left -= len(piece)
            asked = self._asked
            assert asked is not None
            if not asked.writer.transport.is_closing():  # the client may have gone
                asked.writer.transport.write(bytes(piece))
            if not self._left:
                self._asked = None
                self.ended.set_result(None)

    def _headed(self, header: bytes) -> None:
        if header == READY and not self.ready.done():
            self.ready.set_result(None)
            return
        number, length = ANSWER.unpack(header)
        asked = self._asked
        if asked is None or number != asked.number or not length or self.began.done():
            log.error("the control reader answered out of turn", number=number)
            assert self.transport is not None
            self.transport.abort()
            return
        self._left = length
        self.began.set_result(None)


@dataclasses.dataclass
class _Reader:
    process: asyncio.subprocess.Process
    link: _ReaderLink


class ReadQueries:
    """Answers the journal's requests of every connection through one reader process."""

    def __init__(self, service: ControlService, settings: ControlSection) -> None:
        self._service = service
        self._time_limit = settings.answer_time_limit_s
        journal = service.journal
        self._settings = ReaderSettings(
            str(Path(journal.path).resolve()),
            journal.controller_id,
            service.config,
            settings.max_answer_bytes,
        )
        self._waiting: dict[int, deque[_Asked]] = {}  # by uid, in turn: the next one first
        self._serving: asyncio.Task[None] | None = None
        self._reader: _Reader | None = None
        self._asked = 0  # requests numbered as sent
        self._in_hand: _Asked | None = None  # the one the reader builds now
        self._idle: asyncio.TimerHandle | None = None
        self._stopping: set[asyncio.Task[None]] = set()

    @staticmethod
    def takes(request: dict[str, Any]) -> bool:
        """True for the requests answered here (the journal's; `events --follow` is not)."""
        return request.get("cmd") in journal_answers.COMMANDS and not (
            request.get("cmd") == "events" and request.get("follow")
        )

    @property
    def waiting(self) -> int:
        """How many requests wait for their turn (the one being answered not counted)."""
        return sum(len(waiting) for waiting in self._waiting.values())

    @property
    def answering(self) -> bool:
        """True while the reader builds an answer."""
        return self._in_hand is not None

    async def answer(
        self, request: dict[str, Any], peer: Peer, writer: asyncio.StreamWriter
    ) -> None:
        """Queue `request` and return once its answer is handed to `writer` whole (the
        caller drains it; a connection asks its next request after that, so in order)."""
        done = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(peer.uid, deque()).append(_Asked(request, peer, writer, done))
        if self._serving is None or self._serving.done():
            self._serving = asyncio.create_task(self._serve(), name="control-reads")
        await done

    async def close(self) -> None:
        """Stop answering; the reader process ends."""
        if self._serving is not None:
            self._serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._serving
        for waiting in self._waiting.values():
            for asked in waiting:
                asked.done.cancel()
        self._waiting.clear()
        if self._idle is not None:
            self._idle.cancel()
        await self._stop_reader()
        await asyncio.gather(*self._stopping, return_exceptions=True)

    # ------------------------------------------------------------------ the queue

    def _next(self) -> _Asked | None:
        """The next user's first request; that user goes to the end of the turn."""
        while self._waiting:
            uid = next(iter(self._waiting))
            waiting = self._waiting.pop(uid)
            asked = waiting.popleft()
            if waiting:
                self._waiting[uid] = waiting
            if not asked.done.done():  # else its connection went while it waited
                return asked
        return None

    async def _serve(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        while (asked := self._next()) is not None:
            self._in_hand = asked
            began = time.monotonic()
            try:
                await self._answer_one(asked)
            except Exception as error:  # this request fails; the others are answered
                log.exception("control read failed", cmd=asked.request.get("cmd"))
                self._fail(asked, "internal", f"the controller failed on this request: {error!r}")
            finally:
                self._in_hand = None
            if self._waiting:  # a flood: the reader's share of the time is kept
                took = time.monotonic() - began
                await asyncio.sleep(min(READER_PAUSE_MAX_S, took * (1 / READER_SHARE - 1)))
        self._idle = asyncio.get_running_loop().call_later(READER_IDLE_S, self._stop_idle)

    async def _answer_one(self, asked: _Asked) -> None:
        command = asked.request.get("cmd")
        try:
            link = await self._link()
        except (OSError, ReaderLostError, TimeoutError) as error:
            log.error("control reader cannot start", error=repr(error))
            self._fail(asked, "internal", f"the controller's reader cannot start: {error!r}")
            return
        self._asked += 1
        asked.number = self._asked
        live = self._service.live(command)
        hidden = self._service.surveillance.hides_events(asked.peer, command)
        link.ask(asked, frame((asked.number, asked.request, live, hidden)))
        try:
            await asyncio.wait_for(asyncio.shield(link.began), self._time_limit)
        except TimeoutError:
            log.warning("control request too slow: reader stopped", cmd=command,
                        limit_s=self._time_limit)  # fmt: skip
            await self._stop_reader(kill=True)
            self._fail(
                asked,
                "too_slow",
                f"the answer took more than {self._time_limit:g} s to build"
                " ([control] answer_time_limit_s): ask for less",
            )
            return
        except ReaderLostError as error:
            await self._stop_reader(kill=True)
            self._fail(asked, "internal", f"the controller's reader stopped: {error}")
            return
        try:
            await asyncio.shield(link.ended)
        except ReaderLostError:  # half an answer written: the client's line cannot be mended
            await self._stop_reader(kill=True)
            asked.writer.transport.abort()
        if not asked.done.done():
            asked.done.set_result(None)

    def _fail(self, asked: _Asked, code: str, text: str) -> None:
        """Answer `asked` with an error of our own (nothing of the reader's was written)."""
        if not asked.writer.transport.is_closing():
            asked.writer.write(encode(error_answer(code, text, asked.request.get("cmd"))))
        if not asked.done.done():
            asked.done.set_result(None)

    # ------------------------------------------------------------------ the reader process

    async def _link(self) -> _ReaderLink:
        reader = self._reader
        if reader is not None and not reader.link.lost.done():
            return reader.link
        if reader is not None:
            await self._stop_reader(kill=True)
        ours, theirs = socket.socketpair()
        try:
            with theirs:
                process = await asyncio.create_subprocess_exec(
                    sys.executable, "-P", "-m", READER_MODULE, str(theirs.fileno()),
                    pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=_reader_env(),
                )  # fmt: skip
        except BaseException:
            ours.close()
            raise
        loop = asyncio.get_running_loop()
        _, link = await loop.create_unix_connection(_ReaderLink, sock=ours)
        self._reader = _Reader(process, link)
        assert link.transport is not None
        link.transport.write(frame(self._settings))
        try:
            await asyncio.wait_for(asyncio.shield(link.ready), READER_START_S)
        except BaseException:
            await self._stop_reader(kill=True)
            raise
        log.info("control reader started", pid=process.pid)
        return link

    def _stop_idle(self) -> None:
        if self._serving is None or self._serving.done():
            task = asyncio.get_running_loop().create_task(self._stop_reader())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def _stop_reader(self, *, kill: bool = False) -> None:
        """End the reader: its socket closed (it exits), killed when `kill` or when it does
        not exit at once."""
        reader, self._reader = self._reader, None
        if reader is None:
            return
        if reader.link.transport is not None:
            reader.link.transport.close()
        if kill:
            with contextlib.suppress(ProcessLookupError):
                reader.process.kill()
        try:
            await asyncio.wait_for(reader.process.wait(), 2.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                reader.process.kill()
            await reader.process.wait()


def _reader_env() -> dict[str, str]:
    """The daemon's environment, with the package it runs from first on the reader's path
    (`-P` keeps the working directory off it)."""
    root = str(Path(shoe_controller.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}
