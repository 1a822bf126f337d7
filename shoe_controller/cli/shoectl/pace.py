"""`shoectl pace`: the table's pace over the last hour and the shift, for the table and each
dealer: rounds an hour, round times, bets closed to first card, the downtime between shoes
(docs/pace.md).

Read from the journal's events over the control socket, a page at a time (event_log.Pages),
and counted by game/pace.py, the same counting as `shoe-controller report`. Times are shown in
this machine's zone like the rest of shoectl (`--utc`: UTC).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import click

from shoe_controller.cli.shoectl.client import AnswerError, UnreachableError
from shoe_controller.cli.shoectl.event_log import TIME_HELP, Pages
from shoe_controller.cli.shoectl.plumbing import (
    connect,
    fail,
    fail_answer,
    json_option,
    out,
    painter,
    print_json,
    times,
)
from shoe_controller.cli.shoectl.render import render_pairs, render_table
from shoe_controller.cli.shoectl.times import Times, moment
from shoe_controller.cli.shoectl.typed_times import TimeTypedError, read_time
from shoe_controller.game.pace import pace, plain_json, read_shift
from shoe_controller.table.alerts import HOLD_CODES

SHIFT = "-8h"  # the shift, unless --since says otherwise
# The dealer in charge at the shift's start signed in at most this long before it.
DEALER_LOOKBACK = timedelta(hours=12)
# (key, column heading, unit): every duration with its unit.
FIGURES = (
    ("rounds", "ROUNDS", ""),
    ("rounds_per_hour", "AN HOUR", ""),
    ("round_seconds_p50", "ROUND TIME P50", " s"),
    ("round_seconds_p90", "P90", " s"),
    ("bets_closed_to_first_card_p50", "BETS CLOSED TO CARD P50", " s"),
    ("bets_closed_to_first_card_p90", "P90", " s"),
    ("voided", "VOIDED", ""),
)
PACE_NOTE = (
    "AN HOUR: rounds an hour over the time since play began (OVER); a dealer's, over the"
    " time the dealer was in charge. ROUND TIME: first card to result. BETS CLOSED TO CARD:"
    " from the close of bets to the round's first card. P50, P90: half, nine in ten of the"
    " rounds took at most this long."
)


def _when(text: str, option: str, utc: bool) -> datetime:
    try:
        return read_time(text, utc=utc)
    except TimeTypedError as error:
        raise click.BadParameter(str(error), param_hint=option) from None


@click.command("pace", short_help="Rounds an hour, round times and downtime, by dealer.")
@click.option(
    "--since", "-S", metavar="TIME", default=SHIFT, show_default=True,
    help="The shift's start." + TIME_HELP,
)  # fmt: skip
@click.option("--until", "-U", metavar="TIME", default="now", show_default=True,
              help="The shift's end (a recorded shift: its end).")  # fmt: skip
@json_option
def pace_command(*, since: str, until: str, as_json: bool) -> None:
    """The table's pace: rounds an hour over the last hour and the shift, round time p50/p90,
    bets closed to first card, the downtime before each shoe, for the table and each dealer."""
    shown = times()
    start, end = _when(since, "--since", shown.utc), _when(until, "--until", shown.utc)
    if end <= start:
        raise click.UsageError(f"--until {until} is not after --since {since}")
    try:
        with connect() as client:
            pages = Pages(client)
            first, final = pages.bounds()
            after = pages.seq_before(start - DEALER_LOOKBACK, first, final)
            shift = read_shift(pages.forward(after, end), HOLD_CODES)
    except UnreachableError as error:
        fail(str(error))
    except AnswerError as error:
        fail_answer(error)
    figures = plain_json(pace(shift, start, end))
    if as_json:
        print_json(figures)
    else:
        out(_text(figures, shown))


def _number(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    return (f"{value:g}" if isinstance(value, float) else str(value)) + unit


def _row(name: str, figures: dict[str, Any], over: str) -> list[str]:
    return [name, *(_number(figures[key], unit) for key, _, unit in FIGURES[:2]), over,
            *(_number(figures[key], unit) for key, _, unit in FIGURES[2:])]  # fmt: skip


def _text(figures: dict[str, Any], shown: Times) -> str:
    paint = painter()
    window = _duration(_moment(figures["until_at"]) - _moment(figures["last_hour"]["since"]))
    recent = "last hour" if window == "1 h" else f"last {window}"
    rows = []
    for name, part in ((recent, figures["last_hour"]), ("shift", figures["shift"])):
        played = _moment(figures["until_at"]) - _moment(part["played_since"])
        rows.append(_row(name, part, _duration(played) if part["rounds"] else "-"))
    for name, dealer in sorted(figures["dealers"].items()):
        rows.append(_row(f"dealer {name}", dealer, _duration(timedelta(hours=dealer["hours"]))))
    headers = ["", FIGURES[0][1], FIGURES[1][1], "OVER", *(title for _, title, _ in FIGURES[2:])]
    lines = [
        render_pairs(
            [("Shift", f"{shown.stamp(figures['since'])} to {shown.stamp(figures['until_at'])}")],
            paint,
        ),
        "",
        render_table(headers, rows, paint),
        paint(PACE_NOTE, "dim"),
    ]
    shoes = [
        [str(shoe["shoe"]), shown.short(shoe["first_round_at"]), shown.short(shoe["ended_at"]),
         _minutes(shoe["downtime_seconds"])]
        for shoe in figures["shoes"]
    ]  # fmt: skip
    if shoes:
        headings = ["SHOE", shown.column("FIRST ROUND"), shown.column("ENDED")]
        lines += ["", render_table([*headings, "DOWNTIME BEFORE"], shoes, paint)]
    hours = [
        f"{name} {_duration(timedelta(hours=dealer['hours']))}"
        for name, dealer in sorted(figures["dealers"].items())
    ]
    if hours:
        lines += ["", "Dealers in charge: " + ", ".join(hours)]
    return "\n".join(lines)


def _moment(value: Any) -> datetime:
    found = moment(value)
    assert found is not None, value  # pace's own times
    return found


def _duration(span: timedelta) -> str:
    """`15 s`, `10 min`, `2 h 15 min`: a stretch of time with its units."""
    whole = round(span.total_seconds())
    hours, rest = divmod(whole, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    if minutes:
        return f"{minutes} min" + (f" {seconds:02d} s" if seconds else "")
    return f"{seconds} s"


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s"
