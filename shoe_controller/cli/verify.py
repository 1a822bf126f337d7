"""`shoe-controller verify`: the dispute check of an export file, or the chain of a journal.

`verify FILE` (written by `shoe-controller export` or `shoectl round N --export`): the hash
chain is intact from the link the file says it follows to its last record, and replaying
its inputs on a fresh table, with the table settings the file journals (`--config` instead,
if given), gives exactly its events. `verify --journal PATH`: the whole
chain of a journal file, read-only (the daemon may be running), and its integrity check.
Either with `--checkpoints CP [--public-key FILE]`: the chain held to the signed checkpoints
its copies off the table PC hold (cli/verify_checkpoints.py).
Exit 0 verified, 1 not (each check says why, naming the first bad record). Times are shown
in this machine's zone with the offset, or in UTC with `--utc` (as shoectl shows them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from shoe_controller.cli.json_lines import numbered_json
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.verify_checkpoints import (
    Copies,
    GivenKeys,
    check_checkpoints,
    own_checkpoints,
    read_copies_file,
    read_given_keys,
)
from shoe_controller.store.chain import (
    EVENT,
    GENESIS,
    INPUT,
    ChainRecord,
    event_canonical,
    input_canonical,
    input_ends,
    walk,
)
from shoe_controller.store.export import FORMAT, FORMAT_VERSION
from shoe_controller.store.journal import Journal, JournalError
from shoe_controller.store.records import ReplayStep, StoredEvent
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.inputs import InputError, TableSettings, input_from_json

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class FileError(click.ClickException):
    """A file that is not an export, or a line that is not a record; the text names the line."""


@dataclass
class Verdict:
    """What each check found, as lines for a person, and whether all of them passed."""

    lines: list[tuple[str, str]] = field(default_factory=list)
    ok: bool = True

    def say(self, what: str, text: str, *, good: bool = True) -> None:
        self.lines.append((what, text))
        self.ok = self.ok and good


@dataclass
class ExportFile:
    header: dict[str, Any]
    inputs: list[dict[str, Any]]
    events: dict[int, list[dict[str, Any]]]  # by input_no
    records: list[ChainRecord]  # in the file's order
    trailer: dict[str, Any]


def read_export(lines: Iterable[str], name: str) -> ExportFile:
    """The records of an export file, checked for shape; FileError naming the line."""
    header: dict[str, Any] | None = None
    trailer: dict[str, Any] | None = None
    inputs: list[dict[str, Any]] = []
    events: dict[int, list[dict[str, Any]]] = {}
    records: list[ChainRecord] = []
    for where, record in numbered_json(lines, name, FileError):
        kind = record.get("record") if isinstance(record, dict) else None
        if trailer is not None:
            raise FileError(f"{where}: a record after the end record")
        if header is None:
            if kind != "export" or record.get("format") != FORMAT:
                raise FileError(f"{where}: not a shoe-controller export (no export header)")
            if record.get("version") != FORMAT_VERSION:
                version = json.dumps(record.get("version"))  # the file's own form, null too
                raise FileError(f"{where}: export version {version}; this program reads 1")
            header = record
        elif kind == INPUT:
            records.append(_chain_record(record, where, _input_fields))
            inputs.append(record)
        elif kind == EVENT:
            records.append(_chain_record(record, where, _event_fields))
            events.setdefault(int(record["input_no"]), []).append(record)
        elif kind == "end":
            trailer = record
        else:
            raise FileError(f"{where}: unknown record {json.dumps(kind)}")
    if header is None:
        raise FileError(f"{name}: empty, not an export")
    if trailer is None:
        raise FileError(f"{name}: no end record: the file was cut short")
    return ExportFile(header, inputs, events, records, trailer)


def _input_fields(record: Mapping[str, Any]) -> ChainRecord:
    number, first_seq, count = record["input_no"], record["first_seq"], record["event_count"]
    text = input_canonical(
        (number, record["shoe"], record["type"], _ENCODE(record["input"]),
         record["recorded_at"], first_seq, count)
    )  # fmt: skip
    seqs = range(first_seq, first_seq + count) if first_seq is not None else range(0)
    return ChainRecord(INPUT, number, number, text, record["chain"], seqs)


def _event_fields(record: Mapping[str, Any]) -> ChainRecord:
    text = event_canonical(
        (record["seq"], record["input_no"], record["type"], record["at"], record["shoe"],
         record["round"], _ENCODE(record["data"]))
    )  # fmt: skip
    return ChainRecord(EVENT, record["seq"], record["input_no"], text, record["chain"])


def _chain_record(
    record: Mapping[str, Any], where: str, fields: Callable[[Mapping[str, Any]], ChainRecord]
) -> ChainRecord:
    try:
        return fields(record)
    except (KeyError, TypeError, ValueError) as error:
        raise FileError(f"{where}: not a whole {record.get('record')} record: {error}") from None


def verify_export(
    export: ExportFile,
    override: TableConfig | None,
    times: Times,
    *,
    copies: Copies | None = None,
    given: GivenKeys | None = None,
) -> Verdict:
    """The chain, the replay, then the checkpoints, the file's own and `copies` (module
    docstring); times shown as `times` says."""
    verdict = Verdict()
    header, trailer = export.header, export.trailer
    selection = ", ".join(f"{key} {value}" for key, value in header.get("selection", {}).items())
    first, last = header.get("inputs", [None, None])
    verdict.say(
        "file",
        f"{selection} (inputs {first}-{last}) of controller {header.get('controller_id')},"
        f" exported {times.stamp(header.get('exported_at'))}",
    )
    report = walk(export.records, str(header.get("follows")), str(trailer.get("head")))
    if report.intact and trailer.get("records") != len(export.records):
        verdict.say(
            "chain",
            f"BROKEN: the end record counts {trailer.get('records')} records, the file"
            f" holds {len(export.records)}",
            good=False,
        )
    elif report.intact:
        verdict.say("chain", f"intact: {report.records} record(s), last link {report.head}")
    else:
        verdict.say("chain", f"BROKEN at {report.first_bad}: {report.problem}", good=False)
    _replay(export, override, verdict)
    check_checkpoints(
        verdict,
        controller_id=str(header.get("controller_id")),
        ends=input_ends(export.records, str(header.get("follows"))),
        own=own_checkpoints(event for events in export.events.values() for event in events),
        copies=copies,
        given=given,
        times=times,
    )
    return verdict


def _replay(export: ExportFile, override: TableConfig | None, verdict: Verdict) -> None:
    header = export.header
    start = (header.get("inputs") or [0])[0]
    # As recovery does (Journal.replay_steps): a shoe begun before the stretch is over.
    begun_before = {shoe["shoe"] for shoe in header.get("shoes", []) if shoe["first_input"] < start}
    replayed = [item for item in export.inputs if item["shoe"] not in begun_before]
    chosen = _settings(export, override, replayed[0]["input_no"] if replayed else start, verdict)
    if chosen is None:
        return
    config, source = chosen
    first_shoe = next((item["shoe"] for item in export.inputs if item["shoe"] is not None), None)
    table = Table(config, last_shoe=max((first_shoe or 1) - 1, 0))
    events = unapplied = 0
    for item in replayed:
        stored = tuple(_stored(event) for event in export.events.get(item["input_no"], []))
        if override is not None and item["type"] == TableSettings.TYPE:
            unapplied += 1  # --config decides throughout
            continue
        try:
            fresh = table.apply(input_from_json(item["input"]))
        except InputError as error:
            verdict.say(
                "replay", f"DIFFERS: input {item['input_no']}: {error}; {source}", good=False
            )
            return
        step = ReplayStep(item["input_no"], item["shoe"], item["input"], stored)
        problem = step.mismatch(fresh)
        if problem is not None:
            verdict.say("replay", f"DIFFERS: {problem}; {source}", good=False)
            return
        events += len(stored)
    if unapplied:
        source += f" ({unapplied} table_settings input(s) not applied)"
    skipped = len(export.inputs) - len(replayed)
    note = f"; {skipped} input(s) of a shoe begun earlier not replayed" if skipped else ""
    verdict.say(
        "replay",
        f"equal: {len(replayed) - unapplied} input(s) replayed give their {events} stored"
        f" event(s), {source}{note}",
    )


def _settings(
    export: ExportFile, override: TableConfig | None, first: int, verdict: Verdict
) -> tuple[TableConfig, str] | None:
    """The table settings to replay with from input `first` on, and where they come from:
    --config, else the file's table_settings input in force then (inside the chain), else
    the header's (a journal written before they were journaled); None when there are none
    (said in the verdict)."""
    if override is not None:
        return override, "with the table settings of --config, not the file's"
    journaled = [item for item in export.inputs if item["type"] == TableSettings.TYPE]
    in_force = [item for item in journaled if item["input_no"] <= first]
    if in_force:
        settings, where = in_force[-1]["input"].get("settings"), f"input {in_force[-1]['input_no']}"
        source = f"with the table settings journaled at {where}"
    elif header_settings := export.header.get("procedures"):
        settings, where = header_settings, "the export header"
        source = "with the export header's table settings (not in the chain)"
    else:
        lacks = (
            f"the file's first is input {journaled[0]['input_no']}: its journal journaled them"
            " only from then on"
            if journaled
            else "its journal was written before table settings were journaled"
        )
        verdict.say(
            "replay",
            f"NOT DONE: the file carries no table settings: no table_settings input at or"
            f" before input {first} ({lacks}), and none in its header; give --config (the"
            " daemon's file)",
            good=False,
        )
        return None
    try:
        return TableConfig.from_mapping(settings), source
    except (AttributeError, TypeError, ValueError) as error:
        verdict.say("replay", f"NOT DONE: the table settings of {where}: {error}", good=False)
        return None


def _stored(event: Mapping[str, Any]) -> StoredEvent:
    return StoredEvent(
        event["seq"], event["id"], event["type"], event["at"], event["shoe"], event["round"],
        event["data"], event["input_no"],
    )  # fmt: skip


def verify_journal(
    path: Path,
    *,
    copies: Copies | None = None,
    given: GivenKeys | None = None,
    times: Times | None = None,
) -> Verdict:
    """The whole chain of a journal file, its integrity check and its checkpoints, the
    journal's own and `copies`, read-only."""
    verdict = Verdict()
    with Journal.open(path, None, read_only=True) as journal:
        state = journal.integrity.chain_state()
        verdict.say(
            "journal",
            f"{path}: controller {journal.controller_id},"
            f" inputs up to {journal.reads.last_input()}, seqs up to {journal.reads.last_seq()}",
        )
        report = journal.integrity.verify_chain()
        anchor = "the start" if state["anchor"] == GENESIS else f"anchor {state['anchor']}"
        since = f"; linked as stored from input {state['chained_from']}"
        if state["migrated_at"] is not None:
            since += ", the earlier inputs when schema 1 was migrated"
        if report.intact:
            verdict.say("chain", f"intact: {report.records} record(s) from {anchor}{since}")
        else:
            verdict.say("chain", f"BROKEN at {report.first_bad}: {report.problem}", good=False)
        problems = journal.integrity.check()
        if problems:
            verdict.say("check", "; ".join(problems), good=False)
        else:
            verdict.say("check", "sound")
        own = own_checkpoints(event.to_wire() for event in journal.integrity.checkpoints())
        wanted = {item.checkpoint.input_no for item in own if not isinstance(item, str)}
        wanted |= {item.checkpoint.input_no for item in (copies.held if copies else ())}
        check_checkpoints(
            verdict,
            controller_id=journal.controller_id,
            ends=journal.integrity.input_ends(wanted),
            own=own,
            copies=copies,
            given=given,
            times=times or Times.chosen(False),
            last_input=journal.reads.last_input(),
        )
    return verdict


