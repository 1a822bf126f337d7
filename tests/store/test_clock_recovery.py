"""The round's clock through the journal: a shoe's end is journaled for the next
shoe (`previous_shoe`) in the same transaction, and a controller restarted on the journal
rebuilds the next shoe with its downtime, its replayed events equal to the stored ones."""

from __future__ import annotations

from pathlib import Path

from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.inputs import (
    BetsState,
    BettingChanged,
    CardDrawn,
    ShoeState,
    ShoeStateChanged,
    SupervisorCommand,
)

CONFIG = TableConfig(betting="server", insurance=False)


def _deal(controller: Controller, at: float, names: str) -> float:
    for name in names.split():
        at += 1.0
        controller.submit(CardDrawn(at, "scanner", parse_card(name)))
    return at


def test_a_restart_in_the_next_shoe_keeps_its_downtime_and_its_closed_bets(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.db"
    with Journal.open(path, "tbl-07-shoe") as journal:
        controller = Controller(CONFIG, journal)
        controller.submit(ShoeStateChanged(10.0, "scanner", ShoeState.LOADED))
        at = _deal(controller, 10.0, "AS 4C")
        controller.submit(BettingChanged(at + 1, BetsState.CLOSED, 1, 1, "G-1", "n-000001"))
        at = _deal(controller, at + 1, "9H 2C KD 5S")
        ended = controller.submit(SupervisorCommand(at + 60, "change_shoe", "sup7", "end"))
        assert ended[-1].type == "shoe.ended"
        inputs = [step.input for step in journal.reads.replay_steps()]
        assert inputs[-1] == {"type": "previous_shoe", "at": at + 60, "shoe": 1}
        controller.submit(ShoeStateChanged(at + 400, "scanner", ShoeState.LOADED))
        at = _deal(controller, at + 400, "AS 4C")
        controller.submit(BettingChanged(at + 1, BetsState.CLOSED, 2, 1, "G-2", "n-000002"))
    with Journal.open(path, "tbl-07-shoe") as journal:
        restarted = Controller(CONFIG, journal)
        assert restarted.recovery.mismatch is None
        assert restarted.recovery.shoe == 2
        assert restarted.table.indicator == (5, 1)  # shoe 2 round 1's bets are closed
        _deal(restarted, at + 1, "9H 2C KD 5S")
        events = journal.reads.events_after(0, limit=1000)
        (downtime,) = [event for event in events if event.type == "shoe.downtime"]
        assert downtime.shoe == 2
        assert downtime.data["previous_shoe"] == 1
        assert downtime.data["shuffle_seconds"] == 340.0  # end (at+60) to SHOE loaded (at+400)
        started = [event for event in events if event.type == "round.started"]
        assert started[-1].data["server_round"] == "G-2"
