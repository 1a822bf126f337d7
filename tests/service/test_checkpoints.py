"""When the daemon checkpoints its journal (service/checkpoints.py): at start-up, at
a shoe's end, every `checkpoint_every_s` while records are stored and not while the table is
idle, never while a squeezed card is unrevealed (R15: it waits for the reveal), and again
after a commit the journal could not make. A real journal and controller; the timer's clock is
the test's own (a fake of a clock, not of the code under test)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import structlog
from shoe_testkit.perfect_dealer import deal_shoe

from shoe_controller.service.checkpoints import (
    PERIODIC,
    SHOE_END,
    START_UP,
    Checkpoints,
    daemon_checkpoints,
    signer_of,
)
from shoe_controller.service.config import JournalSection, from_mapping
from shoe_controller.store.checkpoint import FIELDS, Checkpoint, CheckpointError
from shoe_controller.store.checkpoint_keys import write_new_key
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal, JournalFull, StoredEvent
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import Card, CardError, Suit, parse_card
from shoe_controller.vocab.inputs import CardDrawn, Input

EVERY_S = 300.0
CONTROLLER = "tbl-07-shoe"


class Rig:
    """A controller on a journal with the daemon's checkpoints; `seconds` is the timer."""

    def __init__(
        self, directory: Path, config: TableConfig, *, failing: Exception | None = None
    ) -> None:
        self.now = 1_900_000_000.0
        self.seconds = 0.0
        self.failing = failing  # what the daemon's submit raises, while set
        self.journal = Journal.open(directory / "journal.db", CONTROLLER, clock=self.clock)
        self.checkpoints: Checkpoints | None = None
        self.controller = Controller(config, self.journal, on_stored=self.stored)
        signer = write_new_key(directory / "checkpoint.key")
        self.checkpoints = Checkpoints(
            signer, self.controller, self.submit, controller_id=CONTROLLER, every_s=EVERY_S,
            clock=self.clock, monotonic=lambda: self.seconds,
        )  # fmt: skip
        self.controller.start("test", self.clock())

    def clock(self) -> float:
        self.now += 0.5
        return self.now

    def submit(self, inputs: Sequence[Input]) -> list[StoredEvent]:
        if self.failing is not None:  # e.g. Daemon.submit when the disk is full
            raise self.failing
        return self.controller.submit_many(inputs)

    def stored(self, events: list[StoredEvent]) -> None:
        if self.checkpoints is not None:
            self.checkpoints.on_stored(events)

    @property
    def cp(self) -> Checkpoints:
        assert self.checkpoints is not None
        return self.checkpoints

    def taken(self) -> list[StoredEvent]:
        return [
            event
            for event in self.journal.reads.events_after(0, 100_000)
            if event.type == "journal.checkpoint"
        ]


def shoe(config: TableConfig, seed: int = 5) -> list[Input]:
    cards = [
        Card(rank, suit) for _ in range(config.decks) for rank in range(1, 14) for suit in Suit
    ]
    random.Random(seed).shuffle(cards)
    return deal_shoe(cards, config, cut_after=200).inputs


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path, TableConfig(decks=6))
    yield made
    made.journal.close()


def test_start_up_then_every_interval_while_dealing_and_not_while_idle(rig: Rig) -> None:
    # controller.started's commit, or the upkeep's first tick, whichever comes first
    [first] = rig.taken()
    assert rig.cp.due is None
    rig.cp.tick()
    assert rig.taken() == [first]
    inputs = shoe(TableConfig(decks=6))
    rig.controller.submit(inputs[0])
    rig.seconds += EVERY_S - 1
    rig.cp.tick()
    assert len(rig.taken()) == 1  # not yet
    rig.seconds += 1
    rig.cp.tick()
    assert len(rig.taken()) == 2  # the interval, and a record was stored since
    rig.seconds += 10 * EVERY_S
    rig.cp.tick()
    rig.cp.tick()
    assert len(rig.taken()) == 2  # idle: nothing stored since the last one, none again
    rig.controller.submit(inputs[1])
    rig.cp.tick()
    assert len(rig.taken()) == 3  # the interval had passed: the next record brings one
    assert rig.cp.due is None
    assert first.data["input_no"] == 2  # after the settings and controller_started


def test_a_shoes_end_is_checkpointed_at_once(rig: Rig) -> None:
    inputs = shoe(TableConfig(decks=6))
    ended = []
    for item in inputs:
        stored = rig.controller.submit(item)
        if any(event.type == "shoe.ended" for event in stored):
            ended = stored
    assert ended
    last = rig.taken()[-1]
    checkpoint = Checkpoint.from_json(last.data)
    # Right after the commit that ended the shoe: it covers the shoe.ended event itself.
    assert checkpoint.seq == ended[-1].seq
    assert last.seq == ended[-1].seq + 1
    assert len(rig.taken()) == 2  # start-up, the shoe's end: no timer passed


