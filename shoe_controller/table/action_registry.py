"""Supervisor commands: who acts and why, the arguments, and the registry of what each action does.

`action_specs.ACTIONS` says what an action is (its name, help and arguments: what the control
socket and shoectl read); `HANDLERS` here says what it does, as a pair (check, do). Adding an
action is one `Action` entry, a `check_*` and a `do_*` function, and one line below; a test
keeps the two registries equal.

A command is checked once: `action_specs.screen` says why it is no command the table can
judge (an action it does not know, no one who acts, no reason), the same rule the control
socket asks before it stores anything and shoectl's options follow (`action_specs.said`);
`on_supervisor` journals that refusal, or the action's own (`check`), when one reaches the
table. A command sent again is
answered before it is stored, by its key (`JournalReader.command_outcome`, the control
socket's); the shoe's `command_keys` refuse one that lookup could not see.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from shoe_controller.table import card_actions, shoe_actions
from shoe_controller.table.action_specs import ACTIONS, CommandError, parse_args, screen
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
    refusal = screen(command, clocked=ctx.config.clocked)
    if refusal:
        ctx.refuse("command_refused", refusal)
        return
    action = ACTIONS[command.action]
    if action.clocked and not ctx.config.clocked:
        ctx.refuse(
            "command_refused",
            f"{action.name} refused: this table keeps no round clock ([table] betting ="
            ' "none" and clock = false; docs/table.md "Betting")',
        )
        return
    try:
        args = parse_args(action, command.args)
    except CommandError as error:
        ctx.refuse("command_refused", f"{action.name} refused: {error}")
        return
    if command.key and command.key in ctx.book.command_keys:
        # The same command again, which the journal's lookup before storing did not see (a
        # dealer message's nonce after a restart): done once in the shoe, and so on replay.
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
