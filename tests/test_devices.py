"""DeviceRunner for a vendor ASCII shoe over a real pty, storing through a real Controller."""

from __future__ import annotations

import asyncio
import os
import tty
from pathlib import Path

from drivers.adapters.beetek import encode_card, encode_unreadable
from shoe_controller.cards import parse_card
from shoe_controller.config import DeviceSection
from shoe_controller.controller import Controller
from shoe_controller.devices import DeviceOptions, DeviceRunner, StorageFailedError
from shoe_controller.inputs import CardDrawn, DeviceConnected, DeviceLost, input_from_json
from shoe_controller.journal import Journal
from shoe_controller.table import TableConfig

GUARD_S = 20.0


def test_a_beetek_shoe_is_stored_and_its_statistics_shown(tmp_path: Path) -> None:
    master, slave = os.openpty()
    tty.setraw(master)
    link = tmp_path / "beetek.tty"
    link.symlink_to(os.ttyname(slave))
    journal = Journal.open(tmp_path / "journal.db", "tbl-01-shoe")
    controller = Controller(TableConfig(), journal)
    section = DeviceSection(protocol="beetek", port=str(link), kind="optical")

    def store(inputs, link_state) -> None:  # type: ignore[no-untyped-def]
        controller.submit_many(inputs, None if link_state is None else {"scanner": link_state})

    runner = DeviceRunner("scanner", section, store, None)

    async def scenario() -> None:
        task = asyncio.create_task(runner.run())
        while journal.last_input() < 1:  # the port is open (opening flushes what came before)
            await asyncio.sleep(0.01)
        # Text in two chunks with noise between messages, then an unreadable card.
        message = encode_card(parse_card("QH")) + b"\r\n~~" + encode_card(parse_card("TD"))
        os.write(master, message[:9])
        await asyncio.sleep(0.05)
        os.write(master, message[9:] + encode_unreadable())
        while journal.last_input() < 4:  # connected + three cards
            await asyncio.sleep(0.01)
        runner.stop()
        await asyncio.wait_for(task, GUARD_S)

    try:
        asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
        inputs = [input_from_json(step.input) for step in journal.replay_steps(from_input=1)]
        assert isinstance(inputs[0], DeviceConnected)
        assert inputs[0].vendor == "Beetek"
        cards = [item for item in inputs if isinstance(item, CardDrawn)]
        assert [item.card for item in cards] == [parse_card("QH"), parse_card("TD"), None]
        stats = runner.stats()
        assert stats["protocol"] == "beetek"
        assert (stats["adapter"]["cards"], stats["adapter"]["unreadable"]) == (2, 1)
        assert "link" not in stats  # no link layer: nothing is acknowledged (docs/drivers.md)
    finally:
        journal.close()
        os.close(master)
        os.close(slave)


def test_a_lost_device_is_reported_once_the_journal_takes_it_again(tmp_path: Path) -> None:
    # The port vanishes while the journal cannot store: the device.lost must not be dropped
    # for good (the table would show the shoe connected through the whole outage).
    master, slave = os.openpty()
    tty.setraw(master)
    link = tmp_path / "beetek.tty"
    link.symlink_to(os.ttyname(slave))
    journal = Journal.open(tmp_path / "journal.db", "tbl-01-shoe")
    controller = Controller(TableConfig(), journal)
    section = DeviceSection(protocol="beetek", port=str(link), kind="optical")
    refusing = False

    def store(inputs, link_state) -> None:  # type: ignore[no-untyped-def]
        if refusing:
            raise StorageFailedError("disk full (test)")
        controller.submit_many(inputs, None if link_state is None else {"scanner": link_state})

    options = DeviceOptions(backoff_initial=0.02, backoff_max=0.05)
    runner = DeviceRunner("scanner", section, store, None, options=options)

    def stored_types() -> list[str]:
        return [step.input["type"] for step in journal.replay_steps(from_input=1)]

    async def scenario() -> None:
        nonlocal refusing
        task = asyncio.create_task(runner.run())
        while journal.last_input() < 1:  # device.connected stored
            await asyncio.sleep(0.01)
        refusing = True
        os.close(master)  # the port vanishes: reads fail, reopening fails
        os.close(slave)
        while runner.connection.stats.reconnects < 1:  # LOST reported, its store refused
            await asyncio.sleep(0.01)
        refusing = False
        while len(stored_types()) < 2:
            await asyncio.sleep(0.01)
        runner.stop()
        await asyncio.wait_for(task, GUARD_S)

    try:
        asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
        inputs = [input_from_json(step.input) for step in journal.replay_steps(from_input=1)]
        assert [type(item) for item in inputs] == [DeviceConnected, DeviceLost]
        assert inputs[1].device == "scanner"
    finally:
        journal.close()


def test_an_ascii_card_the_journal_refused_goes_first_with_the_next_one(tmp_path: Path) -> None:
    # A vendor ASCII shoe never resends: a card the journal could not take is kept and
    # stored, in order, with the next reading once the journal takes writes again.
    master, slave = os.openpty()
    tty.setraw(master)
    link = tmp_path / "beetek.tty"
    link.symlink_to(os.ttyname(slave))
    journal = Journal.open(tmp_path / "journal.db", "tbl-01-shoe")
    controller = Controller(TableConfig(), journal)
    section = DeviceSection(protocol="beetek", port=str(link), kind="optical")
    refusals = 0

    def store(inputs, link_state) -> None:  # type: ignore[no-untyped-def]
        nonlocal refusals
        queen = any(
            isinstance(item, CardDrawn) and item.card == parse_card("QH") for item in inputs
        )
        if queen and refusals == 0:  # the disk is full for the first attempt only
            refusals += 1
            raise StorageFailedError("disk full (test)")
        controller.submit_many(inputs, None if link_state is None else {"scanner": link_state})

    runner = DeviceRunner("scanner", section, store, None)

    async def scenario() -> None:
        task = asyncio.create_task(runner.run())
        while journal.last_input() < 1:
            await asyncio.sleep(0.01)
        os.write(master, encode_card(parse_card("QH")))
        while refusals < 1:
            await asyncio.sleep(0.01)
        os.write(master, encode_card(parse_card("TD")))
        while journal.last_input() < 3:
            await asyncio.sleep(0.01)
        runner.stop()
        await asyncio.wait_for(task, GUARD_S)

    try:
        asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
        inputs = [input_from_json(step.input) for step in journal.replay_steps(from_input=1)]
        cards = [item.card for item in inputs if isinstance(item, CardDrawn)]
        assert cards == [parse_card("QH"), parse_card("TD")]
    finally:
        journal.close()
        os.close(master)
        os.close(slave)
