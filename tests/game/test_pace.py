"""The pace's counting (game/pace.py) on a shift written here event by event: what
`read_shift` takes from the events, and every figure `pace` (`shoectl pace`) and `report`
(`shoe-controller report`) give, counted by hand below. tests/cli/test_pace_report.py asks
the same of a recorded shift through the real commands."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from shoe_controller.game.pace import (
    HoldTimes,
    RoundTimes,
    ShoeTimes,
    dealer_hours,
    instant,
    pace,
    percentile,
    plain_json,
    read_shift,
    report,
)

HOLD_CODES = ("early_card", "factory_order", "supervisor_hold")


def t(clock: str) -> datetime:
    """06:01:00 (or 06:01:00.5) on the shift's day, UTC."""
    return datetime.fromisoformat(f"2026-11-30T{clock}+00:00")


def z(clock: str) -> str:
    """The journal's form of t(clock)."""
    return t(clock).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ev(kind: str, clock: str, shoe: int | None, number: int | None = None, **data: Any):
    event: dict[str, Any] = {"type": kind, "at": z(clock), "shoe": shoe, "round": number}
    if data:
        event["data"] = data
    return event


def dealer(name: str | None, signed: str = "in") -> dict[str, Any]:
    return {"action": "dealer", "details": {"dealer": name, "signed": signed}}


SHIFT = [
    ev("supervisor.action", "06:00:00", 1, **dealer("D-1")),
    ev("round.started", "06:01:00", 1, 1, first_card_at=z("06:01:00"),
       bets_closed_at=z("06:00:50"), server_round="G-1", trial=False),
    ev("round.result", "06:01:20", 1, 1),
    ev("round.started", "06:02:00", 1, 2, trial=True, first_card_at=z("06:02:00")),
    ev("round.result", "06:02:30", 1, 2),
    ev("round.started", "06:03:00", 1, 3),  # no data: its first card is its start
    ev("round.started", "06:03:10", 1, None),  # no round: not a round
    ev("round.voided", "06:03:40", 1, 3),
    ev("round.started", "06:04:00", 1, 4, first_card_at=z("06:03:59"),
       bets_closed_at=z("06:03:56")),
    ev("round.result", "06:04:44", 1, 4),
    ev("procedure.alert", "06:05:00", 1, code="early_card", needs_supervisor=True),
    ev("procedure.alert", "06:05:10", 1, code="early_card", needs_supervisor=False),
    ev("procedure.alert", "06:05:20", 1, code="bets_closed_late", needs_supervisor=True),
    ev("supervisor.action", "06:05:30", 1, action="accept"),
    ev("security.alert", "06:06:00", 1, code="factory_order"),
    ev("supervisor.action", "06:06:30", 1, action="note"),
    ev("shoe.ended", "06:09:00", None, reason="error"),  # no shoe: nothing ended
    ev("shoe.ended", "06:10:00", 1, reason="misdeal"),
    ev("procedure.alert", "06:12:00", 1, code="supervisor_hold", needs_supervisor=True),
    ev("round.started", "06:15:00", 2, 1, first_card_at=z("06:15:00"),
       bets_closed_at=z("06:14:52")),
    ev("round.result", "06:15:15", 2, 1),
    ev("supervisor.action", "06:30:00", 2, **dealer("D-2")),
    ev("procedure.alert", "06:50:00", 2, code="supervisor_hold", needs_supervisor=True),
    ev("round.started", "07:10:00", 2, 2),
    ev("round.result", "07:10:25", 2, 2),
    ev("supervisor.action", "07:20:00", 2, action="resume"),  # shoe 2's: not shoe 1's hold
    ev("supervisor.action", "07:25:00", 2, **dealer(None, "out")),
    ev("round.started", "07:30:00", 2, 3),
    ev("round.result", "07:30:10.123456", 2, 3),
    ev("procedure.alert", "07:35:00", None, code="supervisor_hold", needs_supervisor=True),
    ev("round.result", "07:36:00", 2, 9),  # no such round open: nothing
    ev("supervisor.action", "07:38:00", 2, action="void"),  # ends the shoe-less hold too
    ev("supervisor.action", "07:39:00", None, action="confirm"),  # no shoe: ends them all
    ev("security.alert", "07:39:30", 2, code="factory_order"),
]  # fmt: skip


