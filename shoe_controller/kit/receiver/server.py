"""The reference table server's HTTP side: the server, its request handler, its TLS context.

Standard library HTTP server, one thread per connection; the store is serialised by a lock.
Besides docs/spec-push-api.md's two paths it answers `GET /v1/tables/{table_id}/checkpoints`: the
table's signed journal checkpoints as JSON lines (docs/delivery.md).
"""

from __future__ import annotations

import dataclasses
import json
import socket
import sqlite3
import ssl
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from shoe_controller.delivery import pushapi
from shoe_controller.kit.receiver.faults import GARBAGE, FaultPlan
from shoe_controller.kit.receiver.store import ReceiverStore, StoreResult
from shoe_controller.kit.receiver.validation import BadRequest, route, validated_batch

MAX_BODY_BYTES = 8 * 1024 * 1024


@dataclasses.dataclass
class _Stats:
    requests: int = 0
    posts: int = 0
    stored: int = 0
    duplicates: int = 0
    conflicts: int = 0
    gaps: int = 0
    unauthorized: int = 0
    bad_requests: int = 0
    faults_injected: int = 0
    in_flight: int = 0  # answers being held back by the slow fault (stored, not yet answered)
    max_batch: int = 0


class Receiver:
    """The HTTP server. `start()` serves on a background thread; `serve_forever()` in this one."""

    def __init__(
        self,
        store: ReceiverStore,
        key: pushapi.SigningKey,
        table_id: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        controller_id: str | None = None,
        max_skew_s: float = pushapi.MAX_CLOCK_SKEW_S,
        clock: Callable[[], float] = time.time,
        faults: FaultPlan | None = None,
        control: bool = False,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.store = store
        self.table_id = table_id
        self.controller_id = controller_id
        self._key = key
        self._max_skew_s = max_skew_s
        self._clock = clock
        self._faults = faults or FaultPlan()
        self._control = control
        self._lock = threading.Lock()
        self._stats = _Stats()
        self._thread: threading.Thread | None = None
        self._server = _Server((host, port), _Handler, receiver=self)
        if ssl_context is not None:
            # handshake in the connection's own thread, so one slow client cannot stall accept()
            self._server.socket = ssl_context.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        self.scheme = "https" if ssl_context is not None else "http"

    def __repr__(self) -> str:
        return f"Receiver({self.url!r}, table {self.table_id!r})"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self._server.server_address[0]}:{self.port}"

    def start(self) -> Receiver:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # close() returns promptly
            name="receiver",
            daemon=True,
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def close(self) -> None:
        """Stop serving (waits for the serving thread) and close the listening socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def set_faults(self, plan: FaultPlan) -> None:
        with self._lock:
            self._faults = plan

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dataclasses.asdict(self._stats)

    # -------------------------------------------------------- request handling (any thread)

    def _count(self, **increments: int) -> None:
        with self._lock:
            for name, value in increments.items():
                setattr(self._stats, name, getattr(self._stats, name) + value)

    def _take_fault(self, action: str) -> FaultPlan:
        """The fault for this request (mode ok when none), counting it down."""
        with self._lock:
            plan = self._faults
            if plan.mode == "ok" or plan.count == 0 or plan.target not in ("all", action):
                return FaultPlan()
            if plan.count is not None:
                plan.count -= 1
            self._stats.faults_injected += 1
            return dataclasses.replace(plan, count=None)

    def _authenticate(self, headers: Any, body: bytes) -> None:
        stamp = headers.get(pushapi.HEADER_TIMESTAMP, "")
        signature = headers.get(pushapi.HEADER_SIGNATURE, "")
        if not stamp.isascii() or not stamp.isdigit():
            raise BadRequest(401, "missing or malformed X-Shoe-Timestamp")
        if abs(self._clock() - int(stamp)) > self._max_skew_s:
            raise BadRequest(401, "X-Shoe-Timestamp too far from the server clock")
        if not self._key.verify(stamp, body, signature):
            raise BadRequest(401, "bad X-Shoe-Signature")

    def _receive(self, table_id: str, headers: Any, body: bytes) -> StoreResult:
        """Check and store one POST; raises BadRequest for anything the page does not allow."""
        self._authenticate(headers, body)
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise BadRequest(400, "body is not JSON") from None
        controller_id = headers.get(pushapi.HEADER_CONTROLLER, "")
        events = validated_batch(document, table_id, controller_id)
        if self.controller_id is not None and controller_id != self.controller_id:
            raise BadRequest(403, f"controller {controller_id!r} may not post to this table")
        result = self.store.store(table_id, controller_id, events)
        self._count(
            posts=1,
            stored=result.stored,
            duplicates=result.duplicates,
            conflicts=result.conflicts,
            gaps=int(result.gap),
        )
        with self._lock:
            self._stats.max_batch = max(self._stats.max_batch, len(events))
        if result.conflicts:
            print(
                f"receiver: {result.conflicts} resent event(s) differ from the stored ones",
                file=sys.stderr,
                flush=True,
            )
        return result

    def _control_request(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        if method == "GET" and path == "/control/stats":
            return 200, self.stats()
        if method == "GET" and path == "/control/events":
            return 200, {"events": self.store.events(self.table_id)}
        try:
            document = json.loads(body or b"{}")
            if method == "POST" and path == "/control/faults":
                self.set_faults(FaultPlan(**document))
                return 200, {"ok": True}
            if method == "POST" and path == "/control/rewind":
                self.store.rewind(self.table_id, int(document["acked_through"]))
                return 200, {"acked_through": self.store.acked_through(self.table_id)}
        except (ValueError, TypeError, KeyError) as exc:
            return 400, {"error": str(exc)}
        return 404, {"error": "no such control endpoint"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a restarted receiver gets its port back at once

    def __init__(self, address: tuple[str, int], handler: type, *, receiver: Receiver) -> None:
        self.receiver = receiver
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the sink reuses its connection
    # headers and body go out as two writes; with Nagle on, the body waits for the client's
    # delayed ACK (~40 ms a request on Linux loopback)
    disable_nagle_algorithm = True
    server: _Server
    server_version = "shoe-receiver/1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the tests and the bench run thousands of requests

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        receiver = self.server.receiver
        receiver._count(requests=1)
        path = self.path.split("?", 1)[0]
        try:
            body = self._read_body() if method == "POST" else b""
            if path.startswith("/control/"):
                if not receiver._control:
                    raise BadRequest(404, "not found")
                self._answer(*receiver._control_request(method, path, body))
                return
            table_id, action = route(path)
            if table_id != receiver.table_id:
                raise BadRequest(404, f"no table {table_id!r} here")
            if (method, action) not in (("POST", "events"), ("GET", "ack"), ("GET", "checkpoints")):
                raise BadRequest(405, f"{method} not allowed on {path}")
            if action == "checkpoints":  # this server's own: the CP file, never a fault
                self._answer_raw(200, _json_lines(receiver.store.checkpoints(table_id)),
                                 "application/x-ndjson")  # fmt: skip
                return
            fault = receiver._take_fault(action)
            if fault.mode == "reset":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault.mode == "status":
                self._answer(fault.status, {"error": "injected fault"})
                return
            if action == "ack":
                answer = (200, {"acked_through": receiver.store.acked_through(table_id)})
            else:
                result = receiver._receive(table_id, self.headers, body)
                answer = (409 if result.gap else 200, {"acked_through": result.acked_through})
            if fault.mode == "slow":
                receiver._count(in_flight=1)
                try:
                    time.sleep(fault.delay_s)
                finally:
                    receiver._count(in_flight=-1)
            if fault.mode == "garbage":
                self._answer_raw(200, GARBAGE, "text/html")
                return
            self._answer(*answer)
        except BadRequest as exc:
            receiver._count(
                unauthorized=int(exc.status == 401), bad_requests=int(exc.status != 401)
            )
            self._answer(exc.status, {"error": exc.text})
        except sqlite3.Error as exc:
            print(f"receiver: store failed: {exc}", file=sys.stderr, flush=True)
            self._answer(503, {"error": "store unavailable"})
        except (ConnectionError, ssl.SSLError, TimeoutError):
            self.close_connection = True
        except Exception:  # a reference server answers 500 rather than dropping the line
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            self._answer(500, {"error": "internal error"})

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise BadRequest(411, "Content-Length required")
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True
            raise BadRequest(413, "body too large")
        return self.rfile.read(int(length))

    def _answer(self, status: int, document: Any) -> None:
        self._answer_raw(status, json.dumps(document).encode("utf-8"), "application/json")

    def _answer_raw(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)  # http.server finds the reason phrase itself
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


def _json_lines(events: list[dict[str, Any]]) -> bytes:
    """Events as JSON lines, one each, as stored: a file `verify --checkpoints` reads."""
    return b"".join(
        json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        for event in events
    )


def server_ssl_context(
    cert: Path, key: Path | None = None, client_ca: Path | None = None
) -> ssl.SSLContext:
    """A TLS server context; with `client_ca` the client must present a certificate (mTLS)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key) if key else None)
    if client_ca is not None:
        context.load_verify_locations(cafile=str(client_ca))
        context.verify_mode = ssl.CERT_REQUIRED
    return context
