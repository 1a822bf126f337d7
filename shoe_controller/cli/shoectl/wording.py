"""The table's texts in shoectl's words: the command to type, not the control socket's
syntax (`confirm card=..` becomes `shoectl confirm --card CARD`).

The table writes its hold and refusal texts once, for every client (they are journaled and
sent to the table server as they are); shoectl rewords them only where it shows them to a
person: refusals and the status's holds and problems.
"""

from __future__ import annotations

import re

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


def _option(name: str) -> str:
    return f"--{name.replace('_', '-')} {_METAVAR.get(name, name.upper())}"


def in_shoectl_words(text: str) -> str:
    """`text` with every action and argument written as the shoectl command line to type."""

    def with_arguments(match: re.Match[str]) -> str:
        options = " ".join(_option(name) for name in _ARGUMENT.findall(match[2]))
        return f"shoectl {match[1].replace('_', '-')} {options}"

    text = _ACTION_WITH_ARGUMENTS.sub(with_arguments, text)
    text = _LONE_ARGUMENT.sub(lambda match: _option(match[1]), text)
    return _ACTION_NAMES.sub(lambda match: f"shoectl {match[1].replace('_', '-')}", text)