def test_the_shift_is_read_each_thing_once() -> None:
    shift = read_shift(SHIFT, HOLD_CODES)
    assert shift.rounds == [
        RoundTimes(1, 1, t("06:01:00"), t("06:01:00"), bets_closed=t("06:00:50"),
                   ended=t("06:01:20"), outcome="result", dealer="D-1", server_round="G-1"),
        RoundTimes(1, 2, t("06:02:00"), t("06:02:00"), trial=True, ended=t("06:02:30"),
                   outcome="result", dealer="D-1"),
        RoundTimes(1, 3, t("06:03:00"), t("06:03:00"), ended=t("06:03:40"), outcome="voided",
                   dealer="D-1"),
        RoundTimes(1, 4, t("06:04:00"), t("06:03:59"), bets_closed=t("06:03:56"),
                   ended=t("06:04:44"), outcome="result", dealer="D-1"),
        RoundTimes(2, 1, t("06:15:00"), t("06:15:00"), bets_closed=t("06:14:52"),
                   ended=t("06:15:15"), outcome="result", dealer="D-1"),
        RoundTimes(2, 2, t("07:10:00"), t("07:10:00"), ended=t("07:10:25"), outcome="result",
                   dealer="D-2"),
        RoundTimes(2, 3, t("07:30:00"), t("07:30:00"), ended=t("07:30:10.123456"),
                   outcome="result"),
    ]  # fmt: skip
    assert [(r.seconds, r.wait, r.counted) for r in shift.rounds] == [
        (20.0, 10.0, True),
        (30.0, None, False),  # a trial round
        (None, None, False),  # voided
        (45.0, 3.0, True),  # from its first card, before round.started
        (15.0, 8.0, True),
        (25.0, None, True),
        (10.123456, None, True),
    ]
    assert shift.shoes == {
        1: ShoeTimes(1, t("06:01:00"), t("06:10:00"), "misdeal"),
        2: ShoeTimes(2, t("06:15:00"), downtime=300.0),
    }
    assert shift.holds == [
        HoldTimes("early_card", 1, t("06:05:00"), t("06:05:30"), "accept"),
        HoldTimes("factory_order", 1, t("06:06:00"), t("06:10:00"), "shoe.ended"),
        HoldTimes("supervisor_hold", 1, t("06:12:00"), t("07:39:00"), "confirm"),
        HoldTimes("supervisor_hold", 2, t("06:50:00"), t("07:20:00"), "resume"),
        HoldTimes("supervisor_hold", None, t("07:35:00"), t("07:38:00"), "void"),
        HoldTimes("factory_order", 2, t("07:39:30")),
    ]
    assert [hold.seconds for hold in shift.holds] == [30.0, 240.0, 5220.0, 1800.0, 180.0, None]
    assert shift.dealers == [
        ("D-1", t("06:00:00"), t("06:30:00")),
        ("D-2", t("06:30:00"), t("07:25:00")),
    ]
    assert shift.last_at == t("07:39:30")


def test_a_dealer_signing_in_ends_the_one_before_and_a_sign_out_ends_the_dealer() -> None:
    events = [
        ev("round.started", "05:59:00", 1, 1),  # before anyone signed in
        ev("supervisor.action", "06:00:00", 1, **dealer("D-1")),
        ev("supervisor.action", "06:10:00", 1, **dealer("D-2")),
        ev("supervisor.action", "06:20:00", 1, action="dealer"),  # no details: signed out
        ev("round.started", "06:25:00", 1, 2),
        ev("supervisor.action", "06:30:00", 1, **dealer("D-3")),
        ev("supervisor.action", "06:35:00", 1, **dealer("D-3", "out")),  # named, signed out
        ev("round.started", "06:36:00", 1, 3),
        ev("supervisor.action", "06:38:00", 1, **dealer("D-1")),  # D-1 again
    ]
    shift = read_shift(events, HOLD_CODES)
    assert shift.dealers == [
        ("D-1", t("06:00:00"), t("06:10:00")),
        ("D-2", t("06:10:00"), t("06:20:00")),
        ("D-3", t("06:30:00"), t("06:35:00")),
        ("D-1", t("06:38:00"), None),  # still in charge
    ]
    assert [r.dealer for r in shift.rounds] == [None, None, None]
    assert dealer_hours(shift, t("06:05:00"), t("06:40:00")) == {
        "D-1": 5 / 60 + 2 / 60,  # both turns, the second until the end asked for
        "D-2": 10 / 60,
        "D-3": 5 / 60,
    }
    assert dealer_hours(shift, t("06:10:00"), t("06:20:00")) == {"D-2": 10 / 60}  # ends touch


