"""The control socket: JSON lines over a Unix socket, each connection's peer authorized from
the kernel's credentials before it may act, answers from a ControlService.

Protocol (docs/control.md): a Unix stream socket carrying JSON lines, one request object per
line, one answer object per line; `events` with `follow` streams event lines until the client
closes. `ControlService` (control_answers) is the backend; `ControlServer` is the asyncio
socket around it and does the authorization (peers): SO_PEERCRED and SO_PEERGROUPS from the
kernel, never anything the client says.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from shoe_controller.service.control_answers import READ_CHUNK, ControlService
from shoe_controller.service.control_requests import (
    EVENTS_LIMIT_MAX,
    ControlError,
    event_types,
    optional_int,
    type_matches,
)
from shoe_controller.service.peers import Peer, authorize, peer_of

log = structlog.get_logger("control")

# Anyone on the table PC may look (the answers are squeeze-safe, R15); acting is checked on
# the peer's credentials per request. The directory (/run/shoe-controller, 0755) must let
# them reach it.
SOCKET_MODE = 0o666
MAX_REQUEST_BYTES = 64 * 1024


class ControlServer:
    """The asyncio Unix-socket server around a ControlService (docs/control.md)."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        service: ControlService,
        supervisor_group: str,
    ) -> None:
        self.socket_path = Path(socket_path)
        self.service = service
        self.supervisor_group = supervisor_group
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen; a dead daemon's socket file is replaced. ControlError when another process
        listens on the path or the path is something else than a socket (left alone)."""
        _clear_stale_socket(self.socket_path)
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.socket_path), limit=MAX_REQUEST_BYTES
        )
        os.chmod(self.socket_path, SOCKET_MODE)
        log.info("control socket listening", path=str(self.socket_path))

    async def close(self) -> None:
        """Stop listening, end every connection (followers too), remove the socket file."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if server is None:
            return  # never listened: the file (if any) is another process's socket
        await server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    async def __aenter__(self) -> ControlServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            sock = writer.get_extra_info("socket")
            peer = peer_of(sock)
            await self._conversation(reader, writer, peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except asyncio.CancelledError:
            pass  # the daemon is stopping
        except Exception:  # one bad connection must not stop the daemon
            log.exception("control connection failed")
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _conversation(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer
    ) -> None:
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # longer than the limit: the stream cannot be resynchronised
                await _send(writer, _error("bad_request", "request longer than 64 KiB"))
                return
            if not line:
                return
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                await _send(writer, _error("bad_request", f"not a JSON line: {error}"))
                continue
            if not isinstance(request, dict):
                await _send(writer, _error("bad_request", "a request is a JSON object"))
                continue
            if request.get("cmd") == "events" and request.get("follow"):
                await self._follow(request, reader, writer)
                return
            await _send(writer, self._answer(request, peer))

    def _answer(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        command = request.get("cmd")
        try:
            if command == "act":
                refusal = authorize(peer, self.supervisor_group)
                if refusal is not None:
                    log.warning(
                        "supervisor command not authorized",
                        action=request.get("action"),
                        uid=peer.uid,
                        user=peer.user,
                    )
                    return _error("not_authorized", refusal, command)
                result = self.service.act(request, peer)
                if not result["accepted"]:
                    return {
                        "ok": False,
                        "cmd": command,
                        "error": {"code": "refused", "text": result["text"]},
                        "result": result,
                    }
                return {"ok": True, "cmd": command, "result": result}
            return {"ok": True, "cmd": command, "result": self.service.answer(request)}
        except ControlError as error:
            return _error(error.code, error.text, command)
        except Exception as error:  # answer, log, keep serving
            log.exception("control request failed", cmd=command)
            return _error("internal", f"the controller failed on this request: {error!r}", command)

    async def _follow(
        self,
        request: Mapping[str, Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Stream matching events until the client closes: first the last `limit` (or those
        after `after`), then each as it is stored. Reads the journal, so nothing is lost or
        repeated however slow the client."""
        service = self.service
        try:
            types = event_types(request)
            limit = optional_int(request, "limit", low=0, high=EVENTS_LIMIT_MAX)
            after = optional_int(request, "after", low=0)
            subscription = service.subscribe()
        except ControlError as error:
            await _send(writer, _error(error.code, error.text, "events"))
            return
        closed = asyncio.ensure_future(_until_eof(reader))
        try:
            last = service.journal.last_seq()
            backlog = []
            if after is not None:
                last = after
            elif limit:
                backlog = service.last_matching(limit, types)
            await _send(
                writer,
                {"ok": True, "cmd": "events", "result": {"following": True, "from_seq": last}},
            )
            for event in backlog:
                await _send(writer, {"event": event.to_wire()})
            while not closed.done():
                subscription.wake.clear()
                batch = service.journal.events_after(last, READ_CHUNK)
                if batch:
                    last = batch[-1].seq
                    for event in batch:
                        if type_matches(event.type, types):
                            await _send(writer, {"event": event.to_wire()})
                    await asyncio.sleep(0)  # a long catch-up must not keep the devices waiting
                    continue
                woken = asyncio.ensure_future(subscription.wake.wait())
                await asyncio.wait({woken, closed}, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
        finally:
            service.unsubscribe(subscription)
            closed.cancel()


async def _until_eof(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError, ValueError):
        while await reader.read(4096):
            pass  # a follower has nothing more to say; anything it sends is ignored


async def _send(writer: asyncio.StreamWriter, answer: Mapping[str, Any]) -> None:
    writer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
    await writer.drain()


def _error(code: str, text: str, command: Any = None) -> dict[str, Any]:
    return {"ok": False, "cmd": command, "error": {"code": code, "text": text}}


def _clear_stale_socket(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ControlError("socket_path", f"{path} exists and is not a socket; not replacing it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink()  # nobody listens: a dead daemon's socket
        return
    finally:
        probe.close()
    raise ControlError("socket_path", f"another process already listens on {path}")
