"""Runs a simulated device behind a real pseudo-terminal (unplug, replug), in a thread or process.

``PtyPort`` opens a pty pair (``os.openpty``), puts the slave in raw mode and keeps a copy of
it open (so the host closing and reopening its side loses nothing but bytes in transit),
and points a symlink (``link_path``) at the slave, like ``/dev/serial/by-id``. Writes to the
master never block: with no reader, bytes are lost, as on a real line.

``SimRunner`` is the device's event loop: select on the pty master, the control socket and
a wake pipe; tick the device; write its output. ``start()`` runs it in a daemon thread
(library use); ``run()`` runs it in the calling thread (``python -m drivers.sim``). Other
threads act on the device through ``call(fn)`` (``fn(device)`` runs on the loop thread) or
``execute(request)`` (the control commands of ``drivers.sim.control``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import socket
import threading
import time
import tty
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any, TypeVar

from drivers.sim.base import SimDevice
from drivers.sim.control import execute

R = TypeVar("R")
MAX_SLEEP = 0.05


class PtyPort:
    """One end of a simulated serial cable: a pty master, its slave path and a stable symlink."""

    def __init__(self, link_path: str | os.PathLike[str] | None = None) -> None:
        self.link_path = Path(link_path) if link_path is not None else None
        self.master: int | None = None
        self._slave: int | None = None
        self.slave_name: str | None = None
        self.lost_bytes = 0

    @property
    def is_open(self) -> bool:
        return self.master is not None

    @property
    def path(self) -> str:
        """What the host opens: the symlink if there is one, else the slave device."""
        if self.link_path is not None:
            return str(self.link_path)
        if self.slave_name is None:
            raise RuntimeError("pty not open")
        return self.slave_name

    def open(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line editing, no CR/LF translation
        os.set_blocking(master, False)
        self.master, self._slave = master, slave
        self.slave_name = os.ttyname(slave)
        if self.link_path is not None:
            temporary = self.link_path.with_name(f".{self.link_path.name}.{os.getpid()}.tmp")
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
            temporary.symlink_to(self.slave_name)
            temporary.replace(self.link_path)  # atomic: the path is never half made

    def close(self) -> None:
        """Unplug: the symlink disappears and the host's reads fail (EIO)."""
        if self.link_path is not None and self.slave_name is not None:
            with contextlib.suppress(OSError):
                if os.readlink(self.link_path) == self.slave_name:
                    self.link_path.unlink()
        for fd in (self.master, self._slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.master = self._slave = None

    def write(self, data: bytes) -> None:
        if self.master is None:
            self.lost_bytes += len(data)
            return
        try:
            written = os.write(self.master, data)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EAGAIN):
                raise
            written = 0
        self.lost_bytes += len(data) - written

    def read(self) -> bytes:
        if self.master is None:
            return b""
        try:
            return os.read(self.master, 4096)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError as exc:
            if exc.errno == errno.EIO:  # nobody on the slave side: nothing to read
                return b""
            raise


