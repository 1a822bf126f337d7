"""Transports and the connection runner over real ptys (simulator in a thread) and pyserial URLs."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from shoe_testkit.device_kit import (
    GUARD,
    collect,
    counters,
    disturbed_once,
    optical_shoe,
    shoe_empty,
    watched_connection,
)

from drivers.sim.pty import SimRunner
from drivers.transports.base import Transport, TransportError
from drivers.transports.connection import ConnectionStatus, DeviceConnection
from drivers.transports.serial import SerialTransport
from drivers.wire.link import HostLink
from drivers.wire.messages import Hello


def shoe_runner(tmp_path: Path, *, pace: float = 0.003, **fields: object) -> SimRunner:
    device = optical_shoe(pace=pace, **fields)
    return SimRunner(device, link_path=tmp_path / "shoe.tty").start()


def test_loop_url_moves_bytes() -> None:
    transport = SerialTransport("loop://", read_timeout=0.05)
    transport.open()
    try:
        transport.write(b"\x01\x02\x00abc")
        assert transport.read() == b"\x01\x02\x00abc"
        assert transport.read() == b""  # nothing more: returns after the timeout
    finally:
        transport.close()
    transport.close()  # twice is fine
    with pytest.raises(TransportError, match="not open"):
        transport.read()


def test_missing_port_is_a_transport_error(tmp_path: Path) -> None:
    with pytest.raises(TransportError, match="cannot open"):
        SerialTransport(str(tmp_path / "absent")).open()


def test_a_second_opener_is_refused(tmp_path: Path) -> None:
    runner = shoe_runner(tmp_path, autoload=False)
    first, second = SerialTransport(runner.path), SerialTransport(runner.path)
    try:
        first.open()
        with pytest.raises(TransportError):
            second.open()
    finally:
        first.close()
        runner.stop()


def test_read_ready_takes_what_waits_and_sees_a_hang_up(tmp_path: Path) -> None:
    """The loop's read of a readable tty (one read(2), never a wait): the bytes
    waiting; b"" for a wake-up whose bytes were read already; the other end gone: an error."""
    master, slave = os.openpty()
    link = tmp_path / "shoe.tty"
    link.symlink_to(os.ttyname(slave))
    transport = SerialTransport(str(link))
    transport.open()
    os.close(slave)  # the transport holds its own descriptor
    try:
        fd = transport.readable_fd()
        assert fd is not None
        os.write(master, b"\x05\x01\x00")
        deadline = time.monotonic() + GUARD
        received = b""
        while len(received) < 3 and time.monotonic() < deadline:
            received += transport.read_ready()
        assert received == b"\x05\x01\x00"
        assert transport.read_ready() == b""  # nothing more: at once, not after a timeout
        os.close(master)
        master = -1
        with pytest.raises(TransportError, match=r"shoe\.tty"):
            transport.read_ready()
    finally:
        transport.close()
        if master >= 0:
            os.close(master)


def test_a_shoe_over_a_real_pty(tmp_path: Path) -> None:
    runner = shoe_runner(tmp_path)
    connection, link, statuses = watched_connection(SerialTransport(runner.path))
    try:
        received = asyncio.run(collect(connection, link, shoe_empty))
    finally:
        runner.stop()
    assert isinstance(received[0], Hello)
    assert counters(received) == list(range(1, 53))
    assert statuses[0] is ConnectionStatus.CONNECTED
    assert statuses[-1] is ConnectionStatus.STOPPED
    assert connection.stats.bytes_in == link.stats.bytes_in > 0


def test_unplug_and_replug_mid_shoe_loses_and_doubles_nothing(tmp_path: Path) -> None:
    runner = shoe_runner(tmp_path, pace=0.005)
    connection, link, statuses = watched_connection(
        SerialTransport(runner.path), backoff_initial=0.05
    )
    done = disturbed_once(20, lambda: runner.execute({"cmd": "unplug", "seconds": 0.3}))
    try:
        received = asyncio.run(collect(connection, link, done))
    finally:
        runner.stop()
    assert counters(received) == list(range(1, 53))
    assert runner.unplugs == 1
    assert connection.stats.reconnects >= 1
    assert ConnectionStatus.LOST in statuses
    assert statuses.count(ConnectionStatus.CONNECTED) >= 2
    assert len([m for m in received if isinstance(m, Hello)]) == 1  # same boot: ACK only


def test_a_silent_device_is_reported_and_reopened(tmp_path: Path) -> None:
    runner = shoe_runner(tmp_path, pace=0.005)
    connection, link, statuses = watched_connection(
        SerialTransport(runner.path), silence_timeout=0.3, backoff_initial=0.05
    )
    done = disturbed_once(10, lambda: runner.execute({"cmd": "silence", "seconds": 0.8}))
    try:
        received = asyncio.run(collect(connection, link, done))
    finally:
        runner.stop()
    assert counters(received) == list(range(1, 53))
    assert connection.stats.silences >= 1
    assert ConnectionStatus.SILENT in statuses
    assert "no frame" in (connection.stats.last_error or "")


class LineEcho:
    """A protocol without link layer (like the vendor ASCII adapters): lines in, lines out."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.partial = b""
        self.polled = 0

    def say(self, line: str) -> None:
        self.out += line.encode() + b"\r\n"

    def receive_data(self, data: bytes) -> list[str]:
        *lines, self.partial = (self.partial + data).split(b"\r\n")
        return [line.decode() for line in lines]

    def bytes_to_send(self) -> bytes:
        data, self.out = bytes(self.out), bytearray()
        return data

    def poll(self, now: float) -> None:
        self.polled += 1


