"""The table's texts in shoectl's words: the command to type, not the control socket's
syntax (`confirm card=..` becomes `shoectl confirm --card CARD`).

Also the words for values a person reads in an event's details (`details_text`): lists
joined, yes and no, never a Python repr.

The table writes its hold and refusal texts once, for every client (they are journaled and
sent to the table server as they are); shoectl rewords them only where it shows them to a
person: refusals and the status's holds and problems.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shoe_controller.table.action_specs import ACTIONS

# `confirm card=..`, `missed card=.. position=..`: an action with its arguments.
_ACTION_WITH_ARGUMENTS = re.compile(
    r"\b(" + "|".join(sorted(ACTIONS, key=len, reverse=True)) + r")((?: [a-z_]+=\.\.)+)"
)
_ARGUMENT = re.compile(r" ([a-z_]+)=\.\.")
_LONE_ARGUMENT = re.compile(r"(?<![\w-])([a-z_]+)=\.\.")
_METAVAR = {"card": "CARD", "position": "P1..B3", "rounds": "N"}
# Action names with an underscore, where a text names them as the thing to do (not the
# name a refusal starts with: "end_trial refused: ...").
_ACTION_NAMES = re.compile(
    r"(?<![\w.-])(" + "|".join(name for name in ACTIONS if "_" in name) + r")(?![\w.-]| refused)"
)


_PYTHON_LIST = re.compile(r"\['[^'\]]*'(?:, '[^'\]]*')*\]")
_QUOTED = re.compile(r"'([^']*)'")
_SUPERVISOR_TYPES = re.compile(r"(\(or |, or |^|; )supervisor shoectl")


def _option(name: str) -> str:
    return f"--{name.replace('_', '-')} {_METAVAR.get(name, name.upper())}"


def in_shoectl_words(text: str) -> str:
    """`text` with every action and argument written as the shoectl command line to type."""

    def with_arguments(match: re.Match[str]) -> str:
        options = " ".join(_option(name) for name in _ARGUMENT.findall(match[2]))
        return f"shoectl {match[1].replace('_', '-')} {options}"

    text = _ACTION_WITH_ARGUMENTS.sub(with_arguments, text)
    text = _LONE_ARGUMENT.sub(lambda match: _option(match[1]), text)
    text = _ACTION_NAMES.sub(lambda match: f"shoectl {match[1].replace('_', '-')}", text)
    # "or supervisor start_shoe": what a supervisor types, said as such.
    text = _SUPERVISOR_TYPES.sub(r"\1a supervisor: shoectl", text)
    return without_lists(text)


def without_lists(text: str) -> str:
    """`unknown argument(s) ['bogus']` reads `unknown argument(s) bogus`: names, not a list."""
    return _PYTHON_LIST.sub(lambda match: ", ".join(_QUOTED.findall(match[0])), text)


def details_text(details: Mapping[str, Any] | None) -> str:
    """An event's details for a person, `released: supervisor_hold`, never a Python repr."""
    return ", ".join(f"{key.replace('_', ' ')}: {value_text(value)}" for key, value in
                     (details or {}).items())  # fmt: skip


def value_text(value: Any) -> str:
    """A JSON value in words: lists joined, yes/no, none."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(value_text(item) for item in value) or "none"
    if isinstance(value, Mapping):
        return "; ".join(f"{key} {value_text(item)}" for key, item in value.items())
    return str(value)