class SimRunner:
    """Event loop of one simulated device on a pty (thread or process)."""

    def __init__(
        self,
        device: SimDevice,
        *,
        link_path: str | os.PathLike[str] | None = None,
        control_path: str | os.PathLike[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.device = device
        self.port = PtyPort(link_path)
        self.control_path = Path(control_path) if control_path is not None else None
        self.clock = clock
        self.replug_at: float | None = None
        self.unplugs = 0
        self._calls: SimpleQueue[tuple[Callable[[SimDevice], Any], Future[Any]]] = SimpleQueue()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._listener: socket.socket | None = None
        self._clients: dict[int, tuple[socket.socket, bytearray]] = {}
        self._ready = threading.Event()
        self.on_ready: Callable[[], None] | None = None  # called on the loop thread

    @property
    def path(self) -> str:
        return self.port.path

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> SimRunner:
        """Run the loop in a daemon thread; returns once the pty exists."""
        self._thread = threading.Thread(target=self.run, name="sim-device", daemon=True)
        self._thread.start()
        self._ready.wait(5.0)
        return self

    def stop(self) -> None:
        self._stopping = True
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)

    def __enter__(self) -> SimRunner:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def run(self) -> None:
        """The loop; returns after ``stop()`` (or a ``stop`` control command)."""
        try:
            self._open_control()
            self.port.open()
            self.device.connect(self.clock())
            self._ready.set()
            if self.on_ready is not None:
                self.on_ready()
            while not self._stopping:
                self._step()
        finally:
            self._ready.set()
            self.port.close()
            self._close_control()
            for fd in (self._wake_r, self._wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)

    # -- acting on the device from other threads --------------------------------------------

    def call(self, fn: Callable[[SimDevice], R], timeout: float = 5.0) -> R:
        """Run ``fn(device)`` on the loop thread and return its result."""
        if self._thread is None or threading.current_thread() is self._thread:
            return fn(self.device)
        future: Future[R] = Future()
        self._calls.put((fn, future))
        self._wake()
        return future.result(timeout)

    def execute(self, request: dict[str, Any]) -> dict[str, Any]:
        """One control command (see ``drivers.sim.control``), answered as a dict."""
        return self.call(lambda _device: execute(self, request))

    def unplug(self, seconds: float) -> None:
        """Pull the cable (loop thread): the pty closes; a new one appears ``seconds`` later."""
        self.port.close()
        self.device.disconnect()
        self.unplugs += 1
        self.replug_at = self.clock() + seconds

    # -- the loop --------------------------------------------------------------------------

    def _step(self) -> None:
        self._run_calls()
        now = self.clock()
        if self.replug_at is not None and now >= self.replug_at:
            self.replug_at = None
            self.port.open()
            self.device.connect(now)
        device = self.device
        device.tick(now)
        out = device.output(now)
        if out:
            self.port.write(out)
        wait = min(max(device.next_wakeup(now) - self.clock(), 0.0), MAX_SLEEP)
        if self.replug_at is not None:
            wait = min(wait, max(self.replug_at - now, 0.0))
        readable = [self._wake_r]
        if self.port.master is not None:
            readable.append(self.port.master)
        if self._listener is not None:
            readable.append(self._listener.fileno())
        readable.extend(self._clients)
        ready, _, _ = select.select(readable, [], [], wait)
        for fd in ready:
            if fd == self._wake_r:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_r, 4096)
            elif fd == self.port.master:
                data = self.port.read()
                if data:
                    device.receive_bytes(data, self.clock())
            elif self._listener is not None and fd == self._listener.fileno():
                self._accept()
            elif fd in self._clients:
                self._serve(fd)

    def _run_calls(self) -> None:
        while True:
            try:
                fn, future = self._calls.get_nowait()
            except Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(self.device))
            except Exception as exc:  # handed to the caller's thread, not swallowed
                future.set_exception(exc)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"\0")

    # -- control socket (JSON lines) ------------------------------------------------------

    def _open_control(self) -> None:
        if self.control_path is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.control_path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.control_path))
        listener.listen(4)
        listener.setblocking(False)
        self._listener = listener

    def _close_control(self) -> None:
        for sock, _ in self._clients.values():
            sock.close()
        self._clients.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            if self.control_path is not None:
                with contextlib.suppress(FileNotFoundError):
                    self.control_path.unlink()

    def _accept(self) -> None:
        assert self._listener is not None
        try:
            sock, _ = self._listener.accept()
        except BlockingIOError:
            return
        sock.setblocking(False)
        self._clients[sock.fileno()] = (sock, bytearray())

    def _serve(self, fd: int) -> None:
        sock, buffer = self._clients[fd]
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            del self._clients[fd]
            sock.close()
            return
        buffer += chunk
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            try:
                request = json.loads(line)
                reply = execute(self, request)
            except Exception as exc:  # a bad request gets an error reply, the sim runs on
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            sock.setblocking(True)
            try:
                sock.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                del self._clients[fd]
                sock.close()
                return
            finally:
                if fd in self._clients:
                    sock.setblocking(False)

    def request_stop(self) -> None:
        """Stop from the loop thread itself (the ``stop`` control command)."""
        self._stopping = True