def test_any_byte_protocol_plugs_in() -> None:
    protocol = LineEcho()
    connection: DeviceConnection[str] = DeviceConnection(SerialTransport("loop://"), protocol)
    protocol.say("P1 AS")

    async def main() -> list[str]:
        lines: list[str] = []
        async for line in connection.messages():
            lines.append(line)
            if line == "P1 AS":
                protocol.say("B1 KH")
                connection.wake()
            else:
                connection.stop()
        return lines

    assert asyncio.run(asyncio.wait_for(main(), GUARD)) == ["P1 AS", "B1 KH"]
    assert protocol.polled > 0


class StaleReporter(LineEcho):
    """Like a vendor adapter: a line that never ends is reported by poll() after a while."""

    def poll(self, now: float) -> list[str]:
        self.polled += 1
        if self.partial and self.polled > 3:
            stale, self.partial = self.partial.decode(), b""
            return [f"stale:{stale}"]
        return []


def test_items_reported_by_poll_are_delivered() -> None:
    protocol = StaleReporter()
    connection: DeviceConnection[str] = DeviceConnection(SerialTransport("loop://"), protocol)
    protocol.out += b"B1 K"  # no line end: only poll() can ever report it

    async def main() -> list[str]:
        async for line in connection.messages():
            connection.stop()
            return [line]
        return []

    assert asyncio.run(asyncio.wait_for(main(), GUARD)) == ["stale:B1 K"]


class NeverThere(Transport):
    name = "nowhere"

    def __init__(self) -> None:
        self.attempts = 0

    @property
    def is_open(self) -> bool:
        return False

    def open(self) -> None:
        self.attempts += 1
        raise TransportError(f"attempt {self.attempts}: no such port")

    def read(self, max_bytes: int = 4096) -> bytes:
        raise AssertionError("never opened")

    def write(self, data: bytes) -> None:
        raise AssertionError("never opened")

    def close(self) -> None:
        pass


class RecordedSleeps(DeviceConnection[object]):
    """The clock edge: record the backoff instead of waiting it out."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.sleeps: list[float] = []

    async def _sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if len(self.sleeps) == 8:
            self.stop()


def test_reopen_backoff_doubles_up_to_the_cap() -> None:
    transport = NeverThere()
    connection = RecordedSleeps(transport, HostLink())

    async def main() -> None:
        async for _ in connection.messages():
            raise AssertionError("nothing can arrive")

    asyncio.run(asyncio.wait_for(main(), GUARD))
    assert connection.sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]
    assert connection.stats.open_failures == transport.attempts == 8
    assert connection.stats.last_error == "attempt 8: no such port"


def test_pty_symlink_follows_replug(tmp_path: Path) -> None:
    runner = shoe_runner(tmp_path, autoload=False)
    try:
        assert Path(os.readlink(runner.path)).exists()
        runner.execute({"cmd": "unplug", "seconds": 0.2})
        status = runner.execute({"cmd": "status"})
        assert status["unplugs"] == 1
        transport = SerialTransport(runner.path)
        for _ in range(200):  # the new pty appears within the replug delay
            try:
                transport.open()
                break
            except TransportError:
                asyncio.run(asyncio.sleep(0.01))
        assert transport.is_open
        transport.close()
        assert Path(os.readlink(runner.path)).exists()  # a live pty behind the same path
    finally:
        runner.stop()


def test_socket_url_reaches_a_device_behind_tcp() -> None:
    """``socket://`` (a serial server on the network): a real TCP server drives a sim device."""
    device = optical_shoe(pace=0.002)
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        connection, _ = server.accept()
        connection.settimeout(0.005)
        device.connect(time.monotonic())
        with connection:
            while not stop.is_set():
                now = time.monotonic()
                device.tick(now)
                out = device.output(now)
                try:
                    if out:
                        connection.sendall(out)
                    data = connection.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                device.receive_bytes(data, time.monotonic())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    link = HostLink()
    connection = DeviceConnection(SerialTransport(f"socket://127.0.0.1:{port}"), link)
    try:
        received = asyncio.run(collect(connection, link, shoe_empty))
    finally:
        stop.set()
        thread.join(5)
        server.close()
    assert counters(received) == list(range(1, 53))
