"""The table's record of a shoe's shuffle findings (table/shuffle_record.py), as the
companion and shoectl meet it at the control socket: a real controller over a real journal
file, its shuffle desk in front. Every refusal's whole text (bad findings, late ones), the
events the findings cause (a slug raised, sent again, ended; the report once, at the end) and
what `shuffle` then shows (where the findings stand, the slugs, the live ones in order, the
slug under way)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.game.payouts import Bet
from shoe_controller.service.control.requests import ControlError
from shoe_controller.service.control.shuffle_desk import ShuffleDesk
from shoe_controller.service.peers import Peer
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.table.shuffle_record import ShuffleRecord, findings_problem
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.inputs import (
    CardDrawn,
    Input,
    ShoeState,
    ShoeStateChanged,
    ShuffleFindings,
    SupervisorCommand,
)

PEER = Peer(pid=1, uid=0, gid=0, groups=(), user="surveillance")
START = 1_800_000_000.0


def _report(shoe: int = 2, against: int = 1, **changes: Any) -> dict[str, Any]:
    report = {
        "shoe": shoe,
        "against": against,
        "cards_compared": 0,
        "verdict": "fair",
        "tests": {"longest_run": {"value": 3, "p_value": 0.5, "threshold": 7}},
        "runs": [{"length": 3, "this": [5, 7], "previous": [10, 12]}],
    }
    return {**report, **changes}


def _slug(start: int = 21, was: int = 40, length: int = 6, **changes: Any) -> dict[str, Any]:
    slug = {
        "length": length,
        "this": [start, start + length - 1],
        "previous": [was, was + length - 1],
        "next": ["KH", "9S"],
    }
    return {**slug, **changes}


WORTH = {"edge": {"banker": -0.0106}, "if_it_goes_on": {"banker": 0.95, "player": -1.0}}


def _notice(kind: str = "slug", card: int = 26, **slug: Any) -> dict[str, Any]:
    return {"kind": kind, "card": card, "slug": _slug(**slug)}


class Desk:
    """A controller over a journal file at shoe 2 (shoe 1 ended after its burn), and the
    control socket's shuffle desk in front of it."""

    def __init__(self, journal: Journal) -> None:
        self.clock = START
        self.controller = Controller(TableConfig(), journal)
        self.desk = ShuffleDesk(self.controller, self.at, self.controller.submit)
        for _ in range(2):
            self.submit(ShoeStateChanged(self.at(), "scanner", ShoeState.LOADED))
            for name in ("AS", "4C"):
                self.submit(CardDrawn(self.at(), "scanner", parse_card(name)))
            if self.controller.table.book.number == 1:
                self.submit(SupervisorCommand(self.at(), "change_shoe", "sup7", "test", {}))
        assert (self.controller.table.book.number, self.controller.table.book.open) == (2, True)

    def at(self) -> float:
        self.clock += 1.0
        return self.clock

    def submit(self, item: Input) -> list[Any]:
        return self.controller.submit(item)

    def end_shoe(self) -> None:
        self.submit(SupervisorCommand(self.at(), "change_shoe", "sup7", "test", {}))

    def send(self, **changes: Any) -> dict[str, Any]:
        """A `shuffle_report` request for shoe 2 (a valid one but for `changes`): the answer."""
        request = {
            "cmd": "shuffle_report",
            "shoe": 2,
            "against": 1,
            "round": 0,
            "after_seq": 0,
            "final": False,
            "report": _report(),
            "notices": [],
            "live": None,
            **changes,
        }
        return self.desk.answer(request, PEER)

    def refused(self, **changes: Any) -> tuple[str, str]:
        with pytest.raises(ControlError) as caught:
            self.send(**changes)
        return caught.value.code, caught.value.text

    def events(self, **changes: Any) -> list[tuple[str, dict[str, Any]]]:
        answer = self.send(**changes)
        assert answer["accepted"] is True
        return [(event["type"], event["data"]) for event in answer["events"]]

    def shuffle(self, **request: Any) -> dict[str, Any]:
        return self.desk.answer({"cmd": "shuffle", **request}, PEER)


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    with Journal.open(tmp_path / "journal.db", "tbl-07-shoe") as journal:
        yield Desk(journal)


# ------------------------------------------------------------------ bad findings, whole texts

