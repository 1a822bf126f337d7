"""The daemon's journal on a file system that fills up mid-shoe: no ACK, no loss, no crash."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.fs import fill, small_tmpfs
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import check_card_inputs, check_delivery, check_shoe, shoe_events

TMPFS_SIZE = "16m"  # room for the WAL between checkpoints once space is freed
LEFT_FREE = 48 * 1024  # bytes left beside the journal once the filler is written


@pytest.fixture
def small_disk() -> Iterator[Path]:
    with (
        tempfile.TemporaryDirectory(prefix="full-") as name,
        small_tmpfs(Path(name), TMPFS_SIZE) as mount_point,
    ):
        yield mount_point


@pytest.fixture
def directory() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="e2e-") as name:
        yield Path(name)


def test_a_full_journal_disk_stops_acks_and_loses_no_card(
    small_disk: Path, directory: Path
) -> None:
    rig = TableRig(directory, RigOptions())
    rig.records.use_journal(small_disk / "journal.db")
    rig.start()
    try:
        rig.dealer.deal(12)
        filler = fill(small_disk, LEFT_FREE)
        log = directory / "daemon.log"
        # Deal on until the journal refuses: the shoe keeps its unACKed card and waits.
        for _ in range(400):
            rig.dealer.deal(1, wait=False)
            if "journal cannot store" in log.read_text():
                break
        else:
            pytest.fail("the journal never filled up")
        assert rig.daemon is not None
        assert rig.daemon.poll() is None  # still running: no crash, no crash loop
        filler.unlink()  # the technician frees space
        rig.dealer.settle()
        rig.dealer.deal_until_shoe_ends()
        dealt = rig.dealer.dealt_cards()
        received = check_delivery(rig)
        check_shoe(shoe_events(received, 1), dealt, ended=True)
        check_card_inputs(rig, [dealt])  # every card stored exactly once, in order
        assert "journal stores again" in log.read_text()
    finally:
        rig.close()
