"""A transport wrapped to show its bytes as they pass and, tapping, to write none of them.

The monitor's `--hex` shows every byte read and written with its time; `--tap` listens only
(a second port on the line, a spy): what the link would write (its ACKs) is held back and
counted, so the line is never disturbed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from drivers.transports.base import READ_CHUNK, Transport

Watcher = Callable[[str, bytes, float], None]  # (direction "rx"/"tx", bytes, unix time)


class WatchedTransport(Transport):
    """A transport whose bytes are shown as they pass (`--hex`), and whose writes can be held
    back entirely (`--tap`: listen only, ACK nothing, never disturb the line)."""

    def __init__(self, inner: Transport, *, watch: Watcher | None, tap: bool) -> None:
        self.inner = inner
        self.name = inner.name
        self._watch = watch
        self.tap = tap
        self.held_back = 0  # bytes the link would have sent, not written (tap)

    @property
    def is_open(self) -> bool:
        return self.inner.is_open

    def open(self) -> None:
        self.inner.open()

    def read(self, max_bytes: int = READ_CHUNK) -> bytes:
        data = self.inner.read(max_bytes)
        if data and self._watch is not None:
            self._watch("rx", data, time.time())
        return data

    def write(self, data: bytes) -> None:
        if self.tap:
            self.held_back += len(data)
            return
        self.inner.write(data)
        if data and self._watch is not None:
            self._watch("tx", data, time.time())

    def close(self) -> None:
        self.inner.close()

    def readable_fd(self) -> int | None:
        return self.inner.readable_fd()
