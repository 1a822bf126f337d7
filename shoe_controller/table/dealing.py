"""The dealing flow: cards queued in the order they left the shoe, burned, placed on the position
due (R7, R9), rounds finished or voided (R10), extra cards (R10.3, R10.4).

`admit` takes cards in and deals the queue until a card needs a decision or the table is
held; `settle` goes on after a change, `release` after the supervisor resolved holds. Why a
card holds the table is screening.py's, what may be named in a squeeze squeeze.py's, the
insurance windows insurance.py's.
"""

from __future__ import annotations

from shoe_controller.game.rules import Position, outcome, positions_of
from shoe_controller.table.betting import EARLY_CARD, early_voided_text, hold_early, start_round
from shoe_controller.table.books import (
    BurnBook,
    CutMarker,
    Draw,
    Hold,
    HoldKind,
    RoundBook,
    cards_taken,
)
from shoe_controller.table.config import EARLY_CARD_VOID
from shoe_controller.table.context import BugError, Context
from shoe_controller.table.holds import hold, lift, settle_holds
from shoe_controller.table.insurance import due_offers, offer, void_all, void_open
from shoe_controller.table.lifecycle import BURNING, DEALING, INSURANCE, READY, REVEAL
from shoe_controller.table.round_events import result_data, started_data, voided_data
from shoe_controller.table.screening import screen
from shoe_controller.table.shoe_times import first_round
from shoe_controller.table.shoes import cut_card, end_shoe
from shoe_controller.table.squeeze import embargoed, third_cards_secret
from shoe_controller.vocab.events import EventType


def settle(ctx: Context) -> None:
    """After a change: stay held while holds remain, else go on dealing and drain the queue."""
    if settle_holds(ctx):
        return
    _continue_round(ctx)
    _pump(ctx)


def release(ctx: Context, resolved: list[Hold]) -> None:
    """The supervisor resolved these holds: dealing goes on if none is left."""
    for item in resolved:
        ctx.book.holds.remove(item)
    settle(ctx)


def admit(ctx: Context, draws: list[Draw], factory_run: int = 0) -> None:
    """Queue cards in the order they left the shoe, then deal what can be dealt."""
    book = ctx.book
    held_before = bool(book.holds)
    book.queue.extend(draws)
    if factory_run == ctx.config.factory_order_run:
        hold(
            ctx,
            "factory_order",
            f"{factory_run} cards in a row in new-deck order up to {draws[-1].label}: the"
            " shoe may not have been shuffled; supervisor: check the shoe (change_shoe)"
            " or resume",
            security=True,
            details={"run": factory_run, "seq": draws[-1].seq},
        )
    for draw in draws:
        what = "was not scanned" if draw.missed else "was drawn"
        if held_before:
            ctx.alert(
                "card_during_hold",
                f"{draw.label} {what} while the table is held: it is placed after the hold",
                False,
            )
        elif ctx.state == REVEAL:
            # R15: placing it now would tell by its position what the hidden cards total.
            ctx.alert(
                "card_before_reveal",
                f"{draw.label} {what} before the squeezed cards were revealed: it is placed"
                " after the reveal",
                False,
            )
    _pump(ctx)


def _pump(ctx: Context) -> None:
    """Deal queued cards in order until a card needs a decision or the table is held."""
    while True:
        book = ctx.book
        if not book.queue or book.holds or not book.open or ctx.state == REVEAL:
            return
        head = book.queue[0]
        if isinstance(head, CutMarker):
            book.queue.popleft()
            book.cut_pending = False
            cut_card(ctx, head.after)
            continue
        if screen(ctx, head):
            return
        book.queue.popleft()
        _process(ctx, head)


