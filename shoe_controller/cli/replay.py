"""`shoe-controller replay`: apply a file of recorded inputs to a fresh table, show the events.

The tool for disputes and for checking a journal by hand. It reads either a file of inputs,
JSON lines in the form of docs/inputs.md (what the journal stores, `inputs.input_to_json`),
or a dispute file (`shoe-controller export`, `shoectl round N --export`), whose inputs it
replays with the table settings the file carries; `-` reads standard input. It shows the
events as a table for a person, as shoectl shows them (times in this machine's zone, `--utc`
in UTC), or with `--json` one JSON event per line (docs/spec-push-api.md without `seq`/`id`, which
the
journal gives). Same inputs, same events (docs/table.md). docs/examples/inputs.jsonl is a
file to try.
"""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from shoe_controller.cli.shoectl.render import Painter, event_row
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.shoectl.wording import without_lists
from shoe_controller.table.config import BURN_METHODS, CUT_CARD_RULES, MODES, TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.inputs import Input, InputError, input_from_json

TIME_WIDTH = len("TIME (+08:00)")


def header(shown: Times) -> str:
    """The heading row; TIME says its zone, as every table of times does."""
    time = shown.column("TIME")
    return f"{'#':>6}  {time:<{TIME_WIDTH}}  {'SHOE/RND':<8}  {'TYPE':<20}  DETAILS"


class ReplayError(click.ClickException):
    """A file that cannot be replayed; the message names the line."""


@dataclass
class Source:
    """What a file holds: its inputs, and a dispute file's table settings and first shoe."""

    inputs: list[Input]
    procedures: Mapping[str, Any] | None = None  # a dispute file's [table] settings
    last_shoe: int | None = None  # the shoe number before its first input's shoe
    skipped: int = 0  # a dispute file's inputs of a shoe begun before its stretch


def _objects(stream: TextIO, name: str) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            raise ReplayError(f"{name} line {number}: not JSON: {error.msg}") from None


def _input(obj: Any, where: str) -> Input:
    try:
        return input_from_json(obj)
    except InputError as error:
        raise ReplayError(f"{where}: {without_lists(str(error))}") from None


def read_source(text: str, name: str) -> Source:
    """A file of inputs, or a dispute file (its first record the export header)."""
    objects = list(_objects(io.StringIO(text), name))
    first = objects[0][1] if objects else None
    if not (isinstance(first, dict) and first.get("record") == "export"):
        return Source([_input(obj, f"{name} line {number}") for number, obj in objects])
    header = first
    start = (header.get("inputs") or [0])[0]
    # As recovery and verify do: a shoe begun before the stretch is not replayed.
    begun_before = {s["shoe"] for s in header.get("shoes", []) if s.get("first_input", 0) < start}
    inputs, skipped, first_shoe = [], 0, None
    for number, record in objects[1:]:
        if not isinstance(record, dict) or record.get("record") != "input":
            continue  # events and the end record: the replay makes its own events
        if record.get("shoe") in begun_before:
            skipped += 1
            continue
        if first_shoe is None and record.get("shoe") is not None:
            first_shoe = int(record["shoe"])
        inputs.append(_input(record.get("input"), f"{name} line {number}"))
    last_shoe = max((first_shoe or 1) - 1, 0)
    return Source(inputs, header.get("procedures"), last_shoe, skipped)


def _config(config_path: Path | None, source: Source, overrides: Mapping[str, Any]) -> TableConfig:
    base = TableConfig()
    if config_path is not None:
        from shoe_controller.service.config import ConfigError, load  # noqa: PLC0415 - only with --config

        try:
            base = load(config_path).procedures
        except ConfigError as error:
            raise ReplayError(str(error)) from None
    elif source.procedures is not None:
        try:
            base = TableConfig.from_mapping(source.procedures)
        except (TypeError, ValueError) as error:
            raise ReplayError(f"the file's table settings: {error}") from None
    given = {name: value for name, value in overrides.items() if value is not None}
    try:
        return dataclasses.replace(base, **given)
    except ValueError as error:
        raise ReplayError(f"table settings: {error}") from None


