"""The journal's disk filling while a sink holds events back: the table is held with an alert
before the disk is full, never an event dropped (docs/delivery.md "When the disk
fills"). A real daemon, its journal on a small tmpfs of its own, the real simulated shoe."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.fs import fill, small_tmpfs
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import (
    check_card_inputs,
    check_delivery,
    check_shoe,
    shoe_events,
    shoectl,
)

pytestmark = pytest.mark.slow

MB = 1024 * 1024
LIMIT_MB = 6  # [journal] min_free_mb for the test, on a 16 MB disk


@pytest.fixture
def small_disk() -> Iterator[Path]:
    with (
        tempfile.TemporaryDirectory(prefix="space-") as name,
        small_tmpfs(Path(name), "16m") as mount_point,
    ):
        yield mount_point


def status(rig: TableRig) -> dict:
    return json.loads(shoectl(rig, "status", "--json").stdout)


def space_fault(rig: TableRig) -> bool:
    faults = status(rig)["table"]["faults"]
    return any(fault["device"] == "journal" and fault["code"] == 0xF004 for fault in faults)


def test_a_disk_running_low_holds_the_table_until_there_is_room(
    small_disk: Path, tmp_path: Path
) -> None:
    rig = TableRig(tmp_path, RigOptions(journal={"min_free_mb": LIMIT_MB}))
    rig.records.use_journal(small_disk / "journal.db")
    rig.start()
    try:
        rig.dealer.deal(6)
        filler = fill(small_disk, (LIMIT_MB - 2) * MB)  # room for days, not for the limit
        rig.wait_until(lambda: space_fault(rig), "the journal's space fault")
        view = status(rig)
        assert view["table"]["state"] == "held"
        (hold,) = view["table"]["holds"]
        assert hold["code"] == "device_fault"
        assert "resume" in hold["actions"]
        check = shoectl(rig, "check")
        assert check.returncode == 2
        assert "journal fault 0xf004" in check.stdout
        assert f"less than [journal] min_free_mb = {LIMIT_MB}" in check.stdout
        # the alert reached the table server: a person is told, nothing waits unseen
        rig.wait_delivered()
        assert any(
            event["type"] == "device.fault" and event["data"]["code"] == 0xF004
            for event in check_delivery(rig)
        )
        filler.unlink()  # the technician frees space
        rig.wait_until(lambda: not space_fault(rig), "the fault lifted by the daemon")
        resumed = shoectl(rig, "resume", "--by", "sup7", "--reason", "disk freed")
        assert resumed.returncode == 0, resumed.stderr
        rig.dealer.settle()
        rig.dealer.deal_until_shoe_ends()
        dealt = rig.dealer.dealt_cards()
        received = check_delivery(rig)
        # the shoe is whole and right; its one alert is the hold for the disk
        check_shoe(shoe_events(received, 1), dealt, ended=True, alerts=["device_fault"])
        check_card_inputs(rig, [dealt])  # every card stored once, in order
    finally:
        rig.close()
