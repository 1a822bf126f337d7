"""What the round events carry of the betting clock: round.started's, round.result's and
round.voided's clock fields, for dealing.py to emit.

None on a table without the round's clock (`[table] betting = "none"` and no clock): the
events are docs/spec-push-api.md's exactly then. The clock itself is betting.py's.
"""

from __future__ import annotations

from typing import Any

from shoe_controller.table.books import Draw, RoundBook
from shoe_controller.table.context import Context
from shoe_controller.vocab.events import iso_time


def started_data(ctx: Context, current: RoundBook, first: Draw) -> dict[str, Any]:
    """round.started's clock fields: none on a table without betting (docs/spec-push-api.md
    exactly)."""
    if not ctx.config.clocked:
        return {}
    return {
        "bets_closed_at": current.bets_closed_at,
        "first_card_at": None if first.at is None else iso_time(first.at),
        "server_round": current.server_round,
    }


def result_data(ctx: Context, current: RoundBook) -> dict[str, Any]:
    """round.result's clock fields: bets closed, first and last card, the result."""
    if not ctx.config.clocked:
        return {}
    first, last = _card_times(current)
    return {
        "bets_closed_at": current.bets_closed_at,
        "first_card_at": first,
        "last_card_at": last,
        "result_at": ctx.at,
        "server_round": current.server_round,
    }


def voided_data(ctx: Context, current: RoundBook) -> dict[str, Any]:
    """round.voided's: the server's name for the round whose bets are returned."""
    return {"server_round": current.server_round} if ctx.config.clocked else {}


def _card_times(current: RoundBook) -> tuple[str | None, str | None]:
    """When the round's first and last cards were read (cards entered by hand have no time)."""
    times = [draw.at for draw in current.draws if draw.at is not None]
    if not times:
        return None, None
    return iso_time(min(times)), iso_time(max(times))
