"""One keep-alive HTTP/1.1 connection to one origin: what the table server's sink talks through.

h11 does the framing (Content-Length and chunked bodies, keep-alive, "Connection: close");
asyncio carries the bytes. It replaces httpx in the daemon (httpx and what it
imports cost ~5 MB of the daemon's RSS). The sink sends one request at a time to one server,
so there is one connection, no pool, no proxy (nothing is read from the environment: a proxy
must not see the table's traffic), no redirect followed and no content decoding.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import socket
import ssl
import urllib.parse
from collections.abc import Mapping

import h11

__all__ = [
    "MAX_BODY",
    "HttpClient",
    "HttpError",
    "HttpFailure",
    "HttpResponse",
    "HttpTimeout",
    "Origin",
    "parse_base_url",
]

MAX_BODY = 1 << 20  # bytes: docs/spec-push-api.md's answers are a few bytes; more is a wrong server
DEFAULT_PORTS = {"http": 80, "https": 443}
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})  # these say Content-Length even when empty
_OURS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_MESSAGE_MAX = 300  # characters of an error message: h11's may quote what the server sent
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")  # one DNS label, lower case
_NOT_IN_URLS = re.compile(r"[\x00-\x20\x7f]")  # white space and control characters


class HttpFailure(Exception):  # noqa: N818 - the base of HttpTimeout and HttpError
    """A request that got no complete answer; the message is one line."""


class HttpTimeout(HttpFailure):
    """No complete answer within the client's timeout."""


class HttpError(HttpFailure):
    """The connection failed, or the server's answer is not one HTTP/1.1 can carry."""


# ---------------------------------------------------------------- base URLs (pure)


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a base URL points: scheme, host, port, and the path every request starts with."""

    scheme: str  # "http" or "https"
    host: str  # a lower-case name, an IPv4 address, or an IPv6 address without brackets
    port: int
    path_prefix: str  # percent-encoded, without its trailing "/": "" for the server's root

    @property
    def host_header(self) -> str:
        """The Host header's value: the host, and the port when it is not the scheme's."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


def parse_base_url(url: str) -> Origin:
    """The origin of an http:// or https:// base URL; ValueError saying what it cannot use.

    A host is a name, an IPv4 address or a bracketed IPv6 address, in ASCII (a non-ASCII
    name is written in its xn-- punycode form). No user or password (they would show in
    every log line naming the server), no ?query or #fragment (the API's paths are appended
    to the URL), no white space. A path is percent-encoded where it needs to be.
    """
    if _NOT_IN_URLS.search(url) or any(character.isspace() for character in url):
        raise ValueError("a URL holds no white space or control characters")
    scheme, separator, rest = url.partition("://")
    scheme = scheme.lower()
    if not separator or scheme not in DEFAULT_PORTS:
        raise ValueError("must start with http:// or https://")
    if "?" in rest or "#" in rest:
        raise ValueError("a base URL has no ?query or #fragment")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        raise ValueError("must not hold a user or password")
    host, port_text = _split_authority(authority)
    port = _port(port_text, DEFAULT_PORTS[scheme])
    prefix = urllib.parse.quote(slash + path, safe="/%:@!$&'()*+,;=~")
    return Origin(scheme, _host(host), port, prefix.rstrip("/"))


def _split_authority(authority: str) -> tuple[str, str]:
    """(host, port text) of `host`, `host:port`, `[v6]` or `[v6]:port`."""
    if authority.startswith("["):
        inside, bracket, after = authority[1:].partition("]")
        if not bracket:
            raise ValueError("an IPv6 host needs its closing ]")
        if after and not after.startswith(":"):
            raise ValueError(f"unexpected {after!r} after the IPv6 host")
        if not _is_address(socket.AF_INET6, inside):
            raise ValueError(f"[{inside}] is not an IPv6 address (zone ids are not supported)")
        return f"[{inside}]", after[1:]
    host, _, port_text = authority.partition(":")
    if ":" in port_text:
        raise ValueError("an IPv6 host is written in brackets: http://[::1]:8700/")
    return host, port_text


def _port(text: str, default: int) -> int:
    if not text:
        return default  # "host:" is the scheme's port (RFC 3986 3.2.3)
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise ValueError(f"the port must be a number from 1 to 65535, not {text!r}")
    return int(text)


def _host(host: str) -> str:
    if not host:
        raise ValueError("names no host")
    if host.startswith("["):
        return host[1:-1].lower()
    if not host.isascii():
        raise ValueError(f"the host {host!r} is not ASCII: write it in its xn-- punycode form")
    name = host.lower()
    labels = name.removesuffix(".").split(".")
    if labels[-1].isdigit():  # a name's last label is never all digits: an IPv4 address
        if not _is_address(socket.AF_INET, name):
            raise ValueError(f"{host!r} is not an IPv4 address (four numbers 0-255, with dots)")
        return name
    if len(name.removesuffix(".")) > 253 or not all(
        len(label) <= 63 and _LABEL.fullmatch(label) for label in labels
    ):
        raise ValueError(f"{host!r} is not a host name (letters, digits, - and _ between dots)")
    return name


