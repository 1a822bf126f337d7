"""What a byte transport is: a blocking pipe to one device, and the errors it raises.

Transports only move bytes. Each ``Transport`` is blocking and meant for a worker thread:
``open()``, ``read()`` (returns within ``read_timeout``, ``b""`` if nothing came),
``write(data)``, ``close()``; every failure is a ``TransportError``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol, TypeVar

DEFAULT_BAUDRATE = 115200
READ_CHUNK = 4096

T_co = TypeVar("T_co", covariant=True)


class TransportError(ConnectionError):
    """The port could not be opened, vanished, or failed a read or write."""


class DeviceSilentError(TransportError):
    """No frame from the device for longer than the silence timeout."""


class ByteProtocol(Protocol[T_co]):
    """What ``DeviceConnection`` needs from a sans-I/O protocol object."""

    def receive_data(self, data: bytes) -> list[T_co]: ...

    def bytes_to_send(self) -> bytes: ...

    def poll(self, now: float) -> list[T_co] | None: ...


class Transport(ABC):
    """A blocking byte pipe to one device; used from a worker thread."""

    name: str = "transport"

    @abstractmethod
    def open(self) -> None:
        """Open the port; ``TransportError`` if it is absent or busy."""

    @abstractmethod
    def read(self, max_bytes: int = READ_CHUNK) -> bytes:
        """Bytes that arrived, waiting at most the read timeout (``b""`` if none)."""

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Write all of ``data``."""

    @abstractmethod
    def close(self) -> None:
        """Close the port; safe to call twice and after a failure."""

    def read_ready(self, max_bytes: int = READ_CHUNK) -> bytes:
        """Once `readable_fd` said readable: the bytes waiting, at once (b"" when the wake-up
        was for bytes already read); never waits for more."""
        return self.read(max_bytes)

    def readable_fd(self) -> int | None:
        """A file descriptor the event loop can watch for input, when the port has one: then
        `read()` is called only once it is readable, on the loop's own thread (no thread
        hand-off on a card's way in). None: `read()` runs in a worker thread."""
        return None

    @property
    @abstractmethod
    def is_open(self) -> bool: ...
