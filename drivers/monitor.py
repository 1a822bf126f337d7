"""The technician's device monitor: connect to one device and print every decoded input.

`shoe-controller monitor --protocol slp|beetek|linecode --port URL ...` (like gpsmon). It runs
the port with the daemon's `DeviceConnection` (reads, silence watchdog, reconnect with backoff),
decodes with the same link, adapters and translators as the daemon, and prints one line per
input (with `--json` one JSON object per line, see docs/drivers.md "Monitor"), then the link's
counters on exit (Ctrl-C, SIGTERM, `--count`, `--seconds`). Exit status 1 when the port never
opened or was lost at the end.
As the host it stores nothing, so it ACKs every reference-protocol frame at once; `--tap`
listens only (a second port on the line, a spy) and writes nothing at all. `--hex` shows the
raw bytes with their times beside the decoded frames. A port another program holds is named
with its holder ("held by shoe-controller, pid N", from /proc/locks). Port URLs are pyserial's
(`/dev/ttyUSB0`, `socket://host:port`, `rfc2217://...`) or `usb:VID:PID[:SERIAL]` (hex ids).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

import click

from drivers.adapters import DEFAULT_BAUD as ASCII_BAUD
from drivers.adapters import TextAdapter
from drivers.adapters.beetek import BeetekAdapter
from drivers.adapters.linecode import LineCodeAdapter
from drivers.translate.base import Translator
from drivers.translate.registry import DeckRegistry, RegistryError
from drivers.translate.scanner import KINDS, ScannerTranslator
from drivers.translate.shuffler import ShufflerTranslator
from drivers.transports.base import DEFAULT_BAUDRATE as SLP_BAUD
from drivers.transports.base import READ_CHUNK, Transport
from drivers.transports.connection import ConnectionStatus, DeviceConnection
from drivers.transports.serial import SerialTransport
from drivers.transports.usb import UsbTransport
from drivers.wire import messages as m
from drivers.wire.link import HostLink
from shoe_controller.vocab.inputs import (
    CardDrawn,
    CardsMissed,
    CutCardSeen,
    DeviceFault,
    DeviceFaultCleared,
    Input,
    input_to_json,
)

PROTOCOLS = ("slp", "beetek", "linecode")
CARD_FLAGS = ("face_up", "low_confidence", "multi", "burn", "foreign", "duplicate")
SILENCE_TIMEOUT = 3.0  # PROTOCOL.md: a reference device is silent after 3 s without a frame
BACKOFF_INITIAL, BACKOFF_MAX = 0.5, 10.0


def input_record(item: Input) -> dict[str, Any]:
    """The monitor's JSON form of an input: the journal's, with a card's booleans as `flags`."""
    record = input_to_json(item)
    if isinstance(item, CardDrawn):
        record["flags"] = [name for name in CARD_FLAGS if record.pop(name)]
        for optional in ("counter", "uid"):
            if record[optional] is None:
                del record[optional]
    return record


def describe(item: Input) -> str:
    """One readable line for an input."""
    stamp = (
        time.strftime("%H:%M:%S", time.localtime(item.at)) + f".{int(item.at * 1000) % 1000:03d}"
    )
    device = getattr(item, "device", "")
    if isinstance(item, CardDrawn):
        card = str(item.card) if item.card is not None else "??"
        parts = [f"card {card}"]
        if item.counter is not None:
            parts.append(f"#{item.counter}")
        if item.uid is not None:
            parts.append(f"uid {item.uid}")
        parts += [name.upper() for name in CARD_FLAGS if getattr(item, name)]
        text = " ".join(parts)
    elif isinstance(item, CardsMissed):
        text = f"MISSED {item.count} card(s) after #{item.after_counter}"
    elif isinstance(item, CutCardSeen):
        text = f"cut card after #{item.counter}"
    elif isinstance(item, DeviceFault):
        text = f"FAULT 0x{item.code:04X} severity {item.severity}: {item.text}"
    elif isinstance(item, DeviceFaultCleared):
        text = f"fault 0x{item.code:04X} cleared"
    else:
        fields = {k: v for k, v in input_record(item).items() if k not in ("type", "at", "device")}
        text = item.TYPE + " " + " ".join(f"{k}={v}" for k, v in fields.items())
    return f"{stamp} {device} {text}".rstrip()


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


def hex_lines(direction: str, data: bytes, at: float, width: int = 16) -> list[str]:
    """pyserial spy:// style: time, direction, offset, hex bytes, printable text."""
    stamp = time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1e6) % 1_000_000:06d}"
    lines = []
    for offset in range(0, len(data), width):
        chunk = data[offset : offset + width]
        text = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in chunk)
        lines.append(
            f"{stamp} {direction.upper()} {offset:04x}  {chunk.hex(' '):<{width * 3 - 1}}  {text}"
        )
    return lines