SHOE_AGAINST = "shoe and against must be shoe numbers, against before shoe"
NOTICE_FIELDS = "each notice needs exactly kind, card, slug (and a slug's notice next_round)"
SLUG_PLACES = "a slug needs a length >= 1 and its places this [from, to], previous [from, to]"
RUNS = "findings.report.runs: each needs length, this [from, to], previous [from, to]"
TESTS_NUMBERS = "findings.report.tests.longest_run: value, p_value, threshold must be numbers"
NEXT_CARDS = "a slug's next must be a list of at most 64 cards"
LIVE = "findings.live must be null or an object of slug (and next_round)"
NAN_EDGE = {"tie": 1, "player": float("nan")}
EVERY_BET = {bet.value: -0.5 for bet in Bet}


def _test(**values: Any) -> dict[str, Any]:
    return {"tests": {"longest_run": {"value": 3, "p_value": 0.5, "threshold": 7, **values}}}


def _run(**changes: Any) -> dict[str, Any]:
    return {"runs": [{"length": 3, "this": [5, 7], "previous": [10, 12], **changes}]}


BAD_REQUESTS = [
    ({"against": 2}, SHOE_AGAINST),
    ({"against": 3, "report": _report(against=3)}, SHOE_AGAINST),
    ({"against": 0, "report": _report(against=0)}, SHOE_AGAINST),
    ({"report": _report(shoe=3)}, "findings.report must name the findings' shoe and against"),
    ({"report": _report(against=2)}, "findings.report must name the findings' shoe and against"),
    (
        {"report": _report(cards_compared=-1)},
        "findings.report.cards_compared must be a whole number >= 0",
    ),
    (
        {"report": _report(cards_compared=True)},
        "findings.report.cards_compared must be a whole number >= 0",
    ),
    (
        {"report": _report(cards_compared=2.0)},
        "findings.report.cards_compared must be a whole number >= 0",
    ),
    (
        {"report": _report(verdict="great")},
        "findings.report.verdict must be one of fair, suspect, unshuffled",
    ),
    ({"report": _report(tests=[])}, "findings.report.tests must be an object"),
    (
        {"report": _report(tests={"longest_run": {"value": 3, "p_value": 0.5}})},
        "findings.report.tests.longest_run must have exactly value, p_value, threshold",
    ),
    (
        {"report": _report(tests={"longest_run": 3})},
        "findings.report.tests.longest_run must have exactly value, p_value, threshold",
    ),
    ({"report": _report(**_test(value="3"))}, TESTS_NUMBERS),
    ({"report": _report(**_test(p_value=None))}, TESTS_NUMBERS),
    ({"report": _report(**_test(threshold=True))}, TESTS_NUMBERS),
    ({"report": _report(**_test(threshold=float("inf")))}, TESTS_NUMBERS),
    (
        {"report": _report(**_test(p_value=-0.01))},
        "findings.report.tests.longest_run.p_value must be from 0 to 1",
    ),
    (
        {"report": _report(**_test(p_value=1.01))},
        "findings.report.tests.longest_run.p_value must be from 0 to 1",
    ),
    ({"report": _report(runs={})}, "findings.report.runs must be a list"),
    ({"report": _report(runs=[3])}, RUNS),
    ({"report": _report(runs=[{"length": 3, "this": [5, 7]}])}, RUNS),
    ({"report": _report(**_run(extra=1))}, RUNS),
    ({"report": _report(**_run(length=0))}, RUNS),
    ({"report": _report(**_run(this=[7, 5]))}, RUNS),
    ({"report": _report(**_run(this=[0, 2]))}, RUNS),
    ({"report": _report(**_run(this=[5, 7, 9]))}, RUNS),
    ({"report": _report(**_run(this=[5]))}, RUNS),
    ({"report": _report(**_run(this="5-7"))}, RUNS),
    ({"report": _report(**_run(previous=[12, 10]))}, RUNS),
    ({"notices": {}}, "findings.notices must be a list of at most 1000"),
    ({"notices": [_notice()] * 1001}, "findings.notices must be a list of at most 1000"),
    ({"notices": ["slug"]}, f"findings.notices: {NOTICE_FIELDS}"),
    ({"notices": [{"kind": "slug", "card": 26}]}, f"findings.notices: {NOTICE_FIELDS}"),
    ({"notices": [{**_notice(), "by": "me"}]}, f"findings.notices: {NOTICE_FIELDS}"),
    (
        {"notices": [_notice(kind="slug_started")]},
        "findings.notices: a notice's kind is one of slug, slug_ended",
    ),
    (
        {"notices": [{**_notice(kind="slug_ended"), "next_round": WORTH}]},
        "findings.notices: only a slug's notice has next_round",
    ),
    (
        {"notices": [{**_notice(), "next_round": {"edge": None}}]},
        "findings.notices: a slug's next_round needs exactly edge, if_it_goes_on",
    ),
    (
        {"notices": [{**_notice(), "next_round": None}]},
        "findings.notices: a slug's next_round needs exactly edge, if_it_goes_on",
    ),
    (
        {"notices": [{**_notice(), "next_round": {"edge": [], "if_it_goes_on": None}}]},
        "findings.notices: next_round.edge must be null or an object of bets of the pay table",
    ),
    (
        {"notices": [{**_notice(), "next_round": {"edge": None, "if_it_goes_on": {"m": 1}}}]},
        "findings.notices: next_round.if_it_goes_on must be null or an object of bets of the"
        " pay table",
    ),
    (
        {"notices": [{**_notice(), "next_round": {"edge": None, "if_it_goes_on": {"tie": "8"}}}]},
        "findings.notices: next_round.if_it_goes_on: each bet's worth must be a number",
    ),
    (
        {"notices": [{**_notice(), "next_round": {"edge": NAN_EDGE, "if_it_goes_on": None}}]},
        "findings.notices: next_round.edge: each bet's worth must be a number",
    ),
    (
        {"notices": [_notice(card=0)]},
        "findings.notices: a notice's card must be a position >= 1",
    ),
    (
        {"notices": [{**_notice(), "card": True}]},
        "findings.notices: a notice's card must be a position >= 1",
    ),
    (
        {"notices": [{**_notice(), "slug": []}]},
        "findings.notices: a notice's slug needs exactly length, this, previous, next",
    ),
    (
        {"notices": [{**_notice(), "slug": {**_slug(), "kind": "slug"}}]},
        "findings.notices: a notice's slug needs exactly length, this, previous, next",
    ),
    (
        {"notices": [_notice(length=0, this=[21, 26], previous=[40, 45])]},
        f"findings.notices: {SLUG_PLACES}",
    ),
    (
        {"notices": [{**_notice(), "slug": {**_slug(), "length": "6"}}]},
        f"findings.notices: {SLUG_PLACES}",
    ),
    (
        {"notices": [{**_notice(), "slug": _slug(this=[30, 21])}]},
        f"findings.notices: {SLUG_PLACES}",
    ),
    (
        {"notices": [{**_notice(), "slug": _slug(previous=[0, 3])}]},
        f"findings.notices: {SLUG_PLACES}",
    ),
    ({"notices": [{**_notice(), "slug": _slug(next="KH 9S")}]}, f"findings.notices: {NEXT_CARDS}"),
    (
        {"notices": [{**_notice(), "slug": _slug(next=["KH"] * 65)}]},
        f"findings.notices: {NEXT_CARDS}",
    ),
    (
        {"notices": [{**_notice(), "slug": _slug(next=["KH", "ZZ"])}]},
        "findings.notices: a slug's next names 'ZZ': not a card",
    ),
    (
        {"notices": [{**_notice(), "slug": _slug(next=[7])}]},
        "findings.notices: a slug's next names 7: not a card",
    ),
    ({"live": "slug"}, LIVE),
    ({"live": {}}, LIVE),
    ({"live": {"next_round": WORTH}}, LIVE),
    ({"live": {"slug": _slug(), "card": 26}}, LIVE),
    (
        {"live": {"slug": _slug(), "next_round": {"if_it_goes_on": None}}},
        "findings.live: a slug's next_round needs exactly edge, if_it_goes_on",
    ),
    (
        {"live": {"slug": {"length": 6}}},
        "findings.live.slug needs exactly length, this, previous, next",
    ),
    ({"live": {"slug": _slug(length=0, this=[21, 26], previous=[40, 45])}}, SLUG_PLACES),
]


