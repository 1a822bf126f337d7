"""Supervisor actions on the shoe and the table: start_shoe, trial, end_trial, void, accept,
change_shoe, resume, hold, reveal, close_insurance, dealer.

Each action is a pair `check_*` (why it is refused now, or None) and `do_*` (carry it out,
after the check passed); action_registry.py's registry names them.
"""

from __future__ import annotations

from typing import Any

from shoe_controller.table.betting import EARLY_CARD
from shoe_controller.table.books import Draw, HoldKind
from shoe_controller.table.config import FINISH_CURRENT
from shoe_controller.table.context import Context
from shoe_controller.table.dealing import release, settle, void_round, void_with_queue
from shoe_controller.table.holds import (
    fault_cleared,
    has_hold,
    held_text,
    hold,
    host_faults_behind,
    lift,
)
from shoe_controller.table.insurance import close_open
from shoe_controller.table.lifecycle import INSURANCE
from shoe_controller.table.shoes import cannot_open, end_shoe, open_shoe
from shoe_controller.table.squeeze import reveal
from shoe_controller.vocab.inputs import SupervisorCommand


def check_start_shoe(ctx: Context, args: dict[str, Any]) -> str | None:
    if ctx.book.open:
        return f"shoe {ctx.book.number} is open; change_shoe ends it"
    if ctx.book.holds:
        return held_text(ctx)
    problem = cannot_open(ctx, by_supervisor=True)
    return problem[1] if problem else None