# ------------------------------------------------------------------ who holds a port


def lock_holders(locks: Iterable[str], device: tuple[int, int, int]) -> list[int]:
    """The pids holding a lock on the file `device` = (major, minor, inode) of the file system
    it lives on, from the lines of /proc/locks (pyserial's exclusive open is a flock)."""
    major, minor, inode = device
    wanted = f"{major:02x}:{minor:02x}:{inode}"
    pids = []
    for line in locks:
        fields = line.split()
        if "->" in fields or len(fields) < 6:  # a waiter, not a holder
            continue
        if fields[5] == wanted and fields[4].isdigit():
            pids.append(int(fields[4]))
    return pids


def program_name(argv: list[str], comm: str) -> str:
    """How a person knows a process: shoe-controller (any of its ways to run), else its name."""
    for index, arg in enumerate(argv):
        base = os.path.basename(arg)
        if base in ("shoe-controller", "shoectl"):
            return base
        if arg == "-m" and index + 1 < len(argv):
            module = argv[index + 1]
            if module.startswith("shoe_controller"):
                return "shoe-controller"
            if module.startswith("drivers"):
                return f"shoe-controller ({module})"
    return comm or "another program"


def port_holder(url: str, proc: Path = Path("/proc")) -> str:
    """`held by shoe-controller, pid 4242 (python -m shoe_controller.cli run ...)`, or what can
    be said without /proc/locks naming anyone."""
    try:
        status = os.stat(url)
        locks = (proc / "locks").read_text().splitlines()
    except OSError:
        return "held by another program"
    device = (os.major(status.st_dev), os.minor(status.st_dev), status.st_ino)
    holders = [pid for pid in lock_holders(locks, device) if pid != os.getpid()]
    if not holders:
        return (
            "held by another program (no lock on it in /proc/locks; `fuser -v PORT` shows who"
            " has it open)"
        )
    pid = holders[0]
    try:
        argv = (proc / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
        comm = (proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return f"held by pid {pid}"
    argv = [arg for arg in argv if arg]
    command = " ".join(argv)
    if len(command) > 100:
        command = command[:97] + "..."
    return f"held by {program_name(argv, comm)}, pid {pid} ({command})"


def open_transport(url: str, baud: int) -> Transport:
    """`usb:VID:PID[:SERIAL]` (hex ids) or any pyserial URL."""
    if url.startswith("usb:"):
        parts = url.split(":")
        if len(parts) not in (3, 4):
            raise click.BadParameter(f"{url!r}: expected usb:VID:PID[:SERIAL]", param_hint="--port")
        try:
            vid, pid = int(parts[1], 16), int(parts[2], 16)
        except ValueError:
            raise click.BadParameter(f"{url!r}: VID and PID are hex", param_hint="--port") from None
        return UsbTransport(vid, pid, serial_number=parts[3] if len(parts) == 4 else None)
    return SerialTransport(url, baudrate=baud)


class Monitor:
    """One device: a protocol object (link or adapter), its translator, a printer."""

    def __init__(
        self,
        protocol: str,
        transport: Transport,
        *,
        kind: str | None,
        registry: DeckRegistry | None,
        device: str | None,
        emit: Callable[[dict[str, Any], str], None],
        heartbeats: bool = False,
        silence_timeout: float = SILENCE_TIMEOUT,
        tap: bool = False,
        watch: Watcher | None = None,
    ) -> None:
        self.protocol_name = protocol
        self.tap = tap
        if tap or watch is not None:
            transport = WatchedTransport(transport, watch=watch, tap=tap)
        self.opened = False  # the port was open at least once
        self.connected = False  # ... and is now
        self._last_status: tuple[str, str | None] | None = None
        self.emit = emit
        self.heartbeats = heartbeats
        self.inputs = 0
        self.types: dict[str, int] = {}
        self.last_error: str | None = None  # as shown in the last status line
        self._count: int | None = None
        name = device or ("shuffler" if kind in ("shuffler", "shuffler_dealer") else "scanner")
        self.device = name
        self.link: HostLink | None = None
        self.adapter: TextAdapter | None = None
        if protocol == "slp":
            self.link = HostLink()
            if kind in ("rfid", "optical"):
                self.translator: Translator = ScannerTranslator(
                    device=name, registry=registry, kind=kind
                )
            else:  # a shuffler's translator also deals (kind 4), so it takes any device
                self.translator = ShufflerTranslator(device=name, registry=registry, kind=kind)
        else:
            cls = BeetekAdapter if protocol == "beetek" else LineCodeAdapter
            self.adapter = cls(device=name, kind=kind or "optical")
        self.connection: DeviceConnection[Any] = DeviceConnection(
            transport,
            self.link if self.link is not None else self.adapter,
            # the ASCII shoes send no heartbeat: quiet is not silence
            silence_timeout=silence_timeout if self.link is not None else math.inf,
            backoff_initial=BACKOFF_INITIAL,
            backoff_max=BACKOFF_MAX,
            on_status=self._on_status,
        )

    @property
    def transport(self) -> Transport:
        return self.connection.transport

    def run(self, *, count: int | None, seconds: float | None) -> None:
        """Connect, print, reconnect with backoff, until stopped, `count` inputs or `seconds`.

        SIGTERM and SIGINT stop it after the current read (statistics still print)."""
        self._count = count
        if seconds is not None and seconds <= 0:
            return  # the time is up before the port is even opened
        asyncio.run(self._watch(seconds))

    @property
    def failed(self) -> bool:
        """The port never opened, or was lost when the monitor stopped (exit status 1)."""
        return not self.connected

    def statistics(self) -> dict[str, Any]:
        connection = self.connection.stats
        out: dict[str, Any] = {
            "type": "stats",
            "protocol": self.protocol_name,
            "port": self.transport.name,
            "connection": {
                "opens": connection.opens,
                "open_failures": connection.open_failures,
                "losses": connection.reconnects,  # sessions ended by loss or silence
                "silences": connection.silences,
                "last_error": self.last_error,
            },
            "inputs": self.inputs,
            "by_type": dict(sorted(self.types.items())),
        }
        if self.link is not None:
            out["link"] = self.link.stats.as_dict()
            scanner = getattr(self.translator, "dealer", self.translator)
            out["translator"] = {
                "kind": self.translator.kind,
                "last_counter": scanner.last_counter,
                "uids_seen": scanner.uids_seen,
            }
        if self.adapter is not None:
            out["adapter"] = self.adapter.stats.as_dict()
        transport = self.transport
        if isinstance(transport, WatchedTransport) and transport.tap:
            out["tap"] = {"held_back_bytes": transport.held_back}
        return out

    # -- internals ---------------------------------------------------------------------

    async def _watch(self, seconds: float | None) -> None:
        loop = asyncio.get_running_loop()
        stop = self.connection.stop
        signals = (signal.SIGTERM, signal.SIGINT)
        for signum in signals:
            loop.add_signal_handler(signum, stop)
        timer = None if seconds is None else loop.call_later(seconds, stop)
        try:
            async for item in self.connection.messages():
                if self.link is not None:
                    self._message(item.message)
                    # Stored nothing, so nothing to wait for. Tapping, the ACK goes nowhere
                    # (the transport holds it back); the link still counts the frame as taken,
                    # as the real host will, so the device's resends show as duplicates.
                    self.link.ack(item.handle)
                    self.connection.send_now()  # at once: the count may end the run now
                else:
                    assert self.adapter is not None
                    self._show(self.adapter.translate(item, time.time()))
            if self.adapter is not None:  # a message cut off by the end of the connection
                for reading in self.adapter.poll(time.monotonic()):
                    self._show(self.adapter.translate(reading, time.time()))
        finally:
            if timer is not None:
                timer.cancel()
            for signum in signals:
                loop.remove_signal_handler(signum)

    def _on_status(self, status: ConnectionStatus, detail: str | None) -> None:
        if status is ConnectionStatus.STOPPED:
            return
        self.connected = status is ConnectionStatus.CONNECTED
        if status is ConnectionStatus.CONNECTED:
            self.opened = True
            self._status("connected", self.transport.name)
            if self.adapter is not None:
                self._show(self.adapter.connected(time.time()))
            return
        if status is ConnectionStatus.SILENT and detail is not None:
            # Shown as a lost device, as always; the connected line already named the port.
            detail = detail.removeprefix(f"{self.transport.name}: ")
        self.last_error = detail
        if status is ConnectionStatus.OPEN_FAILED and detail and _locked(detail):
            held = f"{self.transport.name} is {port_holder(self.transport.name)}"
            self._status("open_failed", held, error=detail)
            return
        self._status("open_failed" if status is ConnectionStatus.OPEN_FAILED else "lost", detail)

    def _message(self, message: m.Message) -> None:
        if isinstance(message, m.Heartbeat) and self.heartbeats:
            self.emit({"type": "heartbeat", "uptime_ms": message.uptime_ms}, "heartbeat")
        self._show(self.translator.translate(message, time.time()))

    def _show(self, items: list[Input]) -> None:
        for item in items:
            if self._counted_out():
                break
            self.inputs += 1
            self.types[item.TYPE] = self.types.get(item.TYPE, 0) + 1
            self.emit(input_record(item), describe(item))
        if self._counted_out():
            self.connection.stop()

    def _counted_out(self) -> bool:
        return self._count is not None and self.inputs >= self._count

    def _status(self, status: str, detail: str | None, *, error: str | None = None) -> None:
        if (status, detail) == self._last_status and status == "open_failed":
            return  # the same failure at every retry: said once
        self._last_status = (status, detail)
        record: dict[str, Any] = {"type": "link", "status": status, "detail": detail}
        if error is not None:
            record["error"] = error
        self.emit(record, f"-- {status}: {detail}")


def _locked(detail: str) -> bool:
    """pyserial's words for a port another program holds (its exclusive open is a flock)."""
    return "exclusively lock" in detail or "Resource temporarily unavailable" in detail


def _printer(as_json: bool, out: TextIO) -> Callable[[dict[str, Any], str], None]:
    lock = threading.Lock()  # `--hex` bytes may come from the reading thread

    def emit(record: dict[str, Any], text: str) -> None:
        with lock:
            out.write((json.dumps(record, ensure_ascii=False) if as_json else text) + "\n")
            out.flush()

    return emit


def _hex_watcher(emit: Callable[[dict[str, Any], str], None]) -> Watcher:
    def watch(direction: str, data: bytes, at: float) -> None:
        record = {"type": "bytes", "direction": direction, "at": at, "hex": data.hex()}
        emit(record, "\n".join(hex_lines(direction, data, at)))

    return watch


def statistics_text(stats: dict[str, Any]) -> str:
    """The counters for a person: one line per part, `name value` pairs."""
    lines = [f"statistics: {stats['protocol']} on {stats['port']}"]
    by_type = ", ".join(f"{name} {count}" for name, count in stats["by_type"].items())
    lines.append(f"  {'inputs':<11}{stats['inputs']}" + (f" ({by_type})" if by_type else ""))
    for part in ("connection", "link", "adapter", "translator", "tap"):
        if part in stats:
            pairs = ", ".join(f"{name} {value}" for name, value in stats[part].items())
            lines.append(f"  {part:<11}{pairs}")
    return "\n".join(lines)


@click.command("monitor")
@click.option("--protocol", type=click.Choice(PROTOCOLS), required=True, help="wire protocol")
@click.option("--port", "url", required=True, help="pyserial URL or usb:VID:PID[:SERIAL]")
@click.option("--kind", type=click.Choice(KINDS), help="device kind (SLP devices also say it)")
@click.option(
    "--registry",
    type=click.Path(file_okay=False, path_type=Path),
    help="RFID deck registry directory (without it every UID is shown as foreign)",
)
@click.option("--baud", type=int, help=f"serial speed (default {SLP_BAUD} slp, {ASCII_BAUD} ASCII)")
@click.option("--device", help="device name in the inputs (default scanner or shuffler)")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per line")
@click.option("--heartbeats", is_flag=True, help="also print SLP heartbeats")
@click.option("--tap", is_flag=True, help="listen only: write nothing, ACK nothing (a spy port)")
@click.option("--hex", "show_hex", is_flag=True, help="also the raw bytes, with their times")
@click.option("--count", type=click.IntRange(min=1), help="exit after COUNT inputs")
@click.option("--seconds", type=click.FloatRange(min=0), help="exit after SECONDS")
def monitor_command(
    *,
    protocol: str,
    url: str,
    kind: str | None,
    registry: Path | None,
    baud: int | None,
    device: str | None,
    as_json: bool,
    heartbeats: bool,
    tap: bool,
    show_hex: bool,
    count: int | None,
    seconds: float | None,
) -> None:
    """Connect to one device and print every decoded input, one line each."""
    deck_registry = None
    if registry is not None:
        try:
            deck_registry = DeckRegistry.load(registry)
        except RegistryError as error:
            raise click.BadParameter(str(error), param_hint="--registry") from None
    speed = baud or (SLP_BAUD if protocol == "slp" else ASCII_BAUD)
    emit = _printer(as_json, sys.stdout)
    monitor = Monitor(
        protocol,
        open_transport(url, speed),
        kind=kind,
        registry=deck_registry,
        device=device,
        emit=emit,
        heartbeats=heartbeats,
        tap=tap,
        watch=_hex_watcher(emit) if show_hex else None,
    )
    try:
        monitor.run(count=count, seconds=seconds)
    finally:
        stats = monitor.statistics()
        emit(stats, statistics_text(stats))
    if monitor.failed:
        raise SystemExit(1)


if __name__ == "__main__":
    monitor_command()