@pytest.mark.parametrize(("changes", "text"), BAD_REQUESTS)
def test_bad_findings_are_refused_with_the_whole_text(desk: Desk, changes, text) -> None:
    assert desk.refused(**changes) == ("bad_request", f"shuffle_report: {text}")
    # Nothing was kept: shoectl shuffle has no report for the shoe.
    with pytest.raises(ControlError) as caught:
        desk.shuffle(shoe=2)
    assert caught.value.code == "not_found"


GOOD_EDGES = [
    {"report": _report(cards_compared=0, verdict="suspect")},
    {"report": _report(verdict="unshuffled", tests={})},
    {"report": _report(runs=[], **_test(p_value=0, value=0.5, threshold=-2))},
    {"report": _report(**_test(p_value=1))},
    {"report": _report(**_run(length=1, this=[1, 1], previous=[416, 416]))},
    {"notices": [_notice(card=1, length=1, start=1, was=1)]},
    {"notices": [_notice(kind="slug_ended", card=1)]},
    {"notices": [{**_notice(), "slug": _slug(next=["KH"] * 64)}]},
    {"notices": [{**_notice(), "slug": _slug(next=[])}]},
    {"notices": [{**_notice(), "next_round": {"edge": None, "if_it_goes_on": None}}]},
    {"notices": [{**_notice(), "next_round": {"edge": EVERY_BET, "if_it_goes_on": EVERY_BET}}]},
    {"notices": [{**_notice(), "next_round": {"edge": {"tie": 1}, "if_it_goes_on": {}}}]},
    {"live": {"slug": _slug()}},
    {"live": {"slug": _slug(), "next_round": WORTH}},
    {"round": 0, "after_seq": 0},
]


