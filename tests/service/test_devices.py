"""DeviceRunner for a vendor ASCII shoe over a real pty, storing through a real Controller."""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
import tty
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from drivers.adapters.beetek import encode_card, encode_unreadable
from drivers.session.spec import DeviceTimings
from drivers.sim.base import SimConfig
from drivers.sim.devices import make_device
from drivers.sim.pty import SimRunner
from drivers.wire.messages import DeviceKind, Fault, Severity
from shoe_controller.service.config import DeviceSection
from shoe_controller.service.devices import DeviceRunner, StorageFailedError
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.inputs import (
    CardDrawn,
    DeviceConnected,
    DeviceFault,
    DeviceLost,
    Input,
    TableSettings,
    input_from_json,
)

GUARD_S = 20.0


@dataclass
class BeetekTable:
    """A Beetek shoe's pty (the test writes the shoe's side) and a real journal behind it."""

    master: int
    slave: int
    section: DeviceSection
    journal: Journal
    controller: Controller

    def store_all(self, inputs, link_state) -> None:  # type: ignore[no-untyped-def]
        self.controller.submit_many(inputs, None if link_state is None else {"scanner": link_state})

    def stored(self) -> list[Input]:
        """The device's inputs stored (not the table settings the controller journals)."""
        return [
            item
            for step in self.journal.reads.replay_steps(from_input=1)
            if not isinstance(item := input_from_json(step.input), TableSettings)
        ]


@pytest.fixture
def beetek(tmp_path: Path) -> Iterator[BeetekTable]:
    master, slave = os.openpty()
    tty.setraw(master)
    link = tmp_path / "beetek.tty"
    link.symlink_to(os.ttyname(slave))
    journal = Journal.open(tmp_path / "journal.db", "tbl-01-shoe")
    section = DeviceSection(protocol="beetek", port=str(link), kind="optical")
    try:
        yield BeetekTable(master, slave, section, journal, Controller(TableConfig(), journal))
    finally:
        journal.close()
        for fd in (master, slave):
            with contextlib.suppress(OSError):  # a test may have closed them (unplug)
                os.close(fd)


async def until(condition) -> None:  # type: ignore[no-untyped-def]
    while not condition():
        await asyncio.sleep(0.01)


def test_a_beetek_shoe_is_stored_and_its_statistics_shown(beetek: BeetekTable) -> None:
    runner = DeviceRunner("scanner", beetek.section, beetek.store_all, None)

    async def scenario() -> None:
        task = asyncio.create_task(runner.run())
        # The port is open (opening flushes what came before) once device.connected is in.
        await until(lambda: len(beetek.stored()) >= 1)
        # Text in two chunks with noise between messages, then an unreadable card.
        message = encode_card(parse_card("QH")) + b"\r\n~~" + encode_card(parse_card("TD"))
        os.write(beetek.master, message[:9])
        await asyncio.sleep(0.05)
        os.write(beetek.master, message[9:] + encode_unreadable())
        await until(lambda: len(beetek.stored()) >= 4)  # connected + three cards
        runner.stop()
        await asyncio.wait_for(task, GUARD_S)

    asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
    inputs = beetek.stored()
    assert isinstance(inputs[0], DeviceConnected)
    assert inputs[0].vendor == "Beetek"
    cards = [item for item in inputs if isinstance(item, CardDrawn)]
    assert [item.card for item in cards] == [parse_card("QH"), parse_card("TD"), None]
    stats = runner.stats()
    assert stats["protocol"] == "beetek"
    assert (stats["adapter"]["cards"], stats["adapter"]["unreadable"]) == (2, 1)
    assert "link" not in stats  # no link layer: nothing is acknowledged (docs/drivers.md)


def test_a_lost_device_is_reported_once_the_journal_takes_it_again(beetek: BeetekTable) -> None:
    # The port vanishes while the journal cannot store: the device.lost must not be dropped
    # for good (the table would show the shoe connected through the whole outage).
    refusing = False

    def store(inputs, link_state) -> None:  # type: ignore[no-untyped-def]
        if refusing:
            raise StorageFailedError("disk full (test)")
        beetek.store_all(inputs, link_state)

    options = DeviceTimings(backoff_initial=0.02, backoff_max=0.05)
    runner = DeviceRunner("scanner", beetek.section, store, None, options=options)

    async def scenario() -> None:
        nonlocal refusing
        task = asyncio.create_task(runner.run())
        await until(lambda: len(beetek.stored()) >= 1)  # device.connected stored
        refusing = True
        os.close(beetek.master)  # the port vanishes: reads fail, reopening fails
        os.close(beetek.slave)
        await until(lambda: runner.connection.stats.reconnects >= 1)  # LOST, store refused
        refusing = False
        await until(lambda: len(beetek.stored()) >= 2)
        runner.stop()
        await asyncio.wait_for(task, GUARD_S)

    asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
    inputs = beetek.stored()
    assert [type(item) for item in inputs] == [DeviceConnected, DeviceLost]
    assert inputs[1].device == "scanner"