def _process(ctx: Context, draw: Draw) -> None:
    """Deal one screened card: burn, extra card, or the position that is due."""
    book = ctx.book
    if draw.card is not None and not ctx.continuous:
        book.copies[draw.card] += 1
    if draw.uid is not None:
        book.uids.add(draw.uid)
        if ctx.config.card_tags and not ctx.continuous:
            book.untagged.append(draw)
    state = ctx.state
    if state == BURNING:
        _burn(ctx, draw)
        book.last_draw_closed_round = None
        return
    if draw.burn:
        _burn_on_shoe_word(ctx, draw)
        book.last_draw_closed_round = None
        return
    if state == READY and draw.multi and book.last_draw_closed_round is not None:
        # Pulled together with the round's last card: not part of any round (R10.2, R10.3).
        extra(ctx, draw, book.last_draw_closed_round)
        return
    early = False
    if state == READY:
        early = _open_round(ctx, draw)
    elif state == INSURANCE:
        void_open(ctx, "dealt_into_window")  # R16.8
    current = ctx.book.round
    if current is None:
        raise BugError(f"no round to place {draw.label} in (state {state})")
    _place(ctx, draw)
    if early:
        _early_card(ctx, draw)
        return
    # A squeezed round is complete before its result (which waits for the reveal): a card
    # pulled together with its last card is still an extra card (R10.2, R10.3).
    closed = book.round is not current or current.complete()
    book.last_draw_closed_round = current.number if closed else None


def _burn(ctx: Context, draw: Draw) -> None:
    book = ctx.book
    burn = book.burn
    if burn is None:
        raise BugError("burning without a burn")
    burn.add(draw)
    book.burned += 1
    if burn.done:
        book.burn = None
        book.last_winner = None  # the burn moved the table on from the last result
        _emit_burned(ctx, burn)
        ctx.go("burn_done")


def emit_card_tags(ctx: Context) -> None:
    """`surveillance.card_tags` for the cards whose tags are not published yet and whose
    identity is public now, each with its place in the shoe (`seq`); the others wait, so a
    tag never comes before its card's reveal (R15: a tag seen in the previous shoe would name
    it). Emitted before the burn's or the round's end, which the shuffle watch reads them at."""
    book = ctx.book
    shown = [draw for draw in book.untagged if draw.public() is not None]
    if not shown:
        return
    book.untagged = [draw for draw in book.untagged if draw.public() is None]
    cards = [{"seq": draw.seq, "card": draw.public(), "uid": draw.uid} for draw in shown]
    ctx.emit(EventType.SURVEILLANCE_CARD_TAGS, {"cards": cards}, round_number=None)


def _emit_burned(ctx: Context, burn: BurnBook) -> None:
    emit_card_tags(ctx)
    data = {
        "first_card": burn.first_card(),
        "count": len(burn.cards),
        "cards": [draw.public() for draw in burn.cards],
    }
    ctx.emit(EventType.SHOE_BURNED, data, round_number=None)


def _burn_on_shoe_word(ctx: Context, draw: Draw) -> None:
    """The shoe reported the card as burned (its burn mode): it is part of no round."""
    book = ctx.book
    book.burned += 1
    if book.round is not None:
        ctx.alert(
            "burn_in_round",
            f"the shoe burned {draw.label} during round {book.round.number}: it is not"
            " part of the round",
            True,
        )
    _emit_burned(ctx, BurnBook(kind="round", target=1, cards=[draw]))


def _early_card(ctx: Context, draw: Draw) -> None:
    """R17, R10.1: the round's first card came before its bets closed (table/betting.py)."""
    book = ctx.book
    book.last_draw_closed_round = None
    if ctx.config.early_card == EARLY_CARD_VOID:
        ctx.alert(EARLY_CARD, early_voided_text(ctx, draw), False)
        void_round(ctx, EARLY_CARD)
    else:
        hold_early(ctx, draw)


def _open_round(ctx: Context, first: Draw) -> bool:
    """Open the next round with its first card; True when that card came before the round's
    bets closed (betting.start_round)."""
    book, config = ctx.book, ctx.config
    book.rounds_started += 1
    trial = book.trial_pending > 0  # R2.3
    if trial:
        book.trial_pending -= 1
        book.trial_dealt += 1
    else:
        book.real_rounds += 1
    big_small_open = not trial and (
        ctx.continuous or book.real_rounds <= config.big_small_last_round
    )  # R14.1; a shuffler-dealer has no shoe to run down
    current = RoundBook(number=book.rounds_started, trial=trial, big_small_open=big_small_open)
    book.round = current
    book.finished = None
    book.last_winner = None
    ctx.go("open_round")
    first_round(ctx)  # the shoe's first: the downtime before it is over
    early = start_round(ctx, current)
    data = {"trial": trial, "big_small_open": big_small_open}
    ctx.emit(EventType.ROUND_STARTED, {**data, **started_data(ctx, current, first)})
    return early