def test_never_while_a_squeezed_card_is_unrevealed_then_after_the_reveal(tmp_path: Path) -> None:
    config = TableConfig(decks=6, squeeze=True)
    rig = Rig(tmp_path, config)
    inputs = shoe(config)
    first_card = next(i for i, item in enumerate(inputs) if isinstance(item, CardDrawn))
    waited = False
    for item in inputs[: first_card + 40]:
        stored = rig.controller.submit(item)
        rig.seconds += EVERY_S  # a checkpoint is due at every step
        rig.cp.tick()
        if rig.controller.table.holds_unrevealed_cards:
            # Due, and waiting: nothing journaled while the round holds a secret card.
            assert rig.cp.due == PERIODIC
            assert rig.taken()[-1].seq < min(event.seq for event in stored)
            waited = True
        else:
            assert rig.cp.due is None
    assert waited
    events = rig.journal.reads.events_after(0, 100_000)
    revealed = [event.seq for event in events if event.type == "card.revealed"]
    taken = [event.seq for event in events if event.type == "journal.checkpoint"]
    dealt = [event for event in events if event.type == "card.dealt"]
    for event in dealt:  # every squeezed card's deal... (R15)
        assert event.data["card"] is None
    # ...and no checkpoint between a round's first card and its reveal.
    for start in (event.seq for event in dealt if event.data["position"] == "P1"):
        reveal = next((seq for seq in revealed if seq > start), None)
        inside = [seq for seq in taken if start < seq < (reveal or 10**9)]
        assert inside == []
    for event in rig.taken():  # the squeeze rule: a checkpoint carries no card
        assert list(event.data) == list(FIELDS)
        for value in event.data.values():
            with pytest.raises((CardError, TypeError, ValueError)):
                parse_card(value)
    rig.journal.close()


def test_a_checkpoint_the_journal_could_not_store_is_taken_later(tmp_path: Path) -> None:
    rig = Rig(tmp_path, TableConfig(decks=6), failing=JournalFull("the journal's disk is full"))
    assert rig.taken() == []
    assert rig.cp.due == START_UP  # still due
    rig.cp.tick()
    assert rig.cp.due == START_UP
    rig.failing = None
    rig.cp.tick()
    assert len(rig.taken()) == 1
    assert rig.cp.due is None
    rig.journal.close()


def test_the_key_file_absent_means_no_checkpoints_and_a_bad_one_is_refused(
    tmp_path: Path,
) -> None:
    absent = str(tmp_path / "absent.key")
    with structlog.testing.capture_logs() as read:
        assert signer_of(JournalSection(checkpoint_key=absent)) is None
    assert read == []  # read before the journal's lock: a second daemon says only its refusal
    rig = Rig(tmp_path, TableConfig(decks=6))
    config = from_mapping({"journal": {"checkpoint_key": absent}})
    listeners: list[object] = []
    with structlog.testing.capture_logs() as serving:
        made = daemon_checkpoints(None, rig.controller, rig.submit, config, clock=rig.clock,
                                  listen=listeners.append)  # fmt: skip
    assert made is None
    assert listeners == []
    [off] = serving
    assert (off["event"], off["log_level"]) == ("journal checkpoints are off: no key", "error")
    assert off["fix"] == f"shoe-controller key --new {absent} (docs/journal.md, Checkpoints)"
    rig.journal.close()
    bad = tmp_path / "bad.key"
    bad.write_text("not a key\n")
    with pytest.raises(CheckpointError, match="not a PEM private key"):
        signer_of(JournalSection(checkpoint_key=str(bad)))
    write_new_key(tmp_path / "good.key")
    signer = signer_of(JournalSection(checkpoint_key=str(tmp_path / "good.key")))
    assert signer is not None
    assert SHOE_END != PERIODIC  # the reasons the log names


def test_a_checkpoint_that_fails_oddly_never_stops_the_table(tmp_path: Path) -> None:
    """A bug under the checkpoint (a submit that raises what no journal does) is logged and
    raises nothing (the commit listeners after it still run); the next interval tries again."""
    rig = Rig(tmp_path, TableConfig(decks=6), failing=RuntimeError("a bug"))
    rig.cp.tick()  # raises nothing
    assert rig.taken() == []
    assert rig.cp.due is None
    rig.failing = None
    rig.controller.submit(shoe(TableConfig(decks=6))[0])
    rig.cp.tick()
    assert rig.taken() == []  # not before the interval
    rig.seconds += EVERY_S
    rig.cp.tick()
    assert len(rig.taken()) == 1
    rig.journal.close()
