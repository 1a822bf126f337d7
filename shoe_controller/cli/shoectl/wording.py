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
from shoe_controller.vocab import words

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


# An alert code inside the table's text ("the table is held (supervisor_hold)"): its words.
_ALERT_CODE = re.compile(
    r"(?<![\w.-])("
    + "|".join(sorted((c for c in words.ALERTS if "_" in c), key=len, reverse=True))
    + r")(?![\w-])"
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
    text = _ALERT_CODE.sub(lambda match: words.alert(match[1]), text)
    return without_lists(text)


def without_lists(text: str) -> str:
    """`unknown argument(s) ['bogus']` reads `unknown argument(s) bogus`: names, not a list."""
    return _PYTHON_LIST.sub(lambda match: ", ".join(_QUOTED.findall(match[0])), text)


# Details whose values are codes, and the words for them.
_CODED_DETAILS = {"released": words.alert, "code": words.alert, "kind": words.hold_kind}


def details_text(details: Mapping[str, Any] | None) -> str:
    """An event's details for a person, `released: supervisor's hold`, never a Python repr
    nor a code."""
    parts = []
    for key, value in (details or {}).items():
        said = _CODED_DETAILS.get(key)
        shown = value
        if said is not None and isinstance(value, list | tuple):
            shown = [said(item) for item in value]
        elif said is not None and isinstance(value, str):
            shown = said(value)
        parts.append(f"{key.replace('_', ' ')}: {value_text(shown)}")
    return ", ".join(parts)


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
