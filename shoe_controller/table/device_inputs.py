"""What the table does with each input from a device: cards, counters, the cut card, the shoe's
state and buttons, the shuffler's reports, faults, and devices coming and going.

One function per input type; `procedures.Table` dispatches by type. Every refusal is one alert
and changes nothing (context.refuse).
"""

from __future__ import annotations

from shoe_controller.table.betting import on_no_more_bets
from shoe_controller.table.books import CutMarker, Draw
from shoe_controller.table.context import Context
from shoe_controller.table.dealing import admit, settle
from shoe_controller.table.device_counters import (
    Refusal,
    card_gap,
    counter_after_missed,
    cut_disagreement,
    missed_problem,
    suspected_double_read,
)
from shoe_controller.table.holds import fault_cleared, has_hold, held_text, hold
from shoe_controller.table.insurance import close_open
from shoe_controller.table.lifecycle import BLOCKED, INSURANCE
from shoe_controller.table.shoes import cannot_open, cut_card, open_shoe
from shoe_controller.table.squeeze import reveal
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import (
    Button,
    ButtonPressed,
    CardDrawn,
    CardsMissed,
    ControllerStarted,
    CutCardSeen,
    DeviceConnected,
    DeviceFault,
    DeviceFaultCleared,
    DeviceLost,
    ShoeState,
    ShoeStateChanged,
    ShuffleDone,
    ShuffleStarted,
)
from shoe_controller.vocab.protocol import SHUFFLER_FAULTS, FaultCode

_DEVICE_IDENTITY = ("kind", "vendor", "model", "serial", "firmware")  # PUSH_API device.*


def on_card(ctx: Context, item: CardDrawn) -> None:
    book = ctx.book
    if not book.open:
        ctx.refuse(
            "no_shoe",
            "a card was drawn but no shoe is open: load the shoe (or"
            " supervisor start_shoe) before dealing",
            True,
        )
        return
    gap = card_gap(ctx, item)
    if isinstance(gap, Refusal):
        ctx.refuse(*gap)
        return
    # A gap the driver did not report is a missed scan all the same (R10.5).
    draws = [_missed_draw(ctx, _counter_before(item.counter, gap - index)) for index in range(gap)]
    draw = Draw(
        seq=book.drawn + 1,
        card=item.card,
        counter=item.counter,
        at=item.at,
        uid=item.uid,
        face_up=item.face_up,
        low_confidence=item.low_confidence,
        multi=item.multi,
        burn=item.burn,
        foreign=item.foreign,
        duplicate=item.duplicate,
        double_read=suspected_double_read(ctx, item),
    )
    book.drawn += 1
    if item.counter is not None:
        book.counter = item.counter
    elif book.counter is not None:
        book.counter += 1  # the table's own count goes on where the shoe sends none
    book.last_read = draw
    run = book.factory.feed(None if item.foreign else item.card)
    admit(ctx, [*draws, draw], factory_run=run)


def _counter_before(counter: int | None, back: int) -> int | None:
    return None if counter is None else counter - back


def _missed_draw(ctx: Context, counter: int | None) -> Draw:
    """A card out of the shoe the scanner never saw: a placeholder for the supervisor."""
    book = ctx.book
    draw = Draw(seq=book.drawn + 1, card=None, counter=counter, missed=True)
    book.drawn += 1
    book.factory.feed(None)
    return draw


def on_missed(ctx: Context, item: CardsMissed) -> None:
    book = ctx.book
    if not book.open:
        ctx.refuse("no_shoe", "the shoe reported missed cards but no shoe is open", True)
        return
    if not 1 <= item.count <= ctx.config.cards_in_shoe:
        ctx.refuse(
            "invalid_input",
            f"cards_missed count must be 1 to {ctx.config.cards_in_shoe}, got {item.count}",
            True,
        )
        return
    problem = missed_problem(ctx, item)
    if problem is not None:
        ctx.refuse(*problem)
        return
    after = counter_after_missed(ctx, item)
    draws = [
        _missed_draw(ctx, _counter_before(after, item.count - 1 - n)) for n in range(item.count)
    ]
    book.counter = after
    admit(ctx, draws)


