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
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.shoectl.typed_times import TimeTypedError, read_time
from shoe_controller.game.pace import pace, plain_json, read_shift
from shoe_controller.table.alerts import HOLD_CODES

SHIFT = "-8h"  # the shift, unless --since says otherwise
# The dealer in charge at the shift's start signed in at most this long before it.
DEALER_LOOKBACK = timedelta(hours=12)
FIGURES = (
    ("rounds", "ROUNDS"),
    ("rounds_per_hour", "PER HOUR"),
    ("round_seconds_p50", "ROUND P50"),
    ("round_seconds_p90", "P90"),
    ("bets_closed_to_first_card_p50", "BETS>CARD P50"),
    ("bets_closed_to_first_card_p90", "P90"),
    ("voided", "VOIDED"),
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


def _number(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _text(figures: dict[str, Any], shown: Times) -> str:
    paint = painter()
    rows = [["last hour", *(_number(figures["last_hour"][k]) for k, _ in FIGURES)]]
    rows.append(["shift", *(_number(figures["shift"][k]) for k, _ in FIGURES)])
    for name, dealer in sorted(figures["dealers"].items()):
        rows.append([f"dealer {name}", *(_number(dealer[k]) for k, _ in FIGURES)])
    lines = [
        render_pairs(
            [("Shift", f"{shown.stamp(figures['since'])} to {shown.stamp(figures['until_at'])}")],
            paint,
        ),
        "",
        render_table(["", *(title for _, title in FIGURES)], rows, paint),
    ]
    shoes = [
        [str(shoe["shoe"]), shown.short(shoe["first_round_at"]), shown.short(shoe["ended_at"]),
         _minutes(shoe["downtime_seconds"])]
        for shoe in figures["shoes"]
    ]  # fmt: skip
    if shoes:
        lines += [
            "",
            render_table(["SHOE", "FIRST ROUND", "ENDED", "DOWNTIME BEFORE"], shoes, paint),
        ]
    hours = [f"{name} {dealer['hours']:g} h" for name, dealer in sorted(figures["dealers"].items())]
    if hours:
        lines += ["", "Dealers in charge: " + ", ".join(hours)]
    return "\n".join(lines)


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s"
