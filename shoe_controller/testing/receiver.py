"""Reference table server: receives, checks and stores pushed events exactly as PUSH_API.md says.

For integrators (a working counterpart to read and run) and for the delivery tests. It checks
the signature and timestamp (401), stores each (table, seq) once in its own SQLite file and
answers 200/409/GET as the page says. For fault tests it can be told to misbehave (answer an
HTTP status, garbage, slowly, or drop the connection) by constructor options, command-line
options or, when enabled, the `/control/...` endpoints. Standard library HTTP server, one
thread per connection; the store is serialised by a lock.

Run it: `python -m shoe_controller.testing.receiver --db r.db --key-file table.key --table-id 07`
(or `shoe-controller receiver ...`). The first line on stdout is the TCP port it bound.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import socket
import sqlite3
import ssl
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click

from shoe_controller.delivery import pushapi

MAX_BODY_BYTES = 8 * 1024 * 1024
FAULT_MODES = ("ok", "status", "garbage", "slow", "reset")
FAULT_TARGETS = ("all", "events", "ack")  # which push API requests a fault applies to
GARBAGE = b"<html><body>502 upstream says hello</body></html>"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT PRIMARY KEY,
    acked_through INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    table_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    controller_id TEXT NOT NULL,
    type TEXT NOT NULL,
    at TEXT NOT NULL,
    shoe INTEGER,
    round INTEGER,
    data TEXT NOT NULL,
    received_at REAL NOT NULL,
    PRIMARY KEY (table_id, seq)
) WITHOUT ROWID;
"""


