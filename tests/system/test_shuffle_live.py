"""Shuffle integrity with real processes (docs/shuffle.md): the daemon, the simulated
shoe and the table server of TableRig, and `shoe-controller surveillance` beside them.

Three shoes are dealt. The first is a seeded fair shoe (nothing to hold it against). The
second repeats 20 consecutive cards of the first, in order, somewhere in an otherwise random
order of the same 8 decks: the live `surveillance.slug` must come with the findings of the
round in which the run reaches the live threshold (6 cards, docs/shuffle.md), naming its places
in both shoes and the first shoe's next cards, and `surveillance.slug_ended` when the slug
ends. The third is a fair shoe again: no slug. During both, the daemon and the companion are
each SIGKILLed once and started again (the reference comes back from the journal). The
dealer deals in step with the companion: after each round it waits until the companion's
findings of that round are journaled, so "within one round" is an order of events, not a time.
"""

from __future__ import annotations

import json
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.control import REPO, cli_env
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import check_delivery
from shoe_testkit.words import faults

from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import EventType

SLUG_LENGTH = 20
SLUG_FROM_PREVIOUS = 150  # where the slug starts in shoe 1 (0-based card index)
SLUG_AT = 130  # and where it is put in shoe 2
LIVE_THRESHOLD = 6  # the live slug's run at 8 decks (docs/shuffle.md)
CUT_AFTER = 402
ROUND_ENDS = (EventType.ROUND_RESULT, EventType.ROUND_VOIDED)
SLUGS = (EventType.SURVEILLANCE_SLUG, EventType.SURVEILLANCE_SLUG_ENDED)


@dataclass
class Shoe:
    number: int
    dealt: list[Card]  # as the simulated shoe sent them, in order


@dataclass
class Dealt:
    rig: TableRig
    socket_path: Path
    shoes: list[Shoe]
    events: list[StoredEvent]
    inputs: list[dict[str, Any]]


def _companion(rig: TableRig, name: str) -> subprocess.Popen[bytes]:
    log = (rig.directory / name).open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.main", "surveillance",
         "--config", str(rig.config_path)],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip


def _findings(rig: TableRig) -> list[dict[str, Any]]:
    return [item for item in rig.records.journal_inputs() if item["type"] == "shuffle_findings"]


class ShoeRun:
    """Deals one shoe in step with the companion, killing processes at given cards."""

    def __init__(self, rig: TableRig, companion: subprocess.Popen[bytes], watched: bool) -> None:
        self.rig = rig
        self.companion = companion
        self.watched = watched  # a shoe after the first: findings follow every round
        self.boots = 0

    def deal(self, kill_daemon_at: int, kill_companion_at: int) -> None:
        rig = self.rig
        for count in range(1, 1000):
            events = rig.dealer.deal(1)
            ends = [e.seq for e in events if e.type in ROUND_ENDS]
            if ends and self.watched:
                rig.wait_until(
                    lambda last=ends[-1]: any(f["after_seq"] >= last for f in _findings(rig)),
                    "the companion's shuffle findings of the round",
                )
            if rig.records.shoes_ended > self.ended_before:
                return
            if count == kill_daemon_at:
                rig.kill_daemon()  # as in a power cut
                rig.start_daemon()
            if count == kill_companion_at:
                self.companion.send_signal(signal.SIGKILL)
                self.companion.wait()
                self.boots += 1
                self.companion = _companion(rig, f"surveillance-{self.boots}.log")
        raise AssertionError("the shoe did not end")

    @property
    def ended_before(self) -> int:
        return self._ended

    def start(self) -> ShoeRun:
        self._ended = self.rig.records.shoes_ended
        return self


def _slugged_order(previous: list[Card], seed: int) -> list[dict[str, int]]:
    """8 decks in a random order but for 20 cards of `previous` in order at SLUG_AT."""
    slug = previous[SLUG_FROM_PREVIOUS : SLUG_FROM_PREVIOUS + SLUG_LENGTH]
    rest = [Card(rank, suit) for rank, suit in _full_shoe()]
    for card in slug:
        rest.remove(card)
    chooser = random.Random(seed)
    while True:
        chooser.shuffle(rest)
        order = rest[:SLUG_AT] + slug + rest[SLUG_AT:]
        # The run starts at the slug exactly: the card before it does not extend it.
        if order[SLUG_AT - 1] != previous[SLUG_FROM_PREVIOUS - 1]:
            return [{"rank": card.rank, "suit": int(card.suit)} for card in order]


