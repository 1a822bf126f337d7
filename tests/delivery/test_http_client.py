"""The sink's HTTP/1.1 client against real servers on 127.0.0.1, and its base-URL parser.

The servers are asyncio servers written here, in the client's loop, so each test says
byte for byte what the server does: keep-alive, "Connection: close", chunked answers,
garbage, silence, a close mid-body, too big a body, TLS with a CA made for the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import os
import re
import socket
import ssl
import struct
import threading
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shoe_testkit.pki import make_pki

from shoe_controller.delivery.http_client import (
    MAX_BODY,
    HttpClient,
    HttpError,
    HttpFailure,
    HttpResponse,
    HttpTimeout,
    Origin,
    _as_failure,
    parse_base_url,
)

SAFETY_TIMEOUT_S = 10.0  # only so that a broken client fails a test instead of hanging it
SHORT_TIMEOUT_S = 0.3  # for the tests that need the timeout to pass; nothing is timed


@dataclasses.dataclass(frozen=True)
class Request:
    """One request as the server read it off the wire."""

    method: str
    target: str
    headers: dict[str, str]  # names in lower case
    body: bytes


@dataclasses.dataclass
class Served:
    port: int
    connections: int = 0
    requests: list[Request] = dataclasses.field(default_factory=list)

    def url(self, scheme: str = "http", host: str = "127.0.0.1", path: str = "") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request on a connection, None when the client closed it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    start, *lines = head.decode("latin-1").removesuffix("\r\n\r\n").split("\r\n")
    method, target, _version = start.split(" ")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(method, target, headers, body)


def answer(body: bytes, status: str = "200 OK", *extra: str) -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


Handler = Callable[[Served, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def serving(
    handler: Handler,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[Served]:
    """A server on 127.0.0.1 running `handler` for each connection, counting them."""
    served = Served(port=0)

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.connections += 1
        try:
            await handler(served, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # the client gave up on this connection: what several tests want
        finally:
            writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0, ssl=ssl_context)
    served.port = server.sockets[0].getsockname()[1]
    try:
        yield served
    finally:
        server.close()
        await server.wait_closed()


async def keep_alive(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
    """Answers every request on the connection with what it saw: method, target, body size."""
    while (request := await read_request(reader)) is not None:
        served.requests.append(request)
        writer.write(answer(f"{request.method} {request.target} {len(request.body)}".encode()))
        await writer.drain()


async def let_the_loop_read() -> None:
    """A turn of the loop for the client's transport to read what the server sent while idle
    (the server is in this loop, and its close reached the kernel before this)."""
    await asyncio.sleep(0.05)


def client_for(served: Served, **options: object) -> HttpClient:
    options.setdefault("ssl_context", None)
    options.setdefault("timeout_s", SAFETY_TIMEOUT_S)
    return HttpClient(served.url(), **options)  # type: ignore[arg-type]


# ---------------------------------------------------------------- connections


def test_one_connection_carries_many_requests_and_close_releases_it() -> None:
    async def scenario() -> None:
        async with serving(keep_alive) as served:
            client = client_for(served)
            answers = [await client.request("GET", f"/n/{n}", headers={}) for n in range(4)]
            assert [a.text for a in answers] == [f"GET /n/{n} 0" for n in range(4)]
            assert served.connections == 1
            await client.close()
            again = await client.request("POST", "/after", headers={}, body=b"xyz")
            assert (again.status, again.text) == (200, "POST /after 3")
            assert served.connections == 2
            await client.close()

    asyncio.run(scenario())


def test_connection_close_from_the_server_makes_the_next_request_reconnect() -> None:
    async def handler(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        request = await read_request(reader)
        assert request is not None
        writer.write(answer(request.target.encode(), "200 OK", "Connection: close"))
        await writer.drain()

    async def scenario() -> None:
        async with serving(handler) as served:
            client = client_for(served)
            texts = [(await client.request("GET", f"/{n}", headers={})).text for n in range(3)]
            assert texts == ["/0", "/1", "/2"]
            assert served.connections == 3
            await client.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "unasked",
    [b"", answer(b"", "408 Request Timeout", "Connection: close")],
    ids=["silently", "after-a-408"],
)
def test_a_connection_the_server_ended_while_idle_is_not_reused(unasked: bytes) -> None:
    """A server's keep-alive timeout closes silently, or after an unasked-for 408: the next
    request goes on a new connection, and the 408 is not taken for its answer."""
    closed = asyncio.Event()

    async def handler(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        if served.connections == 1:
            request = await read_request(reader)
            assert request is not None
            writer.write(answer(b"first"))  # no "Connection: close": the client keeps it
            await writer.drain()
            writer.write(unasked)
            writer.close()
            await writer.wait_closed()
            closed.set()
        else:
            await keep_alive(served, reader, writer)

    async def scenario() -> None:
        async with serving(handler) as served:
            client = client_for(served)
            assert (await client.request("GET", "/", headers={})).text == "first"
            await closed.wait()
            await let_the_loop_read()
            second = await client.request("GET", "/again", headers={})
            assert (second.status, second.text) == (200, "GET /again 0")
            assert served.connections == 2
            await client.close()

    asyncio.run(scenario())


def test_a_refused_connection_is_an_http_error() -> None:
    with socket.socket() as bound:  # bound, not listening: connecting to it is refused
        bound.bind(("127.0.0.1", 0))
        client = HttpClient(
            f"http://127.0.0.1:{bound.getsockname()[1]}/",
            ssl_context=None,
            timeout_s=SAFETY_TIMEOUT_S,
        )
        with pytest.raises(HttpError, match=r"Connect|refused"):
            asyncio.run(client.request("GET", "/", headers={}))


# ---------------------------------------------------------------- what goes on the wire


def test_requests_carry_host_length_and_the_callers_headers_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing else: no proxy from the environment, no Accept-Encoding, no redirect followed."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9/")  # nothing listens there

    async def handler(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        while (request := await read_request(reader)) is not None:
            served.requests.append(request)
            writer.write(answer(b"moved", "301 Moved Permanently", "Location: /elsewhere"))
            await writer.drain()

    async def scenario() -> tuple[Served, HttpResponse, HttpResponse]:
        async with serving(handler) as served:
            client = HttpClient(
                served.url(path="/api/"), ssl_context=None, timeout_s=SAFETY_TIMEOUT_S
            )
            got = await client.request("GET", "/v1/ack", headers={"X-Shoe-Controller": "c-1"})
            posted = await client.request(
                "POST", "/v1/events", headers={"Content-Type": "application/json"}, body=b"{}"
            )
            await client.close()
            return served, got, posted

    served, got, posted = asyncio.run(scenario())
    assert (got.status, got.text, posted.status) == (301, "moved", 301)  # not followed
    get, post = served.requests  # two requests, nothing more: the redirect was not followed
    host = f"127.0.0.1:{served.port}"
    assert (get.method, get.target, get.body) == ("GET", "/api/v1/ack", b"")
    assert get.headers == {"host": host, "x-shoe-controller": "c-1"}
    assert (post.method, post.target, post.body) == ("POST", "/api/v1/events", b"{}")
    assert post.headers == {
        "host": host,
        "content-type": "application/json",
        "content-length": "2",
    }


def test_headers_the_client_sets_and_unsendable_requests_are_refused_before_sending() -> None:
    client = HttpClient("http://127.0.0.1:9/", ssl_context=None, timeout_s=SAFETY_TIMEOUT_S)
    for headers in ({"Host": "elsewhere"}, {"content-length": "5"}, {"Connection": "close"}):
        with pytest.raises(ValueError, match="sets"):
            asyncio.run(client.request("GET", "/", headers=headers))
    with pytest.raises(ValueError, match="starts with /"):
        asyncio.run(client.request("GET", "v1", headers={}))
    with pytest.raises(ValueError, match="cannot send"):
        asyncio.run(client.request("GET", "/", headers={"X-Bad": "a\r\nInjected: 1"}))
    with pytest.raises(ValueError, match="ssl_context"):
        HttpClient("https://127.0.0.1/", ssl_context=None, timeout_s=1.0)
    with pytest.raises(ValueError, match="ssl_context"):
        HttpClient(
            "http://127.0.0.1/", ssl_context=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), timeout_s=1.0
        )
    with pytest.raises(ValueError, match="timeout_s"):
        HttpClient("http://127.0.0.1/", ssl_context=None, timeout_s=0.0)


# ---------------------------------------------------------------- what comes back


def _framed(framing: str, body: bytes) -> bytes:
    if framing == "content-length":
        return answer(body)
    if framing == "chunked":
        chunks = [body[i : i + 3] for i in range(0, len(body), 3)]
        encoded = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
        return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + encoded + b"0\r\n\r\n"
    return b"HTTP/1.0 200 OK\r\n\r\n" + body  # framed by the server closing the connection


@pytest.mark.parametrize("framing", ["content-length", "chunked", "close"])
def test_each_framing_gives_the_whole_body(framing: str) -> None:
    body = '{"acked_through": 41, "note": "d\u00e9j\u00e0"}'.encode()

    async def handler(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        while await read_request(reader) is not None:
            writer.write(_framed(framing, body))
            await writer.drain()
            if framing == "close":
                return

    async def scenario() -> None:
        async with serving(handler) as served:
            client = client_for(served)
            answers = [await client.request("GET", "/", headers={}) for _ in range(2)]
            assert answers == [HttpResponse(200, body)] * 2
            assert answers[0].text == body.decode()
            assert served.connections == (2 if framing == "close" else 1)
            await client.close()

    asyncio.run(scenario())


async def _expect_failure(
    handler: Handler,
    failure: type[HttpFailure],
    **options: object,
) -> str:
    """The failure the client raises against `handler`, then a good answer on a new
    connection from the same client (the failed one is never reused); its message."""

    async def first_bad_then_good(
        served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if served.connections == 1:
            await handler(served, reader, writer)
        else:
            await keep_alive(served, reader, writer)

    async with serving(first_bad_then_good) as served:
        client = client_for(served, **options)
        with pytest.raises(failure) as caught:
            await client.request("POST", "/events", headers={}, body=b"[1]")
        good = await client.request("GET", "/ack", headers={})
        assert (good.status, good.text, served.connections) == (200, "GET /ack 0", 2)
        await client.close()
    message = str(caught.value)
    assert message
    assert "\n" not in message
    assert "\r" not in message
    return message


def _sends(data: bytes, *, then_wait: bool = False) -> Handler:
    """A handler that reads one request and sends `data`, then closes (or waits)."""

    async def handler(
        served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await read_request(reader)
        writer.write(data)
        await writer.drain()
        if then_wait:
            await reader.read()  # until the client hangs up

    return handler


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"garbage\r\n\r\n", "status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: five\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nbroken header line\r\n\r\n", "header"),
        (b"x" * 70_000, "RemoteProtocolError"),  # no end of line in sight: h11 stops at 16 KiB
    ],
    ids=["not-http", "bad-length", "bad-header", "endless-line"],
)
def test_a_server_answering_garbage_is_an_http_error(data: bytes, fragment: str) -> None:
    message = asyncio.run(_expect_failure(_sends(data, then_wait=True), HttpError))
    assert fragment.lower() in message.lower()


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "without answering"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "mid-answer"),
        (answer(b"x" * 100)[:-90], "complete message body"),
        (_framed("chunked", b"abcdefghij")[:-8], "complete message body"),
    ],
    ids=["nothing", "half-a-head", "short-body", "short-chunks"],
)
def test_a_server_closing_before_the_answer_ends_is_an_http_error(
    data: bytes, fragment: str
) -> None:
    assert fragment in asyncio.run(_expect_failure(_sends(data), HttpError))


def test_a_server_that_never_answers_is_a_timeout() -> None:
    async def silent(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        await reader.read()  # reads the request, answers nothing, until the client hangs up

    message = asyncio.run(_expect_failure(silent, HttpTimeout, timeout_s=SHORT_TIMEOUT_S))
    assert "0.3 s" in message


def test_a_declared_body_over_the_limit_is_refused_without_reading_it() -> None:
    """Only the headers come: waiting for the body would end in a timeout instead."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n"
    handler = _sends(head, then_wait=True)
    message = asyncio.run(
        _expect_failure(handler, HttpError, max_body=1000, timeout_s=SAFETY_TIMEOUT_S)
    )
    assert "over 1000 bytes" in message