def on_cut(ctx: Context, item: CutCardSeen) -> None:
    book = ctx.book
    if not book.open:
        ctx.refuse("no_shoe", "the cut card came out but no shoe is open", True)
    elif ctx.continuous:
        ctx.refuse("no_cut_card", "a shuffler-dealer machine has no cut card (R2.5)", True)
    elif book.cut_after is not None or book.cut_pending:
        ctx.refuse("cut_card_repeated", "the cut card already came out in this shoe", True)
    elif item.counter is not None and not 0 <= item.counter <= ctx.config.cards_in_shoe:
        ctx.refuse(
            "invalid_input",
            f"the cut card came out after card {item.counter}, but the shoe holds"
            f" {ctx.config.cards_in_shoe} cards: a device fault; supervisor: check the shoe",
            True,
        )
    else:
        disagreement = cut_disagreement(ctx, item)
        if disagreement is not None:
            ctx.alert("cut_card_counter", disagreement, True)
        if book.queue:
            book.queue.append(CutMarker(book.drawn))  # behind the cards drawn before it
            book.cut_pending = True
        else:
            cut_card(ctx, book.drawn)


def on_shoe_state(ctx: Context, item: ShoeStateChanged) -> None:
    book = ctx.book
    state = item.state
    if state == ShoeState.LOADED:
        if book.open:
            if has_hold(ctx, "shoe_removed") or has_hold(ctx, "shoe_empty"):
                book.counter = 0  # back in: its counter starts again at 1 (docs/spec-protocol.md)
                return  # the supervisor resumes (or changes the shoe)
            ctx.refuse(
                "shoe_already_open",
                f"a shoe was loaded while shoe {book.number}"
                " is open: supervisor change_shoe to start a new shoe",
                True,
            )
        elif book.holds:
            ctx.refuse("table_held", held_text(ctx), True)
        else:
            problem = cannot_open(ctx, by_supervisor=False)
            if problem is not None:
                ctx.refuse(problem[0], problem[1], True)
            else:
                open_shoe(ctx)
                book.counter = 0  # the first card after SHOE loaded is 1 (docs/spec-protocol.md)
    elif state in (ShoeState.REMOVED, ShoeState.EMPTY):
        code = "shoe_removed" if state == ShoeState.REMOVED else "shoe_empty"
        if book.open and not has_hold(ctx, code):
            hold(
                ctx,
                code,
                f"the shoe is {'removed' if code == 'shoe_removed' else 'empty'}"
                f" while shoe {book.number} is open: supervisor: resume once it is"
                " back, or change_shoe",
            )
    elif state == ShoeState.COVER_OPEN and book.open and not has_hold(ctx, "cover_open"):
        hold(
            ctx,
            "cover_open",
            "the shoe's cover opened while the shoe is in play:"
            " supervisor: check the cards, then resume",
        )


def on_button(ctx: Context, item: ButtonPressed) -> None:
    book = ctx.book
    if item.button == Button.CALL_SUPERVISOR:
        ctx.alert("supervisor_called", f"the dealer calls the supervisor ({item.device})", True)
        return
    if item.button == Button.NO_MORE_BETS:
        on_no_more_bets(ctx, item)  # it deals nothing: also while the table is held
        return
    if ctx.held:
        ctx.refuse("table_held", held_text(ctx))
        return
    current = book.round
    if ctx.config.squeeze and current is not None and current.hidden():
        reveal(ctx)
        settle(ctx)
    elif ctx.state == INSURANCE:
        close_open(ctx, "dealer")
        settle(ctx)
    else:
        ctx.refuse(
            "nothing_to_reveal",
            "REVEAL pressed with no squeezed card to reveal and no insurance window to close",
        )


def on_shuffle_started(ctx: Context, item: ShuffleStarted) -> None:
    ctx.prep_go("shuffle_started")


