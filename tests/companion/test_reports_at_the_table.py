"""The companion's reports at the table: a whole shoe dealt by the perfect dealer with the
analyst's report after every due event, the journaled inputs replayed (the same events), and
the shoe's end forgetting its reports."""

from __future__ import annotations

import random

from shoe_testkit.perfect_dealer import deal_shoe

from shoe_controller.companion.companion import Analyst
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE, Bet
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import SurveillanceReport, input_from_json, input_to_json

EDGE, CLEARED = EventType.SURVEILLANCE_EDGE, EventType.SURVEILLANCE_EDGE_CLEARED


def _shoe_with_reports(seed: int, threshold: float):
    """A whole shoe dealt by the perfect dealer with a report after every due event, as the
    companion would send them; the inputs and the events of each."""
    config = TableConfig()
    cards = [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]
    random.Random(seed).shuffle(cards)
    table = Table(config)
    analyst = Analyst(8, DEFAULT_PAY_TABLE, config.big_small_last_round)
    inputs, outputs, seq = [], [], 0
    for item in deal_shoe(cards, config, cut_after=402).inputs:
        steps = [item]
        while steps:
            step = steps.pop()
            events = table.apply(step)
            inputs.append(step)
            outputs.append(events)
            for event in events:
                seq += 1
                analyst.feed({**event.to_json(), "seq": seq})
            request = analyst.report() if analyst.due is not None else None
            if request is not None:
                del request["cmd"]
                steps.append(SurveillanceReport(at=step.at, threshold=threshold, **request))
    return inputs, outputs


def test_replaying_the_journaled_inputs_gives_the_same_events() -> None:
    inputs, outputs = _shoe_with_reports(seed=21, threshold=-0.0115)
    crossings = [e for events in outputs for e in events if e.type in (EDGE, CLEARED)]
    assert crossings, "banker at -1.06 % is above -1.15 % at once"
    fresh = Table(TableConfig())
    for item, events in zip(inputs, outputs, strict=True):
        stored = input_from_json(input_to_json(item))  # as the journal keeps it
        assert fresh.apply(stored) == events
    # Every crossing is what the reports say: above the threshold, or not, in turn.
    reports = [item for item in inputs if isinstance(item, SurveillanceReport)]
    above: set[str] = set()
    expected = []
    for item in reports:
        for name in (bet.value for bet in Bet):
            edge = item.bets.get(name, {}).get("player_edge")
            now = edge is not None and edge > item.threshold
            if now != (name in above):
                expected.append((EDGE if now else CLEARED, name, item.round))
                (above.add if now else above.discard)(name)
    assert [(e.type, e.data["bet"], e.data["round"]) for e in crossings] == expected


def test_a_shoe_ending_forgets_its_reports() -> None:
    inputs, _ = _shoe_with_reports(seed=4, threshold=0.0)
    table = Table(TableConfig())
    for item in inputs:
        table.apply(item)
    assert not table.book.open
    assert table.book.surveillance.reports == []