def _announce(ctx: Context, position: Position, draw: Draw) -> None:
    current = ctx.book.round
    if current is None:
        raise BugError("announcing a card outside a round")
    # R15: in squeeze mode a card's identity only ever comes with card.revealed.
    card = None if embargoed(ctx, draw) else draw.public()
    data = {"position": position.value, "card": card, "face_up": draw.face_up}
    ctx.emit(EventType.CARD_DEALT, data)
    current.announced[position.value] = (draw.seq, draw.card)
    if draw.revealed and embargoed(ctx, draw):  # announced again after it was opened
        ctx.emit(EventType.CARD_REVEALED, {"position": position.value, "card": str(draw.card)})


def _place(ctx: Context, draw: Draw) -> None:
    """Put the card on the position that is due (R7, R9) and go on."""
    current = ctx.book.round
    if current is None:
        raise BugError("placing a card outside a round")
    position = current.next_position()
    if position is None:
        raise BugError(f"round {current.number} is complete, {draw.label} has no position")
    current.draws.append(draw)
    draw.revealed = not embargoed(ctx, draw)
    _announce(ctx, position, draw)
    if draw.face_up and not ctx.continuous:
        ctx.alert(
            "face_up_card",
            f"{draw.describe()} came out of the shoe face up at {position.value} (R4): the"
            " card stands and the round goes on; insurance is void this round (R16.9)",
            False,
        )
        void_all(ctx, "face_up_card")
    if draw.missed:
        void_all(ctx, "missed_scan")  # R10.5, R16.9
    if draw.multi:
        ctx.alert(
            "multi_draw",
            f"cards pulled together (R10.2): {draw.describe()} goes to {position.value}",
            True,
        )
    _continue_round(ctx)


def _continue_round(ctx: Context) -> None:
    """Bring the lifecycle in line with the round's cards: reveal, result or insurance."""
    current = ctx.book.round
    if current is None or ctx.state not in (DEALING, INSURANCE, REVEAL):
        return
    if ctx.state == INSURANCE:
        if current.open_offers():
            return  # the next card waits for the window (R16.8)
        ctx.go("close_insurance")
    if third_cards_secret(current):
        if ctx.state == DEALING:
            ctx.go("await_reveal")  # R15: nothing more until the cards are open
        return
    if ctx.state == REVEAL:
        ctx.go("revealed")
    if current.complete():
        _finish_round(ctx)
        return
    offers = due_offers(ctx, current)
    if offers:
        offer(ctx, current, offers)
        ctx.go("offer_insurance")


def _finish_round(ctx: Context) -> None:
    book = ctx.book
    current = book.round
    if current is None:
        raise BugError("finishing no round")
    result = outcome(current.cards())
    book.cards_in_rounds += len(current.draws)
    emit_card_tags(ctx)
    ctx.emit(EventType.ROUND_RESULT, {**result.result_data(), **result_data(ctx, current)})
    if not current.trial:
        book.road.append(
            {
                "round": current.number,
                "winner": result.winner.value,
                "player_pair": result.player_pair,
                "banker_pair": result.banker_pair,
                "natural": result.natural,
            }
        )
    book.last_winner = result.winner.value
    book.round = None
    book.finished = current
    ctx.go("finish_round")
    _after_round(ctx, current)


def _after_round(ctx: Context, finished: RoundBook) -> None:
    """The shoe ends after its last round (R3.1); else the next round's burn (R8, R10.3)."""
    book = ctx.book
    if ctx.continuous:
        book.uids.clear()  # R2.5: the cards go back into the machine after every round
        book.discarded.extend(book.pending_burn)
        book.pending_burn = []
    if book.last_round is not None and finished.number >= book.last_round:
        end_shoe(ctx, "cut_card")
        return
    cards, book.pending_burn = book.pending_burn, []
    if ctx.continuous:
        return
    target = max(ctx.config.burn_per_round, len(cards))
    if target == 0:
        return
    burn = BurnBook(kind="round", target=target, cards=cards)
    book.burned += len(cards)
    if burn.done:
        _emit_burned(ctx, burn)
        return
    book.burn = burn
    ctx.go("start_burn")


