"""RFID tags for the shuffle watch: the table publishes each public card's tag to
surveillance (`surveillance.card_tags`, `[table] card_tags`), the companion's analyst pairs the
tags with the cards it places, and the watch's identity tests (successions, rising sequences)
come into the shoe's report. Two shoes of the same physical cards (one tag a card) through
the real table: the second repeats 20 cards of the first in order, or is a fair shuffle.
Squeeze: no tag before its card's reveal (R15)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from shoe_testkit.perfect_dealer import START_TIME, deal_shoe

from shoe_controller.companion.shuffle_feed import ShuffleAnalyst
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.table.shuffle_record import findings_of
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import CardDrawn, ShuffleFindings

TAGS = EventType.SURVEILLANCE_CARD_TAGS
SLUG_FROM, SLUG_AT, SLUG_LENGTH = 100, 150, 20
FULL = [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]


class Tagged:
    """Shoes of the same tagged cards through one table, the shuffle analyst beside it."""

    def __init__(self, config: TableConfig) -> None:
        self.table = Table(config)
        self.config = config
        self.analyst = ShuffleAnalyst(8)
        self.events: list[object] = []
        self.revealed: set[str] = set()  # cards whose identity an event has shown
        self.early_tags: list[str] = []  # tags published before their card was shown
        self.seq = 0

    def shoe(self, order: list[int], number: int) -> None:
        """Deal the physical cards `order` (indexes into FULL; tag T<index>)."""
        cards = [FULL[index] for index in order]
        tags = iter(f"T{index:03d}" for index in order)
        dealt = deal_shoe(cards, self.config, cut_after=402, start=START_TIME + 1e5 * number)
        for item in dealt.inputs:
            self.apply(replace(item, uid=next(tags)) if isinstance(item, CardDrawn) else item)

    def apply(self, item: object) -> None:
        steps = [item]
        while steps:
            events = self.table.apply(steps.pop())
            for event in events:
                self.seq += 1
                self.events.append(event)
                self.analyst.feed({**event.to_json(), "seq": self.seq})
            request = self.analyst.request() if self.analyst.due is not None else None
            if request is not None:
                self.analyst.accepted(request)
                findings = findings_of(request)
                for key in ("cmd", "notices", "report", "live"):
                    del request[key]
                steps.append(ShuffleFindings(at=0.0, findings=findings, **request))

    def reports(self) -> dict[int, dict]:
        return {
            event.shoe: event.data
            for event in self.events
            if event.type == EventType.SURVEILLANCE_SHUFFLE_REPORT
        }


def _slugged(seed: int) -> list[int]:
    """A random order of the first shoe's cards but for its cards SLUG_FROM.. in order."""
    first = list(range(len(FULL)))
    random.Random(1).shuffle(first)
    slug = first[SLUG_FROM : SLUG_FROM + SLUG_LENGTH]
    rest = [index for index in first if index not in slug]
    random.Random(seed).shuffle(rest)
    return rest[:SLUG_AT] + slug + rest[SLUG_AT:]


def _first() -> list[int]:
    first = list(range(len(FULL)))
    random.Random(1).shuffle(first)
    return first


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "squeeze"])
def tagged(request: pytest.FixtureRequest) -> Tagged:
    run = Tagged(TableConfig(squeeze=request.param, card_tags=True))
    run.shoe(_first(), 1)
    run.shoe(_slugged(2), 2)
    return run


def test_every_placed_card_of_a_tagged_shoe_gets_its_tag(tagged: Tagged) -> None:
    for number in (1, 2):
        order = tagged.analyst.orders.get(number) if number == 2 else None
        if order is None:
            continue
        placed = [(card, uid) for card, uid in zip(order.cards, order.uids, strict=True) if card]
        assert placed
        assert all(uid is not None for _, uid in placed)
        # The tag is the physical card's: T<index> names FULL[index].
        assert all(FULL[int(uid[1:])] == card for card, uid in placed)


def test_the_identity_tests_see_the_slug(tagged: Tagged) -> None:
    report = tagged.reports()[2]
    tests = report["tests"]
    assert tests["successions"]["value"] >= SLUG_LENGTH - 1  # 19 neighbours still neighbours
    assert tests["successions"]["value"] >= tests["successions"]["threshold"]
    assert "rising_sequences" in tests
    assert report["verdict"] == "unshuffled"


def test_a_fair_shuffle_of_the_same_cards_raises_no_identity_alarm() -> None:
    run = Tagged(TableConfig(card_tags=True))
    run.shoe(_first(), 1)
    fair = _first()
    random.Random(5).shuffle(fair)
    run.shoe(fair, 2)
    tests = run.reports()[2]["tests"]
    assert tests["successions"]["value"] < tests["successions"]["threshold"]
    rising = tests["rising_sequences"]
    assert rising["value"] > rising["threshold"]  # alarms at or below: many, as fair shows
    assert run.reports()[2]["verdict"] == "fair"


def _named(event) -> list[str]:
    """The cards an event shows."""
    data = event.data
    if event.type in (EventType.CARD_DEALT, EventType.CARD_REVEALED, EventType.CARD_EXTRA):
        return [data["card"]] if data.get("card") else []
    if event.type == EventType.ROUND_RESULT:
        return [*data["player"], *data["banker"]]
    if event.type in (EventType.ROUND_VOIDED, EventType.SHOE_BURNED):
        return [card for card in data["cards"] if card]
    return []


def test_a_tag_comes_with_its_card_shown_and_never_before(tagged: Tagged) -> None:
    """Each tags event is followed at once, in the same input's events, by the end of the
    burn or round it belongs to, and each card it tags is shown by then (R15: in squeeze
    mode a card's tag would name it before its reveal: a tag of the previous shoe is known)."""
    published = 0
    events = tagged.events
    for index, event in enumerate(events):
        if event.type != TAGS:
            continue
        following = events[index + 1]
        assert following.type in (
            EventType.ROUND_RESULT,
            EventType.ROUND_VOIDED,
            EventType.SHOE_BURNED,
        )
        round_start = max(
            i for i in range(index) if events[i].type in (EventType.ROUND_STARTED, TAGS) or i == 0
        )
        shown = [card for e in events[round_start : index + 2] for card in _named(e)]
        for entry in event.data["cards"]:
            assert entry["card"] in shown, entry
            published += 1
    assert published >= 2 * 400  # nearly every card of both shoes (burned face down: never)


def test_the_table_without_card_tags_publishes_none() -> None:
    run = Tagged(TableConfig())
    run.shoe(_first(), 1)
    assert not [event for event in run.events if event.type == TAGS]
