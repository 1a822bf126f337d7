"""Game recall: the last ten games across the shoe change, and a round's dispute file.

Gaming labs ask a table device to recall the last game and the nine before it, even while
the table is held or a device is lost (the answers come from the journal, which neither
stops). `shoectl rounds` asks the daemon for the current shoe's last ten rounds, then for the
shoes before it while fewer came; `shoectl round N --export FILE` writes what the daemon's
`export` answer holds (store/export.py) as JSON lines.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import click

from shoe_controller.cli.output_file import open_output
from shoe_controller.cli.shoectl.plumbing import ask, fail

RECALL = 10  # the last game and the nine before it
EARLIER_SHOES_TRIED = 3  # shoe numbers with no round (pruned, never dealt) before giving up


def recall(ask: Callable[[Mapping[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """The `rounds` answers of the shoes holding the last RECALL games, oldest first."""
    current = ask({"cmd": "rounds", "last": RECALL})
    answers = [current]
    count = len(current["rounds"])
    shoe, misses = int(current["shoe"]) - 1, 0
    while count < RECALL and shoe >= 0 and misses < EARLIER_SHOES_TRIED:
        earlier = ask({"cmd": "rounds", "shoe": shoe, "last": RECALL - count})
        if earlier["rounds"]:
            answers.insert(0, earlier)
            count += len(earlier["rounds"])
            misses = 0
        else:
            misses += 1
        shoe -= 1
    return answers


def missing_shoe(ask: Callable[[Mapping[str, Any]], dict[str, Any]], shoe: int) -> str | None:
    """Why `shoe` has nothing to show, when the journal holds no round of it and it is not
    the shoe in play (then it is an error, as `round N` of a round not there is); None when
    it is the shoe in play (which may have dealt no round yet)."""
    current = int(ask({"cmd": "rounds", "last": 1})["shoe"])
    if shoe == current:
        return None
    if shoe > current:
        return f"shoe {shoe} has not been dealt yet: the shoe in play is {current}"
    return f"shoe {shoe} has no round in the journal (never dealt, or pruned)"


def require_shoe(shoe: int | None, rounds: int) -> None:
    """One rule for every command: a shoe asked for that the journal has nothing of is an
    error (exit 2), as `round N` of a round not there is; the shoe in play may be empty."""
    why = missing_shoe(ask, shoe) if shoe is not None and not rounds else None
    if why is not None:
        fail(why, code="not_found")


def write_export(answer: Mapping[str, Any], path: str) -> None:
    """The records of an `export` answer as JSON lines in `path` ('-': stdout), whole or
    not at all; one line on stderr says what was written and how to check it."""
    records = answer["records"]
    with open_output(path) as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    where = "standard output" if path == "-" else path
    click.echo(
        f"written to {where}: shoe {answer['shoe']} from its start through round"
        f" {answer['round']}, {len(records) - 2} record(s) with their hash chain;"
        f" check it with: shoe-controller verify {path if path != '-' else 'FILE'}",
        err=True,
    )