def _load_config(path: Path | None) -> TableConfig | None:
    if path is None:
        return None
    from shoe_controller.service.config import ConfigError, load  # noqa: PLC0415 - only with --config

    try:
        return load(path).procedures
    except ConfigError as error:
        raise click.ClickException(str(error)) from None


EXISTING_FILE = click.Path(dir_okay=False, exists=True, path_type=Path)


@click.command("verify")
@click.argument("file", required=False, type=EXISTING_FILE)
@click.option(
    "--journal",
    "journal_path",
    type=EXISTING_FILE,
    help="Check this journal's whole chain instead (read-only; the daemon may run).",
)
@click.option(
    "--config",
    "config_path",
    type=EXISTING_FILE,
    help="Replay with this configuration's table settings instead of the file's.",
)
@click.option(
    "--checkpoints",
    "checkpoints_path",
    type=EXISTING_FILE,
    help="Hold the chain to these signed checkpoints (JSON lines, as a sink received them).",
)
@click.option(
    "--public-key",
    "public_keys",
    multiple=True,
    type=EXISTING_FILE,
    help="The table's public key (`shoe-controller key --public`); again for an older key.",
)
@click.option("--utc", is_flag=True, help="Times in UTC instead of this machine's zone (TZ).")
def verify_command(
    *,
    file: Path | None,
    journal_path: Path | None,
    config_path: Path | None,
    checkpoints_path: Path | None,
    public_keys: tuple[Path, ...],
    utc: bool,
) -> None:
    """Check an export's hash chain and replay it, or check a journal's whole chain."""
    if (file is None) == (journal_path is None):
        raise click.UsageError("give an export FILE, or --journal PATH")
    copies = read_copies_file(checkpoints_path) if checkpoints_path is not None else None
    given = read_given_keys(public_keys)
    times = Times.chosen(utc)
    try:
        if journal_path is not None:
            verdict = verify_journal(journal_path, copies=copies, given=given, times=times)
        else:
            assert file is not None
            with file.open(encoding="utf-8") as stream:
                export = read_export(stream, str(file))
            verdict = verify_export(
                export, _load_config(config_path), times, copies=copies, given=given
            )
    except JournalError as error:
        raise click.ClickException(str(error)) from None
    except UnicodeDecodeError:
        raise FileError(f"{file}: not UTF-8 text") from None
    width = max(len(what) for what, _ in verdict.lines)
    for what, text in verdict.lines:
        click.echo(f"{what.ljust(width)}  {text}")
    click.echo("VERIFIED" if verdict.ok else "NOT VERIFIED")
    raise SystemExit(0 if verdict.ok else 1)
