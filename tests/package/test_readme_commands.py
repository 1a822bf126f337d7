"""The README's command table lists every command of both programs: each
subcommand of `shoe-controller` and each command of `shoectl` is named in it, as typed."""

from __future__ import annotations

import re
from pathlib import Path

import click

from shoe_controller.cli.main import SUBCOMMANDS
from shoe_controller.cli.shoectl.commands import main as shoectl_main

README = Path(__file__).resolve().parents[2] / "README.md"


def command_table() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows, "no command table in the README"
    return "\n".join(row.split(" | ")[0] for row in rows)  # the command column only


def named(program: str, table: str) -> set[str]:
    """The commands the table names after `program` (alternatives written a|b|c)."""
    found: set[str] = set()
    for match in re.finditer(rf"`{program} ([^`]+)`", table):
        first = match[1].split()[0]
        found |= {name for name in first.replace("\\|", "|").split("|") if name}
    return found


def test_every_shoe_controller_command_is_in_the_readme() -> None:
    assert set(SUBCOMMANDS) - named("shoe-controller", command_table()) == set()


def test_every_shoectl_command_is_in_the_readme() -> None:
    ctx = click.Context(shoectl_main, info_name="shoectl")
    assert set(shoectl_main.list_commands(ctx)) - named("shoectl", command_table()) == set()
