"""Byte transports (serial via pyserial URLs, USB bulk via pyusb) and the asyncio connection runner.

Transports only move bytes. Each ``Transport`` is blocking and meant for a worker thread:
``open()``, ``read()`` (returns within ``read_timeout``, ``b""`` if nothing came),
``write(data)``, ``close()``; every failure is a ``TransportError``.

``DeviceConnection`` runs one device on the daemon's asyncio loop without blocking it: the
blocking reads and writes go to a private two-thread executor, the protocol object (the
sans-I/O ``HostLink`` or a vendor ASCII adapter) is fed and polled on the loop, and what it
produces comes out of the async iterator ``messages()`` (or ``run(handler)``). A port that
vanishes (unplug, closed pty, USB error) or a device silent for ``silence_timeout`` seconds
(no frame) is reported through ``on_status`` and ``stats`` and reopened with backoff (0.5 s
doubling to 10 s by default). The frame in flight is not lost: it stays in the protocol
object, which resends it on the new connection.

The protocol object needs ``receive_data(bytes) -> list``, ``bytes_to_send() -> bytes`` and
``poll(now)``; it may also have ``connection_made()``, ``connection_lost()`` and
``frames_received`` (a counter of good frames, used by the silence watchdog instead of raw
bytes, so line noise does not count as a live device).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

import serial
import usb.core
import usb.util

DEFAULT_BAUDRATE = 115200
READ_CHUNK = 4096
# What pyusb's backends raise for an operation they do not offer (kernel driver detach on
# some platforms, string descriptors on some devices): a property of the device, not a bug.
_UNSUPPORTED = NotImplementedError

T = TypeVar("T")
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

    @property
    @abstractmethod
    def is_open(self) -> bool: ...


# --- serial -----------------------------------------------------------------------------


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
            raise TransportError(f"cannot open {self.url}: {exc}") from exc

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

    def close(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            with contextlib.suppress(Exception):  # closing a vanished port may fail: it is gone
                port.close()

    def _require_open(self) -> Any:
        if self._port is None:
            raise TransportError(f"{self.url} is not open")
        return self._port


# --- USB --------------------------------------------------------------------------------


class UsbTransport(Transport):
    """A vendor-specific USB interface with one bulk OUT and one bulk IN endpoint (pyusb).

    ``backend`` is a pyusb backend (None: pyusb's default, libusb); the simulators pass a
    virtual one. ``serial_number`` picks one device when several share VID:PID.
    """

    def __init__(
        self,
        vid: int,
        pid: int,
        *,
        serial_number: str | None = None,
        backend: Any = None,
        read_timeout: float = 0.05,
        write_timeout: float = 2.0,
        interface_class: int = 0xFF,
    ) -> None:
        self.vid = vid
        self.pid = pid
        self.serial_number = serial_number
        self.backend = backend
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.interface_class = interface_class
        self.name = f"usb:{vid:04x}:{pid:04x}" + (f":{serial_number}" if serial_number else "")
        self._device: Any = None
        self._interface: Any = None
        self._ep_in: Any = None
        self._ep_out: Any = None

    @property
    def is_open(self) -> bool:
        return self._device is not None

    def open(self) -> None:
        self.close()
        try:
            device = self._find()
            self._claim(device)
        except TransportError:
            self.close()
            raise
        except (usb.core.USBError, ValueError, _UNSUPPORTED, OSError) as exc:
            self.close()
            raise TransportError(f"{self.name}: cannot open: {exc}") from exc

    def _find(self) -> Any:
        found = list(
            usb.core.find(
                find_all=True, idVendor=self.vid, idProduct=self.pid, backend=self.backend
            )
            or []
        )
        if self.serial_number is not None:
            found = [dev for dev in found if _serial_of(dev) == self.serial_number]
        if not found:
            raise TransportError(f"{self.name}: no such USB device")
        if len(found) > 1:
            serials = ", ".join(str(_serial_of(dev)) for dev in found)
            raise TransportError(
                f"{self.name}: {len(found)} devices match ({serials}); configure serial_number"
            )
        return found[0]

    def _claim(self, device: Any) -> None:
        try:
            config = device.get_active_configuration()
        except usb.core.USBError:
            device.set_configuration()
            config = device.get_active_configuration()
        interface = usb.util.find_descriptor(config, bInterfaceClass=self.interface_class)
        if interface is None:
            raise TransportError(f"{self.name}: no vendor-specific interface")
        number = interface.bInterfaceNumber
        with contextlib.suppress(_UNSUPPORTED, usb.core.USBError):
            if device.is_kernel_driver_active(number):
                device.detach_kernel_driver(number)
        self._device = device
        usb.util.claim_interface(device, number)
        self._interface = interface
        self._ep_in = _bulk_endpoint(interface, usb.util.ENDPOINT_IN)
        self._ep_out = _bulk_endpoint(interface, usb.util.ENDPOINT_OUT)
        if self._ep_in is None or self._ep_out is None:
            raise TransportError(f"{self.name}: interface {number} lacks bulk IN and OUT")

    def read(self, max_bytes: int = READ_CHUNK) -> bytes:
        if self._ep_in is None:
            raise TransportError(f"{self.name} is not open")
        packet = max(int(self._ep_in.wMaxPacketSize), 1)
        size = max(packet, max_bytes - max_bytes % packet)  # whole packets: no overflow
        try:
            data = self._ep_in.read(size, timeout=max(1, int(self.read_timeout * 1000)))
        except usb.core.USBTimeoutError:
            return b""
        except (usb.core.USBError, ValueError, OSError) as exc:
            raise TransportError(f"{self.name}: read failed: {exc}") from exc
        return bytes(data)

    def write(self, data: bytes) -> None:
        if self._ep_out is None:
            raise TransportError(f"{self.name} is not open")
        try:
            written = self._ep_out.write(data, timeout=max(1, int(self.write_timeout * 1000)))
        except (usb.core.USBError, ValueError, OSError) as exc:
            raise TransportError(f"{self.name}: write failed: {exc}") from exc
        if written != len(data):
            raise TransportError(f"{self.name}: wrote {written} of {len(data)} bytes")

    def close(self) -> None:
        device, self._device = self._device, None
        interface, self._interface = self._interface, None
        self._ep_in = self._ep_out = None
        if device is None:
            return
        with contextlib.suppress(Exception):  # the device may be gone already
            if interface is not None:
                usb.util.release_interface(device, interface.bInterfaceNumber)
        with contextlib.suppress(Exception):
            usb.util.dispose_resources(device)


def _serial_of(device: Any) -> str | None:
    try:
        return device.serial_number
    except (usb.core.USBError, ValueError, _UNSUPPORTED):
        return None


def _bulk_endpoint(interface: Any, direction: int) -> Any:
    return usb.util.find_descriptor(
        interface,
        custom_match=lambda ep: (
            usb.util.endpoint_direction(ep.bEndpointAddress) == direction
            and usb.util.endpoint_type(ep.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK
        ),
    )


# --- the asyncio runner -----------------------------------------------------------------


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

    def wake(self) -> None:
        """Write the protocol's pending output now instead of at the next poll tick."""
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def stop(self) -> None:
        """End ``messages()`` / ``run()`` after the current step."""
        self._stopping = True
        self.wake()

    async def run(self, handler: Callable[[T], Awaitable[None] | None]) -> None:
        """Call ``handler`` (plain or async) for every item until ``stop()``."""
        async for item in self.messages():
            result = handler(item)
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                await result

    async def messages(self) -> AsyncIterator[T]:
        """Items from the device, across reconnects, until ``stop()``."""
        self._stopping = False
        backoff = self.backoff_initial
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
                if healthy:
                    backoff = self.backoff_initial
                if self._stopping:
                    break
                await self._sleep(backoff)
                backoff = min(backoff * 2, self.backoff_max)
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
        try:
            while not self._stopping:
                now = self.clock()
                # Protocols with timers of their own (a vendor message that never ended, one
                # cut off by the last unplug) report through poll().
                for item in protocol.poll(now) or ():
                    yield item
                await self._flush(pool)
                if read_future is None:
                    read_future = loop.run_in_executor(pool, self.transport.read, READ_CHUNK)
                if self._wake is None or self._wake.done():
                    self._wake = loop.create_future()
                await asyncio.wait(
                    (read_future, self._wake),
                    timeout=self.poll_interval,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if read_future.done():
                    finished, read_future = read_future, None
                    data = finished.result()  # TransportError ends the session
                    if data:
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
            if read_future is not None:
                # the blocking read returns within its timeout; close only after it did
                with contextlib.suppress(Exception):
                    await asyncio.wait((read_future,), timeout=2.0)
                if read_future.done() and not read_future.cancelled():
                    read_future.exception()  # the session already ended for its own reason

    async def _flush(self, pool: ThreadPoolExecutor) -> None:
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
