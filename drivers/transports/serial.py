"""Any pyserial URL as a blocking byte transport."""

from __future__ import annotations

import contextlib
import os
import select
from typing import Any

import serial

from drivers.transports.base import DEFAULT_BAUDRATE, READ_CHUNK, Transport, TransportError


class SerialTransport(Transport):
    """Any pyserial URL: ``/dev/ttyUSB0``, ``/dev/serial/by-id/...``, a pty, ``socket://``,
    ``rfc2217://``, ``loop://``, ``spy://`` (8N1, no flow control)."""

    def __init__(
        self,
        url: str,
        *,
        baudrate: int = DEFAULT_BAUDRATE,
        read_timeout: float = 0.05,
        write_timeout: float = 2.0,
        exclusive: bool = True,
    ) -> None:
        self.url = url
        self.name = url
        self.baudrate = baudrate
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.exclusive = exclusive
        self._port: Any = None

    @property
    def is_open(self) -> bool:
        return self._port is not None and bool(self._port.is_open)

    def open(self) -> None:
        self.close()
        options: dict[str, Any] = {
            "baudrate": self.baudrate,
            "bytesize": serial.EIGHTBITS,
            "parity": serial.PARITY_NONE,
            "stopbits": serial.STOPBITS_ONE,
            "timeout": self.read_timeout,
            "write_timeout": self.write_timeout,
        }
        try:
            try:
                # exclusive: a second program opening the same shoe would steal its bytes
                self._port = serial.serial_for_url(self.url, exclusive=self.exclusive, **options)
            except (TypeError, ValueError):  # a URL handler without exclusive access
                self._port = serial.serial_for_url(self.url, **options)
        except (serial.SerialException, OSError, ValueError) as exc:
            self._port = None
            raise TransportError(f"cannot open {self.url}: {_why(exc)}") from exc

    def read(self, max_bytes: int = READ_CHUNK) -> bytes:
        port = self._require_open()
        try:
            waiting = port.in_waiting
            data = port.read(min(max(waiting, 1), max_bytes))
            if data:
                more = port.in_waiting
                if more:
                    data += port.read(min(more, max_bytes - len(data)))
            return bytes(data)
        except (serial.SerialException, OSError, ValueError, TypeError) as exc:
            # pyserial reports a closed pty as "readiness to read but returned no data"
            raise TransportError(f"{self.url}: read failed: {exc}") from exc

    def write(self, data: bytes) -> None:
        port = self._require_open()
        try:
            port.write(data)
        except (serial.SerialException, OSError, ValueError, TypeError) as exc:
            raise TransportError(f"{self.url}: write failed: {exc}") from exc

    def read_ready(self, max_bytes: int = READ_CHUNK) -> bytes:
        """The bytes waiting, in one read(2) on the loop's thread (pyserial's tty is O_NONBLOCK
        and raw, VMIN 0: no bytes read as b"" or EAGAIN). A wake-up for bytes already read
        gives b""; a tty still readable with nothing to read, even at a second look (bytes
        may have come between the two), or failing (EIO: the other end of a pty closed),
        has hung up."""
        fd = self.readable_fd()
        if fd is None:  # closed, or a network URL: read() says which
            return self.read(max_bytes)
        data = self._read_fd(fd, max_bytes)
        if not data and select.select([fd], [], [], 0)[0]:
            data = self._read_fd(fd, max_bytes)
            if not data:
                raise TransportError(f"{self.url}: the port hung up")
        return data

    def _read_fd(self, fd: int, max_bytes: int) -> bytes:
        try:
            return os.read(fd, max_bytes)
        except BlockingIOError:
            return b""
        except OSError as exc:
            raise TransportError(f"{self.url}: read failed: {exc}") from exc

    def readable_fd(self) -> int | None:
        """The tty's descriptor (device paths and ptys); None for network URLs."""
        port = self._port
        fd = getattr(port, "fd", None) if port is not None else None
        return fd if isinstance(fd, int) else None

    def close(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            with contextlib.suppress(Exception):  # closing a vanished port may fail: it is gone
                port.close()

    def _require_open(self) -> Any:
        if self._port is None:
            raise TransportError(f"{self.url} is not open")
        return self._port


def _why(error: BaseException) -> str:
    """The system's reason in words (`no such file or directory`), not pyserial's
    `[Errno 2] could not open port ...: [Errno 2] ...` around it."""
    number = getattr(error, "errno", None)
    if isinstance(number, int) and number > 0:
        return os.strerror(number).lower()
    return str(error)
