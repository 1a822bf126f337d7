"""A shoe's life: opened (R2), its cut card (R2.1, R3.1), and its end (R3).

What may open a shoe (a passing deck check, R2.4, R10.6) and what a shoe's opening and ending
emit. The rounds in between are dealing.py's.
"""

from __future__ import annotations

from shoe_controller.table.books import BurnBook, Draw, ShoeBook
from shoe_controller.table.config import BURN_DECKS, FINISH_CURRENT, MANUAL
from shoe_controller.table.context import BugError, Context
from shoe_controller.table.lifecycle import BLOCKED, CHECKED, SHUFFLING, UNCHECKED
from shoe_controller.table.shoe_times import ended_data, shoe_opened
from shoe_controller.vocab.events import EventType


def cut_card(ctx: Context, after: int) -> None:
    """R3.1 and R2.1: the cut card came out after `after` cards (the table's count); the last
    round is decided now."""
    book, config = ctx.book, ctx.config
    book.cut_after = after
    behind = config.cards_in_shoe - after
    # The round in progress is the one still waiting for cards; a squeezed round whose
    # cards are all out (waiting for the reveal) is behind the cut card already.
    dealing = book.round is not None and not book.round.complete()
    current = book.round.number if dealing and book.round else book.rounds_started + 1
    book.last_round = current if config.cut_card == FINISH_CURRENT else current + 1
    if config.mode == MANUAL and behind >= config.min_cards_behind_cut:
        ctx.emit(EventType.SHOE_CUT, {"cards_behind_cut": behind})
    ctx.emit(EventType.SHOE_CUT_CARD, {"after_card": after})
    if behind < config.min_cards_behind_cut:
        ctx.alert(
            "cut_card_too_late",
            f"only {behind} cards lay behind the cut card; at least"
            f" {config.min_cards_behind_cut} are required (R2.1)",
            True,
        )


def open_shoe(ctx: Context) -> None:
    book, config = ctx.book, ctx.config
    book.open = True
    ctx.prep_go("shoe_opened")  # never blocked here: cannot_open refused that
    shoe_opened(ctx)
    if config.mode == MANUAL:
        # R2.1: the dealer shuffled and cut by hand; there is no deck check to report.
        ctx.emit(
            EventType.SHOE_SHUFFLED,
            {
                "decks": config.decks,
                "total": config.cards_in_shoe,
                "ok": True,
                "problems": [],
            },
            round_number=None,
        )
    if ctx.continuous:
        ctx.go("load_continuous")  # R2.5: no cut, no burn
        return
    target = config.decks if config.burn == BURN_DECKS else None
    book.burn = BurnBook(kind=config.burn, target=target)
    ctx.go("load")


def end_shoe(ctx: Context, reason: str) -> None:
    book = ctx.book
    if book.round is not None:
        raise BugError("ending a shoe with a round in progress")
    leftovers = [item for item in book.queue if isinstance(item, Draw)]
    if leftovers:
        ctx.alert(
            "cards_after_end",
            f"{len(leftovers)} card(s) drawn but not dealt when shoe {book.number} ended are"
            " out of play",
            True,
        )
    ctx.emit(
        EventType.SHOE_ENDED,
        {
            "rounds": book.rounds_started,
            "cards_dealt": book.drawn,
            "reason": reason,
            **ended_data(ctx),
        },
        round_number=None,
    )
    ctx.go("end_shoe")
    if ctx.held:
        ctx.hold_go("end_shoe")  # its holds end with it
    ctx.book = ShoeBook(number=book.number + 1)
    if ctx.continuous and ctx.preparation != UNCHECKED:
        ctx.prep_go("forget")  # the next set of cards needs the machine's own check


def cannot_open(ctx: Context, *, by_supervisor: bool) -> tuple[str, str] | None:
    """Why a shoe may not start now (R2.4, R10.6), or None."""
    prep = ctx.preparation
    if prep == BLOCKED:
        return (
            "deck_blocked",
            "the deck check of these cards failed or a card was lost"
            " in the shuffle (R10.6): new cards and a passing deck check are needed",
        )
    if prep == SHUFFLING and ctx.config.mode != MANUAL:
        return ("shuffle_unfinished", "the shuffler has not finished its deck check")
    if ctx.config.mode != MANUAL and prep != CHECKED and not by_supervisor:
        return (
            "no_deck_check",
            "no passing deck check from the shuffler for this shoe"
            " (R2.4, R2.5): shuffle the cards, or supervisor start_shoe",
        )
    return None
