"""Runs one configured device: port, protocol, translator; inputs out, ACKs after storage.

The daemon builds a `DeviceRunner` per `[scanner]` / `[shuffler]` section. For the reference
protocol, every message the link delivers is translated into inputs, and the inputs are
stored together with the link session and the translator's state; only then is the frame
ACKed. If storing fails, the translator goes back to where it was and the delivery is
released unACKed, so the device's retransmission brings the card again once storage works.
The vendor ASCII protocols have no acknowledgement: their inputs are stored as they come.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import structlog

from drivers.adapters import TextAdapter
from drivers.adapters.beetek import BeetekAdapter
from drivers.adapters.linecode import LineCodeAdapter
from drivers.translate.base import Translator
from drivers.translate.registry import DeckRegistry
from drivers.translate.scanner import ScannerTranslator
from drivers.translate.shuffler import ShufflerTranslator
from drivers.transports.base import Transport
from drivers.transports.connection import ConnectionStatus, DeviceConnection
from drivers.transports.serial import SerialTransport
from drivers.transports.usb import UsbTransport
from drivers.wire.link import Delivery, HostLink, SessionState
from shoe_controller.service.config import DeviceSection
from shoe_controller.service.health import ErrorRate
from shoe_controller.vocab.inputs import (
    CardDrawn,
    DeviceConnected,
    DeviceLost,
    Input,
    InputError,
    input_from_json,
    input_to_json,
)

log = structlog.get_logger("devices")


@dataclass(frozen=True, slots=True)
class CardTimes:
    """Where one card's frame spent its time in the daemon, in seconds (issue 13)."""

    decode: float  # the bytes read -> the link handing the frame over (COBS, CRC, ARQ)
    translate: float  # the message -> the table's inputs
    store: float  # the table's step and the journal's commit (its own histogram has the commit)
    ack: float  # the ACK written to the port

    @property
    def to_ack(self) -> float:
        """From the link handing the frame over to its ACK written."""
        return self.translate + self.store + self.ack

    def by_stage(self) -> tuple[tuple[str, float], ...]:
        return (
            ("decode", self.decode),
            ("translate", self.translate),
            ("store", self.store),
            ("ack", self.ack),
        )


class StorageFailedError(Exception):
    """The controller could not store inputs; the device must not be ACKed."""


class Store(Protocol):
    """Where a device's inputs go: one call stores them all with the device's link state,
    or raises StorageFailedError having stored none."""

    def __call__(self, inputs: Sequence[Input], link_state: Mapping[str, Any] | None) -> None: ...


@dataclass(frozen=True)
class DeviceOptions:
    """Timings of the reference protocol and PROTOCOL.md's silence and backoff."""

    silence_timeout: float = 3.0
    backoff_initial: float = 0.5
    backoff_max: float = 10.0
    # Reads return as soon as bytes arrive; these only pace the timers and an idle port's
    # wake-ups (20 ms / 50 ms cost ~3 % CPU per idle device on a table PC).
    poll_interval: float = 0.05
    read_timeout: float = 0.2


def make_transport(
    section: DeviceSection, usb_backend: Any = None, read_timeout: float = 0.2
) -> Transport:
    """The transport a device section names: a serial URL or a USB VID:PID."""
    if section.usb:
        vid, pid = (int(part, 16) for part in section.usb.split(":"))
        return UsbTransport(
            vid,
            pid,
            serial_number=section.usb_serial or None,
            backend=usb_backend,
            read_timeout=read_timeout,
        )
    return SerialTransport(section.port, baudrate=section.baud_rate, read_timeout=read_timeout)


