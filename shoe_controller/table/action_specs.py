"""The supervisor actions the table accepts: names, arguments, and the checking of arguments.

A `SupervisorCommand` input names an action and carries its arguments as a JSON object; this
module turns them into typed values or a clear refusal, and says whether the command is one
at all (`screen`: the one check the table journals, the control socket asks before storing
and shoectl's options follow through `said`). What each action does is in
action_registry.py's `HANDLERS`; what a supervisor types is in docs/inputs.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from shoe_controller.game.rules import Position
from shoe_controller.vocab.cards import CardError, parse_card
from shoe_controller.vocab.inputs import SupervisorCommand


class CommandError(ValueError):
    """Arguments that do not fit the action."""


@dataclass(frozen=True, slots=True)
class Arg:
    name: str
    kind: str  # "card", "position", "int", "bool", "text"
    help: str
    required: bool = False
    default: Any = None
    low: int = 0
    high: int = 0


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    short: str  # one line for `shoectl --help`
    summary: str
    rules: str
    args: tuple[Arg, ...] = ()
    clocked: bool = False  # only on a table that keeps the round's clock (TableConfig.clocked)
    # Arguments of which one at least must be given (the command means nothing without).
    one_of: tuple[str, ...] = ()


_ACTIONS = (
    Action(
        "start_shoe",
        "Open a new shoe now (its SHOE loaded never came).",
        "Open a new shoe now, when the shoe is in but its SHOE loaded (or the shuffler's report)"
        " never came. Refused while the next shoe's deck check failed.",
        "R2, R10.6",
    ),
    Action(
        "trial",
        "The next round(s) are trial rounds.",
        "The next rounds are trial rounds, dealt without bets; only before the shoe's first"
        " real round, at most three in a shoe.",
        "R2.3",
        (Arg("rounds", "int", "how many trial rounds to add", default=1, low=1, high=3),),
    ),
    Action(
        "end_trial",
        "Stop the trial rounds.",
        "Stop the trials: a trial round in progress is voided (its cards are discarded) and"
        " trial rounds still requested are cancelled; the next round is real.",
        "R2.3",
    ),
    Action(
        "confirm",
        "Decide on the held card: the read stands, or give the card.",
        "Decide on the card the table holds: a low-confidence read, a foreign, duplicate or"
        " surplus card, or an unreadable card. Without a card the read stands; given a card,"
        " it is replaced (required for a card that has no identity). In squeeze mode it"
        " confirms the revealed card the table asks about.",
        "R10.1, R10.5, R15",
        (Arg("card", "card", "the card as the supervisor sees it"),),
    ),
    Action(
        "discard",
        "Take the held (or missing) card out of play.",
        "Take the held card (or the missing card) out of play: it is part of no round.",
        "R10.1",
    ),
    Action(
        "correct",
        "Correct a card of the round in progress.",
        "Correct a card of the round in progress; cards are laid out again in dealing order"
        " (cards beyond the round become extra cards) and the round's insurance is void.",
        "R10.1, R10.3",
        (
            Arg("position", "position", "P1 B1 P2 B2 P3 B3", required=True),
            Arg("card", "card", "the right card", required=True),
        ),
    ),
    Action(
        "missed",
        "Enter a card the scanner missed.",
        "Enter a card the scanner missed. When the shoe reported the gap, it fills it;"
        " otherwise its position says where it belonged: it is inserted, the round's cards are"
        " re-arranged into dealing order and the round's insurance is void.",
        "R10.5, R16.9",
        (
            Arg("card", "card", "the missed card", required=True),
            Arg("position", "position", "where it belonged (needed when no gap was reported)"),
        ),
    ),
    Action(
        "extra",
        "The last card was an extra card: next round's burn.",
        "The last card of the round in progress was an extra card: it leaves the round and"
        " becomes the next round's burn; more extras than burns can absorb end the shoe.",
        "R10.3, R10.4",
    ),
    Action(
        "void",
        "Void the round in progress.",
        "Void the round in progress (an uncorrectable misdeal): no result, bets returned;"
        " cards held or drawn during a hold go with it.",
        "R10.1",
    ),
    Action(
        "accept",
        "Let the round dealt before its bets closed go on.",
        "Let the round whose first card came while its bets were open go on (the hold for a"
        " card before bets closed): the supervisor saw it was fair; the reason says why. Void"
        " instead returns the bets.",
        "R17, R10.1",
        clocked=True,
    ),
    Action(
        "change_shoe",
        "End the shoe now; --misdeal for a dealing error.",
        "End the shoe now (the round in progress is voided); say misdeal for a shoe changed"
        " because of a dealing error.",
        "R3.2, R10.4",
        (Arg("misdeal", "bool", "the shoe ends because of a misdeal", default=False),),
    ),
    Action(
        "resume",
        "Lift the holds that need no card decision.",
        "Lift the holds that need no card decision (security, device fault, cover, shoe"
        " removed or empty, a supervisor's hold); refused while their fault is still active.",
        "R10, R17",
    ),
    Action("hold", "Stop dealing until resume.", "Stop dealing until resume.", "R10"),
    Action(
        "reveal",
        "The squeezed cards are open.",
        "The squeezed cards are open: like the shoe's REVEAL button.",
        "R15",
    ),
    Action(
        "close_insurance",
        "Close the open insurance windows.",
        "Close the open insurance windows; dealing goes on.",
        "R16.8",
    ),
    Action(
        "dealer",
        "A dealer signs in (--id) or out (--out) at this table.",
        "A dealer signs in at this table with an id, or signs out: the rounds dealt from then"
        " on count to the dealer in charge (shoectl pace, the shift report).",
        "",
        (
            Arg("id", "text", "the dealer's id, as the house names its dealers"),
            Arg("out", "bool", "the dealer signs out", default=False),
        ),
        clocked=True,
        one_of=("id", "out"),
    ),
)

ACTIONS: Mapping[str, Action] = MappingProxyType({action.name: action for action in _ACTIONS})

POSITION_NAMES = tuple(position.value for position in Position)
_TEXT = re.compile(r"[A-Za-z0-9_.@-]{1,64}")  # an id: journaled, sent, shown in one line


def parse_args(action: Action, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The action's arguments, typed, with defaults; CommandError names what is wrong."""
    if not isinstance(raw, Mapping):
        raise CommandError(f"{action.name}: arguments must be an object, got {type(raw).__name__}")
    known = {arg.name for arg in action.args}
    unknown = sorted(str(name) for name in raw if name not in known)
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise CommandError(f"{action.name}: unknown argument(s) {unknown}; allowed: {allowed}")
    values: dict[str, Any] = {}
    for arg in action.args:
        if arg.name not in raw or raw[arg.name] is None:
            if arg.required:
                raise CommandError(f"{action.name}: argument {arg.name!r} is required ({arg.help})")
            values[arg.name] = arg.default
            continue
        values[arg.name] = _convert(action, arg, raw[arg.name])
    return values


