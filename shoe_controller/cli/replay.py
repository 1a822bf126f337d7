"""`shoe-controller replay`: apply a file of recorded inputs to a fresh table, print the events.

The tool for disputes and for checking a journal by hand: the inputs are JSON lines in the
form of docs/inputs.md (what the journal stores, `inputs.input_to_json`), the output one JSON
event per line (PUSH_API.md without `seq`/`id`, which the journal gives). Same inputs, same
events (docs/table.md).
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import click

from shoe_controller.table.config import BURN_METHODS, CUT_CARD_RULES, MODES, TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.inputs import Input, InputError, input_from_json


class ReplayError(click.ClickException):
    """A file that cannot be replayed; the message names the line."""


def read_inputs(stream: TextIO, name: str) -> Iterator[Input]:
    """The inputs of a JSON-lines stream; blank lines are skipped, a bad line stops with its
    number."""
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as error:
            raise ReplayError(f"{name} line {number}: not JSON: {error.msg}") from None
        try:
            yield input_from_json(obj)
        except InputError as error:
            raise ReplayError(f"{name} line {number}: {error}") from None


def _config(config_path: Path | None, overrides: dict[str, Any]) -> TableConfig:
    base = TableConfig()
    if config_path is not None:
        from shoe_controller.service.config import ConfigError, load  # noqa: PLC0415 - only with --config

        try:
            base = load(config_path).procedures
        except ConfigError as error:
            raise ReplayError(str(error)) from None
    given = {name: value for name, value in overrides.items() if value is not None}
    try:
        return dataclasses.replace(base, **given)
    except ValueError as error:
        raise ReplayError(f"table settings: {error}") from None


@click.command("replay")
@click.argument("inputs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The daemon's TOML configuration: its [table] settings are used.",
)
@click.option(
    "--last-shoe",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="The shoe number before the first input's shoe (recovery replays).",
)
@click.option("--decks", type=int, help="R1: 6 to 12.")
@click.option("--burn", type=click.Choice(BURN_METHODS), help="R2.2 burn method.")
@click.option("--burn-per-round", type=int, help="R8: cards burned before each later round.")
@click.option("--cut-card", type=click.Choice(CUT_CARD_RULES), help="R3.1 last round.")
@click.option("--squeeze/--no-squeeze", default=None, help="R15 squeeze embargo.")
@click.option("--mode", type=click.Choice(MODES), help="Manual, batch shuffler or shuffler-dealer.")
@click.option("--min-cards-behind-cut", type=int, help="R2.1 (at least 12).")
@click.option("--max-trial-rounds", type=int, help="R2.3 (at most 3).")
@click.option("--big-small-last-round", type=int, help="R14.1 (20).")
@click.option("--insurance/--no-insurance", default=None, help="R16 insurance windows.")
@click.option("--factory-order-run", type=int, help="Cards in new-deck order that stop the table.")
@click.option(
    "--double-read-window", type=float, help="Seconds: the same card again is held (no counters)."
)
def replay_command(
    inputs: Path, config_path: Path | None, last_shoe: int, **overrides: Any
) -> None:
    """Replay INPUTS (JSON lines, one input each) and print the events as JSON lines."""
    config = _config(config_path, overrides)
    table = Table(config, last_shoe=last_shoe)
    raw = inputs.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ReplayError(f"{inputs} line {line}: not UTF-8 text") from None
    items = list(read_inputs(io.StringIO(text), str(inputs)))  # all lines checked before output
    for item in items:
        for event in table.apply(item):
            click.echo(json.dumps(event.to_json(), separators=(",", ":")))


if __name__ == "__main__":
    replay_command()