def _full_shoe() -> list[tuple[int, Suit]]:
    return [(rank, suit) for _ in range(8) for suit in Suit for rank in range(1, 14)]


@pytest.fixture(scope="module")
def dealt() -> Iterator[Dealt]:
    directory = Path(tempfile.mkdtemp(prefix="shl-", dir="/tmp"))  # short: socket paths
    socket_path = directory / "control.sock"
    rig = TableRig(
        directory / "rig", RigOptions(cut_after=CUT_AFTER, control={"socket": str(socket_path)})
    )
    run: ShoeRun | None = None
    try:
        rig.directory.mkdir()
        rig.key_file.write_text(secrets.token_hex(32) + "\n")
        rig.key_file.chmod(0o600)
        rig.start_receiver()
        rig.start_simulators()
        rig.write_config()
        rig.start_daemon()
        shoes = []
        run = ShoeRun(rig, _companion(rig, "surveillance-0.log"), watched=False).start()
        rig.dealer.load_shoe()
        run.deal(kill_daemon_at=0, kill_companion_at=0)
        shoes.append(Shoe(1, [item.card for item in rig.dealer.dealt_cards()]))
        # Shoe 2: a slug of shoe 1 (the daemon killed before it, the companion after it).
        rig.dealer.change_shoe(load=False)
        rig.shoe.request("load", cards=_slugged_order(shoes[0].dealt, 28), cut_after=CUT_AFTER)
        rig.dealer.settle()
        run.watched = True
        run.start().deal(kill_daemon_at=60, kill_companion_at=SLUG_AT + SLUG_LENGTH + 30)
        shoes.append(Shoe(2, [item.card for item in rig.dealer.dealt_cards()]))
        # Shoe 3: seeded fair (the companion killed early, the daemon late).
        rig.dealer.change_shoe()
        run.start().deal(kill_daemon_at=300, kill_companion_at=40)
        shoes.append(Shoe(3, [item.card for item in rig.dealer.dealt_cards()]))
        events = rig.records.journal_events()
        yield Dealt(rig, socket_path, shoes, events, rig.records.journal_inputs())
    finally:
        if run is not None and run.companion.poll() is None:
            run.companion.terminate()
            run.companion.wait(10)
        rig.close()
        shutil.rmtree(directory, ignore_errors=True)


def _of_shoe(events: list[StoredEvent], shoe: int, *types: str) -> list[StoredEvent]:
    return [e for e in events if e.shoe == shoe and e.type in types]


def test_the_slug_is_raised_within_one_round_with_its_places_and_next_cards(
    dealt: Dealt,
) -> None:
    previous, this = dealt.shoes[0].dealt, dealt.shoes[1].dealt
    assert (
        this[SLUG_AT : SLUG_AT + SLUG_LENGTH]
        == previous[SLUG_FROM_PREVIOUS : SLUG_FROM_PREVIOUS + SLUG_LENGTH]
    )
    events = dealt.events
    raised = _of_shoe(events, 2, EventType.SURVEILLANCE_SLUG)
    assert len(raised) == 1, [e.data for e in raised]
    slug = raised[0].data
    # Where it is in both shoes, positions from 1 at each shoe's first card (the burn's).
    assert slug["this"][0] == SLUG_AT + 1
    assert slug["previous"][0] == SLUG_FROM_PREVIOUS + 1
    assert slug["card"] == SLUG_AT + LIVE_THRESHOLD  # the card that made it long enough
    length = slug["length"]
    assert LIVE_THRESHOLD <= length <= SLUG_LENGTH
    assert slug["this"][1] - slug["this"][0] + 1 == length
    assert slug["previous"][1] == SLUG_FROM_PREVIOUS + length
    # The next cards: the previous shoe's after the run as it stood at the round's end.
    end = SLUG_FROM_PREVIOUS + length
    assert slug["next"] == [str(card) for card in previous[end : end + 8]]
    assert slug["against"] == 1
    # Within one round: no card of a later round was dealt before the alert, and the
    # round in progress when the 6th slug card came out was over by then.
    cards = [e for e in events if e.shoe == 2 and e.type == EventType.CARD_DEALT]
    burned = sum(len(e.data["cards"]) for e in _of_shoe(events, 2, EventType.SHOE_BURNED))
    sixth = cards[SLUG_AT + LIVE_THRESHOLD - 1 - burned]
    assert sixth.seq < raised[0].seq
    later = [e for e in cards if e.round is not None and e.round > sixth.round]
    assert later
    assert later[0].seq > raised[0].seq
    assert slug["round"] == sixth.round
    # What the next round pays if the slug goes on: it did go on, so the round paid that.
    after = next(e for e in _of_shoe(events, 2, EventType.ROUND_RESULT) if e.round > sixth.round)
    known = slug["next_round"]["if_it_goes_on"]
    winner = after.data["winner"]
    for side, pays in (("player", 1.0), ("banker", 0.95), ("tie", 8.0)):
        expected = pays if winner == side else 0.0 if winner == "tie" and side != "tie" else -1.0
        assert known[side] == expected, (side, after.data)
    assert -0.02 < slug["next_round"]["edge"]["banker"] < 0  # plain: the house's
    # Ended once, by the card after the run (the 21st, unless chance made it longer).
    ended = _of_shoe(events, 2, EventType.SURVEILLANCE_SLUG_ENDED)
    assert len(ended) == 1
    finished = ended[0].data
    assert finished["this"][0] == SLUG_AT + 1
    assert finished["length"] >= SLUG_LENGTH
    assert finished["card"] == SLUG_AT + finished["length"] + 1
    assert this[SLUG_AT + finished["length"]] != previous[SLUG_FROM_PREVIOUS + finished["length"]]