def test_a_streamed_body_over_the_limit_is_cut_off() -> None:
    chunk = b"y" * 65_536

    async def endless(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(MAX_BODY // len(chunk) + 2):  # a little over MAX_BODY, then no end
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
        await reader.read()

    message = asyncio.run(_expect_failure(endless, HttpError))
    assert f"over {MAX_BODY} bytes" in message


# ---------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA made for this test and a server certificate it signed for 127.0.0.1 only."""
    return make_pki(tmp_path_factory.mktemp("pki"))


def _server_context(pki: dict[str, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki["server.pem"], pki["server.key"])
    return context


def test_https_with_the_trusted_ca_keeps_one_connection(pki: dict[str, Path]) -> None:
    async def scenario() -> None:
        async with serving(keep_alive, ssl_context=_server_context(pki)) as served:
            trusting = ssl.create_default_context(cafile=pki["ca.pem"])
            client = HttpClient(
                served.url("https"), ssl_context=trusting, timeout_s=SAFETY_TIMEOUT_S
            )
            first = await client.request("POST", "/e", headers={}, body=b"12345")
            second = await client.request("GET", "/a", headers={})
            assert [first.text, second.text] == ["POST /e 5", "GET /a 0"]
            assert served.connections == 1
            await client.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("host", "trust_the_ca", "fragment"),
    [
        ("127.0.0.1", False, "CERTIFICATE_VERIFY_FAILED"),  # the system's CAs do not know it
        ("localhost", True, "mismatch"),  # the certificate names 127.0.0.1, not this host
    ],
)
def test_https_refuses_a_server_it_cannot_verify(
    pki: dict[str, Path], host: str, trust_the_ca: bool, fragment: str
) -> None:
    if host == "localhost":
        try:
            socket.getaddrinfo("localhost", 80)
        except OSError:
            pytest.skip("this machine does not resolve localhost")

    async def scenario() -> None:
        async with serving(keep_alive, ssl_context=_server_context(pki)) as served:
            context = ssl.create_default_context(cafile=pki["ca.pem"] if trust_the_ca else None)
            client = HttpClient(
                served.url("https", host), ssl_context=context, timeout_s=SAFETY_TIMEOUT_S
            )
            with pytest.raises(HttpError, match=fragment):
                await client.request("GET", "/", headers={})
            assert served.requests == []  # nothing was sent to a server not verified
            await client.close()

    asyncio.run(scenario())


def _tls_server_that_never_answers_close_notify(
    pki: dict[str, Path], stop: threading.Event
) -> tuple[int, list[socket.socket]]:
    """A TLS server (blocking sockets, in a thread) that answers each connection's first
    request and then never reads again, so the client's close_notify goes unanswered."""
    context = _server_context(pki)
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        with listener:
            listener.settimeout(0.1)
            while not stop.is_set():
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    continue
                connection.settimeout(SAFETY_TIMEOUT_S)
                tls = context.wrap_socket(connection, server_side=True)
                head = b""
                while b"\r\n\r\n" not in head:
                    head += tls.recv(4096)
                tls.sendall(answer(b"ok"))
                held.append(tls)  # kept open and never read: no close_notify back

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], held


def test_close_gives_up_on_a_tls_server_that_never_answers_within_the_clients_timeout(
    pki: dict[str, Path],
) -> None:
    """close() says goodbye (close_notify) and waits for the server's at most its own timeout,
    then drops the connection; asyncio alone would wait 30 s (its ssl_shutdown_timeout)."""
    stop = threading.Event()
    port, held = _tls_server_that_never_answers_close_notify(pki, stop)

    async def scenario() -> None:
        trusting = ssl.create_default_context(cafile=pki["ca.pem"])
        client = HttpClient(
            f"https://127.0.0.1:{port}", ssl_context=trusting, timeout_s=SHORT_TIMEOUT_S
        )
        assert (await client.request("GET", "/", headers={})).text == "ok"
        await asyncio.wait_for(client.close(), SAFETY_TIMEOUT_S)  # not asyncio's 30 s
        assert (await client.request("GET", "/again", headers={})).text == "ok"
        assert len(held) == 2  # the next request went on a new connection
        await asyncio.wait_for(client.close(), SAFETY_TIMEOUT_S)

    try:
        asyncio.run(scenario())
    finally:
        stop.set()
        for tls in held:
            tls.close()


def test_a_timeout_the_system_gives_before_ours_is_a_timeout_in_its_own_words() -> None:
    """A kernel's connect timeout (ETIMEDOUT, about 2 minutes) can come before a longer
    timeout_s: the pit boss reads the system's words, not "within 300 s"."""
    system = TimeoutError(errno.ETIMEDOUT, os.strerror(errno.ETIMEDOUT))
    failure = _as_failure(system, deadline_passed=False, timeout_s=300.0)
    assert isinstance(failure, HttpTimeout)
    assert str(failure) == f"TimeoutError: [Errno {errno.ETIMEDOUT}] Connection timed out"
    ours = _as_failure(TimeoutError(), deadline_passed=True, timeout_s=300.0)
    assert isinstance(ours, HttpTimeout)
    assert str(ours) == "no whole answer within 300 s"
    cancelled = asyncio.CancelledError()
    assert _as_failure(cancelled, deadline_passed=False, timeout_s=1.0) is cancelled


# ---------------------------------------------------------------- base URLs


@pytest.mark.parametrize(
    ("url", "origin", "host_header"),
    [
        ("http://127.0.0.1:8700", Origin("http", "127.0.0.1", 8700, ""), "127.0.0.1:8700"),
        ("https://Tables.Example/", Origin("https", "tables.example", 443, ""), "tables.example"),
        ("HTTP://srv:80/api/v2/", Origin("http", "srv", 80, "/api/v2"), "srv"),
        ("https://[::1]:8443/p", Origin("https", "::1", 8443, "/p"), "[::1]:8443"),
        ("https://[FE80::1]/", Origin("https", "fe80::1", 443, ""), "[fe80::1]"),
        ("http://xn--bcher-kva.example:/", Origin("http", "xn--bcher-kva.example", 80, ""), None),
        ("http://shoe_01.local./b%C3%BCro/",
         Origin("http", "shoe_01.local.", 80, "/b%C3%BCro"), None),
        # a path is percent-encoded as a browser would
        ("http://h/b\u00fcro", Origin("http", "h", 80, "/b%C3%BCro"), "h"),
    ],
)  # fmt: skip
def test_base_urls_the_client_can_use(url: str, origin: Origin, host_header: str | None) -> None:
    assert parse_base_url(url) == origin
    if host_header is not None:
        assert origin.host_header == host_header


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("ftp://server/", "http:// or https://"),
        ("server:8700", "http:// or https://"),
        ("http://", "names no host"),
        ("http://:8700/", "names no host"),
        ("http://ab\u200b/", "xn-- punycode"),
        ("https://" + "\u00e4" * 70 + "/", "xn-- punycode"),
        ("http://b\u00fccher.example/", "xn-- punycode"),
        ("http://host:0/", "1 to 65535"),
        ("http://host:65536/", "1 to 65535"),
        ("http://host:8o/", "1 to 65535"),
        ("http://host:\u0661\u0662/", "1 to 65535"),  # Arabic-Indic digits are digits to isdigit
        ("http://user:secret@host/", "user or password"),
        ("http://host/?a=1", "?query or #fragment"),
        ("http://host/#top", "?query or #fragment"),
        ("http://host/a b", "white space"),
        ("http://host/\x00", "control characters"),
        ("http://[::1/", "closing ]"),
        ("http://[::1]x/", "after the IPv6 host"),
        ("http://[::g]/", "not an IPv6 address"),
        ("http://[fe80::1%25eth0]/", "zone ids"),
        ("http://::1/", "brackets"),
        ("http://999.1.1.1/", "not an IPv4 address"),
        ("http://10.1/", "not an IPv4 address"),
        ("http://-server/", "not a host name"),
        ("http://a..b/", "not a host name"),
        ("http://" + "a" * 64 + ".example/", "not a host name"),
        ("http://%61dmin/", "not a host name"),
        ("http://host\\evil/", "not a host name"),
    ],
)
def test_base_urls_the_client_cannot_use_are_refused_with_the_reason(
    url: str, fragment: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        parse_base_url(url)


URLISH = st.text(
    st.sampled_from("aZ09-_.:/[]@%?#\\ \t\u00e4\u200b\x00") | st.characters(), max_size=40
)


@settings(max_examples=400, deadline=None)
@given(scheme=st.sampled_from(["http://", "https://", "HTTP://", "", "ftp://"]), rest=URLISH)
def test_any_text_is_a_base_url_or_one_line_value_error(scheme: str, rest: str) -> None:
    """Nothing else escapes; and what is accepted, urllib reads as the same host and port."""
    url = scheme + rest
    try:
        origin = parse_base_url(url)
    except ValueError as error:
        message = str(error)
    else:
        parts = urllib.parse.urlsplit(url)
        assert parts.hostname == origin.host
        assert (parts.port or {"http": 80, "https": 443}[origin.scheme]) == origin.port
        assert origin.path_prefix.isascii()
        assert not origin.path_prefix.endswith("/")
        return
    assert message
    assert not any(character in message for character in "\r\n\x00"), message


@settings(max_examples=200, deadline=None)
@given(
    labels=st.lists(st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True),
                    min_size=1, max_size=4),
    port=st.integers(1, 65535),
    path=st.lists(st.from_regex(r"[A-Za-z0-9._~-]{1,8}", fullmatch=True), max_size=3),
)  # fmt: skip
def test_every_well_formed_base_url_is_accepted(labels: list[str], port: int, path: list[str]):
    if labels[-1].isdigit():
        labels = [*labels, "example"]  # an all-digit last label would read as IPv4
    host = ".".join(labels)
    prefix = "".join(f"/{segment}" for segment in path)
    assert parse_base_url(f"https://{host}:{port}{prefix}/") == Origin("https", host, port, prefix)


