"""RFID tags for the shuffle watch with real processes (docs/shuffle.md "Tags"): the
daemon with an RFID shoe and `[table] card_tags = true`, its simulated shoe sending each card's
tag, the table server, and `shoe-controller surveillance` beside them. Two shoes of the same
physical cards (a deck serial each copy): the second repeats 20 cards of the first in order,
so the shoe report's identity tests see the slug; the tags reach surveillance only, never the
table server."""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.rig import RigOptions, TableRig

from shoe_controller.vocab.events import EventType

CUT_AFTER = 402
SLUG_FROM, SLUG_AT, SLUG_LENGTH = 120, 140, 20
PHYSICAL = [
    {"rank": rank, "suit": suit, "deck": deck}
    for deck in range(8)
    for rank in range(1, 14)
    for suit in range(4)
]


def _deal_to_the_end(rig: TableRig) -> None:
    ended = rig.records.shoes_ended
    for _ in range(500):
        rig.dealer.deal(1)
        if rig.records.shoes_ended > ended:
            return
    raise AssertionError("the shoe did not end")


@pytest.fixture(scope="module")
def dealt() -> Iterator[TableRig]:
    directory = Path(tempfile.mkdtemp(prefix="sht-", dir="/tmp"))
    options = RigOptions(
        cut_after=CUT_AFTER, scanner_kind="rfid", autoload=False, table={"card_tags": True}
    )
    rig = TableRig(directory / "rig", options)
    try:
        rig.start()
        rig.start_surveillance()
        first = list(PHYSICAL)
        random.Random(1).shuffle(first)
        rig.shoe.request("load", cards=first, cut_after=CUT_AFTER)
        rig.dealer.settle()
        _deal_to_the_end(rig)
        slug = first[SLUG_FROM : SLUG_FROM + SLUG_LENGTH]
        rest = [card for card in first if card not in slug]
        random.Random(2).shuffle(rest)
        rig.dealer.change_shoe(load=False)
        rig.shoe.request("load", cards=rest[:SLUG_AT] + slug + rest[SLUG_AT:], cut_after=CUT_AFTER)
        rig.dealer.settle()
        _deal_to_the_end(rig)
        rig.wait_until(
            lambda: any(
                e.type == EventType.SURVEILLANCE_SHUFFLE_REPORT
                for e in rig.records.journal_events()
            ),
            "the companion's report of the second shoe",
        )
        yield rig
    finally:
        rig.close()
        shutil.rmtree(directory, ignore_errors=True)


def _of(rig: TableRig, kind: str) -> list[Any]:
    return [event for event in rig.records.journal_events() if event.type == kind]


def test_the_report_has_the_identity_tests_and_they_see_the_slug(dealt: TableRig) -> None:
    (report,) = _of(dealt, EventType.SURVEILLANCE_SHUFFLE_REPORT)
    tests = report.data["tests"]
    assert tests["successions"]["value"] >= SLUG_LENGTH - 1
    assert tests["successions"]["value"] >= tests["successions"]["threshold"]
    assert "rising_sequences" in tests
    assert report.data["verdict"] == "unshuffled"


def test_every_dealt_card_had_its_tag_published_once(dealt: TableRig) -> None:
    tagged = [entry for event in _of(dealt, EventType.SURVEILLANCE_CARD_TAGS)
              for entry in event.data["cards"]]  # fmt: skip
    places = [(event.shoe, entry["seq"]) for event in _of(dealt, EventType.SURVEILLANCE_CARD_TAGS)
              for entry in event.data["cards"]]  # fmt: skip
    assert len(places) == len(set(places))
    dealt_cards = len(_of(dealt, EventType.CARD_DEALT))
    assert len(tagged) >= dealt_cards  # dealt cards and burned ones
    assert all(entry["uid"] and entry["card"] for entry in tagged)


def test_the_table_server_gets_no_tag(dealt: TableRig) -> None:
    sent = dealt.records.server_events()
    assert sent
    assert not [event for event in sent if event["type"].startswith("surveillance.")]
