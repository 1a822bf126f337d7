"""Supervisor actions that decide about a card: confirm, discard, correct, missed, extra.

Each action is a pair `check_*` (why it is refused now, or None) and `do_*` (carry it out,
after the check passed); action_registry.py's registry names them. Cards of a round are laid out
again in dealing order after a change (R10.1, R10.5); a squeezed card is never named (R15).
"""

from __future__ import annotations

from typing import Any

from shoe_controller.game.rules import Position, positions_of
from shoe_controller.table.books import Draw, Hold, HoldKind, cards_taken
from shoe_controller.table.context import BugError, Context
from shoe_controller.table.dealing import extra, relayout, release, settle
from shoe_controller.table.holds import held_text, lift
from shoe_controller.table.squeeze import embargoed, head_card_shown, public_card
from shoe_controller.vocab.cards import Card
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import SupervisorCommand


def _pending_decision(ctx: Context) -> tuple[Hold, Draw] | None:
    """The hold that waits for a card decision and the card it is about."""
    book = ctx.book
    for hold in book.holds:
        if hold.kind in (HoldKind.CARD, HoldKind.PLACEHOLDER) and book.queue:
            head = book.queue[0]
            if isinstance(head, Draw):
                return hold, head
        if hold.kind == HoldKind.REVEAL and book.round is not None:
            for draw in book.round.draws:
                if not draw.revealed:
                    return hold, draw
    return None


def check_confirm(ctx: Context, args: dict[str, Any]) -> str | None:
    pending = _pending_decision(ctx)
    if pending is None:
        return "no card waits for a decision"
    _, draw = pending
    if args["card"] is None and (draw.card is None or draw.foreign):
        return f"{draw.label} has no identity: enter it with confirm card=.."
    return None