def test_an_ascii_card_the_journal_refused_goes_first_with_the_next_one(
    beetek: BeetekTable,
) -> None:
    # A vendor ASCII shoe never resends: a card the journal could not take is kept and
    # stored, in order, with the next reading once the journal takes writes again.
    refusals = 0

    def store(inputs, link_state) -> None:  # type: ignore[no-untyped-def]
        nonlocal refusals
        queen = any(
            isinstance(item, CardDrawn) and item.card == parse_card("QH") for item in inputs
        )
        if queen and refusals == 0:  # the disk is full for the first attempt only
            refusals += 1
            raise StorageFailedError("disk full (test)")
        beetek.store_all(inputs, link_state)

    runner = DeviceRunner("scanner", beetek.section, store, None)

    async def scenario() -> None:
        task = asyncio.create_task(runner.run())
        await until(lambda: len(beetek.stored()) >= 1)
        os.write(beetek.master, encode_card(parse_card("QH")))
        await until(lambda: refusals >= 1)
        os.write(beetek.master, encode_card(parse_card("TD")))
        await until(lambda: len(beetek.stored()) >= 3)
        runner.stop()
        await asyncio.wait_for(task, GUARD_S)

    asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
    cards = [item.card for item in beetek.stored() if isinstance(item, CardDrawn)]
    assert cards == [parse_card("QH"), parse_card("TD")]


def test_a_shuffler_dealer_on_the_scanner_section_is_shown_the_tables_lights(
    tmp_path: Path,
) -> None:
    # A shuffler-dealer machine dealing as the table's [scanner] gets a ShufflerTranslator;
    # asking for lights used to call its missing `indicate` and stop the device's task.
    sim = SimRunner(
        make_device(SimConfig(kind=DeviceKind.SHUFFLER_DEALER, autoload=False, autodeal=False)),
        link_path=tmp_path / "machine.tty",
    ).start()
    stored: list[Input] = []
    section = DeviceSection(port=str(tmp_path / "machine.tty"), kind="shuffler_dealer")
    runner = DeviceRunner("scanner", section, lambda inputs, state: stored.extend(inputs), None)

    async def scenario() -> None:
        task = asyncio.create_task(runner.run())
        await until(lambda: any(isinstance(item, DeviceConnected) for item in stored))
        runner.indicate(5, 2)  # DEAL, B1
        await until(lambda: shown() == (5, 2))
        runner.stop()
        await task

    def shown() -> tuple[int, int] | None:
        indication = sim.call(lambda device: device.indication)
        return None if indication is None else (int(indication.pattern), indication.arg)

    try:
        asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
        assert shown() == (5, 2)
    finally:
        sim.stop()


class _RawTextFault(Fault):
    """A FAULT whose text field carries bytes as given, UTF-8 or not (a device's firmware
    may send anything)."""

    raw: ClassVar[bytes] = b""

    def encode_payload(self) -> bytes:
        return struct.pack("<HB", self.code, self.severity) + bytes((len(self.raw),)) + self.raw


def test_no_text_a_device_sends_ends_its_task(tmp_path: Path) -> None:
    # The journal refuses (RecordInvalid, a ValueError the device path does not catch) text
    # that is not valid Unicode. A device's text reaches it only through the reference
    # protocol's strict UTF-8 (the vendor ASCII shoes' bytes are read as Latin-1, always
    # valid): any valid text is stored as sent, a text that is not UTF-8 (a lone surrogate's
    # bytes) is refused at the link, and the device is read on.
    sim = SimRunner(make_device(SimConfig(autoload=False)), link_path=tmp_path / "shoe.tty").start()
    journal = Journal.open(tmp_path / "journal.db", "tbl-01-shoe")
    controller = Controller(TableConfig(), journal)
    section = DeviceSection(port=str(tmp_path / "shoe.tty"), kind="optical")

    def store(inputs, link_state) -> None:  # type: ignore[no-untyped-def]
        controller.submit_many(inputs, None if link_state is None else {"scanner": link_state})

    runner = DeviceRunner("scanner", section, store, None)
    odd = "\x00\x7f\u00e9\u2028\U0001f0a1" + "x" * 200  # NUL, DEL, a line separator, a card
    surrogate = type("SurrogateFault", (_RawTextFault,), {"raw": b"\xed\xa0\x80"})

    def faults() -> list[DeviceFault]:
        return [
            item
            for step in journal.reads.replay_steps(from_input=1)
            if isinstance(item := input_from_json(step.input), DeviceFault)
        ]

    async def scenario() -> None:
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.status == "connected")
        sim.call(lambda device: device.send(Fault(0x0101, Severity.WARNING, odd)))
        sim.call(lambda device: device.send(surrogate(0x0102, Severity.WARNING)))
        sim.call(lambda device: device.send(Fault(0x0103, Severity.WARNING, "after")))
        await until(lambda: len(faults()) >= 2 or task.done())
        assert not task.done(), task.exception()
        runner.stop()
        await asyncio.wait_for(task, GUARD_S)

    try:
        asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
        stored = [(fault.code, fault.text) for fault in faults()]
    finally:
        sim.stop()
        journal.close()
    assert stored == [(0x0101, odd), (0x0103, "after")]
    link = runner.session.link
    assert link is not None
    assert link.stats.malformed == 1
