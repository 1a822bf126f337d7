"""Integration: simulators in their own processes behind real ptys, unplugged, replugged, killed."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

import pytest
from shoe_testkit.device_kit import collect, counters, disturbed_once, watched_connection

from drivers.sim.control import ControlError
from drivers.sim.process import SimProcess
from drivers.transports.connection import ConnectionStatus, DeviceConnection
from drivers.transports.serial import SerialTransport
from drivers.wire.link import HostLink
from drivers.wire.messages import (
    Card,
    Hello,
    Message,
    Shoe,
    ShoeState,
    Shuffle,
    ShuffleDone,
    ShuffleResult,
    ShuffleStarted,
)

pytestmark = pytest.mark.slow


def read_registry(directory: Path) -> dict[str, tuple[int, int, str]]:
    registry = {}
    for path in sorted(directory.glob("*.csv")):
        with path.open(newline="") as handle:
            for uid_hex, rank, suit, serial in list(csv.reader(handle))[1:]:
                registry[uid_hex] = (int(rank), int(suit), serial)
    return registry


def test_rfid_shoe_in_another_process_survives_unplug_mid_shoe(tmp_path: Path) -> None:
    registry_dir = tmp_path / "decks"
    sim = SimProcess(
        "--device", "shoe", "--kind", "rfid", "--decks", "8", "--pace", "0.001",
        "--seed", "4", "--registry", str(registry_dir),
        directory=tmp_path,
    ).start()  # fmt: skip
    connection, link, statuses = watched_connection(SerialTransport(sim.path), backoff_initial=0.05)
    on_message = disturbed_once(150, lambda: sim.request("unplug", seconds=0.4))
    try:
        received = asyncio.run(collect(connection, link, on_message))
        status = sim.request("status")
    finally:
        sim.stop()
    assert counters(received) == list(range(1, 417))
    assert status["unplugs"] == 1
    assert ConnectionStatus.LOST in statuses
    registry = read_registry(registry_dir)
    cards = [registry[m.uid.hex().upper()] for m in received if isinstance(m, Card) and m.uid]
    assert len(cards) == 416
    assert len(set(cards)) == 416  # 8 full decks, every tag known, none twice


def test_killed_simulator_is_reported_and_a_new_one_is_picked_up(tmp_path: Path) -> None:
    args = ("--device", "shoe", "--kind", "optical", "--decks", "1", "--pace", "0.002")
    first = SimProcess(*args, "--seed", "1", directory=tmp_path).start()
    second: SimProcess | None = None
    connection, link, statuses = watched_connection(
        SerialTransport(first.path), backoff_initial=0.05, backoff_max=0.2
    )

    def on_message(received: list[Message]) -> bool:
        nonlocal second
        if second is None and len(counters(received)) == 10:
            first.kill()  # SIGKILL: the pty vanishes with the process
            second = SimProcess(*args, "--seed", "2", directory=tmp_path).start()
        return sum(isinstance(m, Shoe) and m.state == ShoeState.EMPTY for m in received) == 1

    try:
        received = asyncio.run(collect(connection, link, on_message))
    finally:
        first.stop()
        if second is not None:
            second.stop()
    hellos = [m for m in received if isinstance(m, Hello)]
    assert len(hellos) == 2
    assert hellos[0].boot_id != hellos[1].boot_id  # a new device session
    assert link.stats.sessions == 2
    assert ConnectionStatus.LOST in statuses
    second_shoe = received[received.index(hellos[1]) :]
    assert counters(second_shoe) == list(range(1, 53))


def test_shuffler_process_answers_a_shuffle_command(tmp_path: Path) -> None:
    sim = SimProcess(
        "--device", "shuffler", "--decks", "8", "--shuffle-time", "0.05", directory=tmp_path
    ).start()  # fmt: skip
    sim.request("check", missing=[[1, 0]])
    link = HostLink()
    connection = DeviceConnection(SerialTransport(sim.path), link)

    def on_message(received: list[Message]) -> bool:
        if isinstance(received[-1], Hello):
            link.send(Shuffle(8))
            connection.wake()
        return isinstance(received[-1], ShuffleDone)

    try:
        received = asyncio.run(collect(connection, link, on_message))
        with pytest.raises(ControlError, match="deals no cards"):
            sim.request("deal", count=1)
    finally:
        sim.stop()
    assert ShuffleStarted(1, 8) in received
    done = received[-1]
    assert isinstance(done, ShuffleDone)
    assert done.result == ShuffleResult.CARDS_MISSING
    assert done.total == 415