# ---------------------------------------------------------------- what the server sees of us


def test_a_body_of_megabytes_waits_for_the_wire_and_the_connection_stays_usable() -> None:
    """16 MiB is more than the kernel's buffers take at once: the client waits for the
    server to read (flow control), then the same connection carries the next request."""
    big = bytes(range(256)) * (16 * 4096)

    async def scenario() -> None:
        async with serving(keep_alive) as served:
            client = client_for(served)
            sent = await client.request("POST", "/big", headers={}, body=big)
            after = await client.request("POST", "/small", headers={}, body=b"abc")
            assert (sent.text, after.text) == (f"POST /big {len(big)}", "POST /small 3")
            assert served.requests[0].body == big
            assert served.connections == 1
            await client.close()

    asyncio.run(scenario())


def test_a_failed_exchange_hangs_up_at_once() -> None:
    """After a timeout the client aborts the connection itself, without waiting for close():
    the server sees the end, the next request is on a new connection."""

    async def scenario() -> None:
        ended = asyncio.Event()

        async def silent(
            served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ):
            if served.connections > 1:
                await keep_alive(served, reader, writer)
                return
            await reader.read()  # answers nothing, until the client hangs up
            ended.set()

        async with serving(silent) as served:
            client = client_for(served, timeout_s=SHORT_TIMEOUT_S)
            with pytest.raises(HttpTimeout):
                await client.request("GET", "/", headers={})
            await asyncio.wait_for(ended.wait(), SAFETY_TIMEOUT_S / 5)
            assert (await client.request("GET", "/next", headers={})).text == "GET /next 0"
            assert served.connections == 2
            await client.close()

    asyncio.run(scenario())


