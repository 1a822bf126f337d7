"""`shoe-controller export`: a shoe, a round or a stretch of the journal as a dispute file.

The inputs and events as JSON lines with their hash chain (store/export.py), read from the
journal read-only: it works while the daemon runs, and on a copy of the file. The table
settings are the journal's own `table_settings` inputs, inside the chain, so that
`shoe-controller verify` can replay the file anywhere; the configuration's stand in for a
journal written before they were journaled (docs/journal.md "Export and verify").
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import click

from shoe_controller.cli.options import config_option
from shoe_controller.cli.output_file import OutputFile, open_output
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.shoectl.typed_times import TimeTypedError, read_time, typed_zone
from shoe_controller.service.config import ConfigError, load
from shoe_controller.store.export import ExportError, NothingSinceError, Selection, export_records
from shoe_controller.store.journal import Journal, JournalError
from shoe_controller.table.config import TableConfig

ROUND_PATTERN = re.compile(r"(\d+):(\d+)")


def parse_round(text: str) -> tuple[int, int]:
    """`S:R` (shoe, round), both whole numbers."""
    match = ROUND_PATTERN.fullmatch(text.strip())
    if not match:
        raise click.BadParameter(f"{text!r}: expected SHOE:ROUND, e.g. 3:27", param_hint="--round")
    return int(match[1]), int(match[2])


def parse_time(text: str, *, utc: bool = False) -> float:
    """A time as a person types it, in unix seconds: read in this machine's zone, the one
    shoectl shows (with `utc`: in UTC), or with its offset; a wall-clock time the clocks pass
    twice is refused (cli/shoectl/typed_times.py)."""
    try:
        return read_time(text, utc=utc).timestamp()
    except TimeTypedError as error:
        raise click.BadParameter(str(error), param_hint="--since") from None


def table_settings(config_path: Path, given: bool) -> tuple[TableConfig | None, str | None]:
    """The configuration's [table] settings and [journal] path; (None, None) when the default
    file is absent (a copied journal on another machine)."""
    if not given and not config_path.exists():
        return None, None
    try:
        config = load(config_path)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    return config.procedures, config.journal.path


def write_lines(records: Iterable[Mapping[str, Any]], output: str) -> int:
    """Every record as one JSON line into `output` ('-': stdout), all or nothing."""
    count = 0
    with open_output(output) as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
    return count


@click.command("export")
@config_option("The daemon's configuration: its journal, and the table settings to replay with.")
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="This journal file instead of the configuration's (a copy will do).",
)
@click.option("--shoe", type=click.IntRange(min=0), help="One whole shoe.")
@click.option(
    "--round", "round_text", metavar="S:R", help="Round R of shoe S (from the shoe's start)."
)
@click.option(
    "--since",
    "since_text",
    metavar="TIME",
    help="From the shoe in play at TIME on. TIME is read in this machine's zone, as shoectl"
    " shows times (with --utc: in UTC), or with its offset: '2026-11-30 03:18', 'yesterday',"
    " '-2h', '2026-11-30T03:18+08:00'; a time the clocks pass twice (daylight saving) is"
    " refused.",
)
@click.option("--utc", is_flag=True, help="Read --since in UTC instead of this machine's zone.")
@click.option(
    "-o",
    "--output",
    default="-",
    show_default=True,
    type=OutputFile(),
    help="The file to write ('-': standard output).",
)
def export_command(
    *,
    config_path: Path,
    journal_path: Path | None,
    shoe: int | None,
    round_text: str | None,
    since_text: str | None,
    utc: bool,
    output: str,
) -> None:
    """Write a shoe, a round or everything since a time as JSON lines with the hash chain."""
    chosen = [name for name, value in (("--shoe", shoe), ("--round", round_text),
              ("--since", since_text)) if value is not None]  # fmt: skip
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --shoe N, --round S:R, --since TIME")
    selection = Selection(
        shoe=shoe,
        round=parse_round(round_text) if round_text is not None else None,
        since=parse_time(since_text, utc=utc) if since_text is not None else None,
    )
    given = click.get_current_context().get_parameter_source("config_path")
    procedures, configured = table_settings(
        config_path, given is not click.core.ParameterSource.DEFAULT
    )
    path = journal_path or (Path(configured) if configured else None)
    if path is None:
        raise click.UsageError(f"no journal: {config_path} does not exist; give --journal PATH")
    try:
        with Journal.open(path, None, read_only=True) as journal:
            # All read before the file is opened: a selection that names nothing leaves no file.
            records = list(
                export_records(journal, selection, procedures=procedures, now=time.time())
            )
        if records[0]["procedures"] is None:
            click.echo(
                "export: the journal holds no table settings for this stretch (written before"
                " they were journaled) and no configuration was read: `shoe-controller verify`"
                " will need --config to replay it",
                err=True,
            )
        count = write_lines(records, output)
    except NothingSinceError as error:
        # Said in the zone the time was typed in, as the person reads their own clock.
        shown = Times(typed_zone(since_text or "", utc=utc)).stamp(error.since)
        raise click.ClickException(
            f"nothing was recorded since {shown} (--since {since_text})"
        ) from None
    except ExportError as error:
        raise click.ClickException(str(error)) from None
    except JournalError as error:
        raise click.ClickException(f"cannot read the journal: {error}") from None
    where = "standard output" if output == "-" else output
    click.echo(f"export: {count - 2} record(s) of {path} to {where}", err=True)
    sys.stdout.flush()