class DeviceRunner:
    """Runs one device until stopped, reconnecting as the transport says."""

    def __init__(
        self,
        name: str,
        section: DeviceSection,
        store: Store,
        saved_state: Mapping[str, Any] | None,
        *,
        history: Iterable[Input] = (),
        options: DeviceOptions | None = None,
        clock: Callable[[], float] = time.time,
        usb_backend: Any = None,
        registry: DeckRegistry | None = None,
        on_card_acked: Callable[[str, CardTimes], None] | None = None,
    ) -> None:
        """`on_card_acked(device, times)` is told, for each frame that carried a card, where
        its time went from its bytes read to its ACK written (the metrics' histograms)."""
        self.name = name
        self._on_card_acked = on_card_acked
        self.section = section
        self._store = store
        self._clock = clock
        self._options = options or DeviceOptions()
        self._lost_reported = True  # nothing to report until it was connected once
        # The device's last HELLO as an input (JSON), kept with the link state. A device
        # that comes back with the same boot_id (unplugged, or this process restarted)
        # sends a HELLO the link only ACKs (PROTOCOL.md: a retransmission): so the first
        # frame after a (re)connection says the device is back, with this identity.
        self._identity: dict[str, Any] | None = None
        self._announce = True
        self._indication = (0, 0)  # the lights the table last asked for (off until it asks)
        self._unstored: list[Input] = []  # ASCII shoes' inputs waiting for the journal
        self.status = "starting"
        # A device that went silent stays "silent" until it speaks again: its port reopens
        # at once, and calling that "connected" made health flap (docs/control.md).
        self._silent = False
        self._error_rates = {"retransmits": ErrorRate(), "crc_errors": ErrorRate()}
        if registry is None and section.registry:  # the daemon hands on preflight's
            registry = DeckRegistry.load(Path(section.registry))
        if section.protocol == "slp":
            self._link: HostLink | None = HostLink()
            if name == "shuffler" or section.kind in ("shuffler", "shuffler_dealer"):
                self.translator: Translator | TextAdapter = ShufflerTranslator(
                    device=name,
                    kind=section.kind if section.kind != "optical" else None,
                    registry=registry,
                )
            else:
                self.translator = ScannerTranslator(
                    device=name, registry=registry, kind=section.kind
                )
            # What the translator knows (the shoe's last counter, the RFID tags it has seen)
            # follows from the open shoe's stored inputs: rebuilt from them, not stored again
            # with every card.
            self.translator.replay(history)
            self._restore(saved_state or {})
            protocol: Any = self._link
            silence = self._options.silence_timeout
        else:
            self._link = None
            adapter_class = BeetekAdapter if section.protocol == "beetek" else LineCodeAdapter
            self.translator = adapter_class(device=name, kind=section.kind)
            protocol = self.translator
            silence = float("inf")  # these shoes send no heartbeat: quiet is not silence
        self.connection: DeviceConnection[Any] = DeviceConnection(
            make_transport(section, usb_backend, self._options.read_timeout),
            protocol,
            silence_timeout=silence,
            backoff_initial=self._options.backoff_initial,
            backoff_max=self._options.backoff_max,
            poll_interval=self._options.poll_interval,
            on_status=self._on_status,
        )

    def _restore(self, saved: Mapping[str, Any]) -> None:
        """Take up the link session and the device's identity stored with the last data."""
        if self._link is None:
            return
        if "session" in saved:
            self._link.restore_session(SessionState.from_dict(saved["session"]))
        if isinstance(saved.get("identity"), dict):
            self._identity = saved["identity"]

    def _link_state(self, delivery: Delivery, identity: dict[str, Any] | None) -> dict[str, Any]:
        state: dict[str, Any] = {"session": delivery.handle.session_after.to_dict()}
        if identity is not None:
            state["identity"] = identity
        return state

    def _with_identity(
        self, inputs: list[Input], now: float
    ) -> tuple[list[Input], dict[str, Any] | None]:
        """The inputs, led by a DeviceConnected when the device is back without a new HELLO;
        and the identity to keep."""
        connected = [item for item in inputs if isinstance(item, DeviceConnected)]
        if connected:
            return inputs, input_to_json(connected[-1])
        if self._announce and self._identity is not None:
            try:
                again = input_from_json({**self._identity, "at": now})
            except InputError:  # a stored identity from another version: wait for a HELLO
                return inputs, None
            return [again, *inputs], self._identity
        return inputs, self._identity

    # ---------------------------------------------------------------- running

    async def run(self) -> None:
        async for item in self.connection.messages():
            if self._silent:
                self._silent = False
                self.status = ConnectionStatus.CONNECTED.value
                log.info("device speaks again", device=self.name)
            try:
                if self._link is not None:
                    self._on_delivery(item)
                else:
                    self._on_reading(item)
            except StorageFailedError:
                continue  # logged by the store; the device resends what was not ACKed
            await asyncio.sleep(0)  # let the control socket and the sinks in between cards

    def stop(self) -> None:
        self.connection.stop()

    def _on_reading(self, reading: Any) -> None:
        """A vendor ASCII shoe never resends: what the journal could not take yet is kept here
        and goes first, in order, with the next reading (held in memory, so a crash during a
        disk-full episode is the one way to lose it; the log says so)."""
        inputs = [*self._unstored, *self.translator.translate(reading, self._clock())]
        try:
            self._store(inputs, None)
        except StorageFailedError:
            self._unstored = inputs
            log.error("not stored yet; kept in memory: this shoe does not resend",
                      device=self.name, waiting=len(inputs))  # fmt: skip
            raise
        self._unstored = []

    def _on_delivery(self, delivery: Delivery) -> None:
        assert self._link is not None
        began = time.perf_counter()
        before = self.translator.export_state()
        now = self._clock()
        inputs, identity = self._with_identity(
            self.translator.translate(delivery.message, now), now
        )
        translated = time.perf_counter()
        try:
            self._store(inputs, self._link_state(delivery, identity))
        except StorageFailedError:
            self.translator.restore_state(before)
            self._link.release(delivery.handle)
            raise
        self._identity, self._announce = identity, False
        stored = time.perf_counter()
        self._link.ack(delivery.handle)
        self.connection.send_now()  # the ACK first: the card is on disk, the shoe may go on
        if self._on_card_acked is not None and any(isinstance(i, CardDrawn) for i in inputs):
            times = CardTimes(
                decode=began - self.connection.read_at,
                translate=translated - began,
                store=stored - translated,
                ack=time.perf_counter() - stored,
            )
            self._on_card_acked(self.name, times)

    def send(self, message: Any) -> None:
        """Queue a command (INDICATE, STATUS_REQUEST, SHUFFLE) for a reference-protocol device."""
        if self._link is None:
            return  # the vendor ASCII shoes take no commands
        self._link.send(message)
        self.connection.wake()

    def indicate(self, pattern: int, arg: int) -> None:
        self._indication = (pattern, arg)
        if self._link is not None and self.name == "scanner":
            # Built by the shoe's translator whatever deals here: a shuffler-dealer machine
            # on the [scanner] section has a ShufflerTranslator, which shows no lights.
            self.send(ScannerTranslator.indicate(pattern, arg))

    def _resynchronise(self) -> None:
        """Ask a (re)connected device for its state and active faults (PROTOCOL.md).

        A restarted controller numbers its frames from 1 again, and the device, which cannot
        see the restart, drops a frame whose seq equals the last one it accepted as a
        duplicate. So a shoe first gets its lights (an INDICATE may be lost harmlessly), then
        the request, then its lights again.
        """
        assert self._link is not None
        lights = self.name == "scanner"
        if lights:
            self._link.send(ScannerTranslator.indicate(*self._indication))
        self._link.send(self.translator.status_request())
        if lights:
            self._link.send(ScannerTranslator.indicate(*self._indication))

    def _on_status(self, status: ConnectionStatus, detail: str | None) -> None:
        if status is ConnectionStatus.SILENT:
            self._silent = True
        elif status in (ConnectionStatus.LOST, ConnectionStatus.STOPPED):
            self._silent = False  # says more than silent (a reopen that fails does not)
        self.status = "silent" if self._silent else status.value
        now = self._clock()
        if status is ConnectionStatus.CONNECTED:
            self._lost_reported = False
            log.info("device connected", device=self.name, port=self.connection.transport.name)
            if self._link is None:
                self._store_quietly(self.translator.connected(now))
            else:
                self._announce = True
                self._resynchronise()
        elif status in (
            ConnectionStatus.LOST,
            ConnectionStatus.SILENT,
            ConnectionStatus.OPEN_FAILED,
        ):
            if status is ConnectionStatus.OPEN_FAILED:
                log.debug("device not there", device=self.name, reason=detail)
            else:
                log.warning("device lost", device=self.name, reason=detail)
            if not self._lost_reported:
                # Reported once stored: if the journal refused it, each reopen attempt that
                # fails tries again, so the table and the server do learn the device is gone.
                self._lost_reported = self._store_quietly(
                    [DeviceLost(at=now, device=self.name, reason=detail or "")]
                )

    def _store_quietly(self, inputs: Sequence[Input]) -> bool:
        """Store a status note; False when the journal refused it (the store logged why)."""
        try:
            self._store(inputs, None)
        except StorageFailedError:
            return False
        return True

    def sample_error_rates(self, now: float) -> None:
        """Take a sample of the link's error counters (the daemon does every few seconds)."""
        if self._link is not None:
            stats = self._link.stats
            self._error_rates["retransmits"].sample(now, stats.retransmits)
            self._error_rates["crc_errors"].sample(now, stats.crc_errors)

    def stats(self) -> dict[str, Any]:
        """Link statistics and identity for `shoectl devices`."""
        out: dict[str, Any] = {
            "device": self.name,
            "protocol": self.section.protocol,
            "port": self.connection.transport.name,
            "status": self.status,
            "connection": self.connection.stats.as_dict(),
        }
        if self._link is not None:
            out["link"] = self._link.stats.as_dict()
            out["error_rates"] = {
                name: rate.per_minute() for name, rate in self._error_rates.items()
            }
        else:
            out["adapter"] = self.translator.stats.as_dict()
        return out