@pytest.mark.parametrize("changes", GOOD_EDGES)
def test_findings_at_the_edges_of_every_check_are_kept(desk: Desk, changes) -> None:
    answer = desk.send(**changes)
    assert (answer["accepted"], answer["shoe"]) == (True, 2)
    shown = desk.shuffle()
    assert shown["report"] == {**_report(), **changes.get("report", {})}
    assert shown["under_way"] == changes.get("live")


def test_a_request_without_notices_or_live_is_kept(desk: Desk) -> None:
    request = {"cmd": "shuffle_report", "shoe": 2, "against": 1, "round": 0, "after_seq": 4}
    answer = desk.desk.answer({**request, "report": _report()}, PEER)
    assert (answer["accepted"], answer["events"]) == (True, [])
    shown = desk.shuffle()
    assert (shown["slugs"], shown["live"], shown["under_way"]) == ([], [], None)
    assert (shown["after_seq"], shown["final"]) == (4, False)


def _findings(**changes: Any) -> ShuffleFindings:
    values = {
        "at": START,
        "shoe": 2,
        "against": 1,
        "round": 0,
        "after_seq": 0,
        "findings": {"report": _report(), "notices": []},
        **changes,
    }
    return ShuffleFindings(**values)


@pytest.mark.parametrize(
    ("changes", "text"),
    [
        ({"shoe": 2.0}, SHOE_AGAINST),
        ({"against": True}, SHOE_AGAINST),
        ({"against": 1.0}, SHOE_AGAINST),
        ({"round": -1}, "round and after_seq must be whole numbers >= 0"),
        ({"round": True}, "round and after_seq must be whole numbers >= 0"),
        ({"after_seq": -1}, "round and after_seq must be whole numbers >= 0"),
        ({"after_seq": 1.5}, "round and after_seq must be whole numbers >= 0"),
        ({"findings": []}, "findings must be an object of report, notices and live"),
        (
            {"findings": {"report": _report(), "notices": [], "extra": []}},
            "findings must be an object of report, notices and live",
        ),
        ({"findings": {"notices": []}}, "findings.report must be an object"),
        ({"findings": {"report": _report(), "notices": ()}}, None),
        ({"findings": {"report": _report(runs=())}}, None),
        ({"findings": {"report": _report(**_run(this=(5, 7)))}}, None),
        ({"findings": {"report": _report(), "live": None}}, None),
    ],
)
def test_a_journaled_input_is_checked_again_by_the_table(changes, text) -> None:
    """A replayed input meets the table's own check: its alert has the same words, and what
    passed the desk passes it (tuples as well as lists)."""
    table = Table(TableConfig(), last_shoe=1)
    table.apply(ShoeStateChanged(START, "scanner", ShoeState.LOADED))
    item = _findings(**changes)
    assert findings_problem(item) == text
    events = table.apply(item)
    if text is None:
        assert [event.type for event in events] == []
        assert table.book.shuffle.after_seq == 0
        return
    (alert,) = events
    if changes == {"after_seq": -1}:  # the table asks first if the findings are newer
        text = "shuffle findings after seq -1 are not newer than the last ones (after seq -1)"
    assert alert.data == {
        "code": "invalid_input",
        "text": f"shuffle findings refused: {text}",
        "needs_supervisor": False,
    }
    assert table.book.shuffle.report is None