def test_a_shoe_is_known_by_its_end_alone_and_its_end_ends_only_its_holds() -> None:
    events = [
        ev("procedure.alert", "06:00:00", 1, code="supervisor_hold", needs_supervisor=True),
        ev("procedure.alert", "06:01:00", 2, code="supervisor_hold", needs_supervisor=True),
        ev("shoe.ended", "06:02:00", 2, reason="supervisor"),  # no round of it seen
    ]
    shift = read_shift(events, HOLD_CODES)
    assert shift.shoes == {2: ShoeTimes(2, None, t("06:02:00"), "supervisor")}
    assert [(hold.shoe, hold.until) for hold in shift.holds] == [(1, None), (2, t("06:02:00"))]


@pytest.mark.parametrize(
    ("ended", "started", "downtime"),
    [("06:10:00", "06:10:00", 0.0), ("06:10:00", "06:14:30.5", 270.5), ("06:10:00", None, None)],
)
def test_the_downtime_runs_from_the_shoe_before_to_the_first_round(
    ended: str, started: str | None, downtime: float | None
) -> None:
    events = [
        ev("round.started", "06:00:00", 1, 1),
        ev("shoe.ended", ended, 1),
        *([ev("round.started", started, 2, 1), ev("round.started", "06:20:00", 2, 2)]
          if started else []),
    ]  # fmt: skip
    shift = read_shift(events, HOLD_CODES)
    assert shift.shoes[1].downtime is None  # the first shoe seen: nothing before it
    if started is not None:
        assert shift.shoes[2] == ShoeTimes(2, t(started), downtime=downtime)
    assert shift.shoes[1].reason is None


def test_a_round_started_before_the_shoe_before_ended_has_no_downtime() -> None:
    """A clock stepped back (the events are in seq order, their times need not be)."""
    events = [ev("shoe.ended", "06:10:00", 1), ev("round.started", "06:09:59", 2, 1)]
    assert read_shift(events, HOLD_CODES).shoes[2].downtime is None


def test_percentiles_are_linear_between_the_closest_ranks() -> None:
    assert percentile([], 0.5) is None
    assert percentile([7.0], 0.9) == 7.0
    values = [4.0, 1.0, 3.0, 2.0]
    assert [percentile(values, share) for share in (0.0, 0.5, 0.9, 1.0)] == [
        1.0,
        2.5,
        pytest.approx(3.7),
        4.0,
    ]
    assert percentile([10.0, 20.0], 0.25) == 12.5


def _figures(
    rounds: int,
    per_hour: float | None,
    seconds: tuple[Any, Any],
    *,
    waits: tuple[Any, Any] = (None, None),
    voided: int = 0,
    trial: int = 0,
) -> dict[str, Any]:
    """The figures of some rounds: (p50, p90) of their times and of their waits."""
    (p50, p90), (w50, w90) = seconds, waits
    return {
        "rounds": rounds,
        "rounds_per_hour": per_hour,
        "round_seconds_p50": p50,
        "round_seconds_p90": p90,
        "bets_closed_to_first_card_p50": w50,
        "bets_closed_to_first_card_p90": w90,
        "voided": voided,
        "trial": trial,
    }


def test_pace_gives_the_last_hour_the_shift_its_shoes_and_each_dealer() -> None:
    shift = read_shift(SHIFT, HOLD_CODES)
    start, end = t("06:00:00"), t("07:40:00")  # 1 h 40 min
    assert pace(shift, start, end) == {
        "since": start,
        "until_at": end,
        # 06:40 to 07:40: rounds 2 and 3 of shoe 2 (25 s, 10.123456 s); shoe 2 was being
        # dealt at 06:40, so the hour had play from its start
        "last_hour": {
            **_figures(2, 2.0, (17.562, 23.512)),
            "hours": 1.0,
            "since": t("06:40:00"),
            "played_since": t("06:40:00"),
        },
        # real rounds 10.123456, 15, 20, 25, 45 s; waits 3, 8, 10 s; over the time since
        # the first round began, 06:01 to 07:40 (99 min), not from 06:00
        "shift": {
            **_figures(5, 3.03, (20.0, 37.0), waits=(8.0, 9.6), voided=1, trial=1),
            "hours": 1.65,
            "since": start,
            "played_since": t("06:01:00"),
        },
        "shoes": [
            {
                "shoe": 1,
                "first_round_at": t("06:01:00"),
                "ended_at": t("06:10:00"),
                "downtime_seconds": None,
            },
            {
                "shoe": 2,
                "first_round_at": t("06:15:00"),
                "ended_at": None,
                "downtime_seconds": 300.0,
            },
        ],
        "dealers": {
            # 06:00-06:30: rounds of 20, 45, 15 s (and the trial and the void)
            "D-1": {
                **_figures(3, 6.0, (20.0, 40.0), waits=(8.0, 9.6), voided=1, trial=1),
                "hours": 0.5,
            },
            # 06:30-07:25: one round of 25 s
            "D-2": {**_figures(1, 1.09, (25.0, 25.0)), "hours": 0.917},
        },
    }