def _read_text(inputs: str) -> str:
    name = "standard input" if inputs == "-" else inputs
    with click.open_file(inputs, "rb") as stream:
        raw = stream.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ReplayError(f"{name} line {line}: not UTF-8 text") from None


@click.command("replay")
@click.argument(
    "inputs", metavar="FILE", type=click.Path(exists=True, dir_okay=False, allow_dash=True)
)
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line, not a table.")
@click.option("--utc", is_flag=True, help="Times in UTC instead of this machine's zone.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The daemon's TOML configuration: its [table] settings are used (instead of a"
    " dispute file's own).",
)
@click.option(
    "--last-shoe",
    type=click.IntRange(min=0),
    default=None,
    help="The shoe number before the first input's shoe (default 0; a dispute file: its own).",
)
@click.option("--decks", type=int, help="How many decks the shoe holds (R1: 6 to 12).")
@click.option("--burn", type=click.Choice(BURN_METHODS), help="The burn method (R2.2).")
@click.option("--burn-per-round", type=int, help="Cards burned before each later round (R8).")
@click.option("--cut-card", type=click.Choice(CUT_CARD_RULES), help="The last round (R3.1).")
@click.option("--squeeze/--no-squeeze", default=None, help="The squeeze embargo (R15).")
@click.option("--mode", type=click.Choice(MODES), help="Manual, batch shuffler or shuffler-dealer.")
@click.option("--min-cards-behind-cut", type=int, help="Cards behind the cut card (R2.1, 12+).")
@click.option("--max-trial-rounds", type=int, help="Trial rounds a shoe may have (R2.3, 0-3).")
@click.option("--big-small-last-round", type=int, help="The last round of Big/Small (R14.1).")
@click.option("--insurance/--no-insurance", default=None, help="Insurance windows (R16).")
@click.option("--factory-order-run", type=int, help="Cards in new-deck order that stop the table.")
@click.option(
    "--double-read-window", type=float, help="Seconds: the same card again is held (no counters)."
)
def replay_command(
    inputs: str,
    as_json: bool,
    utc: bool,
    config_path: Path | None,
    last_shoe: int | None,
    **overrides: Any,
) -> None:
    """Replay FILE (inputs or a dispute file, '-': standard input) and show its events.

    FILE holds JSON lines: inputs as docs/inputs.md writes them (docs/examples/inputs.jsonl
    is one to try), or a dispute file of `shoe-controller export` or `shoectl round N
    --export`, replayed with the table settings it carries. The events are shown as a
    table, or with --json one JSON event per line.
    """
    name = "standard input" if inputs == "-" else inputs
    source = read_source(_read_text(inputs), name)  # every line checked before any output
    config = _config(config_path, source, overrides)
    if not source.inputs:  # nothing to show is no replay: said, exit 1
        skipped = f" ({source.skipped} of a shoe begun before it)" if source.skipped else ""
        raise click.ClickException(f"{name} holds no input to replay{skipped}")
    start = last_shoe if last_shoe is not None else (source.last_shoe or 0)
    table = Table(config, last_shoe=start)
    paint, shown = Painter.for_stream(sys.stdout), Times.chosen(utc)
    if source.skipped:
        click.echo(
            f"replay: {source.skipped} input(s) of a shoe begun before the file's stretch not"
            " replayed (as verify does)",
            err=True,
        )
    if not as_json:
        click.echo(paint(header(shown), "head"), color=paint.enabled)
    count = 0
    for item in source.inputs:
        for event in table.apply(item):
            data = event.to_json()
            count += 1
            if as_json:
                click.echo(json.dumps(data, separators=(",", ":")))
                continue
            number, at, where, (kind, role), details = event_row(
                {**data, "seq": count}, paint, shown
            )
            line = (
                f"{number:>6}  {at:<{TIME_WIDTH}}  {where:<8}  {paint(kind.ljust(20), role)}"
                f"  {details}"
            )
            click.echo(line, color=paint.enabled)
    if not as_json:
        click.echo(f"{len(source.inputs)} input(s) replayed: {count} event(s)")


if __name__ == "__main__":
    replay_command()