def do_start_shoe(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    ctx.acknowledge(command, {"shoe": ctx.book.number})
    open_shoe(ctx)


def check_trial(ctx: Context, args: dict[str, Any]) -> str | None:
    book, limit = ctx.book, ctx.config.max_trial_rounds
    if book.real_rounds > 0:
        return (
            f"trial rounds come only before the shoe's first real round (R2.3);"
            f" {book.real_rounds} real round(s) started"
        )
    if book.trial_dealt + book.trial_pending + args["rounds"] > limit:
        return (
            f"at most {limit} trial round(s) per shoe (R2.3): {book.trial_dealt} dealt,"
            f" {book.trial_pending} requested, {args['rounds']} more asked"
        )
    return None


def do_trial(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    book = ctx.book
    book.trial_pending += args["rounds"]
    ctx.acknowledge(
        command,
        {"rounds": args["rounds"], "pending": book.trial_pending, "dealt": book.trial_dealt},
    )


def check_end_trial(ctx: Context, args: dict[str, Any]) -> str | None:
    book = ctx.book
    if (book.round is None or not book.round.trial) and book.trial_pending == 0:
        return "no trial round is in progress or requested"
    return None


def do_end_trial(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    book = ctx.book
    in_progress = book.round is not None and book.round.trial
    ctx.acknowledge(
        command,
        {
            "cancelled": book.trial_pending,
            "round": book.round.number if in_progress and book.round else None,
        },
    )
    book.trial_pending = 0
    if in_progress:
        void_with_queue(ctx, "trial_ended")


def check_void(ctx: Context, args: dict[str, Any]) -> str | None:
    book = ctx.book
    if book.round is None:
        return "no round is in progress to void"
    ends_shoe = (book.last_round is not None and book.round.number >= book.last_round) or (
        book.cut_pending and ctx.config.cut_card == FINISH_CURRENT
    )
    lingering = [hold.code for hold in book.holds if hold.kind == HoldKind.PLAIN]
    if ends_shoe and lingering:
        # The holds would go with the shoe, and the next shoe would open over them.
        return (
            f"voiding the shoe's last round ends the shoe while {', '.join(lingering)}"
            " holds the table: resume first, or change_shoe"
        )
    return None


def do_void(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    current = ctx.book.round
    ctx.acknowledge(command, {"round": current.number if current else None})
    void_with_queue(ctx, "supervisor")


def check_accept(ctx: Context, args: dict[str, Any]) -> str | None:
    if not has_hold(ctx, EARLY_CARD):
        return "no round waits for a decision on a card pulled while bets were open"
    return None


def do_accept(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    """R17: the supervisor saw the early card was fair: the round goes on."""
    book = ctx.book
    early = [hold for hold in book.holds if hold.code == EARLY_CARD]
    ctx.acknowledge(command, {"round": book.round.number if book.round else None})
    release(ctx, early)


def check_change_shoe(ctx: Context, args: dict[str, Any]) -> str | None:
    return None if ctx.book.open else "no shoe is open"


def do_change_shoe(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    book = ctx.book
    ctx.acknowledge(command, {"shoe": book.number, "misdeal": args["misdeal"]})
    lift(ctx)
    if book.round is not None:
        queued = [item for item in book.queue if isinstance(item, Draw)]
        book.queue.clear()
        void_round(ctx, "shoe_changed", then_continue=False, with_cards=queued)
    if any(hold.security for hold in book.holds):
        # docs/spec-push-api.md: the shoe ended over a foreign/duplicate card...
        reason = "security"
    else:
        reason = "misdeal" if args["misdeal"] else "supervisor"
    end_shoe(ctx, reason)


def check_resume(ctx: Context, args: dict[str, Any]) -> str | None:
    holds = ctx.book.holds
    plain = [hold for hold in holds if hold.kind == HoldKind.PLAIN]
    if not plain:
        waiting = ", ".join(hold.code for hold in holds)
        if has_hold(ctx, EARLY_CARD):
            return f"the hold ({waiting}) waits for a decision on the round: void or accept"
        return (
            "nothing to resume"
            if not waiting
            else f"the hold ({waiting}) waits for a card decision: confirm or discard"
        )
    active = [hold for hold in plain if hold.fault_active]
    if active:
        hold = active[0]
        device, code = hold.fault or ("?", 0)
        return f"{device} fault {code:#06x} behind the {hold.code} hold is still active"
    return None


def do_resume(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    plain = [hold for hold in ctx.book.holds if hold.kind == HoldKind.PLAIN]
    ctx.acknowledge(command, {"released": [hold.code for hold in plain]})
    for key in host_faults_behind(plain):
        fault_cleared(ctx, key)  # no device will: the supervisor decided
    release(ctx, plain)


def check_hold(ctx: Context, args: dict[str, Any]) -> str | None:
    return "the supervisor already holds the table" if has_hold(ctx, "supervisor_hold") else None


def do_hold(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    ctx.acknowledge(command, {})
    hold(ctx, "supervisor_hold", f"held by {command.by}: {command.reason}")


def check_reveal(ctx: Context, args: dict[str, Any]) -> str | None:
    if ctx.book.holds:
        return held_text(ctx)
    current = ctx.book.round
    if not ctx.config.squeeze or current is None or not current.hidden():
        return "no squeezed card waits for the reveal"
    return None


def do_reveal(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    ctx.acknowledge(command, {})
    reveal(ctx)
    settle(ctx)


def check_close_insurance(ctx: Context, args: dict[str, Any]) -> str | None:
    if ctx.state != INSURANCE:
        return "no insurance window is open"
    return None


def do_close_insurance(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    current = ctx.book.round
    windows = (
        [f"{o.offer.side.value}/{o.offer.stage}" for o in current.open_offers()] if current else []
    )
    ctx.acknowledge(command, {"windows": windows})
    close_open(ctx, "supervisor")
    settle(ctx)


def check_dealer(ctx: Context, args: dict[str, Any]) -> str | None:
    if args["id"] is None and not args["out"]:
        return "give the dealer's id to sign in (id=..), or out=true to sign out"
    return None


def do_dealer(ctx: Context, command: SupervisorCommand, args: dict[str, Any]) -> None:
    """A dealer signs in or out: only journaled and sent; the rounds are counted to the dealer
    in charge by whoever reads the events (shoectl pace, the report, the metrics)."""
    ctx.acknowledge(command, {"dealer": args["id"], "signed": "out" if args["out"] else "in"})
