"""Every hold has a way out (docs/table.md "Holds and their ways out"), as a property.

A shoe is dealt by the perfect dealer; a faulty reader spoils the inputs (double reads,
missed scans, foreign tags, unsure reads, device and host faults, cards out face up) and a
supervisor who saw the video answers every hold with one of the actions the hold itself
names. Whatever the faults, and after a restart in any held state, the table comes back to
dealing (or the shoe ends cleanly when the supervisor changes it), and every round that
stands has the result the clean shoe gives.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.table import ClockedTable, only, shuffled_shoe, types_of

from shoe_controller.table.action_specs import ACTIONS
from shoe_controller.table.books import Draw
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import Card, parse_card
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import (
    CardDrawn,
    DeviceFault,
    DeviceFaultCleared,
    Input,
    SupervisorCommand,
)

FAULTS = ("none", "double_read", "missed", "foreign", "unsure", "device_fault", "host_fault",
          "face_up", "supervisor_hold")  # fmt: skip


class Run:
    """The table, what each of its cards truly is, and the supervisor who knows it."""

    def __init__(self, config: TableConfig, restart_at: int | None, change_at: int | None) -> None:
        self.config = config
        self.table = Table(config)
        self.inputs: list[tuple[int, Input]] = []  # (shoe, input) as the journal keeps them
        self.events: list[Event] = []
        self.truth: dict[int, Card] = {}  # the table's seq -> the card that left the shoe
        self.change_at = change_at  # the supervisor changes the shoe at this held state
        self.at = 1_800_000_000.0
        self.restart_at = restart_at
        self.held_states = 0
        self.changed_shoe = False
        self.missed = 0  # cards not read since the last card read
        self.counters = True  # the shoe sends card counters

    def apply(self, item: Input) -> list[Event]:
        self.inputs.append((self.table.shoe_of(item), item))
        events = self.table.apply(item)
        self.events += events
        for caused in events:
            assert caused.data.get("code") != "internal_error", caused.data
        return events

    def tick(self) -> float:
        self.at += 1.0
        return self.at

    def supervise(self) -> None:
        """Answer every hold with an action it names, until the table deals again."""
        for _ in range(20):
            view = self.table.view()
            if not view["holds"]:
                return
            self.maybe_restart()
            hold = view["holds"][0]
            self.held_states += 1
            event(f"held: {hold['code']}")
            action, args = self.choose(hold)
            assert action in hold["actions"], (action, hold)
            events = self.apply(SupervisorCommand(self.tick(), action, "sup7", "video", args))
            assert events[0].type == EventType.SUPERVISOR_ACTION, (hold, events[0].data)
            if action == "change_shoe":
                self.changed_shoe = True
                return
        raise AssertionError(f"still held: {self.table.view()['holds']}")

    def choose(self, hold: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if self.held_states == self.change_at:
            return "change_shoe", {}  # always a way out, with the shoe
        if hold["kind"] == "plain":
            if hold["waiting_for"]:  # the device clears its own fault first
                device, code = _fault_of(self.table)
                self.apply(DeviceFaultCleared(self.tick(), device, code))
            return "resume", {}
        head = next(item for item in self.table.book.queue if isinstance(item, Draw))
        card = str(self.truth.get(head.seq))
        if hold["code"] == "missed_card":
            return "missed", {"card": card}
        if hold["code"] == "double_read_suspected":
            return "discard", {}  # the video shows one card
        return "confirm", {"card": card}

    def maybe_restart(self) -> None:
        """A restart in a held state: the open shoe's inputs rebuild the table."""
        if self.restart_at is None or len(self.inputs) < self.restart_at:
            return
        self.restart_at = None
        rebuilt = Table(self.config, last_shoe=self.table.shoe - 1)
        for shoe, item in self.inputs:
            if shoe >= self.table.shoe:
                rebuilt.apply(item)
        assert rebuilt.snapshot() == self.table.snapshot()
        assert rebuilt.view()["holds"] == self.table.view()["holds"]
        self.table = rebuilt