def test_a_server_ending_its_side_while_idle_is_hung_up_on_at_once() -> None:
    """The server half-closes after an answer: the client closes its side too, at once (a
    half-closed connection is of no use), not at its next request."""

    async def scenario() -> None:
        ended = asyncio.Event()

        async def half_close(
            served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ):
            await read_request(reader)
            writer.write(answer(b"ok"))
            writer.write_eof()
            await reader.read()  # until the client closes its side
            ended.set()

        async with serving(half_close) as served:
            client = client_for(served)
            assert (await client.request("GET", "/", headers={})).text == "ok"
            await asyncio.wait_for(ended.wait(), SAFETY_TIMEOUT_S / 5)
            await client.close()

    asyncio.run(scenario())


def _status_line_of(length: int) -> bytes:
    return b"X" * length + b"\r\n\r\n"


def test_a_long_error_message_is_cut_to_300_characters_with_an_ellipsis() -> None:
    short = asyncio.run(_expect_failure(_sends(_status_line_of(10), then_wait=True), HttpError))
    assert short == "RemoteProtocolError: illegal status line: bytearray(b'" + "X" * 10 + "')"
    fits = asyncio.run(_expect_failure(_sends(_status_line_of(244), then_wait=True), HttpError))
    assert fits == "RemoteProtocolError: illegal status line: bytearray(b'" + "X" * 244 + "')"
    assert len(fits) == 300  # exactly the limit: whole
    cut = asyncio.run(_expect_failure(_sends(_status_line_of(245), then_wait=True), HttpError))
    assert cut == fits[:297] + "..."


