"""One device on the asyncio loop: reads and writes off the loop, reconnects with backoff.

``DeviceConnection`` runs one device on the daemon's asyncio loop without blocking it: the
blocking reads and writes go to a private two-thread executor, the protocol object (the
sans-I/O ``HostLink`` or a vendor ASCII adapter) is fed and polled on the loop, and what it
produces comes out of the async iterator ``messages()``. A port that
vanishes (unplug, closed pty, USB error) or a device silent for ``silence_timeout`` seconds
(no frame) is reported through ``on_status`` and ``stats`` and reopened with backoff (0.5 s
doubling to 10 s by default). The frame in flight is not lost: it stays in the protocol
object, which resends it on the new connection.

The protocol object needs ``receive_data(bytes) -> list``, ``bytes_to_send() -> bytes`` and
``poll(now)``; it may also have ``connection_made()``, ``connection_lost()`` and
``frames_received`` (a counter of good frames, used by the silence watchdog instead of raw
bytes, so line noise does not count as a live device)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Generic, TypeVar

from drivers.transports.base import (
    READ_CHUNK,
    ByteProtocol,
    DeviceSilentError,
    Transport,
    TransportError,
)
from shoe_controller.vocab.backoff import backoff_delay

T = TypeVar("T")


class ConnectionStatus(Enum):
    CONNECTED = "connected"
    OPEN_FAILED = "open_failed"
    LOST = "lost"  # the port vanished or failed
    SILENT = "silent"  # no frame within the silence timeout
    STOPPED = "stopped"


@dataclass(slots=True)
class ConnectionStats:
    opens: int = 0
    open_failures: int = 0
    reconnects: int = 0  # sessions ended by loss or silence
    silences: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    connected: bool = False
    last_error: str | None = None

    def as_dict(self) -> dict[str, int | bool | str | None]:
        return asdict(self)


StatusCallback = Callable[[ConnectionStatus, "str | None"], None]


class DeviceConnection(Generic[T]):
    """Runs one device: reads, feeds the protocol, writes its output, polls, reconnects.

    ``async for item in connection.messages(): ...`` yields what the protocol's
    ``receive_data`` returns (``Delivery`` objects for a ``HostLink``). Bytes the protocol
    produced while the consumer handled an item (an ACK after the journal stored it) are
    written as soon as the consumer asks for the next item. Code outside the iteration that
    makes the protocol produce bytes (``link.send(...)``) calls ``wake()`` (loop thread only).
    """

    def __init__(
        self,
        transport: Transport,
        protocol: ByteProtocol[T],
        *,
        silence_timeout: float = 3.0,
        backoff_initial: float = 0.5,
        backoff_max: float = 10.0,
        poll_interval: float = 0.02,
        clock: Callable[[], float] = time.monotonic,
        on_status: StatusCallback | None = None,
    ) -> None:
        self.transport = transport
        self.protocol = protocol
        self.silence_timeout = silence_timeout
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.poll_interval = poll_interval
        self.clock = clock
        self.on_status = on_status
        self.stats = ConnectionStats()
        self._stopping = False
        self._wake: asyncio.Future[None] | None = None
        self._readable = False  # the loop saw the port readable since the last read
        # perf_counter when the bytes of the items being yielded were read (a card's first
        # stage, for the daemon's timings)
        self.read_at = 0.0
        self._write_error: TransportError | None = None  # a failed send_now, for the session

    def wake(self) -> None:
        """Write the protocol's pending output now instead of at the next poll tick."""
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def send_now(self) -> None:
        """Write the protocol's pending output at once, on the caller's thread: the ACK of a
        stored frame leaves before anything else runs (a handful of bytes into the kernel's
        buffer; the session's next step reports a failed write as a lost port)."""
        data = self.protocol.bytes_to_send()
        if not data:
            return
        try:
            self.transport.write(data)
        except TransportError as exc:
            self._write_error = exc
            return
        self.stats.bytes_out += len(data)

    def stop(self) -> None:
        """End ``messages()`` after the current step."""
        self._stopping = True
        self.wake()

    async def messages(self) -> AsyncIterator[T]:
        """Items from the device, across reconnects, until ``stop()``."""
        self._stopping = False
        failures = 0  # reopenings since the last healthy session
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="device-io") as pool:
            while not self._stopping:
                healthy = False
                try:
                    await self._open(pool)
                except TransportError as exc:
                    self._report(ConnectionStatus.OPEN_FAILED, str(exc))
                    self.stats.open_failures += 1
                else:
                    try:
                        async with contextlib.aclosing(self._session(pool)) as session:
                            async for item in session:
                                healthy = True
                                yield item
                    except DeviceSilentError as exc:
                        self.stats.silences += 1
                        self.stats.reconnects += 1
                        self._report(ConnectionStatus.SILENT, str(exc))
                    except TransportError as exc:
                        self.stats.reconnects += 1
                        self._report(ConnectionStatus.LOST, str(exc))
                    finally:
                        await self._close(pool)
                failures = 1 if healthy else failures + 1
                if self._stopping:
                    break
                # No jitter: a device has one host, nobody else retries in step with it.
                await self._sleep(
                    backoff_delay(failures, 0.0, self.backoff_initial, self.backoff_max)
                )
        self._report(ConnectionStatus.STOPPED, None)

    # -- internals ------------------------------------------------------------------------

    async def _open(self, pool: ThreadPoolExecutor) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(pool, self.transport.open)
        self.stats.opens += 1
        self.stats.connected = True
        hook = getattr(self.protocol, "connection_made", None)
        if hook is not None:
            hook()
        self._report(ConnectionStatus.CONNECTED, None)

    async def _close(self, pool: ThreadPoolExecutor) -> None:
        self.stats.connected = False
        hook = getattr(self.protocol, "connection_lost", None)
        if hook is not None:
            hook()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            await loop.run_in_executor(pool, self.transport.close)

    async def _session(self, pool: ThreadPoolExecutor) -> AsyncIterator[T]:
        loop = asyncio.get_running_loop()
        protocol = self.protocol
        read_future: asyncio.Future[bytes] | None = None
        last_activity = self.clock()
        frames_seen = self._frames_received()
        fd = self.transport.readable_fd()
        if fd is not None:
            self._readable = False
            loop.add_reader(fd, self._on_readable)
        try:
            while not self._stopping:
                self._raise_write_error()
                now = self.clock()
                # Protocols with timers of their own (a vendor message that never ended, one
                # cut off by the last unplug) report through poll().
                for item in protocol.poll(now) or ():
                    yield item
                await self._flush(pool)
                if self._wake is None or self._wake.done():
                    self._wake = loop.create_future()
                if fd is not None:
                    data = await self._read_when_readable()
                else:
                    if read_future is None:
                        read_future = loop.run_in_executor(pool, self.transport.read, READ_CHUNK)
                    await asyncio.wait(
                        (read_future, self._wake),
                        timeout=self.poll_interval,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    data = b""
                    if read_future.done():
                        finished, read_future = read_future, None
                        data = finished.result()  # TransportError ends the session
                if data:
                    self.read_at = time.perf_counter()
                    self.stats.bytes_in += len(data)
                    items = protocol.receive_data(data)
                    frames = self._frames_received()
                    if frames is None or frames != frames_seen:
                        last_activity = self.clock()
                        frames_seen = frames
                    for item in items:
                        yield item
                        await self._flush(pool)  # e.g. the ACK once the item is stored
                    if items:  # time the consumer spent storing is not device silence
                        last_activity = max(last_activity, self.clock())
                silent_for = self.clock() - last_activity
                if silent_for > self.silence_timeout:
                    raise DeviceSilentError(
                        f"{self.transport.name}: no frame for {silent_for:.1f} s"
                    )
        finally:
            if fd is not None:
                loop.remove_reader(fd)
            if read_future is not None:
                # the blocking read returns within its timeout; close only after it did
                with contextlib.suppress(Exception):
                    await asyncio.wait((read_future,), timeout=2.0)
                if read_future.done() and not read_future.cancelled():
                    read_future.exception()  # the session already ended for its own reason

    def _on_readable(self) -> None:
        # The reader callback wakes the session's own future: one loop turn from the byte's
        # arrival to its read, where an Event waited on through asyncio.wait took three and
        # a task per card.
        self._readable = True
        self.wake()

    async def _read_when_readable(self) -> bytes:
        """The bytes waiting once the port is readable (or b"" at the poll tick or a wake)."""
        if not self._readable:
            assert self._wake is not None
            tick = asyncio.get_running_loop().call_later(self.poll_interval, self.wake)
            try:
                await self._wake
            finally:
                tick.cancel()
        if not self._readable:
            return b""
        self._readable = False
        return self.transport.read_ready(READ_CHUNK)  # at once; TransportError ends the session

    def _raise_write_error(self) -> None:
        error, self._write_error = self._write_error, None
        if error is not None:
            raise error

    async def _flush(self, pool: ThreadPoolExecutor) -> None:
        self._raise_write_error()
        data = self.protocol.bytes_to_send()
        if data:
            await asyncio.get_running_loop().run_in_executor(pool, self.transport.write, data)
            self.stats.bytes_out += len(data)

    def _frames_received(self) -> int | None:
        frames = getattr(self.protocol, "frames_received", None)
        return frames if isinstance(frames, int) else None

    async def _sleep(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        self._wake = loop.create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._wake), timeout=seconds)

    def _report(self, status: ConnectionStatus, detail: str | None) -> None:
        if detail is not None:
            self.stats.last_error = detail
        if self.on_status is not None:
            self.on_status(status, detail)