def _is_address(family: socket.AddressFamily, text: str) -> bool:
    try:
        socket.inet_pton(family, text)
    except OSError:  # also for text inet_pton cannot encode
        return False
    return True


# ---------------------------------------------------------------- the connection


@dataclasses.dataclass(frozen=True)
class HttpResponse:
    """A whole answer: its status and body (headers are not kept: the sink needs none)."""

    status: int
    body: bytes

    @property
    def text(self) -> str:
        """The body as text (UTF-8, undecodable bytes replaced): for messages, not parsing."""
        return self.body.decode("utf-8", errors="replace")


class _Wire(asyncio.Protocol):
    """One transport's bytes as they arrive, its end, and write flow control.

    A protocol rather than asyncio's streams because reuse must know whether anything
    arrived while the connection was idle (an end, or an unasked-for answer such as a 408)
    and StreamReader does not say.
    """

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self._create_future = loop.create_future
        self.transport: asyncio.Transport | None = None
        self._received = bytearray()
        self._ended = False
        self._error: Exception | None = None
        self._arrival: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self.lost: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._received += data
        self._wake()

    def eof_received(self) -> bool:
        self._ended = True
        self._wake()
        return False  # the transport closes itself: a half-closed connection is no use

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        self._error = exc
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        if not self.lost.done():
            self.lost.set_result(None)

    def pause_writing(self) -> None:
        self._writable = self._create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    def _wake(self) -> None:
        if self._arrival is not None and not self._arrival.done():
            self._arrival.set_result(None)

    def idle(self) -> bool:
        """Nothing arrived since the last answer and the connection is still open."""
        return not self._received and not self._ended

    async def send(self, data: bytes) -> None:
        assert self.transport is not None
        if self._ended or self.transport.is_closing():
            raise ConnectionResetError("the connection closed before the request was sent")
        self.transport.write(data)
        if self._writable is not None:
            await self._writable
            if self._ended:
                raise self._error or ConnectionResetError("the connection closed while sending")

    async def receive(self) -> bytes:
        """What arrived since the last call, waiting for something; b"" at the end."""
        while not self._received and not self._ended:
            self._arrival = self._create_future()
            await self._arrival
        data = bytes(self._received)
        self._received.clear()
        if not data and self._error is not None:
            raise self._error  # a reset or a TLS error says more than "closed"
        return data


def _as_failure(error: BaseException, *, deadline_passed: bool, timeout_s: float) -> BaseException:
    """What `request` raises for `error`: HttpTimeout for its deadline or the system's own
    timeout (a kernel's connect timeout shorter than ours), HttpError for any other failure on
    the wire, else `error` itself (an HttpError already, or the caller's cancellation)."""
    if isinstance(error, TimeoutError):  # before OSError: TimeoutError is one
        if deadline_passed:
            return HttpTimeout(f"no whole answer within {timeout_s:g} s")
        return HttpTimeout(_one_line(f"TimeoutError: {error}"))
    if isinstance(error, OSError | h11.ProtocolError):  # ssl.SSLError is an OSError
        return HttpError(_one_line(f"{type(error).__name__}: {error}"))
    return error