def _fault_of(table: Table) -> tuple[str, int]:
    (hold,) = [hold for hold in table.book.holds if hold.fault_active]
    assert hold.fault is not None
    return hold.fault


def spoil(run: Run, item: CardDrawn, fault: str) -> None:
    """Feed one card that left the shoe through a faulty reader."""
    book = run.table.book
    seq = book.drawn + 1
    card = item.card
    assert card is not None
    at = run.tick()
    if not run.counters:
        item = replace(item, counter=None)  # a vendor ASCII shoe
    if fault == "missed":
        run.truth[seq + run.missed] = card  # never read: the next counter shows the gap
        run.missed += 1
        return
    seq += run.missed  # the table puts a placeholder for each missed card first
    run.missed = 0
    run.truth[seq] = card
    if fault == "foreign":
        read = replace(item, at=at, card=None, foreign=True, uid=f"DEAD{seq:04X}")
    elif fault == "unsure":
        read = replace(item, at=at, low_confidence=True)
    elif fault == "face_up":
        read = replace(item, at=at, face_up=True)
    else:
        read = replace(item, at=at)
    run.apply(read)
    if fault == "double_read":
        run.apply(replace(read, at=at + 0.05))  # the same frame content again: refused
    elif fault == "device_fault":
        run.apply(DeviceFault(run.tick(), "scanner", 0x0001, 2, "jam"))
    elif fault == "host_fault":
        run.apply(DeviceFault(run.tick(), "scanner", 0xF001, 2, "garbled text"))
    elif fault == "supervisor_hold":
        run.apply(SupervisorCommand(run.tick(), "hold", "sup7", "check", {}))


def results(events: list[Event]) -> list[dict[str, Any]]:
    voided = {e.round for e in events if e.type == EventType.ROUND_VOIDED}
    return [e.data for e in events if e.type == EventType.ROUND_RESULT and e.round not in voided]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    burn_per_round=st.sampled_from([0, 1]),
    counters=st.booleans(),
    faults=st.lists(st.sampled_from([*FAULTS, *["none"] * 12]), min_size=30, max_size=120),
    # (restart in the first held state after this many inputs, change the shoe at this hold)
    plan=st.tuples(
        st.one_of(st.none(), st.integers(5, 400)),
        st.one_of(st.none(), st.none(), st.integers(1, 60)),
    ),
)
def test_the_actions_a_hold_names_bring_the_table_back(
    seed: int,
    burn_per_round: int,
    counters: bool,
    faults: list[str],
    plan: tuple[int | None, int | None],
) -> None:
    restart, change_at = plan
    config = TableConfig(insurance=False, burn_per_round=burn_per_round)
    cards = shuffled_shoe(config.decks, seed)
    clean = deal_shoe(cards, config, cut_after=len(cards) - 60)
    run = Run(config, restart, change_at)
    run.counters = counters
    items = list(clean.inputs)
    for index, item in enumerate(items):
        if isinstance(item, CardDrawn):
            fault = faults[index % len(faults)]
            following = items[index + 1] if index + 1 < len(items) else None
            if fault == "missed" and (not counters or not isinstance(following, CardDrawn)):
                fault = "none"  # a missed card shows in the next card's counter, if any
            spoil(run, item, fault)
        else:
            run.apply(replace(item, at=run.tick()))  # type: ignore[call-overload]
        run.supervise()
        if run.changed_shoe:
            break
    got = results(run.events)
    expected = [outcome.result_data() for outcome in clean.outcomes]
    if run.changed_shoe:
        ended = [e.data for e in run.events if e.type == EventType.SHOE_ENDED]
        assert ended
        assert ended[-1]["reason"] in ("supervisor", "security")
        assert run.table.view()["holds"] == []
        assert got == expected[: len(got)]
    else:
        assert got == expected
        assert run.table.state == "no_shoe"  # the shoe ended by its cut card
    assert not run.table.book.holds
    event("shoe changed" if run.changed_shoe else "shoe dealt to its cut card")
    event("restarted" if restart is not None and run.restart_at is None else "no restart")