def do_confirm(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    pending = _pending_decision(ctx)
    if pending is None:
        raise BugError("confirm without a pending decision")
    hold, draw = pending
    card: Card | None = args["card"]
    if hold.kind != HoldKind.REVEAL:
        if card is not None:
            draw.card = card
        draw.confirmed = True
        ctx.acknowledge(
            command, {"seq": draw.seq, "hold": hold.code, "card": head_card_shown(ctx, draw)}
        )
        release(ctx, [hold])
        return
    _confirm_revealed(ctx, command, hold, draw, card)


def _confirm_revealed(
    ctx: Context, command: SupervisorCommand, hold: Hold, draw: Draw, card: Card | None
) -> None:
    """R15: a squeezed card read with low confidence, confirmed once it is open."""
    book = ctx.book
    current = book.round
    if current is None:
        raise BugError("reveal confirmation outside a round")
    changed = card is not None and card != draw.card
    if changed and card is not None:
        if draw.card is not None and book.copies[draw.card] > 0:
            book.copies[draw.card] -= 1
        book.copies[card] += 1
        draw.card = card
    draw.confirmed = True
    draw.revealed = True
    ctx.acknowledge(command, {"seq": draw.seq, "hold": hold.code, "card": str(draw.card)})
    lift(ctx)
    position = _position_of(ctx, draw)
    if changed:
        current.announced.pop(position or "", None)
        if not relayout(ctx, list(current.draws), "card_corrected"):
            return
    elif position is not None:
        ctx.emit(EventType.CARD_REVEALED, {"position": position, "card": str(draw.card)})
    if not any(d.low_confidence and not d.confirmed and not d.revealed for d in current.draws):
        book.holds.remove(hold)
    settle(ctx)


def _position_of(ctx: Context, draw: Draw) -> str | None:
    current = ctx.book.round
    if current is None:
        return None
    for position, placed in zip(current.positions(), current.draws, strict=True):
        if placed is draw:
            return position.value
    return None


def _queued_card(ctx: Context) -> Draw | None:
    """The first card waiting in the queue while the table is held (drawn during a hold)."""
    if not ctx.book.holds:
        return None
    return next((item for item in ctx.book.queue if isinstance(item, Draw)), None)


def check_discard(ctx: Context, args: dict[str, Any]) -> str | None:
    pending = _pending_decision(ctx)
    if pending is not None and pending[0].kind != HoldKind.REVEAL:
        return None
    if _queued_card(ctx) is None:
        return "no held card to discard (a dealt card is corrected, or its round voided)"
    return None


def do_discard(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    """The card the hold is about, else the first card drawn during a hold (a phantom or
    an extra card waiting behind a plain hold: that hold stays until `resume`)."""
    book = ctx.book
    pending = _pending_decision(ctx)
    if pending is not None and pending[0].kind != HoldKind.REVEAL:
        hold, draw = pending
        book.queue.popleft()
        book.discarded.append(draw)
        ctx.acknowledge(command, {"seq": draw.seq, "hold": hold.code})
        release(ctx, [hold])
        return
    queued = _queued_card(ctx)
    if queued is None:
        raise BugError("discard without a held card")
    book.queue.remove(queued)
    book.discarded.append(queued)
    ctx.acknowledge(command, {"seq": queued.seq, "hold": None})
    settle(ctx)


def check_correct(ctx: Context, args: dict[str, Any]) -> str | None:
    book = ctx.book
    if book.holds:
        return held_text(ctx)
    if book.round is None:
        return "no round is in progress"
    positions = [position.value for position in book.round.positions()]
    if args["position"].value not in positions:
        return f"round {book.round.number} has no card at {args['position'].value}"
    draw = book.round.draws[positions.index(args["position"].value)]
    if draw.revealed and draw.card == args["card"]:
        return f"{args['position'].value} already holds {args['card']}"
    return None


def do_correct(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    book = ctx.book
    current = book.round
    if current is None:
        raise BugError("correct outside a round")
    position: Position = args["position"]
    card: Card = args["card"]
    index = [p.value for p in current.positions()].index(position.value)
    draw = current.draws[index]
    was = draw.card
    ctx.acknowledge(
        command,
        {
            "position": position.value,
            "card": public_card(ctx, card, draw),
            "was": public_card(ctx, was, draw),
        },
    )
    if was is not None and book.copies[was] > 0:
        book.copies[was] -= 1
    book.copies[card] += 1
    draw.card = card
    draw.confirmed = True
    current.announced.pop(position.value, None)  # announced again, even under the squeeze
    if relayout(ctx, list(current.draws), "card_corrected"):
        settle(ctx)


def _insertion_index(ctx: Context, card: Card, position: Position) -> int | None:
    current = ctx.book.round
    if current is None:
        return None
    cards = current.cards()
    for index in range(len(cards) + 1):
        trial = [*cards[:index], card, *cards[index:]]
        taken = cards_taken(trial)
        if index < taken and positions_of(trial[:taken])[index] == position:
            return index
    return None


def check_missed(ctx: Context, args: dict[str, Any]) -> str | None:
    book = ctx.book
    pending = _pending_decision(ctx)
    if pending is not None and pending[0].kind == HoldKind.PLACEHOLDER:
        return None
    if book.holds:
        return held_text(ctx)
    if book.round is None or not book.round.draws:
        return "no round is in progress to put the missed card in"
    if args["position"] is None:
        return "the shoe reported no gap: say where the card belonged with position=.."
    if book.round.hidden():
        return "reveal the squeezed cards first: where the cards go would tell them (R15)"
    if _insertion_index(ctx, args["card"], args["position"]) is None:
        return (
            f"no place among round {book.round.number}'s cards makes that card"
            f" {args['position'].value}"
        )
    return None


def do_missed(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    book = ctx.book
    pending = _pending_decision(ctx)
    card: Card = args["card"]
    if pending is not None and pending[0].kind == HoldKind.PLACEHOLDER:
        hold, draw = pending
        draw.card = card
        draw.confirmed = True
        ctx.acknowledge(
            command, {"seq": draw.seq, "card": head_card_shown(ctx, draw), "position": None}
        )
        release(ctx, [hold])
        return
    current = book.round
    if current is None:
        raise BugError("missed card outside a round")
    position: Position = args["position"]
    index = _insertion_index(ctx, card, position)
    if index is None:
        raise BugError("missed card without a place")
    draw = Draw(seq=book.drawn + 1, card=card, missed=True, confirmed=True)
    draw.revealed = not embargoed(ctx, draw)
    book.drawn += 1
    book.copies[card] += 1
    ctx.acknowledge(
        command,
        {"seq": draw.seq, "card": public_card(ctx, card, draw), "position": position.value},
    )
    draws = [*current.draws[:index], draw, *current.draws[index:]]
    if not relayout(ctx, draws, "missed_scan"):  # R10.5 voids insurance (R16.9)
        return
    placed = ", ".join(
        f"{p.value} {d.public() or d.label}"
        for p, d in zip(current.positions(), current.draws, strict=True)
    )
    ctx.alert(
        "cards_rearranged",
        f"after the missed card the cards lie in dealing order (R10.5): {placed}",
        True,
    )
    settle(ctx)


def check_extra(ctx: Context, args: dict[str, Any]) -> str | None:
    book = ctx.book
    if book.holds:
        return held_text(ctx)
    if book.round is None or not book.round.draws:
        return "no card of a round in progress to take out"
    return None


def do_extra(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    current = ctx.book.round
    if current is None:
        raise BugError("extra outside a round")
    draw = current.draws[-1]
    ctx.acknowledge(command, {"seq": draw.seq, "card": public_card(ctx, draw.card, draw)})
    if relayout(ctx, current.draws[:-1], "card_corrected"):
        extra(ctx, draw, current.number)
        settle(ctx)