def test_a_thousand_notices_are_taken(desk: Desk) -> None:
    notices = [_notice(card=26 + n, start=21 + n, was=40) for n in range(1000)]
    events = desk.events(notices=notices)
    assert len(events) == 1000
    assert {kind for kind, _ in events} == {"surveillance.slug"}


# ------------------------------------------------------------------------ late findings


def test_findings_not_newer_than_the_last_are_stale(desk: Desk) -> None:
    desk.send(after_seq=5)
    assert desk.refused(after_seq=5) == (
        "stale",
        "shuffle findings after seq 5 are not newer than the last ones (after seq 5)",
    )
    assert desk.refused(after_seq=4) == (
        "stale",
        "shuffle findings after seq 4 are not newer than the last ones (after seq 5)",
    )
    assert desk.send(after_seq=6)["accepted"] is True
    assert desk.shuffle()["after_seq"] == 6


def test_findings_for_another_shoe_are_stale(desk: Desk) -> None:
    three = {"shoe": 3, "against": 2, "report": _report(shoe=3, against=2)}
    assert desk.refused(**three) == ("stale", "shuffle findings for shoe 3: shoe 2 is open")
    assert desk.refused(**three, final=True) == (
        "stale",
        "shuffle findings for shoe 3: shoe 2 is open",
    )
    desk.end_shoe()  # shoe 3's book opens, not its shoe
    assert desk.refused(**three) == ("stale", "shuffle findings for shoe 3: no shoe is open")
    assert desk.refused() == ("stale", "shuffle findings for shoe 2: no shoe is open")


def test_the_shoe_befores_final_findings_come_once_before_the_next_shoe(desk: Desk) -> None:
    desk.send(after_seq=3, notices=[_notice()])
    desk.end_shoe()
    events = desk.events(after_seq=9, final=True, notices=[_notice(kind="slug_ended", card=30)])
    assert [kind for kind, _ in events] == [
        "surveillance.slug_ended",
        "surveillance.shuffle_report",
    ]
    assert events[1][1] == _report()
    assert desk.refused(after_seq=10, final=True) == (
        "stale",
        "shoe 2's final shuffle findings are in already",
    )
    shown = desk.shuffle(shoe=2)
    assert (shown["final"], shown["after_seq"], shown["open"]) == (True, 9, False)
    assert shown["at"] == "2027-01-15T08:00:10.000000Z"
    assert [slug["kind"] for slug in shown["slugs"]] == ["slug_ended"]
    desk.submit(ShoeStateChanged(desk.at(), "scanner", ShoeState.LOADED))  # shoe 3
    assert desk.refused(after_seq=11, final=True) == (
        "stale",
        "shuffle findings for shoe 2: shoe 3 is open",
    )


def test_findings_after_the_shoes_end_that_are_not_final_are_stale(desk: Desk) -> None:
    desk.end_shoe()
    assert desk.refused(after_seq=1) == ("stale", "shuffle findings for shoe 2: no shoe is open")


# ------------------------------------------------------------------ the events and the record


def test_a_slug_is_raised_once_and_ended_once(desk: Desk) -> None:
    raised = {**_notice(), "next_round": WORTH}
    events = desk.events(round=3, after_seq=10, notices=[raised])
    expected = {"round": 3, "against": 1, "card": 26, **_slug(), "next_round": WORTH}
    assert events == [("surveillance.slug", expected)]
    # Sent again after a restart (a newer seq, the same notice): nothing new.
    assert desk.events(round=4, after_seq=11, notices=[raised]) == []
    ended = _notice(kind="slug_ended", card=30, length=9)
    events = desk.events(round=5, after_seq=12, notices=[ended])
    assert events == [
        (
            "surveillance.slug_ended",
            {"round": 5, "against": 1, "card": 30, **_slug(length=9)},
        )
    ]
    assert desk.events(round=6, after_seq=13, notices=[ended]) == []
    # A slug raised again where one ended: known by its places, nothing new.
    assert desk.events(round=7, after_seq=14, notices=[raised]) == []
    shown = desk.shuffle()
    assert shown["slugs"] == [{"kind": "slug_ended", **events[0][1]}]
    assert shown["live"] == []


