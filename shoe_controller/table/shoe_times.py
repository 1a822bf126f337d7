"""A shoe's clock: when it opened, when its first round started, its dealing time at
its end, and the downtime before it: the shuffle or shoe change since the shoe before ended.

Only on a table that keeps the round's clock (`TableConfig.clocked`); otherwise nothing here
acts and the events are docs/spec-push-api.md's exactly. Pure: the times are the inputs' `at`, as
the
events carry them. The shoe before's end is an input of this shoe (`PreviousShoe`, which the
table asks the controller to record with the input that ended it: `Table.take_carried`), so
that this shoe's inputs alone give its events (the recovery contract, docs/table.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shoe_controller.table.context import Context
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import PreviousShoe


def on_previous_shoe(ctx: Context, item: PreviousShoe) -> None:
    """The shoe before this one ended at `item.at`: the start of this shoe's downtime."""
    book = ctx.book
    if item.shoe != book.number - 1 or book.rounds_started or book.previous_end is not None:
        ctx.refuse(
            "invalid_input",
            f"previous_shoe {item.shoe}: this is shoe {book.number}"
            + (", its rounds started" if book.rounds_started else "")
            + (", its downtime began already" if book.previous_end is not None else ""),
        )
        return
    book.previous_end = ctx.at


def carried(ctx: Context, ended: int, at: float) -> list[PreviousShoe]:
    """What the controller records for the next shoe once shoe `ended` ended at `at`."""
    return [PreviousShoe(at=at, shoe=ended)] if ctx.config.clocked else []


def shoe_opened(ctx: Context) -> None:
    if ctx.config.clocked:
        ctx.book.opened_at = ctx.at


def first_round(ctx: Context) -> None:
    """The shoe's first round starts: its dealing time counts from now, and the downtime
    since the shoe before ended is over (`shoe.downtime`, before `round.started`)."""
    book = ctx.book
    if not ctx.config.clocked or book.first_round_at is not None:
        return
    book.first_round_at = ctx.at
    if book.previous_end is None:
        return  # the table's first shoe, or one whose predecessor's end is not known
    ctx.emit(
        EventType.SHOE_DOWNTIME,
        {
            "previous_shoe": book.number - 1,
            "since": book.previous_end,
            "opened_at": book.opened_at,
            "until": ctx.at,
            "seconds": seconds_between(book.previous_end, ctx.at),
            "shuffle_seconds": seconds_between(book.previous_end, book.opened_at),
        },
        round_number=None,
    )


def ended_data(ctx: Context) -> dict[str, Any]:
    """shoe.ended's clock fields: when it opened, its first round, its dealing time."""
    if not ctx.config.clocked:
        return {}
    book = ctx.book
    return {
        "opened_at": book.opened_at,
        "first_round_at": book.first_round_at,
        "dealing_seconds": seconds_between(book.first_round_at, ctx.at),
    }


def seconds_between(since: str | None, until: str | None) -> float | None:
    """Seconds from one event time (iso_time's form) to another, to the microsecond."""
    if since is None or until is None:
        return None
    delta = _parsed(until) - _parsed(since)
    return round(delta.total_seconds(), 6)


def _parsed(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))