def test_the_shoe_report_judges_the_slugged_shoe_and_the_fair_ones(dealt: Dealt) -> None:
    events = dealt.events
    assert not _of_shoe(events, 1, *SLUGS, EventType.SURVEILLANCE_SHUFFLE_REPORT)
    assert not [item for item in dealt.inputs if item["type"] == "shuffle_findings"
                and item["shoe"] == 1]  # fmt: skip
    reports = {
        shoe: _of_shoe(events, shoe, EventType.SURVEILLANCE_SHUFFLE_REPORT) for shoe in (2, 3)
    }
    assert [len(found) for found in reports.values()] == [1, 1]
    slugged, fair = reports[2][0].data, reports[3][0].data
    assert slugged["verdict"] == "unshuffled"  # a common run of 7 or more
    assert slugged["tests"]["longest_run"]["value"] >= SLUG_LENGTH
    assert slugged["runs"][0]["this"][0] == SLUG_AT + 1
    assert (slugged["shoe"], slugged["against"]) == (2, 1)
    assert slugged["cards_compared"] == len(dealt.shoes[1].dealt)
    assert fair["verdict"] == "fair"
    assert fair["cards_compared"] == len(dealt.shoes[2].dealt)
    assert not _of_shoe(events, 3, *SLUGS)  # a fair shoe: no slug


def test_findings_follow_every_round_and_the_shoe_end_once(dealt: Dealt) -> None:
    findings = [item for item in dealt.inputs if item["type"] == "shuffle_findings"]
    for shoe in (2, 3):
        mine = [item for item in findings if item["shoe"] == shoe]
        seqs = [item["after_seq"] for item in mine]
        assert seqs == sorted(set(seqs))
        assert len(mine) > 40
        assert [item["final"] for item in mine].count(True) == 1
        assert mine[-1]["final"]


def test_the_pits_table_server_gets_no_shuffle_event(dealt: Dealt) -> None:
    received = check_delivery(dealt.rig)
    assert any(e.type in SLUGS for e in dealt.events)
    assert not any(event["type"].startswith("surveillance.") for event in received)


def _shoectl(dealt: Dealt, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", *args],
        cwd=REPO, env=cli_env(str(dealt.socket_path)), capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def test_shoectl_shuffle_shows_the_report(dealt: Dealt) -> None:
    shown = _shoectl(dealt, "shuffle", "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    last = _of_shoe(dealt.events, 3, EventType.SURVEILLANCE_SHUFFLE_REPORT)[0].data
    assert report == last
    assert set(report) == {"shoe", "against", "cards_compared", "tests", "runs", "verdict"}
    text = _shoectl(dealt, "shuffle")
    assert text.returncode == 0, text.stderr
    assert "Shoe 3 against shoe 2" in text.stdout
    assert "fair" in text.stdout
    assert faults(text.stdout) == []  # in words (tests/system/test_shoectl_words.py)
    unshuffled = _shoectl(dealt, "shuffle", "--shoe", "2")
    assert "unshuffled: an order a fair shuffle gives in fewer than 1 shoe in a million" in (
        unshuffled.stdout
    )
    assert faults(unshuffled.stdout) == []
    older = json.loads(_shoectl(dealt, "shuffle", "--shoe", "2", "--json").stdout)
    assert older["verdict"] == "unshuffled"
