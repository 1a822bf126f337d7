"""Runs one configured device: its session's inputs to the store, on the daemon's loop.

The daemon builds a `DeviceRunner` per `[scanner]` / `[shuffler]` section. The device itself,
from its port to what to store and when to ACK, is drivers' `DeviceSession`
(drivers/session/): the runner converts the section into the drivers' `DeviceSpec`, stores
what the session hands out (inputs with the link state) and tells it whether that worked, so
the session ACKs the frame or releases it unACKed for the device to send again. The notes a
status change leaves (a device lost, an ASCII shoe connected) are stored here too, from the
runner's own task, woken by the change, and before the next frame: the drivers' reconnection
loop only tells the runner, it never stores. It also logs
the device's comings and goings, times each card for the metrics and samples the link's error
rates.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import structlog

from drivers.session.device_session import DeviceSession
from drivers.session.spec import Address, DeviceRole, DeviceSpec, DeviceTimings, UsbAddress
from drivers.translate.registry import DeckRegistry
from drivers.transports.connection import ConnectionStatus, DeviceConnection
from shoe_controller.service.config import DeviceSection
from shoe_controller.service.health import ErrorRate
from shoe_controller.vocab.inputs import CardDrawn, Input

log = structlog.get_logger("devices")


@dataclass(frozen=True, slots=True)
class CardTimes:
    """Where one card's frame spent its time in the daemon, in seconds."""

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


def device_spec(role: DeviceRole, section: DeviceSection, options: DeviceTimings) -> DeviceSpec:
    """A configured device in the drivers' terms."""
    address: Address = section.port
    if section.usb:
        vid, pid = (int(part, 16) for part in section.usb.split(":"))
        address = UsbAddress(vid, pid, section.usb_serial or None)
    return DeviceSpec(
        role=role,
        name=role.value,
        address=address,
        protocol=section.protocol,
        baud=section.baud_rate,
        kind=section.kind,
        timings=options,
    )


class DeviceRunner:
    """Runs one device until stopped, reconnecting as the transport says."""

    def __init__(
        self,
        name: DeviceRole | str,
        section: DeviceSection,
        store: Store,
        saved_state: Mapping[str, Any] | None,
        *,
        history: Iterable[Input] = (),
        options: DeviceTimings | None = None,
        clock: Callable[[], float] = time.time,
        usb_backend: Any = None,
        registry: DeckRegistry | None = None,
        on_card_acked: Callable[[str, CardTimes], None] | None = None,
    ) -> None:
        """`on_card_acked(device, times)` is told, for each frame that carried a card, where
        its time went from its bytes read to its ACK written (the metrics' histograms)."""
        self.role = DeviceRole(name)
        self.name = self.role.value
        self.section = section
        self._store = store
        self._on_card_acked = on_card_acked
        self._error_rates = {"retransmits": ErrorRate(), "crc_errors": ErrorRate()}
        self._notes_waiting = asyncio.Event()
        if registry is None and section.registry:  # the daemon hands on preflight's
            registry = DeckRegistry.load(Path(section.registry))
        self.session = DeviceSession(
            device_spec(self.role, section, options or DeviceTimings()),
            registry=registry,
            saved_state=saved_state,
            history=history,
            clock=clock,
            usb_backend=usb_backend,
            on_status=self._on_status,
        )

    @property
    def status(self) -> str:
        """starting, connected, silent, lost, open_failed or stopped."""
        return self.session.status

    @property
    def connection(self) -> DeviceConnection[Any]:
        return self.session.connection

    # ---------------------------------------------------------------- running

    async def run(self) -> None:
        """Until stopped; an error storing either the frames or the notes ends it."""
        frames = asyncio.create_task(self._store_frames(), name=f"device-{self.name}-frames")
        notes = asyncio.create_task(self._store_notes(), name=f"device-{self.name}-notes")
        try:
            await asyncio.wait([frames, notes], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (frames, notes):
                task.cancel()
            await asyncio.gather(frames, notes, return_exceptions=True)
        for task in (frames, notes):
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error
        self._store_waiting_notes()

    async def _store_frames(self) -> None:
        session = self.session
        async for item in session.connection.messages():
            if session.silent:
                log.info("device speaks again", device=self.name)
            self._store_waiting_notes()  # what the connection said goes before its frames
            try:
                self._store_item(item)
            except StorageFailedError:
                continue  # logged by the store; the device resends what was not ACKed
            await asyncio.sleep(0)  # let the control socket and the sinks in between cards

    def stop(self) -> None:
        self.session.stop()

    def _store_item(self, item: Any) -> None:
        session = self.session
        began = time.perf_counter()
        pending = session.take(item)
        translated = time.perf_counter()
        try:
            self._store(pending.inputs, pending.link_state)
        except StorageFailedError:
            session.failed()
            if not session.spec.acknowledged:
                # Held in memory, so a crash during a disk-full episode is the one way to
                # lose it; the log says so.
                log.error("not stored yet; kept in memory: this shoe does not resend",
                          device=self.name, waiting=len(pending.inputs))  # fmt: skip
            raise
        stored = time.perf_counter()
        session.stored()
        if (
            self._on_card_acked is not None
            and session.spec.acknowledged
            and any(isinstance(i, CardDrawn) for i in pending.inputs)
        ):
            times = CardTimes(
                decode=began - session.connection.read_at,
                translate=translated - began,
                store=stored - translated,
                ack=time.perf_counter() - stored,
            )
            self._on_card_acked(self.name, times)

    def send(self, message: Any) -> None:
        """Queue a command (INDICATE, STATUS_REQUEST, SHUFFLE) for a reference-protocol device."""
        self.session.send(message)

    def indicate(self, pattern: int, arg: int) -> None:
        """The table's lights, for the device whose role shows them (the session keeps them)."""
        self.session.indicate(pattern, arg)

    def shuffle(self, decks: int) -> None:
        """Ask the device to shuffle, if its role is to."""
        self.session.shuffle(decks)

    def _on_status(self, status: ConnectionStatus, detail: str | None) -> None:
        if status is ConnectionStatus.CONNECTED:
            log.info("device connected", device=self.name, port=self.connection.transport.name)
        elif status is ConnectionStatus.OPEN_FAILED:
            log.debug("device not there", device=self.name, reason=detail)
        elif status in (ConnectionStatus.LOST, ConnectionStatus.SILENT):
            log.warning("device lost", device=self.name, reason=detail)
        self._notes_waiting.set()

    async def _store_notes(self) -> None:
        while True:
            await self._notes_waiting.wait()
            self._notes_waiting.clear()
            self._store_waiting_notes()

    def _store_waiting_notes(self) -> None:
        """Store the status notes waiting, in order; when the journal refuses one (the store
        logged why) the session tries again at the next change."""
        while (note := self.session.next_note()) is not None:
            try:
                self._store(note.inputs, note.link_state)
            except StorageFailedError:
                self.session.failed()
            else:
                self.session.stored()

    def sample_error_rates(self, now: float) -> None:
        """Take a sample of the link's error counters (the daemon does every few seconds)."""
        link = self.session.link
        if link is not None:
            self._error_rates["retransmits"].sample(now, link.stats.retransmits)
            self._error_rates["crc_errors"].sample(now, link.stats.crc_errors)

    def stats(self) -> dict[str, Any]:
        """Link statistics and identity for `shoectl devices`."""
        out = self.session.stats()
        if self.session.link is not None:
            out["error_rates"] = {
                name: rate.per_minute() for name, rate in self._error_rates.items()
            }
        return out
