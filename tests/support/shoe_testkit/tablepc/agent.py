"""The host's side of the QEMU guest agent: run a command in the booted table PC.

The guest runs Debian's `qemu-guest-agent` on a virtio serial port whose other end is a
Unix socket on the host. The protocol is QMP's JSON, one object a line, without QMP's
greeting; `guest-sync-delimited` first, so that an answer left over from a command given
up on (a guest that was cut off mid-answer) is never read as the next one's.
"""

from __future__ import annotations

import base64
import json
import random
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYNC_MARK = b"\xff"  # the agent sends it before the answer to guest-sync-delimited


class AgentError(RuntimeError):
    """The agent cannot be reached, or refused a command."""


@dataclass(frozen=True)
class Ran:
    """A command's end in the guest."""

    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout + self.stderr

    def check(self) -> Ran:
        if self.exit_code != 0:
            raise AssertionError(
                f"{list(self.argv)} exited {self.exit_code} in the guest:\n{self.text}"
            )
        return self


class GuestAgent:
    """One connection to the agent's socket; `run` a command, `read` or `write` a file."""

    def __init__(self, socket_path: Path, *, timeout: float = 30.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._socket: socket.socket | None = None
        self._buffer = b""

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
            self._buffer = b""

    def ping(self, timeout: float = 5.0) -> bool:
        """Whether the agent answers within `timeout` (a fresh connection each time)."""
        self.close()
        try:
            self._connect(timeout)
            return True
        except (OSError, AgentError):
            self.close()
            return False

    def run(self, argv: list[str], *, stdin: str | None = None, timeout: float = 120.0) -> Ran:
        """`argv` in the guest as root, its output captured; waits at most `timeout`."""
        arguments: dict[str, Any] = {
            "path": argv[0],
            "arg": argv[1:],
            "capture-output": True,
        }
        if stdin is not None:
            arguments["input-data"] = base64.b64encode(stdin.encode()).decode()
        pid = self.execute("guest-exec", arguments)["pid"]
        deadline = time.monotonic() + timeout
        while True:
            status = self.execute("guest-exec-status", {"pid": pid})
            if status.get("exited"):
                break
            if time.monotonic() > deadline:
                raise AgentError(f"{argv} still running in the guest after {timeout:.0f} s")
            time.sleep(0.1)
        return Ran(
            tuple(argv),
            int(status.get("exitcode", -status.get("signal", 0) or -1)),
            _decoded(status.get("out-data")),
            _decoded(status.get("err-data")),
        )

    def sh(self, script: str, *, timeout: float = 120.0) -> Ran:
        """A shell script in the guest (set -e), as root."""
        return self.run(["/bin/sh", "-ec", script], timeout=timeout)

    def execute(self, command: str, arguments: dict[str, Any] | None = None) -> Any:
        if self._socket is None:
            self._connect(self.timeout)
        request: dict[str, Any] = {"execute": command}
        if arguments is not None:
            request["arguments"] = arguments
        answer = self._ask(request)
        if "error" in answer:
            raise AgentError(f"{command}: {answer['error'].get('desc', answer['error'])}")
        return answer.get("return")

    def _connect(self, timeout: float) -> None:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(timeout)
        try:
            connection.connect(str(self.socket_path))
        except OSError:
            connection.close()
            raise
        self._socket, self._buffer = connection, b""
        token = random.randrange(1, 2**31)
        try:
            connection.sendall(
                SYNC_MARK
                + json.dumps(
                    {"execute": "guest-sync-delimited", "arguments": {"id": token}}
                ).encode()
                + b"\n"
            )
            self._skip_to_sync_mark()
            answer = self._read_answer()
        except (OSError, ValueError) as error:
            self.close()
            raise AgentError(f"the guest agent does not answer: {error}") from error
        if answer.get("return") != token:
            self.close()
            raise AgentError(f"the guest agent answered {answer} to a sync")

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._socket is not None
        try:
            self._socket.sendall(json.dumps(request).encode() + b"\n")
            return self._read_answer()
        except (OSError, ValueError) as error:
            self.close()
            raise AgentError(f"{request['execute']}: {error}") from error

    def _skip_to_sync_mark(self) -> None:
        while SYNC_MARK not in self._buffer:
            self._buffer = b""
            self._fill()
        self._buffer = self._buffer.split(SYNC_MARK)[-1]

    def _read_answer(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            self._fill()
        line, self._buffer = self._buffer.split(b"\n", 1)
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise ValueError(f"not an answer: {line!r}")
        return answer

    def _fill(self) -> None:
        assert self._socket is not None
        data = self._socket.recv(65536)
        if not data:
            raise ConnectionError("the guest agent's socket closed")
        self._buffer += data


def _decoded(data: str | None) -> str:
    return base64.b64decode(data).decode(errors="replace") if data else ""
