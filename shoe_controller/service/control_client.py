"""A client's connection to the control socket (shoectl's, the surveillance companion's): JSON
lines both ways (docs/control.md), and the errors a person is told about when it cannot be
used."""

from __future__ import annotations

import json
import os
import select
import socket
import stat
from collections.abc import Callable, Iterator, Mapping
from typing import Any

TIMEOUT_S = 15.0
READ_BYTES = 65536


class UnreachableError(Exception):
    """The control socket cannot be used (daemon not running, no permission, broken reply)."""


class AnswerError(Exception):
    """The daemon answered with an error."""

    def __init__(self, code: str, text: str, answer: Mapping[str, Any]) -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.answer = answer


class Client:
    """One connection to the control socket; JSON lines both ways."""

    def __init__(self, path: str, timeout: float = TIMEOUT_S) -> None:
        self.path = path
        self.timeout = timeout
        self.following_from: int | None = None  # a follow's answer: the last seq then stored
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except TimeoutError:
            self._sock.close()
            raise UnreachableError(self._late()) from None
        except OSError as error:
            self._sock.close()
            raise UnreachableError(_connect_failure(path, error)) from None
        self._buffer = b""

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, request: Mapping[str, Any]) -> None:
        try:
            self._sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
        except OSError as error:
            raise UnreachableError(f"the controller closed the connection: {error}") from None

    def receive(self) -> dict[str, Any]:
        """The next line, waiting for it (up to the timeout)."""
        line = self._line(None)
        assert line is not None
        return line

    def lines(self, wait: float | None) -> Iterator[dict[str, Any]]:
        """The lines that are there now (after waiting up to `wait` s for the first)."""
        line = self._line(wait)
        while line is not None:
            yield line
            line = self._line(0.0)

    def _line(self, wait: float | None) -> dict[str, Any] | None:
        """The next line; with `wait`, None when none came within `wait` s."""
        while b"\n" not in self._buffer:
            try:
                if wait is not None and not select.select([self._sock], [], [], wait)[0]:
                    return None
                data = self._sock.recv(READ_BYTES)
            except TimeoutError:
                raise UnreachableError(self._late()) from None
            except OSError as error:
                raise UnreachableError(f"the controller closed the connection: {error}") from None
            if not data:
                raise UnreachableError("the controller closed the connection")
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            raise UnreachableError(
                "the controller sent something that is not JSON: "
                + line[:80].decode("utf-8", "replace").strip()
            ) from None
        if not isinstance(answer, dict):
            raise UnreachableError("the controller's answer is not a JSON object")
        return answer

    def request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request; the answer's result, or AnswerError."""
        self.send(request)
        answer = self.receive()
        if not answer.get("ok"):
            error = answer.get("error") or {}
            raise AnswerError(str(error.get("code")), str(error.get("text")), answer)
        return answer.get("result") or {}

    def stream(
        self, request: Mapping[str, Any], on_start: Callable[[int], None] | None = None
    ) -> Iterator[dict[str, Any]]:
        """A following request: the first answer, then every event line until closed.
        `on_start(from_seq)` is called once the daemon follows (from_seq: its last seq then)."""
        result = self.request(request)
        from_seq = result.get("from_seq")
        self.following_from = from_seq if isinstance(from_seq, int) else 0
        if on_start is not None:
            on_start(self.following_from)
        self._sock.settimeout(None)  # events come when the table deals
        while True:
            answer = self.receive()
            if "event" in answer:
                yield answer["event"]

    def _late(self) -> str:
        return (
            f"the controller did not answer within {self.timeout:g} s (is it hung? shoectl"
            " --timeout SECONDS waits longer)"
        )


def _connect_failure(path: str, error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return f"cannot reach the controller: no socket at {path} (is shoe-controller running?)"
    if isinstance(error, ConnectionRefusedError) and os.path.isdir(path):
        return (
            f"cannot reach the controller: {path} is a folder, not the control socket (give"
            f" the socket in it, e.g. --socket {os.path.join(path, 'control.sock')})"
        )
    if isinstance(error, ConnectionRefusedError) and not _is_socket(path):
        return f"cannot reach the controller: {path} is a file, not a socket"
    if isinstance(error, ConnectionRefusedError):
        return (
            f"cannot reach the controller: nobody listens on {path}"
            " (shoe-controller stopped or restarting?)"
        )
    if isinstance(error, PermissionError):
        return (
            f"cannot reach the controller: permission denied on {path} (the controller's"
            " viewer and supervisor groups may use it: ask an administrator to add you)"
        )
    return f"cannot reach the controller at {path}: {error.strerror or error}"


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return True  # gone meanwhile: say what a refused connection says
