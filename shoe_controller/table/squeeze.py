"""The squeeze (R15): which card may be named when, and the reveal that opens the cards.

In squeeze mode a dealt card stays secret until the dealer reveals it: events, views and texts
carry its identity only after `card.revealed`. Everything that decides whether a card, or a
fact that would tell it (the position due after four cards, a copy count), may be shown is
here.
"""

from __future__ import annotations

from shoe_controller.game.rules import Position
from shoe_controller.table.books import Draw, HoldKind, RoundBook
from shoe_controller.table.context import BugError, Context
from shoe_controller.table.holds import hold
from shoe_controller.table.lifecycle import BURNING
from shoe_controller.vocab.cards import Card
from shoe_controller.vocab.events import EventType


def embargoed(ctx: Context, draw: Draw) -> bool:
    """R15: a squeezed card stays secret until the reveal; a face-up card is public."""
    return ctx.config.squeeze and not draw.face_up and not ctx.continuous


def third_cards_secret(current: RoundBook) -> bool:
    """R15: after four cards, what is due next (P3, B3 or nothing) tells the hidden totals."""
    return len(current.draws) >= 4 and bool(current.hidden())


def public_next_position(current: RoundBook) -> Position | None:
    return None if third_cards_secret(current) else current.next_position()


def public_card(ctx: Context, card: Card | None, draw: Draw | None = None) -> str | None:
    """A card for supervisor.action details: hidden while the squeeze embargo holds."""
    if card is None:
        return None
    if ctx.config.squeeze and not ctx.continuous and (draw is None or not draw.revealed):
        return None
    return str(card)


def head_card_shown(ctx: Context, draw: Draw) -> str | None:
    """The queue head's card for supervisor.action details: hidden if it goes to a squeezed
    position (R15); burn cards are not squeezed."""
    if draw.card is None or (embargoed(ctx, draw) and ctx.lifecycle != BURNING):
        return None
    return str(draw.card)


def reveal(ctx: Context) -> None:
    """The dealer opened the squeezed cards: publish them, or hold for doubtful reads."""
    current = ctx.book.round
    if current is None:
        raise BugError("reveal outside a round")
    pending: list[tuple[Position, Draw]] = []
    for position, draw in zip(current.positions(), current.draws, strict=True):
        if draw.revealed:
            continue
        if draw.low_confidence and not draw.confirmed:
            pending.append((position, draw))
            continue
        draw.revealed = True
        ctx.emit(EventType.CARD_REVEALED, {"position": position.value, "card": str(draw.card)})
    if pending:
        named = ", ".join(f"{position.value} {draw.card}" for position, draw in pending)
        hold(
            ctx,
            "low_confidence",
            f"squeezed card(s) read with low confidence: {named}; supervisor: confirm, or"
            " confirm card=.. with the right card (R15)",
            kind=HoldKind.REVEAL,
        )
