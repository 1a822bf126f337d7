"""Screening a card before it is dealt: what makes the table hold for the supervisor's decision.

A foreign or duplicate RFID tag, more copies than the decks hold, an unreadable or missed card,
a low-confidence read: each holds the table with the card at the head of the queue until the
supervisor confirms, corrects or discards it. A squeezed card is never named (R15).
"""

from __future__ import annotations

from shoe_controller.table.books import Draw, HoldKind
from shoe_controller.table.context import Context
from shoe_controller.table.holds import hold
from shoe_controller.table.lifecycle import BURNING
from shoe_controller.table.squeeze import embargoed, third_cards_secret


def _slot_hint(ctx: Context) -> str:
    """Where the next card goes, in words (for texts about the queue's head)."""
    book = ctx.book
    state = ctx.lifecycle
    if state == BURNING:
        return "the burn"
    if book.round is not None:
        if third_cards_secret(book.round):
            return "the round's next position (told after the reveal, R15)"
        position = book.round.next_position()
        return position.value if position is not None else "after the round (an extra card)"
    return f"P1 of round {book.rounds_started + 1}"


def screen(ctx: Context, draw: Draw) -> bool:
    """Hold the table if this card needs a decision before it is dealt; True if held."""
    if draw.confirmed:
        return False
    book, config = ctx.book, ctx.config
    state = ctx.state
    if draw.foreign:
        hold(
            ctx,
            "foreign_card",
            f"{draw.label} is not a card of this shoe's decks (RFID {draw.uid or '?'}):"
            " supervisor: discard it, confirm card=.. or change_shoe",
            kind=HoldKind.CARD,
            security=True,
            details={"seq": draw.seq, "uid": draw.uid, "counter": draw.counter},
        )
        return True
    if draw.card is None:
        burn_identity_unneeded = (
            state == BURNING and book.burn is not None and not book.burn.needs_first_card
        ) or (draw.burn and state != BURNING)
        if burn_identity_unneeded:
            return False  # an unseen burn card: only its count matters (R2.2, R8)
        if draw.missed:
            text = (
                f"{draw.label} was not scanned (the shoe's counter jumped): it belongs to"
                f" {_slot_hint(ctx)}; supervisor: enter it with missed card=.. (R10.5)"
            )
            hold(ctx, "missed_card", text, kind=HoldKind.PLACEHOLDER)
        else:
            text = (
                f"{draw.label} could not be read: it belongs to {_slot_hint(ctx)};"
                " supervisor: enter it with confirm card=.."
            )
            hold(ctx, "unreadable_card", text, kind=HoldKind.PLACEHOLDER)
        return True
    if draw.double_read:
        hold(
            ctx,
            "double_read_suspected",
            f"{draw.card} ({draw.label}) was read again within"
            f" {config.double_read_window:g} s of the same card, and the shoe sends no"
            " counter: supervisor: discard it if one card was read twice, confirm it if a"
            " second copy left the shoe",
            kind=HoldKind.CARD,
        )
        return True
    hidden = embargoed(ctx, draw) and state != BURNING
    shown = None if hidden else str(draw.card)
    if (draw.uid is not None and draw.uid in book.uids) or (draw.duplicate and not ctx.continuous):
        hold(
            ctx,
            "duplicate_card",
            f"{draw.label} carries an RFID tag already seen in this shoe: supervisor:"
            " discard it, confirm it, or change_shoe",
            kind=HoldKind.CARD,
            security=True,
            # A tag names its card to whoever holds the registry: not before the reveal.
            details={"seq": draw.seq, "uid": None if hidden else draw.uid, "card": shown},
        )
        return True
    if not ctx.continuous and book.copies[draw.card] >= config.decks:
        # The count narrows a hidden card down to those already seen `decks` times (R15).
        copies = None if hidden else book.copies[draw.card] + 1
        hold(
            ctx,
            "too_many_copies",
            f"{draw.label} would be {f'copy {copies}' if copies else 'one copy too many'}"
            f" of a card in a {config.decks}-deck shoe: supervisor: discard it, confirm it,"
            " or change_shoe",
            kind=HoldKind.CARD,
            security=True,
            details={"seq": draw.seq, "card": shown, "copies": copies, "decks": config.decks},
        )
        return True
    if draw.low_confidence:
        if embargoed(ctx, draw) and state != BURNING:
            return False  # R15: confirmed after the reveal, when the card is public
        hold(
            ctx,
            "low_confidence",
            f"{draw.card} ({draw.label}, for {_slot_hint(ctx)}) was read with low"
            " confidence: supervisor: confirm, or confirm card=.. with the right card",
            kind=HoldKind.CARD,
        )
        return True
    return False