# ---------------------------------------------------------------- each refusal, word for word


def test_each_unusable_base_url_is_refused_in_words() -> None:
    refusals = {
        "http://host/a b": "a URL holds no white space or control characters",
        "ftp://host/": "must start with http:// or https://",
        "http://host/?a=1": "a base URL has no ?query or #fragment",
        "http://user:secret@host/": "must not hold a user or password",
        "http://[::1/": "an IPv6 host needs its closing ]",
        "http://[::1]:80]/": "the port must be a number from 1 to 65535, not '80]'",
        "http://::1/": "an IPv6 host is written in brackets: http://[::1]:8700/",
        "http:///v1": "names no host",
    }
    for url, text in refusals.items():
        with pytest.raises(ValueError, match=f"^{re.escape(text)}$"):
            parse_base_url(url)
    text = "an ssl_context is given for https:// and only for https://"
    with pytest.raises(ValueError, match=f"^{re.escape(text)}$"):
        HttpClient("https://127.0.0.1/", ssl_context=None, timeout_s=1.0)
    client = HttpClient("http://127.0.0.1:9/", ssl_context=None, timeout_s=SAFETY_TIMEOUT_S)
    with pytest.raises(ValueError, match=r"^the client sets Content-Length, Host itself$"):
        asyncio.run(client.request("GET", "/", headers={"Host": "x", "Content-Length": "1"}))