def test_pace_over_a_part_of_the_shift() -> None:
    shift = read_shift(SHIFT, HOLD_CODES)
    start, end = t("06:10:00"), t("06:40:00")  # less than an hour: the last hour is all of it
    figures = pace(shift, start, end)
    # Shoe 2's first round began at 06:15: 25 minutes of play, not the 30 asked.
    assert (
        figures["last_hour"]
        == figures["shift"]
        == {
            **_figures(1, 2.4, (15.0, 15.0), waits=(8.0, 8.0)),
            "hours": 0.417,
            "since": start,
            "played_since": t("06:15:00"),
        }
    )
    assert [s["shoe"] for s in figures["shoes"]] == [2]  # shoe 1's first round was before
    assert {name: d["hours"] for name, d in figures["dealers"].items()} == {
        "D-1": 0.333,
        "D-2": 0.167,
    }
    assert pace(shift, t("06:15:00"), t("06:15:00"))["shift"]["rounds_per_hour"] is None
    # A round that starts at the end belongs to the next stretch.
    assert pace(shift, t("06:00:00"), t("06:15:00"))["shift"]["rounds"] == 2
    assert list(pace(shift, t("06:00:00"), t("06:30:00"))["dealers"]) == ["D-1"]
    # From the start included (round 1 started at 06:01:00) to the end excluded.
    assert pace(shift, t("06:01:00"), t("06:15:00"))["shift"]["rounds"] == 2
    assert [s["shoe"] for s in pace(shift, t("06:15:00"), t("06:20:00"))["shoes"]] == [2]
    assert pace(shift, t("06:10:00"), t("06:15:00"))["shoes"] == []


def _holds(**codes: tuple[int, Any, Any, int]) -> dict[str, dict[str, Any]]:
    return {
        code: {"count": count, "resolve_seconds_p50": p50, "resolve_seconds_max": most,
               "unresolved": unresolved}
        for code, (count, p50, most, unresolved) in codes.items()
    }  # fmt: skip


def test_the_report_gives_each_hour_each_dealer_and_the_whole_stretch() -> None:
    shift = read_shift(SHIFT, HOLD_CODES)
    rows = report(shift, t("06:00:00"), t("07:40:00"), UTC)
    assert rows == [
        {
            "kind": "hour",
            "name": "2026-11-30T06:00:00+00:00",
            **_figures(3, 3.0, (20.0, 40.0), waits=(8.0, 9.6), voided=1, trial=1),
            "hours": 1.0,
            "shoes_ended": 1,
            "misdeals": 1,
            "downtime_seconds": 300.0,
            "holds": _holds(
                early_card=(1, 30.0, 30.0, 0),
                factory_order=(1, 240.0, 240.0, 0),
                supervisor_hold=(2, 3510.0, 5220.0, 0),
            ),
        },
        {
            "kind": "hour",
            "name": "2026-11-30T07:00:00+00:00",
            **_figures(2, 3.0, (17.562, 23.512)),
            "hours": 0.667,  # 40 minutes
            "shoes_ended": 0,
            "misdeals": 0,
            "downtime_seconds": 0,
            "holds": _holds(factory_order=(1, None, None, 1), supervisor_hold=(1, 180.0, 180.0, 0)),
        },
        {
            "kind": "dealer",
            "name": "D-1",
            **_figures(3, 6.0, (20.0, 40.0), waits=(8.0, 9.6), voided=1, trial=1),
            "hours": 0.5,
        },
        {
            "kind": "dealer",
            "name": "D-2",
            **_figures(1, 1.09, (25.0, 25.0)),
            "hours": 0.917,
        },
        {
            "kind": "total",
            "name": "",
            **_figures(5, 3.0, (20.0, 37.0), waits=(8.0, 9.6), voided=1, trial=1),
            "hours": 1.667,
            "shoes_ended": 1,
            "misdeals": 1,
            "downtime_seconds": 300.0,
            "holds": _holds(
                early_card=(1, 30.0, 30.0, 0),
                factory_order=(2, 240.0, 240.0, 1),
                supervisor_hold=(3, 1800.0, 5220.0, 0),
            ),
        },
    ]


