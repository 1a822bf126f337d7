"""The control socket: JSON lines over a Unix socket, each connection's peer authorized from
the kernel's credentials before it may act, answers from a ControlService.

Protocol (docs/control.md): a Unix stream socket carrying JSON lines, one request object per
line, one answer object per line; `events` with `follow` streams event lines until the client
closes (followers.py). `ControlService` (service.py) is the backend; `ControlServer` is the
asyncio socket around it and does the authorization (peers): SO_PEERCRED and SO_PEERGROUPS
from the kernel, never anything the client says. The requests that read the journal are
answered by a reader process, away from the loop that ACKs the cards (reads.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import os
import socket
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from shoe_controller.service.config import ControlSection
from shoe_controller.service.control.reads import ReadQueries
from shoe_controller.service.control.requests import ControlError
from shoe_controller.service.control.service import ControlService
from shoe_controller.service.control.surveillance import COMMANDS as SURVEILLANCE_COMMANDS
from shoe_controller.service.control.wire import error_answer, parse_line, send
from shoe_controller.service.peers import Peer, authorize, may_look, peer_of

log = structlog.get_logger("control")

# The viewer group may look (the answers are squeeze-safe, R15), nobody else: a local user
# outside it could otherwise load the daemon's loop. Acting is checked on the peer's
# credentials per request. The directory (/run/shoe-controller, 0755) lets them reach it.
SOCKET_MODE = 0o660
MAX_REQUEST_BYTES = 64 * 1024
ROOT_RESERVE = 4  # connections root has beyond the cap: the pit boss's sudo shoectl gets in
REFUSALS_LOGGED_EVERY_S = 60.0  # refused connections are counted and logged once a minute


class ControlServer:
    """The asyncio Unix-socket server around a ControlService (docs/control.md)."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        service: ControlService,
        settings: ControlSection,
    ) -> None:
        self.socket_path = Path(socket_path)
        self.service = service
        self.settings = settings
        self.supervisor_group = settings.supervisor_group
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._per_uid: dict[int, int] = {}
        self._turn = asyncio.Lock()  # requests are answered one at a time
        self.reads = ReadQueries(service, settings)  # those that read the journal
        self._refused = 0  # connections refused since the last log line
        self._refusals_logged_at = 0.0

    async def start(self) -> None:
        """Listen; a dead daemon's socket file is replaced. ControlError when another process
        listens on the path or the path is something else than a socket (left alone)."""
        _clear_stale_socket(self.socket_path)
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.socket_path), limit=MAX_REQUEST_BYTES
        )
        self._set_access()
        log.info("control socket listening", path=str(self.socket_path))

    def _set_access(self) -> None:
        """0660 with the viewer group (else the supervisor group); 0600 (the daemon's user and
         root) when neither exists or the daemon may not give the socket to it.

         chown(2) is in systemd's @privileged set: the unit allows @chown again for this call
        , and it is made only when the socket is not the group's already."""
        for group in (self.settings.viewer_group, self.settings.supervisor_group):
            try:
                gid = grp.getgrnam(group).gr_gid
                if self.socket_path.stat().st_gid != gid:
                    os.chown(self.socket_path, -1, gid)
            except (KeyError, OSError):
                continue
            os.chmod(self.socket_path, SOCKET_MODE)
            return
        os.chmod(self.socket_path, 0o600)
        log.warning("neither the viewer nor the supervisor group exists: only root and this"
                    " user reach the socket", path=str(self.socket_path))  # fmt: skip

    async def close(self) -> None:
        """Stop listening, end every connection (followers too), remove the socket file."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self.reads.close()
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
        peer: Peer | None = None
        try:
            peer = peer_of(writer.get_extra_info("socket"))
            refusal = self._admit(peer)
            if refusal is not None:
                peer = None  # not counted
                await send(writer, refusal)
                return
            self._connections.add(task)
            await self._conversation(reader, writer, peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except asyncio.CancelledError:
            pass  # the daemon is stopping
        except Exception:  # one bad connection must not stop the daemon
            log.exception("control connection failed")
        finally:
            self._connections.discard(task)
            if peer is not None:
                self._per_uid[peer.uid] -= 1
                if not self._per_uid[peer.uid]:
                    del self._per_uid[peer.uid]
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _admit(self, peer: Peer) -> dict[str, Any] | None:
        """The error answer for a connection that may not stay, or None (then it counts)."""
        settings = self.settings
        refusal = may_look(peer, settings.viewer_group, settings.supervisor_group)
        if refusal is not None:
            return self._refuse("not_authorized", refusal)
        cap = settings.max_connections + (ROOT_RESERVE if peer.uid == 0 else 0)
        if len(self._connections) >= cap:
            return self._refuse(
                "busy", f"the controller serves {len(self._connections)} connections already"
            )
        mine = self._per_uid.get(peer.uid, 0)
        if peer.uid != 0 and mine >= settings.max_connections_per_user:
            return self._refuse(
                "busy", f"{peer.user} holds {mine} connections, the most one user may"
            )
        self._per_uid[peer.uid] = mine + 1
        return None

    def _refuse(self, code: str, text: str) -> dict[str, Any]:
        """Refused politely, logged once a minute with a count (never once per attempt)."""
        self._refused += 1
        now = time.monotonic()
        if now - self._refusals_logged_at >= REFUSALS_LOGGED_EVERY_S:
            log.warning("control connections refused", count=self._refused, last=text)
            self._refused, self._refusals_logged_at = 0, now
        return error_answer(code, text)

    async def _conversation(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer
    ) -> None:
        idle = self.settings.idle_timeout_s
        while True:
            try:
                line = await asyncio.wait_for(reader.readline(), idle)
            except TimeoutError:
                await send(writer, error_answer("idle", f"nothing asked for {idle:g} s: closed"))
                return
            except ValueError:  # longer than the limit: the stream cannot be resynchronised
                await send(writer, error_answer("bad_request", "request longer than 64 KiB"))
                return
            if not line:
                return
            if not line.strip():
                continue
            try:
                request = parse_line(line)
            except ControlError as error:
                await send(writer, error_answer(error.code, error.text))
                continue
            if request.get("cmd") == "events" and request.get("follow"):
                await self.service.following.follow(request, reader, writer, peer)
                return
            if self.reads.takes(request):  # built by the reader process, in turn (reads.py)
                await self.reads.answer(request, peer, writer)
                await writer.drain()
                continue
            async with self._turn:
                # One answer a turn of the loop, after whatever the devices brought: a crowd
                # of clients asking in a loop cannot keep a card's ACK waiting.
                await asyncio.sleep(0)
                answer = self._answer(request, peer)
            await send(writer, answer)

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
                    return error_answer("not_authorized", refusal, command)
                result = self.service.act(request, peer)
                if not result["accepted"]:
                    return {
                        "ok": False,
                        "cmd": command,
                        "error": {"code": "refused", "text": result["text"]},
                        "result": result,
                    }
                return {"ok": True, "cmd": command, "result": result}
            desk = self.service.surveillance
            if command in SURVEILLANCE_COMMANDS:  # The surveillance group only
                refusal = desk.authorize(peer)
                if refusal is not None:
                    log.warning("surveillance request not authorized", cmd=command,
                                uid=peer.uid, user=peer.user)  # fmt: skip
                    return error_answer("not_authorized", refusal, command)
                return {"ok": True, "cmd": command, "result": desk.answer(request, peer)}
            result = desk.as_seen_by(peer, command, self.service.answer(request))
            return {"ok": True, "cmd": command, "result": result}
        except ControlError as error:
            return error_answer(error.code, error.text, command)
        except Exception as error:  # answer, log, keep serving
            log.exception("control request failed", cmd=command)
            return error_answer(
                "internal", f"the controller failed on this request: {error!r}", command
            )


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