class BadRequest(ValueError):  # noqa: N818 - an HTTP answer, not a crash
    """The request is malformed; answered with `status` and `text`, nothing stored."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


@dataclasses.dataclass(frozen=True)
class StoreResult:
    acked_through: int
    stored: int
    duplicates: int
    conflicts: int  # resent seqs whose content differs from what is stored (a controller bug)
    gap: bool  # the batch started after acked_through + 1: nothing stored, answer 409


class ReceiverStore:
    """The receiver's SQLite file. Every (table_id, seq) is stored once; acked_through is the
    highest seq below which nothing is missing. Safe to share between threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")  # 200 means "stored durably"
        self._conn.execute("PRAGMA busy_timeout=5000")
        with self._lock:
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def acked_through(self, table_id: str) -> int:
        with self._lock:
            return self._acked(table_id)

    def store(
        self, table_id: str, controller_id: str, events: Sequence[dict[str, Any]]
    ) -> StoreResult:
        """Store a validated batch (consecutive seqs) in one transaction."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                acked = self._acked(table_id)
                if events and events[0]["seq"] > acked + 1:
                    self._conn.execute("ROLLBACK")
                    return StoreResult(acked, 0, 0, 0, gap=True)
                stored = duplicates = conflicts = 0
                now = time.time()
                for event in events:
                    if event["seq"] <= acked:
                        duplicates += 1
                        conflicts += self._conflicts(table_id, event)
                        continue
                    self._conn.execute(
                        "INSERT INTO events (table_id, seq, id, controller_id, type, at, shoe,"
                        " round, data, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            table_id,
                            event["seq"],
                            event["id"],
                            controller_id,
                            event["type"],
                            event["at"],
                            event["shoe"],
                            event["round"],
                            _canonical(event["data"]),
                            now,
                        ),
                    )
                    stored += 1
                    acked = event["seq"]
                self._conn.execute(
                    "INSERT INTO tables (table_id, acked_through) VALUES (?, ?)"
                    " ON CONFLICT (table_id) DO UPDATE SET acked_through = excluded.acked_through",
                    (table_id, acked),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        return StoreResult(acked, stored, duplicates, conflicts, gap=False)

    def rewind(self, table_id: str, acked_through: int) -> None:
        """Forget every event after `acked_through` (a server restored from an old backup)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute(
                "DELETE FROM events WHERE table_id = ? AND seq > ?", (table_id, acked_through)
            )
            self._conn.execute(
                "UPDATE tables SET acked_through = min(acked_through, ?) WHERE table_id = ?",
                (acked_through, table_id),
            )
            self._conn.execute("COMMIT")

    def events(self, table_id: str, after: int = 0) -> list[dict[str, Any]]:
        """The stored events of a table with seq > `after`, in seq order, in PUSH_API.md form."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, id, type, at, shoe, round, data FROM events"
                " WHERE table_id = ? AND seq > ? ORDER BY seq",
                (table_id, after),
            ).fetchall()
        return [
            {"seq": s, "id": i, "type": t, "at": a, "shoe": sh, "round": r, "data": json.loads(d)}
            for s, i, t, a, sh, r, d in rows
        ]

    def _acked(self, table_id: str) -> int:
        row = self._conn.execute(
            "SELECT acked_through FROM tables WHERE table_id = ?", (table_id,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _conflicts(self, table_id: str, event: dict[str, Any]) -> int:
        row = self._conn.execute(
            "SELECT id, type, at, shoe, round, data FROM events WHERE table_id = ? AND seq = ?",
            (table_id, event["seq"]),
        ).fetchone()
        if row is None:
            return 0
        resent = (
            event["id"],
            event["type"],
            event["at"],
            event["shoe"],
            event["round"],
            _canonical(event["data"]),
        )
        return int(tuple(row) != resent)


@dataclasses.dataclass
class FaultPlan:
    """How the receiver misbehaves on the push API paths (never on /control).

    ok: behave. status: answer `status` without storing. garbage: store, then answer 200 with
    a non-JSON body. slow: store, then wait `delay_s` before answering. reset: close the
    connection without an answer. `count` requests are affected, then back to ok (None:
    until changed). `target`: "all" push API requests, only "events" POSTs or only "ack" GETs.
    """

    mode: str = "ok"
    status: int = 500
    delay_s: float = 0.0
    count: int | None = None
    target: str = "all"

    def __post_init__(self) -> None:
        if self.mode not in FAULT_MODES:
            raise ValueError(f"fault mode must be one of {FAULT_MODES}, not {self.mode!r}")
        if self.target not in FAULT_TARGETS:
            raise ValueError(f"fault target must be one of {FAULT_TARGETS}, not {self.target!r}")
        if not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status, not {self.status}")
        if self.delay_s < 0 or (self.count is not None and self.count < 0):
            raise ValueError("delay_s and count must not be negative")


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
        events = _validated_batch(document, table_id, controller_id)
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
    protocol_version = "HTTP/1.1"  # keep-alive: the publisher reuses its connection
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
            table_id, action = _route(path)
            if table_id != receiver.table_id:
                raise BadRequest(404, f"no table {table_id!r} here")
            if (method, action) not in (("POST", "events"), ("GET", "ack")):
                raise BadRequest(405, f"{method} not allowed on {path}")
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


def _route(path: str) -> tuple[str, str]:
    """(table_id, "events" | "ack") of a push API path."""
    parts = path.split("/")
    if (
        len(parts) == 5
        and parts[0] == ""
        and parts[1:3] == [pushapi.API_VERSION, "tables"]
        and parts[3]
        and parts[4] in ("events", "ack")
    ):
        return parts[3], parts[4]
    raise BadRequest(404, "not found")


def _validated_batch(document: Any, table_id: str, controller_id: str) -> list[dict[str, Any]]:
    """The batch's events if the body is as PUSH_API.md describes; BadRequest otherwise."""
    if not isinstance(document, dict):
        raise BadRequest(400, "body must be a JSON object")
    if document.get("controller_id") != controller_id or not controller_id:
        raise BadRequest(400, "controller_id differs from the X-Shoe-Controller header")
    if document.get("table_id") != table_id:
        raise BadRequest(400, "table_id differs from the URL")
    events = document.get("events")
    if not isinstance(events, list):
        raise BadRequest(400, "events must be a list")
    if len(events) > pushapi.MAX_BATCH:
        raise BadRequest(413, f"at most {pushapi.MAX_BATCH} events a request")
    for index, event in enumerate(events):
        if not isinstance(event, dict) or set(event) != set(pushapi.EVENT_FIELDS):
            raise BadRequest(400, f"event {index} must have exactly {pushapi.EVENT_FIELDS}")
        seq = event["seq"]
        if not _is_int(seq) or seq < 1:
            raise BadRequest(400, f"event {index}: seq must be a positive integer")
        if index and seq != events[index - 1]["seq"] + 1:
            raise BadRequest(400, "events must have consecutive seqs in order")
        if not isinstance(event["id"], str) or not isinstance(event["type"], str):
            raise BadRequest(400, f"event {index}: id and type must be strings")
        if not isinstance(event["at"], str):
            raise BadRequest(400, f"event {index}: at must be a string")
        for name in ("shoe", "round"):
            if event[name] is not None and not _is_int(event[name]):
                raise BadRequest(400, f"event {index}: {name} must be an integer or null")
        if not isinstance(event["data"], dict):
            raise BadRequest(400, f"event {index}: data must be an object")
    return events


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


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