def test_the_reports_hours_are_the_zones_and_cut_to_the_stretch() -> None:
    shift = read_shift(SHIFT, HOLD_CODES)
    macau = timezone(timedelta(hours=8))
    rows = report(shift, t("06:20:00"), t("07:35:00"), macau)
    hours = [row for row in rows if row["kind"] == "hour"]
    assert [row["name"] for row in hours] == [
        "2026-11-30T14:00:00+08:00",  # from 06:20 UTC only
        "2026-11-30T15:00:00+08:00",  # to 07:35 UTC only
    ]
    assert [(row["rounds"], row["rounds_per_hour"]) for row in hours] == [(0, 0.0), (2, 3.43)]
    assert [list(row["holds"]) for row in hours] == [
        ["supervisor_hold"],
        [],
    ]  # 07:35 is the end: not in
    assert [row["name"] for row in rows if row["kind"] == "dealer"] == ["D-1", "D-2"]
    assert rows[-1]["kind"] == "total"
    assert rows[-1]["rounds_per_hour"] == round(2 / 1.25, 2)
    assert report(shift, t("06:00:00"), t("06:00:00"), UTC) == [
        {"kind": "total", "name": "", **_figures(0, None, (None, None)), "hours": 0.0,
         "shoes_ended": 0, "misdeals": 0, "downtime_seconds": 0, "holds": {}},
    ]  # fmt: skip


def test_an_events_time_is_read_as_utc() -> None:
    assert instant("2026-11-30T06:01:02.500000Z") == datetime(2026, 11, 30, 6, 1, 2, 500000, UTC)


def test_the_reports_stretch_takes_its_start_and_not_its_end() -> None:
    shift = read_shift(SHIFT, HOLD_CODES)

    def total(start: str, end: str) -> dict[str, Any]:
        return report(shift, t(start), t(end), UTC)[-1]

    early = total("06:05:00", "06:10:00")  # the early card's hold at 06:05, shoe 1's end at 06:10
    assert (early["shoes_ended"], list(early["holds"])) == (0, ["early_card", "factory_order"])
    ended = total("06:10:00", "06:15:00")  # shoe 1 ended at 06:10, shoe 2's first round 06:15
    assert (ended["shoes_ended"], ended["misdeals"], ended["downtime_seconds"]) == (1, 1, 0)
    assert list(total("06:12:00", "06:13:00")["holds"]) == ["supervisor_hold"]
    assert total("06:15:00", "06:20:00")["downtime_seconds"] == 300.0
    hours = report(shift, t("06:20:30.500000"), t("06:40:00"), UTC)
    assert hours[0]["name"] == "2026-11-30T06:00:00+00:00"  # the hour it falls in, whole


@pytest.fixture
def macau_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's own zone UTC+8, as a table PC's may be set."""
    monkeypatch.setenv("TZ", "CST-8")  # POSIX form: needs no zone database
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("macau_machine")
def test_figures_as_json_have_their_times_in_the_journals_utc_form_at_any_depth() -> None:
    macau = timezone(timedelta(hours=8))
    opened = datetime(2026, 11, 30, 14, 1, 2, 345678, tzinfo=macau)
    figures = {
        "since": opened,
        "rows": [{"hour": opened + timedelta(hours=1), "rounds": 61, "pace": 0.5}],
        "dealer": None,
    }
    assert plain_json(figures) == {
        "since": "2026-11-30T06:01:02.345678Z",
        "rows": [{"hour": "2026-11-30T07:01:02.345678Z", "rounds": 61, "pace": 0.5}],
        "dealer": None,
    }
    assert plain_json([opened.replace(microsecond=0)]) == ["2026-11-30T06:01:02.000000Z"]
    naive_utc = datetime(2026, 11, 30, 6, 1, 2, tzinfo=UTC).replace(tzinfo=None)
    assert datetime.now().astimezone().utcoffset() == timedelta(hours=8)  # the zone took
    # a naive time is the machine's: 06:01 in Macau is 22:01 the day before in UTC
    assert plain_json(naive_utc) == "2026-11-29T22:01:02.000000Z"
