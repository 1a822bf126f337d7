"""The live daemon path of the table's own checks: a simulated shoe on a pty lies, the daemon
(a real process) judges (docs/table.md "Inputs the table checks", "Holds and their ways out").
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import (
    check_delivery,
    check_shoe,
    deal_into_round,
    shoe_events,
    shoectl,
)

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


# ---------------------------------------------------------------- health a pager can trust


def test_check_is_critical_while_the_table_refuses_cards_and_stays_so(rig: TableRig) -> None:
    assert rig.shoe is not None
    deal_into_round(rig, 2)
    assert shoectl(rig, "check").returncode == 0
    changed = shoectl(rig, "change-shoe", "--by", "sup7", "--reason", "cards marked")
    assert changed.returncode == 0, changed.stderr
    rig.dealer.deal(1)  # the dealer goes on dealing from the old shoe: refused (no shoe open)
    for _ in range(3):  # as the pit boss's pager polls: the same verdict every time
        check = shoectl(rig, "check")
        assert check.returncode == 2, check.stdout
        assert check.stdout.startswith(
            "SHOE CRITICAL - the table refuses the shoe's cards (no shoe open"
        )
    status = json.loads(shoectl(rig, "status", "--json").stdout)
    (problem,) = [p for p in status["health"]["problems"] if "refuses" in p["text"]]
    assert "load or start a shoe" in problem["action"]
    rig.shoe.request("load")  # a new shoe: the cause is gone
    rig.wait_until(lambda: shoectl(rig, "check").returncode == 0, "check to be OK again")


def test_a_silent_scanner_is_silent_and_critical_until_it_speaks(rig: TableRig) -> None:
    assert rig.shoe is not None
    deal_into_round(rig, 2)
    silence_s = 7.0
    silent_until = time.monotonic() + silence_s
    rig.shoe.request("silence", seconds=silence_s)
    rig.wait_until(lambda: shoectl(rig, "check").returncode == 2, "check to be critical")
    seen = set()
    # across the silence (the port reopens, the scanner says nothing), ending well before it
    # does: two CLI calls a look take their own time on a slow machine
    while len(seen) == 0 or time.monotonic() < silent_until - 2.5:
        check = shoectl(rig, "check")
        devices = json.loads(shoectl(rig, "devices", "--json").stdout)["devices"]
        seen.add((check.returncode, devices[0]["status"]))
        time.sleep(0.4)
    assert seen == {(2, "silent")}, seen
    rig.wait_until(lambda: shoectl(rig, "check").returncode == 0, "the scanner to speak again")