def test_a_path_may_hold_what_a_scheme_has_and_names_reach_253_characters() -> None:
    assert parse_base_url("http://host/a://b") == Origin("http", "host", 80, "/a://b")
    longest = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])  # 253 characters
    assert parse_base_url(f"http://{longest}/").host == longest
    assert parse_base_url(f"http://{longest}./").host == longest + "."  # the root's dot
    with pytest.raises(ValueError, match="not a host name"):
        parse_base_url(f"http://{longest}e/")  # 254


async def _raw_head(request: Callable[[HttpClient], Awaitable[object]]) -> bytes:
    """The bytes of the request's head as the server read them."""
    heads: list[bytes] = []

    async def record(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        length = re.search(rb"Content-Length: (\d+)", head)
        await reader.readexactly(int(length.group(1)) if length else 0)
        writer.write(answer(b"ok"))
        await writer.drain()

    async with serving(record) as served:
        client = client_for(served)
        await request(client)
        await client.close()
    return heads[0]


def test_the_head_names_host_and_length_as_http_writes_them() -> None:
    post = asyncio.run(_raw_head(lambda c: c.request("POST", "/e", headers={}, body=b"")))
    assert post.startswith(b"POST /e HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Length: 0\r\n" in post  # a POST says so even when empty
    get = asyncio.run(_raw_head(lambda c: c.request("GET", "/a", headers={}, body=b"abc")))
    assert b"\r\nContent-Length: 3\r\n" in get  # any body is framed
    bare = asyncio.run(_raw_head(lambda c: c.request("GET", "/a", headers={})))
    assert b"Content-Length" not in bare


def test_close_hangs_up_at_once() -> None:
    async def scenario() -> None:
        ended = asyncio.Event()

        async def watch(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
            await keep_alive(served, reader, writer)
            ended.set()

        async with serving(watch) as served:
            client = client_for(served)
            await client.request("GET", "/", headers={})
            await client.close()
            await asyncio.wait_for(ended.wait(), SAFETY_TIMEOUT_S / 5)

    asyncio.run(scenario())


def test_the_client_connects_to_the_urls_host() -> None:
    async def scenario() -> None:
        server = await asyncio.start_server(
            lambda r, w: keep_alive(Served(0), r, w), "127.0.0.2", 0
        )
        port = server.sockets[0].getsockname()[1]
        try:
            client = HttpClient(f"http://127.0.0.2:{port}", ssl_context=None, timeout_s=5.0)
            assert (await client.request("GET", "/x", headers={})).text == "GET /x 0"
            await client.close()
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(scenario())


def _resets(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
    async def handler() -> None:
        await reader.readuntil(b"\r\n\r\n")
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # a reset, not a close

    return handler()


def test_a_reset_is_reported_as_one() -> None:
    message = asyncio.run(_expect_failure(_resets, HttpError))
    assert message == "ConnectionResetError: [Errno 104] Connection reset by peer"


def test_a_reset_while_the_body_is_sent_ends_the_wait_for_the_wire() -> None:
    big = b"x" * (16 << 20)

    async def scenario() -> str:
        async with serving(_resets) as served:
            client = client_for(served)
            with pytest.raises(HttpError) as caught:
                await client.request("POST", "/big", headers={}, body=big)
            await client.close()
        return str(caught.value)

    assert asyncio.run(scenario()) == "ConnectionResetError: [Errno 104] Connection reset by peer"


def test_what_the_server_did_is_said_in_words_and_a_body_may_fill_the_limit() -> None:
    nothing = asyncio.run(_expect_failure(_sends(b""), HttpError))
    assert nothing == "the server closed the connection without answering"
    half = asyncio.run(_expect_failure(_sends(b"HTTP/1.1 200 OK\r\nContent-Le"), HttpError))
    assert half == "the server closed the connection mid-answer"

    async def scenario() -> tuple[int, int]:
        async def full(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
            await read_request(reader)
            writer.write(answer(b"y" * 1000))
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            await read_request(reader)
            writer.write(_framed("chunked", b"z" * 1000))
            await writer.drain()
            await reader.read()

        async with serving(full) as served:
            client = client_for(served, max_body=1000)
            declared = await client.request("GET", "/", headers={})
            await client.close()
        async with serving(_sends(_framed("chunked", b"z" * 1000), then_wait=True)) as served:
            client = client_for(served, max_body=1000)
            streamed = await client.request("GET", "/", headers={})
            await client.close()
        return len(declared.body), len(streamed.body)

    assert asyncio.run(scenario()) == (1000, 1000)


def test_a_server_ending_its_side_while_the_body_is_sent_is_a_failure_saying_so() -> None:
    big = b"x" * (16 << 20)

    async def scenario() -> str:
        done = asyncio.Event()

        async def half_close(
            served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            try:
                await reader.readuntil(b"\r\n\r\n")
                writer.write_eof()  # no answer will come; it still reads what is sent
                while await reader.read(1 << 16):
                    pass
            finally:
                done.set()

        async with serving(half_close) as served:
            client = client_for(served)
            with pytest.raises(HttpError) as caught:
                await client.request("POST", "/big", headers={}, body=big)
            await client.close()
            await asyncio.wait_for(done.wait(), SAFETY_TIMEOUT_S)
        return str(caught.value)

    assert asyncio.run(scenario()) == "ConnectionResetError: the connection closed while sending"


def test_the_ports_ends_are_ports_and_a_path_keeps_its_last_letters() -> None:
    assert [parse_base_url(f"http://host:{port}/").port for port in (1, 65535)] == [1, 65535]
    assert parse_base_url("http://host/BOX/").path_prefix == "/BOX"  # only the slash goes
