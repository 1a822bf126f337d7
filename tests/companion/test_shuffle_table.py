"""Shuffle findings at the table: the companion's analyst fed the table's own events
for two shoes in a row, its findings applied as inputs; the slug events name the right places
and next cards, replay gives the same events, findings sent again raise nothing twice, and
bad or late findings are refused with nothing changed."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from shoe_testkit.perfect_dealer import START_TIME, deal_shoe

from shoe_controller.companion.companion import Analyst, add_slug_worth
from shoe_controller.companion.shuffle_feed import ShuffleAnalyst
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.table.shuffle_record import findings_of, findings_problem
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import ShuffleFindings, input_from_json, input_to_json

SLUG, ENDED = EventType.SURVEILLANCE_SLUG, EventType.SURVEILLANCE_SLUG_ENDED
REPORT = EventType.SURVEILLANCE_SHUFFLE_REPORT
SLUG_FROM, SLUG_AT, SLUG_LENGTH = 100, 150, 20


def _full() -> list[Card]:
    return [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]


class Played:
    """Shoes dealt by the perfect dealer through one table, the analyst beside it."""

    def __init__(self, config: TableConfig) -> None:
        self.config = config
        self.table = Table(config)
        self.analyst = ShuffleAnalyst(8)
        self.edges = Analyst(8, DEFAULT_PAY_TABLE, config.big_small_last_round)
        self.inputs: list[object] = []
        self.outputs: list[list[object]] = []
        self.seq = 0

    def shoe(self, cards: list[Card], number: int) -> None:
        start = START_TIME + 100_000.0 * (number - 1)  # the next shoe, later
        for item in deal_shoe(cards, self.config, cut_after=402, start=start).inputs:
            self.apply(item)

    def apply(self, item: object) -> None:
        steps = [item]
        while steps:
            step = steps.pop()
            events = self.table.apply(step)
            self.inputs.append(step)
            self.outputs.append(events)
            for event in events:
                self.seq += 1
                self.analyst.feed({**event.to_json(), "seq": self.seq})
                self.edges.feed({**event.to_json(), "seq": self.seq})
            request = self.analyst.request() if self.analyst.due is not None else None
            if request is not None:
                add_slug_worth(request, self.edges)  # as the companion sends them
                self.analyst.accepted(request)
                findings = findings_of(request)
                for key in ("cmd", "notices", "report", "live"):
                    del request[key]
                steps.append(ShuffleFindings(at=step.at, findings=findings, **request))

    def events(self, *types: str) -> list[object]:
        return [event for events in self.outputs for event in events if event.type in types]


def _slugged(previous: list[Card], seed: int) -> list[Card]:
    slug = previous[SLUG_FROM : SLUG_FROM + SLUG_LENGTH]
    rest = _full()
    for card in slug:
        rest.remove(card)
    chooser = random.Random(seed)
    while True:
        chooser.shuffle(rest)
        order = rest[:SLUG_AT] + slug + rest[SLUG_AT:]
        if order[SLUG_AT - 1] != previous[SLUG_FROM - 1]:
            return order


def _play(config: TableConfig) -> tuple[Played, list[Card], list[Card]]:
    played = Played(config)
    first = _full()
    random.Random(1).shuffle(first)
    played.shoe(first, 1)
    second = _slugged(first, 2)
    played.shoe(second, 2)
    return played, first, second


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "squeeze"])
def played(request: pytest.FixtureRequest) -> tuple[Played, list[Card], list[Card]]:
    return _play(TableConfig(squeeze=request.param))


def test_the_slug_names_its_places_and_the_previous_shoes_next_cards(played) -> None:
    table_run, first, second = played
    assert table_run.table.book.number == 3  # the next book opens at shoe.ended
    raised = table_run.events(SLUG)
    assert len(raised) == 1
    slug = raised[0].data
    assert (slug["this"][0], slug["previous"][0]) == (SLUG_AT + 1, SLUG_FROM + 1)
    assert slug["card"] == SLUG_AT + 6  # the live threshold at 8 decks
    length = slug["length"]
    assert slug["this"] == [SLUG_AT + 1, SLUG_AT + length]
    assert slug["next"] == [str(card) for card in first[SLUG_FROM + length :][:8]]
    assert second[SLUG_AT : SLUG_AT + length] == first[SLUG_FROM : SLUG_FROM + length]
    (ended,) = table_run.events(ENDED)
    assert ended.data["length"] >= SLUG_LENGTH
    (report,) = table_run.events(REPORT)
    assert report.data["verdict"] == "unshuffled"
    assert (report.data["shoe"], report.data["against"]) == (2, 1)
    assert report.round is None
    assert raised[0].round is None


def test_the_slug_says_what_the_next_round_pays_if_it_goes_on(played) -> None:
    """The slug goes on here (20 cards): the next round is dealt from the previous shoe's
    next cards, so what the alert said each bet nets is what the round paid."""
    table_run, _, _ = played
    (raised,) = table_run.events(SLUG)
    worth = raised.data["next_round"]
    results = {event.round: event.data for event in table_run.events(EventType.ROUND_RESULT)}
    following = results[raised.data["round"] + 1]  # the round after the one that raised it
    winner = following["winner"]
    known = worth["if_it_goes_on"]
    assert known is not None
    assert known["player"] == (1.0 if winner == "player" else 0.0 if winner == "tie" else -1.0)
    assert known["banker"] == (0.95 if winner == "banker" else 0.0 if winner == "tie" else -1.0)
    assert known["tie"] == (8.0 if winner == "tie" else -1.0)
    assert known["player_pair"] == (11.0 if following["player_pair"] else -1.0)
    assert known["banker_pair"] == (11.0 if following["banker_pair"] else -1.0)
    # The plain edge is the one the edge monitor reports on the cards left: the house's.
    assert -0.02 < worth["edge"]["banker"] < 0
    assert set(worth["edge"]) <= set(known)


def test_while_the_slug_goes_on_each_round_says_what_the_next_one_pays(played) -> None:
    """The findings after every round carry the slug under way with the next round's worth;
    every next round whose cards all lie within the slug paid what it said."""
    table_run, _, _ = played
    results = {event.round: event.data for event in table_run.events(EventType.ROUND_RESULT)
               if event.shoe == 2}  # fmt: skip
    checked = 0
    for item in table_run.inputs:
        if not isinstance(item, ShuffleFindings) or item.shoe != 2:
            continue
        live = item.findings.get("live")
        if live is None:
            continue
        end = live["slug"]["this"][1]
        if end + 6 > SLUG_AT + SLUG_LENGTH or item.round + 1 not in results:
            continue  # the next round may take cards past the slug
        winner = results[item.round + 1]["winner"]
        known = live["next_round"]["if_it_goes_on"]
        assert known["tie"] == (8.0 if winner == "tie" else -1.0)
        assert known["player"] == (1.0 if winner == "player" else 0.0 if winner == "tie" else -1.0)
        checked += 1
    assert checked >= 2
    # And the control socket's answer has the latest one: none once the slug ended.
    assert table_run.table.book.number == 3
    assert all(
        item.findings.get("live") is None
        for item in table_run.inputs
        if isinstance(item, ShuffleFindings) and item.shoe == 2 and item.final
    )


def test_replaying_the_journal_form_gives_the_same_events(played) -> None:
    table_run, _, _ = played
    fresh = Table(table_run.config)
    for item, events in zip(table_run.inputs, table_run.outputs, strict=True):
        assert fresh.apply(input_from_json(input_to_json(item))) == events
    assert fresh.book.shuffle.report == table_run.table.book.shuffle.report


def test_a_fair_shoe_raises_no_slug() -> None:
    played = Played(TableConfig())
    for number, seed in ((1, 5), (2, 6)):
        cards = _full()
        random.Random(seed).shuffle(cards)
        played.shoe(cards, number)
    assert not played.events(SLUG, ENDED)
    (report,) = played.events(REPORT)
    assert report.data["verdict"] == "fair"
    assert report.data["cards_compared"] >= 402


def test_findings_sent_again_raise_nothing_twice_and_late_ones_are_refused(played) -> None:
    table_run, _, _ = played
    table = Table(table_run.config)
    findings = [item for item in table_run.inputs if isinstance(item, ShuffleFindings)]
    with_slug = next(item for item in findings if item.findings["notices"])
    for item in table_run.inputs:
        table.apply(item)
        if item is with_slug:
            break
    again = replace(with_slug, after_seq=with_slug.after_seq + 1, final=False)
    assert table.apply(again) == []  # the same notices, a newer seq: nothing new
    stale = table.apply(replace(with_slug, after_seq=with_slug.after_seq))
    assert [event.type for event in stale] == [EventType.PROCEDURE_ALERT]
    assert table.book.shuffle.after_seq == again.after_seq


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"against": 2}, "against"),
        ({"findings": {"report": {}}}, "report"),
        ({"findings": {"report": None, "notices": []}}, "report"),
        ({"findings": {"notices": [{"kind": "slug"}]}}, "notices"),
    ],
)
def test_bad_findings_are_refused_naming_the_field(played, change, named) -> None:
    table_run, _, _ = played
    good = next(item for item in table_run.inputs if isinstance(item, ShuffleFindings))
    assert findings_problem(good) is None
    if "findings" in change and "report" not in change["findings"]:
        change = {"findings": {"report": good.findings["report"], **change["findings"]}}
    problem = findings_problem(replace(good, **change))
    assert problem is not None
    assert named in problem


def _with_notices(table_run: Played) -> ShuffleFindings:
    """The first findings that carried slug notices."""
    return next(
        item
        for item in table_run.inputs
        if isinstance(item, ShuffleFindings) and item.findings["notices"]
    )


def test_a_bad_slug_card_is_refused(played) -> None:
    table_run, _, _ = played
    good = _with_notices(table_run)
    notice = dict(good.findings["notices"][0])
    notice["slug"] = {**notice["slug"], "next": ["ZZ"]}
    bad = replace(good, findings={**good.findings, "notices": [notice]})
    assert "not a card" in str(findings_problem(bad))


@pytest.mark.parametrize(
    ("next_round", "named"),
    [
        ({"edge": None}, "exactly edge, if_it_goes_on"),
        ({"edge": None, "if_it_goes_on": {"martingale": 1.0}}, "bets of the pay table"),
        ({"edge": {"banker": "lots"}, "if_it_goes_on": None}, "must be a number"),
        ({"edge": {"banker": float("nan")}, "if_it_goes_on": None}, "must be a number"),
        ({"edge": [], "if_it_goes_on": None}, "null or an object"),
    ],
)
def test_a_bad_next_round_is_refused(played, next_round, named) -> None:
    table_run, _, _ = played
    good = _with_notices(table_run)
    notice = dict(good.findings["notices"][0])
    assert notice["kind"] == "slug"
    assert "next_round" in notice
    bad = replace(
        good, findings={**good.findings, "notices": [{**notice, "next_round": next_round}]}
    )
    assert named in str(findings_problem(bad))
    # Only a slug's notice says what the next round is worth.
    ended = {**notice, "kind": "slug_ended"}
    late = replace(good, findings={**good.findings, "notices": [ended]})
    assert "only a slug's notice" in str(findings_problem(late))
    plain = {key: value for key, value in notice.items() if key != "next_round"}
    assert findings_problem(replace(good, findings={**good.findings, "notices": [plain]})) is None
