"""What the table shows: the typed status view (shoectl status, the control socket) and the
INDICATE pattern for the shoe's lights. Never an unrevealed card's identity (R15).
"""

from __future__ import annotations

from typing import Any, TypedDict

from shoe_controller.game.rules import Position
from shoe_controller.table.betting import bets_closed
from shoe_controller.table.betting import status as betting_status
from shoe_controller.table.books import Draw
from shoe_controller.table.context import Context
from shoe_controller.table.lifecycle import BURNING, DEALING, INSURANCE, NO_SHOE, READY, REVEAL
from shoe_controller.table.squeeze import public_next_position
from shoe_controller.vocab.protocol import IndicatePattern

_POSITION_ARG = {position: index + 1 for index, position in enumerate(Position)}
_RESULT_ARG = {"player": 1, "banker": 2, "tie": 3}


class RoundView(TypedDict):
    number: int
    trial: bool
    big_small_open: bool
    cards: dict[str, str]  # position -> card, or "hidden" (R15)
    next_position: str | None
    insurance_void: bool


class BurnView(TypedDict):
    in_progress: bool
    kind: str | None
    burned: int
    to_burn: int | None
    first_card: str | None


class TrialView(TypedDict):
    dealt: int
    pending: int
    max: int


class TableView(TypedDict):
    """The status of the table as JSON-able data; docs/control.md lists every key."""

    state: str
    resumes_to: str | None  # while held: the lifecycle state dealing goes on from
    mode: str
    squeeze: bool
    shoe: int
    shoe_open: bool
    deck_check: str
    cards_dealt: int
    cards_left: int | None
    cut_card_seen: bool
    cut_card_after: int | None
    last_round: int | None
    burn: BurnView
    cards_burned: int
    rounds_started: int
    real_rounds: int
    trial_rounds: TrialView
    round: RoundView | None
    next_position: str | None
    insurance: list[dict[str, Any]]
    holds: list[dict[str, object]]
    refusing_cards: dict[str, Any] | None  # the shoe's cards are being refused: play stopped
    queued_cards: int
    faults: list[dict[str, Any]]
    devices: dict[str, dict[str, Any]]
    indicator: list[int]
    last_result: str | None
    road: list[dict[str, object]]
    betting: dict[str, Any] | None  # the next round's bets; null on a table without betting


def indicator(ctx: Context) -> tuple[int, int]:
    """The INDICATE (pattern, arg) the shoe should show now (docs/spec-protocol.md)."""
    state, book = ctx.state, ctx.book
    if ctx.held or state == REVEAL:
        return (IndicatePattern.STOP, 0)
    if state == NO_SHOE:
        return (IndicatePattern.OFF, 0)
    if state == BURNING and book.burn is not None:
        remaining = book.burn.remaining
        return (IndicatePattern.BURN, 1 if remaining is None else min(remaining, 255))
    if state == INSURANCE:
        return (IndicatePattern.INSURANCE_OPEN, 0)
    if state == DEALING and book.round is not None:
        position = book.round.next_position()
        if position is not None:
            return (IndicatePattern.DEAL, _POSITION_ARG[position])
    if state == READY and ctx.config.betting_on and book.trial_pending == 0:
        # The next round waits for its bets to close; then "deal" P1 (docs/table.md).
        if bets_closed(ctx):
            return (IndicatePattern.DEAL, _POSITION_ARG[Position.P1])
        return (IndicatePattern.BETS_OPEN, 0)  # the table has no clock to count down
    if book.last_winner is not None:
        return (IndicatePattern.RESULT, _RESULT_ARG[book.last_winner])
    return (IndicatePattern.READY, 0)


def view(ctx: Context) -> TableView:
    """JSON-able status for `shoectl status`; never an unrevealed card's identity (R15)."""
    book, config = ctx.book, ctx.config
    burn = book.burn
    current = book.round
    round_view: RoundView | None = None
    next_position: str | None = None
    if current is not None:
        cards = {
            position.value: draw.public() or "hidden"
            for position, draw in zip(current.positions(), current.draws, strict=True)
        }
        due = public_next_position(current)
        next_position = due.value if due is not None else None
        round_view = {
            "number": current.number,
            "trial": current.trial,
            "big_small_open": current.big_small_open,
            "cards": cards,
            "next_position": next_position,
            "insurance_void": current.insurance_void,
        }
    elif ctx.lifecycle == READY:
        next_position = Position.P1.value
    return {
        "state": ctx.state,
        "resumes_to": ctx.lifecycle if ctx.held else None,
        "mode": config.mode,
        "squeeze": config.squeeze,
        "shoe": book.number,
        "shoe_open": book.open,
        "deck_check": ctx.preparation,
        "cards_dealt": book.drawn,
        "cards_left": None
        if ctx.continuous or not book.open
        else config.cards_in_shoe - book.drawn,
        "cut_card_seen": book.cut_after is not None,
        "cut_card_after": book.cut_after,
        "last_round": book.last_round,
        "burn": {
            "in_progress": burn is not None,
            "kind": burn.kind if burn is not None else None,
            "burned": len(burn.cards) if burn is not None else 0,
            "to_burn": burn.remaining if burn is not None else 0,
            "first_card": burn.first_card() if burn is not None else None,
        },
        "cards_burned": book.burned,
        "rounds_started": book.rounds_started,
        "real_rounds": book.real_rounds,
        "trial_rounds": {
            "dealt": book.trial_dealt,
            "pending": book.trial_pending,
            "max": config.max_trial_rounds,
        },
        "round": round_view,
        "next_position": next_position,
        "insurance": [offer.offer.event_data() for offer in current.open_offers()]
        if current is not None
        else [],
        "holds": [hold.view() for hold in book.holds],
        "refusing_cards": ctx.refusing.view() if ctx.refusing is not None else None,
        "queued_cards": sum(isinstance(item, Draw) for item in book.queue),
        "faults": [dict(fault) for fault in ctx.devices.faults.values()],
        "devices": {name: dict(record) for name, record in ctx.devices.devices.items()},
        "indicator": list(indicator(ctx)),
        "last_result": book.last_winner,
        "road": [dict(entry) for entry in book.road],
        "betting": betting_status(ctx),
    }