def _convert(action: Action, arg: Arg, value: Any) -> Any:
    where = f"{action.name}: argument {arg.name!r}"
    if arg.kind == "card":
        if not isinstance(value, str):
            raise CommandError(f"{where} must be a card like 'QH', got {value!r}")
        try:
            return parse_card(value)
        except CardError as error:
            raise CommandError(f"{where}: {error}") from None
    if arg.kind == "position":
        if not isinstance(value, str) or value.strip().upper() not in POSITION_NAMES:
            raise CommandError(f"{where} must be one of {' '.join(POSITION_NAMES)}, got {value!r}")
        return Position(value.strip().upper())
    if arg.kind == "bool":
        if not isinstance(value, bool):
            raise CommandError(f"{where} must be true or false, got {value!r}")
        return value
    if arg.kind == "text":
        if not isinstance(value, str) or not _TEXT.fullmatch(value):
            raise CommandError(
                f"{where} must be 1-64 letters, digits, '.', '_', '@' or '-', got {value!r}"
            )
        return value
    if arg.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise CommandError(f"{where} must be a whole number, got {value!r}")
        if not arg.low <= value <= arg.high:
            raise CommandError(f"{where} must be {arg.low} to {arg.high}, got {value}")
        return value
    raise CommandError(f"{where}: unsupported kind {arg.kind}")  # pragma: no cover


def said(text: object) -> bool:
    """Whether a command's `by` or `reason` says something: both are journaled with it."""
    return isinstance(text, str) and bool(text.strip())


def screen(command: SupervisorCommand, *, clocked: bool) -> str | None:
    """Why `command` is no command the table can judge, whatever its state (None: it is one):
    an action it does not know (`clocked`: whether the table keeps the round's clock, which
    the actions offered depend on), no one who acts, no reason."""
    action = ACTIONS.get(command.action) if isinstance(command.action, str) else None
    if action is None:
        offered = [name for name, known in ACTIONS.items() if clocked or not known.clocked]
        return f"unknown action {command.action!r}; the actions are: {', '.join(offered)}"
    if not said(command.by):
        return f"{action.name} refused: who acts? `by` (the supervisor's id) is required"
    if not said(command.reason):
        return f"{action.name} refused: a reason is required"
    return None