def extra(ctx: Context, draw: Draw, round_number: int) -> None:
    """R10.3: a card no position wanted becomes the next round's burn; R10.4 beyond that."""
    book = ctx.book
    # R15: a squeezed card taken out of the round before its reveal stays unnamed.
    ctx.emit(EventType.CARD_EXTRA, {"card": draw.public()}, round_number=round_number)
    count = book.extra_counts.get(round_number, 0) + 1
    book.extra_counts[round_number] = count
    capacity = max(1, ctx.config.burn_per_round)
    if count > capacity:
        ctx.alert(
            "extra_cards",
            f"{count} extra cards in round {round_number} and only {capacity} burn card(s)"
            " to absorb them (R10.4): the round is cancelled and the shoe is changed",
            True,
        )
        if book.round is not None:
            void_round(ctx, "extra_cards", then_continue=False)
        elif book.finished is not None and book.finished.number == round_number:
            _withdraw_result(ctx, book.finished, "extra_cards")
        end_shoe(ctx, "misdeal")
        return
    if book.round is not None and book.round.number == round_number:
        book.pending_burn.append(draw)
    elif ctx.continuous:
        book.discarded.append(draw)  # R2.5: back into the machine
    else:
        book.burned += 1  # the round is over: burned at once for the next round
        _emit_burned(ctx, BurnBook(kind="round", target=1, cards=[draw]))


def _withdraw_result(ctx: Context, finished: RoundBook, reason: str) -> None:
    """R10.4: a round cancelled after its result: `round.voided` with its cards withdraws
    the result (bets are returned), and it leaves the road."""
    book = ctx.book
    cards = [draw.public() for draw in finished.draws]
    emit_card_tags(ctx)
    ctx.emit(
        EventType.ROUND_VOIDED, {"reason": reason, "cards": cards}, round_number=finished.number
    )
    book.road = [entry for entry in book.road if entry["round"] != finished.number]
    book.finished = None
    book.last_winner = None


def relayout(ctx: Context, draws: list[Draw], reason: str) -> bool:
    """Lay the round's cards out again in dealing order (R10.1, R10.5); False if the shoe
    ended because of the extra cards this left (R10.4)."""
    book = ctx.book
    current = book.round
    if current is None:
        raise BugError("relayout outside a round")
    cards = [draw.card for draw in draws if draw.card is not None]
    if len(cards) != len(draws):
        raise BugError("relayout with unknown cards")
    taken = cards_taken(cards)
    current.draws = draws[:taken]
    positions = positions_of(cards[:taken])
    for position, draw in zip(positions, current.draws, strict=True):
        if current.announced.get(position.value) != (draw.seq, draw.card):
            _announce(ctx, position, draw)
    for name in [name for name in current.announced if name not in positions]:
        del current.announced[name]
    void_all(ctx, reason)
    for draw in draws[taken:]:
        extra(ctx, draw, current.number)
        if ctx.book is not book:
            return False
    return True


def void_round(
    ctx: Context, reason: str, *, then_continue: bool = True, with_cards: list[Draw] | None = None
) -> None:
    book = ctx.book
    current = book.round
    if current is None:
        raise BugError("voiding no round")
    void_open(ctx, "round_voided")
    # R15: queued cards were never placed; in a squeezed round they would have been hidden.
    queued = [None if embargoed(ctx, draw) else draw.public() for draw in with_cards or []]
    cards = [*(draw.public() for draw in current.draws), *queued]
    book.cards_in_rounds += len(cards)
    data = {"reason": reason, "cards": cards, **voided_data(ctx, current)}
    emit_card_tags(ctx)
    ctx.emit(EventType.ROUND_VOIDED, data)
    book.round = None
    book.last_winner = None
    book.last_draw_closed_round = None
    ctx.go("void_round")
    if then_continue:
        _after_round(ctx, current)
    elif ctx.continuous:
        book.uids.clear()


def void_with_queue(ctx: Context, reason: str) -> None:
    """Void the round with the cards held or drawn during a hold (R10.1)."""
    book = ctx.book
    lift(ctx)
    discarded: list[Draw] = []
    for item in list(book.queue):
        if isinstance(item, CutMarker):
            cut_card(ctx, item.after)  # it came out during this round (R3.1)
        else:
            discarded.append(item)
    book.queue.clear()
    book.cut_pending = False
    book.holds[:] = [hold for hold in book.holds if hold.kind == HoldKind.PLAIN]
    void_round(ctx, reason, with_cards=discarded)
    settle(ctx)