def on_shuffle_done(ctx: Context, item: ShuffleDone) -> None:
    config, book = ctx.config, ctx.book
    shoe = ctx.shoe_of(item)
    if ctx.continuous:
        # a shuffler-dealer counts from 1 after SHUFFLE_DONE (docs/spec-protocol.md)
        book.counter = 0
    problems = [str(problem) for problem in item.problems]
    if item.decks != config.decks:
        problems.append(f"{item.decks} decks shuffled, {config.decks} configured")
    if item.total != config.cards_in_shoe:
        problems.append(f"{item.total} cards counted, {config.cards_in_shoe} expected")
    ok = item.ok and item.decks == config.decks and item.total == config.cards_in_shoe
    ctx.emit(
        EventType.SHOE_SHUFFLED,
        {
            "decks": item.decks,
            "total": item.total,
            "ok": ok,
            "problems": problems,
        },
        round_number=None,
        shoe=shoe,
    )
    if not ok:
        ctx.prep_go("check_failed")
        text = (
            f"deck check failed ({'; '.join(problems) or 'no detail'}): the shoe cannot"
            " start until new cards pass a deck check (R10.6)"
        )
        if ctx.continuous and book.open:
            if not has_hold(ctx, "deck_check_failed"):
                hold(ctx, "deck_check_failed", text)
        else:
            ctx.alert("deck_check_failed", text, True, shoe=shoe)
        return
    if ctx.preparation == BLOCKED:
        ctx.alert(
            "reshuffle_needed",
            "this deck check passed, but the cards were blocked"
            " before this shuffle began (R10.6): shuffle the new cards again",
            True,
            shoe=shoe,
        )
        return
    ctx.prep_go("check_passed")
    if ctx.continuous and not book.open and not book.holds:
        open_shoe(ctx)  # R2.5: the machine deals from its own check


def on_fault(ctx: Context, item: DeviceFault) -> None:
    book = ctx.book
    key = (item.device, item.code)
    record = {
        "device": item.device,
        "code": item.code,
        "severity": item.severity,
        "text": item.text,
    }
    # Events come from the input alone (a replay must give the same ones): a fault the
    # device reports again (after a status request) is reported again.
    ctx.devices.faults[key] = record
    ctx.emit(EventType.DEVICE_FAULT, dict(record), shoe=ctx.shoe_of(item))
    if item.code == FaultCode.TAMPER:
        if not has_hold(ctx, "tamper", key):
            hold(
                ctx,
                "tamper",
                f"{item.device} reports tampering: {item.text}",
                security=True,
                fault=key,
                details={"device": item.device, "fault": item.code, "text": item.text},
            )
    elif item.code == FaultCode.CARD_DROPPED_DURING_SHUFFLE:
        text = (
            f"a card was lost during the shuffle ({item.device}): new cards, a full"
            " reshuffle and a passing deck check are needed (R10.6)"
        )
        if ctx.continuous and book.open:
            if not has_hold(ctx, "card_lost", key):
                hold(ctx, "card_lost", text, fault=key)
        elif ctx.preparation != BLOCKED:
            ctx.alert("card_lost", text, True, shoe=ctx.shoe_of(item))
        ctx.prep_go("check_failed")
    elif item.code in SHUFFLER_FAULTS:
        return  # the shuffler's own deck check decides about its cards
    elif item.severity >= 2 and book.open and not has_hold(ctx, "device_fault", key):
        hold(
            ctx,
            "device_fault",
            f"{item.device} fault {item.code:#06x}: {item.text}"
            " while the shoe is in play: supervisor: resume once it is cleared",
            fault=key,
        )


def on_fault_cleared(ctx: Context, item: DeviceFaultCleared) -> None:
    fault_cleared(ctx, (item.device, item.code))


def on_connected(ctx: Context, item: DeviceConnected) -> None:
    record = {
        "kind": item.kind,
        "vendor": item.vendor,
        "model": item.model,
        "serial": item.serial,
        "firmware": item.firmware,
    }
    ctx.devices.devices[item.device] = {**record, "connected": True}
    ctx.emit(EventType.DEVICE_CONNECTED, {"device": item.device, **record})


def on_lost(ctx: Context, item: DeviceLost) -> None:
    if item.device in ctx.devices.devices:
        ctx.devices.devices[item.device]["connected"] = False
    # DEVICE_LOST carries no identity, and the events may depend on the input alone (a
    # replay must give the same event): PUSH_API's identity fields stay empty.
    data = {"device": item.device, **dict.fromkeys(_DEVICE_IDENTITY, "")}
    ctx.emit(EventType.DEVICE_LOST, data)
    if ctx.book.open:
        ctx.alert(
            "device_lost",
            f"{item.device} is lost while shoe {ctx.book.number}"
            " is in play: stop dealing until it is back; cards drawn meanwhile"
            " come back as missed cards (R10.5)",
            True,
        )


def on_started(ctx: Context, item: ControllerStarted) -> None:
    ctx.devices.devices.clear()  # the devices report themselves again after a restart
    ctx.devices.faults.clear()
    ctx.emit(
        EventType.CONTROLLER_STARTED,
        {"version": item.version, "boot": item.boot, "recovered": item.recovered},
    )
