"""Supervisor commands: who acts and why, the arguments, and the registry of what each action does.

`action_specs.ACTIONS` says what an action is (its name, help and arguments: what the control
socket and shoectl read); `HANDLERS` here says what it does, as a pair (check, do). Adding an
action is one `Action` entry, a `check_*` and a `do_*` function, and one line below; a test
keeps the two registries equal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from shoe_controller.table import card_actions, shoe_actions
from shoe_controller.table.action_specs import ACTIONS, CommandError, parse_args
from shoe_controller.table.context import Context
from shoe_controller.vocab.inputs import SupervisorCommand

Check = Callable[[Context, dict[str, Any]], str | None]
Do = Callable[[Context, SupervisorCommand, dict[str, Any]], None]


class Handler(NamedTuple):
    """What an action does: `check` says why it is refused now (or None), `do` carries it out
    once the check passed."""

    check: Check
    do: Do


HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        "start_shoe": Handler(shoe_actions.check_start_shoe, shoe_actions.do_start_shoe),
        "trial": Handler(shoe_actions.check_trial, shoe_actions.do_trial),
        "end_trial": Handler(shoe_actions.check_end_trial, shoe_actions.do_end_trial),
        "confirm": Handler(card_actions.check_confirm, card_actions.do_confirm),
        "discard": Handler(card_actions.check_discard, card_actions.do_discard),
        "correct": Handler(card_actions.check_correct, card_actions.do_correct),
        "missed": Handler(card_actions.check_missed, card_actions.do_missed),
        "extra": Handler(card_actions.check_extra, card_actions.do_extra),
        "void": Handler(shoe_actions.check_void, shoe_actions.do_void),
        "accept": Handler(shoe_actions.check_accept, shoe_actions.do_accept),
        "change_shoe": Handler(shoe_actions.check_change_shoe, shoe_actions.do_change_shoe),
        "resume": Handler(shoe_actions.check_resume, shoe_actions.do_resume),
        "hold": Handler(shoe_actions.check_hold, shoe_actions.do_hold),
        "reveal": Handler(shoe_actions.check_reveal, shoe_actions.do_reveal),
        "close_insurance": Handler(
            shoe_actions.check_close_insurance, shoe_actions.do_close_insurance
        ),
        "dealer": Handler(shoe_actions.check_dealer, shoe_actions.do_dealer),
    }
)


def on_supervisor(ctx: Context, command: SupervisorCommand) -> None:
    """Carry out a supervisor command, or refuse it with one alert saying why."""
    action = ACTIONS.get(command.action) if isinstance(command.action, str) else None
    if action is None:
        offered = [
            name for name, known in ACTIONS.items() if ctx.config.clocked or not known.clocked
        ]
        ctx.refuse(
            "command_refused",
            f"unknown action {command.action!r}; the actions are: {', '.join(offered)}",
        )
        return
    if action.clocked and not ctx.config.clocked:
        ctx.refuse(
            "command_refused",
            f"{action.name} refused: this table keeps no round clock ([table] betting ="
            ' "none" and clock = false; docs/table.md "Betting")',
        )
        return
    if not isinstance(command.by, str) or not command.by.strip():
        ctx.refuse(
            "command_refused",
            f"{action.name} refused: who acts? `by` (the supervisor's id) is required",
        )
        return
    if not isinstance(command.reason, str) or not command.reason.strip():
        ctx.refuse("command_refused", f"{action.name} refused: a reason is required")
        return
    try:
        args = parse_args(action, command.args)
    except CommandError as error:
        ctx.refuse("command_refused", f"{action.name} refused: {error}")
        return
    if command.key and command.key in ctx.book.command_keys:
        # The same command again (a client retrying after an unknown outcome): done once.
        ctx.refuse(
            "command_refused",
            f"{action.name} refused: this command (key {command.key}) was carried out already",
        )
        return
    handler = HANDLERS[action.name]
    refusal = handler.check(ctx, args)
    if refusal:
        ctx.refuse("command_refused", f"{action.name} refused: {refusal}")
        return
    book = ctx.book  # the shoe the command was given in (it may end it)
    handler.do(ctx, command, args)
    if command.key:
        book.command_keys.add(command.key)