class HttpClient:
    """HTTP/1.1 to one origin over one keep-alive connection, one request at a time.

    The connection opens at the first request and is opened again when the server closed
    it, said "Connection: close", or an exchange failed. Each exchange, connecting included,
    takes at most `timeout_s`. `ssl_context` is given exactly for https:// (the server's
    certificate is checked for the URL's host).
    """

    def __init__(
        self,
        base_url: str,
        *,
        ssl_context: ssl.SSLContext | None,
        timeout_s: float,
        max_body: int = MAX_BODY,
    ) -> None:
        self._origin = parse_base_url(base_url)
        if (self._origin.scheme == "https") != (ssl_context is not None):
            raise ValueError("an ssl_context is given for https:// and only for https://")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be above 0, not {timeout_s!r}")
        self._ssl_context = ssl_context
        self._timeout_s = timeout_s
        self._max_body = max_body
        self._wire: _Wire | None = None
        self._protocol: h11.Connection | None = None

    @property
    def origin(self) -> Origin:
        return self._origin

    async def request(
        self, method: str, path: str, *, headers: Mapping[str, str], body: bytes = b""
    ) -> HttpResponse:
        """Send one request for the base URL's path + `path` and read its whole answer.

        HttpTimeout when it takes longer than the timeout, HttpError for any other failure
        on the wire, ValueError (before anything is sent) for a request HTTP cannot carry.
        """
        request = self._build(method, path, headers, body)
        deadline = asyncio.timeout(self._timeout_s)
        try:
            async with deadline:
                return await self._exchange(request, body)
        except BaseException as error:  # cancelled mid-exchange too: the wire's state is unknown
            self._drop()
            failure = _as_failure(
                error, deadline_passed=deadline.expired(), timeout_s=self._timeout_s
            )
            if failure is error:
                raise
            raise failure from None

    async def close(self) -> None:
        """Close the connection (a TLS one says so to the server); the next request opens
        a new one."""
        wire = self._wire
        self._wire = self._protocol = None
        if wire is None or wire.transport is None:
            return
        wire.transport.close()
        try:
            async with asyncio.timeout(self._timeout_s):
                await wire.lost
        except TimeoutError:
            wire.transport.abort()

    # ------------------------------------------------------------------ inside an exchange

    def _build(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> h11.Request:
        if not path.startswith("/"):
            raise ValueError(f"a request path starts with /, not {path!r}")
        taken = sorted(name for name in headers if name.lower() in _OURS)
        if taken:
            raise ValueError(f"the client sets {', '.join(taken)} itself")
        fields = [("Host", self._origin.host_header), *headers.items()]
        if body or method.upper() in _BODY_METHODS:
            fields.append(("Content-Length", str(len(body))))
        target = self._origin.path_prefix + path
        try:
            return h11.Request(method=method, target=target, headers=fields)
        except (h11.LocalProtocolError, UnicodeError) as error:
            raise ValueError(f"cannot send {method} {target!r}: {error}") from None

    async def _exchange(self, request: h11.Request, body: bytes) -> HttpResponse:
        wire, protocol = await self._connection()
        data = protocol.send(request) or b""
        if body:
            data += protocol.send(h11.Data(data=body)) or b""
        data += protocol.send(h11.EndOfMessage()) or b""
        await wire.send(data)
        response = await self._answer(wire, protocol)
        if protocol.our_state is h11.DONE and protocol.their_state is h11.DONE:
            protocol.start_next_cycle()
        if not (protocol.our_state is h11.IDLE and protocol.their_state is h11.IDLE):
            self._drop()  # "Connection: close", HTTP/1.0, or a body framed by the close
        return response

    async def _connection(self) -> tuple[_Wire, h11.Connection]:
        if self._wire is not None and self._protocol is not None:
            if self._wire.idle() and self._protocol.our_state is h11.IDLE:
                return self._wire, self._protocol
            self._drop()  # the server closed it while idle, or spoke out of turn
        origin = self._origin
        loop = asyncio.get_running_loop()
        _, wire = await loop.create_connection(
            _Wire,
            origin.host,
            origin.port,
            ssl=self._ssl_context,
            server_hostname=origin.host if self._ssl_context is not None else None,
        )
        self._wire, self._protocol = wire, h11.Connection(h11.CLIENT)
        return wire, self._protocol

    async def _answer(self, wire: _Wire, protocol: h11.Connection) -> HttpResponse:
        status: int | None = None
        body = bytearray()
        heard = False
        while True:
            event = protocol.next_event()
            if event is h11.NEED_DATA:
                data = await wire.receive()
                if not data and status is None:
                    where = "mid-answer" if heard else "without answering"
                    raise HttpError(f"the server closed the connection {where}")
                heard = True
                protocol.receive_data(data)
            elif isinstance(event, h11.Response):
                status = event.status_code
                for name, value in event.headers:
                    if name == b"content-length" and int(value) > self._max_body:
                        raise HttpError(f"the answer's body is over {self._max_body} bytes")
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > self._max_body:
                    raise HttpError(f"the answer's body is over {self._max_body} bytes")
            elif isinstance(event, h11.EndOfMessage):
                assert status is not None  # h11 gives a Response before its end
                return HttpResponse(status, bytes(body))
            elif isinstance(event, h11.ConnectionClosed):
                raise HttpError("the server closed the connection mid-answer")
            # an InformationalResponse (1xx): the real answer follows

    def _drop(self) -> None:
        """Forget the connection at once; used when its state is no longer known."""
        wire = self._wire
        self._wire = self._protocol = None
        # A transport already lost is closed: aborting it again fails in asyncio (3.11) when
        # its close waited for the write buffer to drain first.
        if wire is not None and wire.transport is not None and not wire.lost.done():
            wire.transport.abort()


def _one_line(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= _MESSAGE_MAX else line[: _MESSAGE_MAX - 3] + "..."
