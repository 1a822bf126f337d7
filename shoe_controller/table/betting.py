"""The betting clock: whether bets are closed for the shoe's next round, said by the dealer's
NO_MORE_BETS button or by the table server (the times a round's events carry are
round_events.py's).

Pure like every part of the table: no clock of its own, the inputs carry `at`. With `[table]
betting = "none"` (the default) nothing here acts and the events are docs/spec-push-api.md's
exactly.
Otherwise the next round may be dealt only once its bets closed: a round's first card before
that came "before its time" (R17, handled by R10.1): `early_card` decides whether the
supervisor is asked (a hold, ways out `void` or `accept`) or the round is voided at once.
The state is `books.BetsBook`, held by the shoe's book (docs/table.md "Betting").
"""

from __future__ import annotations

from typing import Any

from shoe_controller.table.books import Draw, HoldKind, RoundBook
from shoe_controller.table.config import BETTING_BUTTON, BETTING_SERVER
from shoe_controller.table.context import Context
from shoe_controller.table.holds import hold
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import BetsState, BettingChanged, ButtonPressed

EARLY_CARD = "early_card"


def next_round(ctx: Context) -> int:
    """The number the shoe's next round will have (trial and voided rounds counted)."""
    return ctx.book.rounds_started + 1


def bets_closed(ctx: Context) -> bool:
    """Whether the next round may be dealt now: always on a table without betting."""
    if not ctx.config.betting_on:
        return True
    bets = ctx.book.bets
    return bets.closed and bets.round == next_round(ctx)


def status(ctx: Context) -> dict[str, Any] | None:
    """The status view's `betting`: null on a table without betting."""
    if not ctx.config.betting_on:
        return None
    bets, number = ctx.book.bets, next_round(ctx)
    about_next = bets.round == number
    return {
        "by": ctx.config.betting,
        "round": number,
        "closed": bets_closed(ctx),
        "opened_at": bets.opened_at if about_next else None,
        "closed_at": bets.closed_at if about_next and bets.closed else None,
        "server_round": bets.server_round if about_next else None,
    }


# ------------------------------------------------------------------ the inputs


def on_no_more_bets(ctx: Context, item: ButtonPressed) -> None:
    """The dealer's NO_MORE_BETS: betting on the next round is closed (button mode)."""
    book = ctx.book
    if ctx.config.betting != BETTING_BUTTON:
        ctx.refuse("betting_off", _not_ours(ctx, "the dealer's NO_MORE_BETS button"))
        return
    if book.round is not None:
        ctx.refuse(
            "bets_already_closed",
            f"NO_MORE_BETS while round {book.round.number} is dealt: its bets closed before"
            " its first card; the next round's open once it is over",
        )
        return
    if bets_closed(ctx):
        ctx.refuse("bets_already_closed", f"bets on round {next_round(ctx)} are closed already")
        return
    _close(ctx, next_round(ctx), None, "button", item.device)


def on_betting(ctx: Context, item: BettingChanged) -> None:
    """The table server: bets open, or closed, for a round of a shoe (server mode)."""
    book, bets = ctx.book, ctx.book.bets
    if ctx.config.betting != BETTING_SERVER:
        ctx.refuse("betting_off", _not_ours(ctx, "the table server's betting messages"))
        return
    if item.nonce and item.nonce in bets.nonces:
        ctx.refuse(
            "repeated_message", f"the betting message {item.nonce} was taken before: refused"
        )
        return
    late = (
        item.state == BetsState.CLOSED
        and book.round is not None
        and item.shoe == book.number
        and item.round == book.round.number
        and book.round.bets_closed_at is None
    )
    number = next_round(ctx)
    if not late and (item.shoe != book.number or item.round != number):
        ctx.refuse(
            "wrong_round",
            f"bets {item.state} for shoe {item.shoe} round {item.round}: the next round is"
            f" shoe {book.number} round {number}; refused, nothing changed",
        )
        return
    about_next = bets.round == number and not late
    server_round = item.server_round or None
    if (
        about_next
        and server_round is not None
        and bets.server_round is not None
        and server_round != bets.server_round
    ):
        ctx.refuse(
            "wrong_round",
            f"bets {item.state} for the server's round {server_round}, but round {number}"
            f" is its round {bets.server_round}; refused, nothing changed",
        )
        return
    if item.state == BetsState.OPEN:
        bets.round, bets.closed, bets.server_round = number, False, server_round
        bets.opened_at, bets.closed_at = ctx.at, None
        ctx.emit(EventType.BETS_OPENED, _event_data(number, server_round, "server", item.source))
    elif late and book.round is not None:
        _close_late(ctx, book.round, server_round, item.source)
    else:
        if about_next and bets.closed:
            ctx.refuse("bets_already_closed", f"bets on round {number} are closed already")
            return
        kept = server_round or (bets.server_round if about_next else None)
        _close(ctx, number, kept, "server", item.source)
    if item.nonce:
        bets.nonces.add(item.nonce)


def _not_ours(ctx: Context, what: str) -> str:
    betting = ctx.config.betting
    return f"{what} refused: this table's betting = {betting!r} (docs/table.md 'Betting')"


def _close(ctx: Context, number: int, server_round: str | None, by: str, source: str) -> None:
    bets = ctx.book.bets
    if bets.round != number:
        bets.opened_at = None
    bets.round, bets.closed, bets.closed_at, bets.server_round = number, True, ctx.at, server_round
    ctx.emit(EventType.BETS_CLOSED, _event_data(number, server_round, by, source))


def _close_late(ctx: Context, current: RoundBook, server_round: str | None, source: str) -> None:
    """The server closed the bets of a round whose first card came before: noted for the
    supervisor, who decides (the early-card hold stays)."""
    current.bets_closed_at = ctx.at
    current.server_round = current.server_round or server_round
    data = _event_data(current.number, current.server_round, "server", source)
    ctx.emit(EventType.BETS_CLOSED, data)
    ctx.alert(
        "bets_closed_late",
        f"the server closed the bets of round {current.number} after its first card",
        False,
    )


def _event_data(number: int, server_round: str | None, by: str, source: str) -> dict[str, Any]:
    # `round` names the round the bets are for: the event's own round is the one in
    # progress, if any (as for the surveillance events).
    return {"round": number, "server_round": server_round, "by": by, "source": source}


# ------------------------------------------------------------------ a round's clock


def start_round(ctx: Context, current: RoundBook) -> bool:
    """A round opens: its bets as they stand; True when its first card came before they
    closed (an early card). Trial rounds take no bets (R2.3)."""
    if not ctx.config.betting_on:
        return False
    bets = ctx.book.bets
    if bets.round == current.number:
        current.server_round = bets.server_round
        if bets.closed:
            current.bets_closed_at = bets.closed_at
    return not current.trial and current.bets_closed_at is None


def hold_early(ctx: Context, draw: Draw) -> None:
    """R17, R10.1: the round's first card came while bets were open: the supervisor decides."""
    hold(
        ctx,
        EARLY_CARD,
        f"{draw.label} opened round {ctx.book.rounds_started} while its bets were open"
        " (R17): supervisor: void the round (bets returned), or accept it with a reason",
        kind=HoldKind.EARLY,
    )


def early_voided_text(ctx: Context, draw: Draw) -> str:
    return (
        f"{draw.label} opened round {ctx.book.rounds_started} while its bets were open (R17):"
        " the round is void, bets are returned (early_card = void)"
    )