@click.command(name="receiver")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, help="TCP port (0: any free port).")
@click.option(
    "--db",
    "db_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The receiver's SQLite file (created if missing).",
)
@click.option(
    "--key-file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The table's shared secret (file content, white space stripped).",
)
@click.option("--table-id", required=True, help="The table this server accepts events for.")
@click.option("--controller-id", default=None, help="Accept only this controller (else any).")
@click.option(
    "--max-skew",
    default=float(pushapi.MAX_CLOCK_SKEW_S),
    show_default=True,
    help="Seconds a request's timestamp may differ from this clock (else 401).",
)
@click.option("--control/--no-control", default=False, help="Enable the /control endpoints.")
@click.option("--fail-mode", type=click.Choice(FAULT_MODES), default="ok", show_default=True)
@click.option(
    "--fail-status", default=500, show_default=True, help="Status for --fail-mode status."
)
@click.option("--fail-count", type=int, default=None, help="Requests to fail, then behave.")
@click.option("--delay", default=0.0, show_default=True, help="Seconds, for --fail-mode slow.")
@click.option(
    "--fail-target",
    type=click.Choice(FAULT_TARGETS),
    default="all",
    show_default=True,
    help="Fail event POSTs, ack GETs or both.",
)
@click.option(
    "--tls-cert",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Serve https with this certificate (PEM).",
)
@click.option(
    "--tls-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The certificate's key (PEM), if not inside --tls-cert.",
)
@click.option(
    "--tls-client-ca",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Require client certificates signed by this CA (mutual TLS).",
)
def receiver_command(
    *,
    host: str,
    port: int,
    db_path: Path,
    key_file: Path,
    table_id: str,
    controller_id: str | None,
    max_skew: float,
    control: bool,
    fail_mode: str,
    fail_status: int,
    fail_count: int | None,
    delay: float,
    fail_target: str,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_client_ca: Path | None,
) -> None:
    """Run the reference table server (PUSH_API.md). Prints the bound port first."""
    try:
        key = pushapi.SigningKey.from_file(key_file)
        faults = FaultPlan(
            mode=fail_mode, status=fail_status, delay_s=delay, count=fail_count, target=fail_target
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if (tls_key or tls_client_ca) and not tls_cert:
        raise click.UsageError("--tls-key and --tls-client-ca need --tls-cert")
    context = server_ssl_context(tls_cert, tls_key, tls_client_ca) if tls_cert else None
    store = ReceiverStore(db_path)
    receiver = Receiver(
        store,
        key,
        table_id,
        host=host,
        port=port,
        controller_id=controller_id,
        max_skew_s=max_skew,
        faults=faults,
        control=control,
        ssl_context=context,
    )
    signal.signal(signal.SIGTERM, _exit_on_signal)
    click.echo(str(receiver.port))
    click.echo(f"receiver: serving table {table_id} on {receiver.url}", err=True)
    sys.stdout.flush()
    try:
        receiver.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        receiver.close()
        store.close()


def _exit_on_signal(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: `python -m shoe_controller.testing.receiver [options]`."""
    try:
        receiver_command.main(
            args=list(argv) if argv is not None else None,
            prog_name="shoe-controller receiver",
            standalone_mode=False,
        )
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
