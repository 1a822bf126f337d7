"""The technician's device monitor: one device's every decoded input, as a record and a line.

`Monitor` runs a device built as the daemon builds it (drivers/session/parts.py: the same
transport, link, adapters, translator rule and `DeviceConnection`, with its silence watchdog
and reconnection with backoff) and hands each input to `emit(record, text)`: the JSON record
(`input_record`) and one readable line (`describe`), then its counters (`statistics()`).
As the host it stores nothing, so it ACKs every reference-protocol frame at once. A port
another program holds is named with its holder (drivers/transports/port_holder.py); watched
(`--hex`) or tapped (`--tap`) ports are drivers/transports/watched.py's. The command line is
shoe_controller/cli/monitor.py (`shoe-controller monitor`).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from drivers.session.parts import build_device
from drivers.session.spec import DeviceRole, DeviceSpec, DeviceTimings
from drivers.translate.registry import DeckRegistry
from drivers.transports.base import Transport
from drivers.transports.connection import ConnectionStatus
from drivers.transports.port_holder import is_held_elsewhere, port_holder
from drivers.transports.watched import WatchedTransport, Watcher
from drivers.wire import messages as m
from shoe_controller.vocab import words
from shoe_controller.vocab.inputs import (
    CardDrawn,
    CardsMissed,
    CutCardSeen,
    DeviceFault,
    DeviceFaultCleared,
    Input,
    input_to_json,
)

CARD_FLAGS = ("face_up", "low_confidence", "multi", "burn", "foreign", "duplicate")
# docs/spec-protocol.md's silence and backoff; a person watches, so the port wakes up a little more
# often
# than the daemon's.
MONITOR_TIMINGS = DeviceTimings(poll_interval=0.02, read_timeout=0.05)
SILENCE_TIMEOUT = MONITOR_TIMINGS.silence_timeout

Emit = Callable[[dict[str, Any], str], None]  # (the JSON record, the line for a person)


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
        emit: Emit,
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
        self.device = device or DeviceRole.of("", kind).value
        spec = DeviceSpec(
            role=DeviceRole.of(self.device, kind),
            name=self.device,
            address=transport.name,
            protocol=protocol,
            kind=kind,
            timings=replace(MONITOR_TIMINGS, silence_timeout=silence_timeout),
        )
        parts = build_device(
            spec, registry=registry, transport=transport, on_status=self._on_status
        )
        self.link = parts.link
        self.translator = parts.translator
        self.adapter = parts.adapter
        self.connection = parts.connection

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
        if self.link is not None and self.translator is not None:
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
        if status is ConnectionStatus.OPEN_FAILED and detail and is_held_elsewhere(detail):
            held = f"{self.transport.name} is {port_holder(self.transport.name)}"
            self._status("open_failed", held, error=detail)
            return
        self._status("open_failed" if status is ConnectionStatus.OPEN_FAILED else "lost", detail)

    def _message(self, message: m.Message) -> None:
        if isinstance(message, m.Heartbeat) and self.heartbeats:
            self.emit({"type": "heartbeat", "uptime_ms": message.uptime_ms}, "heartbeat")
        assert self.translator is not None
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
        self.emit(record, f"-- {words.device_state(status)}: {detail}")
