"""The controller journals the table settings (docs/journal.md "The table
settings"): at start-up with controller.started, and as the first input of every shoe, so
that a shoe's inputs carry the settings they were dealt by; recovery replays with them."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from shoe_testkit.perfect_dealer import START_TIME, deal_shoe

from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.inputs import Input

CONTROLLER = "tbl-07-shoe"
SIX = TableConfig(decks=6)


def two_shoes() -> list[Input]:
    """A whole shoe of 6 decks and half of the next, dealt right (the perfect dealer)."""
    cards = [Card(rank, suit) for _ in range(6) for rank in range(1, 14) for suit in Suit]
    random.Random(26).shuffle(cards)
    first = deal_shoe(cards, SIX, cut_after=250)
    random.Random(27).shuffle(cards)
    second = deal_shoe(cards, SIX, cut_after=250, start=START_TIME + 10_000)
    return [*first.inputs, *second.inputs[: len(second.inputs) // 2]]


def types_and_shoes(journal: Journal) -> list[tuple[str, int | None]]:
    return [(step.input["type"], step.shoe) for step in journal.reads.replay_steps(1)]


def test_the_settings_go_first_at_the_start_and_first_in_every_shoe(tmp_path: Path) -> None:
    inputs = two_shoes()
    with Journal.open(tmp_path / "journal.db", CONTROLLER) as journal:
        controller = Controller(SIX, journal)
        controller.start("1.0", START_TIME - 1)
        for item in inputs:
            controller.submit(item)
        stored = types_and_shoes(journal)
        shoes = journal.reads.shoes()
        firsts = {info.shoe: journal.reads.replay_steps(info.first_input)[0] for info in shoes}
    assert stored[:2] == [("table_settings", 1), ("controller_started", 1)]
    assert [shoe for kind, shoe in stored if kind == "table_settings"] == [1, 2]
    assert [info.shoe for info in shoes] == [1, 2]
    for step in firsts.values():
        assert step.input["type"] == "table_settings"
        assert step.input["settings"] == dataclasses.asdict(SIX)
        assert step.events == ()  # no event of its own
    assert [kind for kind, _ in stored if kind != "table_settings"][1:] == [
        item.TYPE for item in inputs
    ]


def test_recovery_replays_with_the_journaled_settings_then_the_new_ones_apply(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.db"
    inputs = two_shoes()
    with Journal.open(path, CONTROLLER) as journal:
        controller = Controller(SIX, journal)
        controller.start("1.0", START_TIME - 1)
        for item in inputs:
            controller.submit(item)
    eight = TableConfig(decks=8)
    with Journal.open(path, CONTROLLER) as journal:
        restarted = Controller(eight, journal)  # the file was changed between two starts
        assert restarted.recovery.mismatch is None  # shoe 2 replayed as it was dealt: 6 decks
        assert restarted.table.config == SIX
        restarted.start("1.1", START_TIME + 20_000)
        assert restarted.table.config == eight
        last_input = journal.reads.last_input()
        assert journal.reads.settings_in_force(last_input) == (
            last_input - 1,
            dataclasses.asdict(eight),
        )
        assert journal.reads.settings_in_force(1) == (1, dataclasses.asdict(SIX))
        assert types_and_shoes(journal)[-2:] == [
            ("table_settings", 2),
            ("controller_started", 2),
        ]