# ---------------------------------------------------------------- each way out, by hand


def _dealing() -> ClockedTable:
    driver = ClockedTable(TableConfig(insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C")
    return driver


def test_a_fault_the_host_raised_is_cleared_by_resume() -> None:
    # 0xF001 (garbled ASCII text): no device will ever send FAULT_CLEARED for it.
    driver = _dealing()
    driver.apply(DeviceFault(driver.at(), "scanner", 0xF001, 2, "garbled device text"))
    (hold,) = driver.table.view()["holds"]
    assert (hold["code"], hold["actions"], hold["waiting_for"]) == (
        "device_fault",
        ["resume", "change_shoe"],
        None,
    )
    events = driver.sup("resume")
    assert types_of(events) == ["supervisor.action", "device.fault_cleared"]
    assert events[1].data == {"device": "scanner", "code": 0xF001, "severity": None, "text": ""}
    assert driver.table.state == "dealing"
    assert driver.table.view()["faults"] == []


def test_a_devices_own_fault_waits_for_the_device_and_the_hold_says_so() -> None:
    driver = _dealing()
    driver.apply(DeviceFault(driver.at(), "scanner", 0x0001, 2, "jam"))
    (hold,) = driver.table.view()["holds"]
    assert hold["waiting_for"] == "scanner to clear fault 0x0001 (FAULT_CLEARED)"
    (refusal,) = driver.sup("resume")
    assert refusal.data["code"] == "command_refused"
    driver.apply(DeviceFaultCleared(driver.at(), "scanner", 0x0001))
    assert driver.table.view()["holds"][0]["waiting_for"] is None
    assert types_of(driver.sup("resume")) == ["supervisor.action"]
    assert driver.table.state == "dealing"


def test_a_phantom_card_behind_a_plain_hold_can_be_discarded() -> None:
    driver = _dealing()
    driver.apply(DeviceFault(driver.at(), "scanner", 0xF001, 2, "garbled device text"))
    driver.card("QS")  # read while the shoe was faulty: no card really left
    assert [draw.card for draw in driver.table.book.queue if isinstance(draw, Draw)] == [
        parse_card("QS")
    ]
    events = driver.sup("discard")
    assert events[0].data["details"] == {"seq": 5, "hold": None}
    assert driver.table.state == "held"  # the plain hold stays until resume
    assert not driver.table.book.queue
    driver.sup("resume")
    events = driver.deal("KD")
    assert [(e.data["position"], e.data["card"]) for e in only(events, EventType.CARD_DEALT)] == [
        ("P2", "KD")
    ]


def test_discard_with_nothing_queued_behind_a_plain_hold_is_refused() -> None:
    driver = _dealing()
    driver.sup("hold")
    (refusal,) = driver.sup("discard")
    assert refusal.data["code"] == "command_refused"
    assert "no held card to discard" in refusal.data["text"]


@pytest.mark.parametrize(
    ("make_hold", "actions"),
    [
        (lambda d: d.card(None), ["missed", "confirm", "discard", "change_shoe"]),
        (lambda d: d.card("QS", low_confidence=True), ["confirm", "discard", "change_shoe"]),
        (lambda d: d.sup("hold"), ["resume", "change_shoe"]),
    ],
    ids=["placeholder", "card", "plain"],
)
def test_every_hold_names_its_ways_out(make_hold: Any, actions: list[str]) -> None:
    driver = _dealing()
    make_hold(driver)
    (hold,) = driver.table.view()["holds"]
    assert hold["actions"] == actions
    for action in actions:
        assert action in ACTIONS
