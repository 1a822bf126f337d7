"""The live daemon path of the table's own checks: a simulated shoe on a pty lies, the daemon
(a real process) judges (docs/table.md "Inputs the table checks", "Holds and their ways out").
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoe_controller.testing.rig import RigOptions, TableRig
from tests.test_end_to_end import check_delivery, check_shoe, deal_into_round, shoe_events

pytestmark = pytest.mark.slow


@pytest.fixture
def rig() -> Iterator[TableRig]:
    # Not tmp_path: the simulators' control sockets need a path under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="live-") as name:
        table = TableRig(Path(name), RigOptions()).start()
        try:
            yield table
        finally:
            table.close()


def test_a_double_read_is_dealt_once_and_the_shoe_ends_right(rig: TableRig) -> None:
    assert rig.shoe is not None
    deal_into_round(rig, 2)
    rig.shoe.request("reread")  # the shoe sends its last CARD again, in a new frame
    rig.dealer.settle()
    rig.dealer.deal_until_shoe_ends()
    dealt = rig.dealer.dealt_cards()
    received = check_delivery(rig)
    # Every card on its position, every result the rules' (check_shoe), and the double
    # read reported, not dealt; no host fault that nothing would ever clear.
    check_shoe(shoe_events(received, 1), dealt, ended=True, alerts=["double_read"])
    assert [e for e in received if e["type"] == "device.fault"] == []


def test_a_counter_going_back_is_refused_without_a_hold(rig: TableRig) -> None:
    assert rig.shoe is not None
    deal_into_round(rig, 2)
    before = rig.records.last_seq()
    rig.shoe.request("count_back", count=2)
    rig.dealer.deal(1)
    events = rig.records.journal_events(after=before)
    alerts = [e.data for e in events if e.type == "procedure.alert"]
    assert [alert["code"] for alert in alerts] == ["counter_went_back"]
    assert alerts[0]["needs_supervisor"] is True
    assert not [e for e in events if e.type in ("card.dealt", "device.fault")]
    inputs = [item for item in rig.records.journal_inputs() if item["type"] == "card"]
    assert [item["counter"] for item in inputs[-2:]] == [
        inputs[-2]["counter"],
        inputs[-2]["counter"] - 2,
    ]