def test_a_notice_sent_again_leaves_the_new_ones_after_it(desk: Desk) -> None:
    first, second = _notice(), _notice(card=50, start=45, was=90)
    desk.events(after_seq=1, notices=[first])
    events = desk.events(after_seq=2, notices=[first, second])
    assert [data["card"] for _, data in events] == [50]
    ended = _notice(kind="slug_ended", card=30)
    desk.events(after_seq=3, notices=[ended])
    third = _notice(card=70, start=60, was=100)
    events = desk.events(after_seq=4, notices=[ended, third])
    assert [(kind, data["card"]) for kind, data in events] == [("surveillance.slug", 70)]
    assert [slug["card"] for slug in desk.shuffle()["live"]] == [50, 70]


def test_a_slug_ended_that_was_never_raised_is_told(desk: Desk) -> None:
    """The companion restarted after the slug's notice was lost: its end is news."""
    ended = _notice(kind="slug_ended", card=30)
    events = desk.events(after_seq=1, notices=[ended, ended])
    assert [kind for kind, _ in events] == ["surveillance.slug_ended"]
    assert desk.shuffle()["live"] == []


def test_shuffle_shows_where_the_findings_stand(desk: Desk) -> None:
    later, earlier = _notice(card=90, start=80, was=5), _notice(card=40, start=30, was=7)
    third = _notice(card=60, start=100, was=9)
    live = {"slug": _slug(start=80, was=5, length=11), "next_round": WORTH}
    desk.send(round=4, after_seq=17, notices=[later, earlier, third], live=live)
    shown = desk.shuffle()
    data = {"against": 1, "round": 4}
    assert shown == {
        "shoe": 2,
        "open": True,
        "report": _report(),
        "round": 4,
        "at": "2027-01-15T08:00:08.000000Z",
        "after_seq": 17,
        "final": False,
        "slugs": [
            {"kind": "slug", **data, "card": 90, **_slug(start=80, was=5)},
            {"kind": "slug", **data, "card": 40, **_slug(start=30, was=7)},
            {"kind": "slug", **data, "card": 60, **_slug(start=100, was=9)},
        ],
        # The live ones by name: where each starts in this shoe, then in the previous one.
        "live": [
            {"kind": "slug", **data, "card": 60, **_slug(start=100, was=9)},
            {"kind": "slug", **data, "card": 40, **_slug(start=30, was=7)},
            {"kind": "slug", **data, "card": 90, **_slug(start=80, was=5)},
        ],
        "under_way": live,
    }
    desk.send(round=5, after_seq=18, notices=[_notice(kind="slug_ended", card=95, start=80,
                                                      was=5)])  # fmt: skip
    shown = desk.shuffle()
    assert [(slug["card"], slug["kind"]) for slug in shown["live"]] == [(60, "slug"), (40, "slug")]
    assert shown["under_way"] is None
    assert (shown["round"], shown["at"], shown["final"]) == (
        5,
        "2027-01-15T08:00:09.000000Z",
        False,
    )


def test_the_report_comes_once_at_the_shoes_end(desk: Desk) -> None:
    assert desk.events(after_seq=1) == []
    final = _report(cards_compared=402, verdict="suspect")
    assert desk.events(after_seq=2, final=True, report=final) == [
        ("surveillance.shuffle_report", final)
    ]
    assert desk.events(after_seq=3, final=True, report=final) == []
    shown = desk.shuffle()
    assert (shown["final"], shown["report"]) == (True, final)


def test_the_record_keeps_plain_copies() -> None:
    """What the table keeps is its own: lists and dicts, whatever the input held, unchanged
    when the input's objects change after."""
    live = {"slug": {**_slug(), "this": (21, 26), "previous": (40, 45), "next": ("KH",)}}
    runs = [{"length": 3, "this": (5, 7), "previous": (10, 12)}]
    report = _report(runs=runs)
    notice = {"kind": "slug", "card": 26, "slug": live["slug"]}
    record = ShuffleRecord()
    item = _findings(findings={"report": report, "notices": (notice,), "live": live})
    events = record.accept(item, "2027-01-15T08:00:00.000Z")
    assert events[0][1]["this"] == [21, 26]
    report["verdict"] = "suspect"
    runs[0]["length"] = 4
    assert record.to_json()["under_way"] == {"slug": {**_slug(), "next": ["KH"]}}
    assert record.report == _report()
    assert record.to_json()["slugs"][0]["previous"] == [40, 45]
