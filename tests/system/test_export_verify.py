"""`shoe-controller export` and `shoe-controller verify` as real processes: a full
shoe exported from a journal that is being written, and from a copy; verify passes on it and
fails, naming the record, on a file with one event changed, removed or cut short. The table
settings are journaled: a real daemon's shoe verifies on another machine with no
configuration, a setting changed in the file breaks the chain, and a file from a journal
written before says what it lacks."""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.perfect_dealer import START_TIME, deal_shoe
from shoe_testkit.rig import RigOptions, TableRig

from shoe_controller.service.config import DEFAULT_PATH
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table as Procedures
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import iso_time
from shoe_controller.vocab.inputs import Input, input_to_json

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 60.0
CONTROLLER = "tbl-07-shoe"
RECORDED_AT = 1_900_000_000.0  # the journal's clock, while the shoe is dealt


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )


def write_as_before_issue_26(
    journal: Journal, config: TableConfig, inputs: Sequence[Input]
) -> None:
    """What the controller stored before table settings were journaled (HEAD~1's
    Controller.submit): each input applied to the table and recorded with its events."""
    table = Procedures(config)
    for item in inputs:
        shoe = table.shoe_of(item)
        journal.record(input_to_json(item), table.apply(item), shoe)


class Table:
    """A journal with two shoes, dealt correctly (the perfect dealer), and its config file;
    `journaled_settings=False`: written as before 2026-12-02, with no table settings in it."""

    def __init__(self, directory: Path, *, journaled_settings: bool = True) -> None:
        self.directory = directory
        self.journal_path = directory / "journal.db"
        self.config = TableConfig(decks=6)
        self.config_path = directory / "shoe-controller.toml"
        self.config_path.write_text(
            f'[table]\nid = "07"\ndecks = 6\n[journal]\npath = "{self.journal_path}"\n'
        )
        self.clock = RECORDED_AT
        cards = [Card(rank, suit) for _ in range(6) for rank in range(1, 14) for suit in Suit]
        random.Random(18).shuffle(cards)
        first = deal_shoe(cards, self.config, cut_after=250)
        random.Random(19).shuffle(cards)
        second = deal_shoe(cards, self.config, cut_after=250, start=START_TIME + 10_000)
        self.inputs = [*first.inputs, *second.inputs[: len(second.inputs) // 2]]
        self.journal = Journal.open(self.journal_path, CONTROLLER, clock=self.tick)
        if not journaled_settings:
            write_as_before_issue_26(self.journal, self.config, self.inputs)
            return
        self.controller = Controller(self.config, self.journal)
        for item in self.inputs:
            self.controller.submit(item)

    def tick(self) -> float:
        self.clock += 0.5
        return self.clock

    def close(self) -> None:
        self.journal.close()


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = Table(tmp_path_factory.mktemp("table"))
    yield made
    made.close()


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def shoe_file(table: Table, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shoe 1 exported while the journal is open for writing by its one writer."""
    out = tmp_path_factory.mktemp("export") / "shoe-1.jsonl"
    result = cli("export", "--config", str(table.config_path), "--shoe", "1", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"export: {len(records(out)) - 2} record(s) of ")
    return out


def test_a_whole_shoe_exports_with_its_chain_and_verifies(table: Table, shoe_file: Path) -> None:
    lines = records(shoe_file)
    header, trailer = lines[0], lines[-1]
    assert header["format"] == "shoe-controller-export"
    assert header["controller_id"] == CONTROLLER
    assert header["selection"] == {"shoe": 1}
    shoe = next(info for info in table.journal.reads.shoes() if info.shoe == 1)
    assert header["inputs"] == [shoe.first_input, shoe.last_input]
    assert header["procedures"]["decks"] == 6
    assert header["follows"] == "0" * 64  # the journal's first record
    inputs = [line for line in lines if line["record"] == "input"]
    # The shoe's first input is the table settings in force, then what was dealt.
    assert inputs[0]["input"] == {
        "type": "table_settings",
        "at": table.inputs[0].at,
        "settings": dataclasses.asdict(table.config),
    }
    assert [line["input"] for line in inputs[1:]] == [
        input_to_json(item) for item in table.inputs[: len(inputs) - 1]
    ]
    events = [line for line in lines if line["record"] == "event"]
    assert [line["seq"] for line in events] == list(range(1, len(events) + 1))
    stored = {event.seq: event.to_wire() for event in table.journal.reads.events_after(0, 100_000)}
    assert all({k: line[k] for k in stored[line["seq"]]} == stored[line["seq"]] for line in events)
    assert trailer == {"record": "end", "records": len(lines) - 2, "head": lines[-2]["chain"]}

    result = cli("verify", str(shoe_file), "--utc")  # times for a person, in UTC
    assert result.returncode == 0, result.stdout + result.stderr
    exported = header["exported_at"]  # 2026-11-30T11:18:47.940477Z: shown to the millisecond
    assert result.stdout.splitlines() == [
        f"file    shoe 1 (inputs {shoe.first_input}-{shoe.last_input}) of controller"
        f" {CONTROLLER}, exported {exported[:10]} {exported[11:23]} +00:00",
        f"chain   intact: {len(lines) - 2} record(s), last link {trailer['head']}",
        f"replay  equal: {len(inputs)} input(s) replayed give their {len(events)} stored"
        f" event(s), with the table settings journaled at input {shoe.first_input}",
        "VERIFIED",
    ]


def test_one_event_changed_fails_naming_it_and_the_replay(shoe_file: Path, tmp_path: Path) -> None:
    lines = records(shoe_file)
    index, result_line = next(
        (i, line) for i, line in enumerate(lines) if line.get("type") == "round.result"
    )
    winner = result_line["data"]["winner"]
    result_line["data"]["winner"] = "tie" if winner != "tie" else "banker"
    changed = write(tmp_path / "changed.jsonl", lines)
    result = cli("verify", str(changed))
    assert result.returncode == 1
    name = f"event seq {result_line['seq']} (input {result_line['input_no']})"
    out = result.stdout.splitlines()
    assert out[1] == (
        f"chain   BROKEN at {name}: {name} does not follow event seq {result_line['seq'] - 1}"
        f" (input {lines[index - 1]['input_no']}): it was changed, or moved"
    )
    assert out[2].startswith(f"replay  DIFFERS: input {result_line['input_no']}: seq")
    assert out[-1] == "NOT VERIFIED"


def test_a_removed_event_and_a_file_cut_short_fail(shoe_file: Path, tmp_path: Path) -> None:
    lines = records(shoe_file)
    index = next(i for i, line in enumerate(lines) if line.get("type") == "card.dealt")
    removed = write(tmp_path / "removed.jsonl", lines[:index] + lines[index + 1 :])
    result = cli("verify", str(removed))
    assert result.returncode == 1
    seq = lines[index]["seq"]
    chain_line = result.stdout.splitlines()[1]
    assert chain_line.startswith("chain   BROKEN at ")
    assert f": event seq {seq} missing before " in chain_line
    assert f"replay  DIFFERS: input {lines[index]['input_no']}: replay gave" in result.stdout
    cut = write(tmp_path / "cut.jsonl", lines[:-1])
    short = cli("verify", str(cut))
    assert short.returncode == 1
    assert short.stderr == f"Error: {cut}: no end record: the file was cut short\n"
    last_two = write(tmp_path / "last-two.jsonl", lines[:-3] + lines[-1:])
    assert "missing at the end of the chain: removed" in cli("verify", str(last_two)).stdout
    whole = [i for i, line in enumerate(lines) if line["record"] == "input"][-1]
    last_input = write(tmp_path / "last-input.jsonl", lines[:whole] + lines[-1:])
    assert "the chain stops after" in cli("verify", str(last_input)).stdout


def test_a_round_exports_from_its_shoes_start_and_a_copy_exports_too(
    table: Table, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    source = sqlite3.connect(table.journal_path)
    target = sqlite3.connect(copy)
    source.backup(target)  # as an operator copies a live journal
    source.close()
    target.close()
    out = tmp_path / "round.jsonl"
    result = cli("export", "--journal", str(copy), "--config", str(table.config_path),
                 "--round", "2:5", "-o", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = records(out)
    assert lines[0]["selection"] == {"shoe": 2, "round": 5}
    shoe_2 = next(info for info in table.journal.reads.shoes() if info.shoe == 2)
    assert lines[0]["inputs"][0] == shoe_2.first_input
    rounds = {line["round"] for line in lines if line.get("record") == "event" and line["shoe"]}
    assert max(r for r in rounds if r is not None) == 5
    conn = sqlite3.connect(table.journal_path)
    [(before,)] = conn.execute(
        "SELECT chain FROM events WHERE input_no < ? ORDER BY seq DESC LIMIT 1",
        (shoe_2.first_input,),
    ).fetchall()
    conn.close()
    assert lines[0]["follows"] == before  # the record stored just before the shoe
    verified = cli("verify", str(out))
    assert verified.returncode == 0, verified.stdout
    assert verified.stdout.endswith("VERIFIED\n")


def test_since_starts_at_the_shoe_in_play_and_replays_with_its_journaled_settings(
    table: Table, tmp_path: Path
) -> None:
    out = tmp_path / "since.jsonl"
    shoe_2 = next(info for info in table.journal.reads.shoes() if info.shoe == 2)
    conn = sqlite3.connect(table.journal_path)
    [(recorded,)] = conn.execute(
        "SELECT recorded_at FROM inputs WHERE input_no = ?", (shoe_2.first_input + 20,)
    ).fetchall()
    conn.close()
    moment = iso_time(recorded - 0.1)  # in the middle of shoe 2
    absent = tmp_path / "absent.toml"
    given = cli("export", "--journal", str(table.journal_path), "--config", str(absent),
                "--since", moment, "-o", str(out))  # fmt: skip
    assert given.returncode == 1  # a --config given must exist
    assert not out.exists()
    if DEFAULT_PATH.exists():
        pytest.skip(f"{DEFAULT_PATH} exists here: an export without --config reads it")
    bare_export = cli("export", "--journal", str(table.journal_path), "--since", moment,
                      "-o", str(out))  # fmt: skip
    assert bare_export.returncode == 0, bare_export.stderr
    assert "no configuration read" not in bare_export.stderr  # the journal has the settings
    lines = records(out)
    assert lines[0]["inputs"] == [shoe_2.first_input, table.journal.reads.last_input()]
    assert lines[0]["procedures"] == dataclasses.asdict(table.config)
    bare = cli("verify", str(out))
    assert bare.returncode == 0, bare.stdout
    assert f"with the table settings journaled at input {shoe_2.first_input}" in bare.stdout
    other = tmp_path / "other.toml"
    other.write_text('[table]\nid = "07"\ndecks = 8\n')  # not the table's: 8 decks
    overridden = cli("verify", str(out), "--config", str(other))
    assert overridden.returncode == 1  # shoe.shuffled says 6 decks; --config says 8
    assert "with the table settings of --config, not the file's" in overridden.stdout
    assert "replay  DIFFERS: input" in overridden.stdout


@pytest.fixture(scope="module")
def old_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = Table(tmp_path_factory.mktemp("old-table"), journaled_settings=False)
    yield made
    made.close()


def test_a_file_from_a_journal_without_settings_says_what_it_lacks(
    old_table: Table, tmp_path: Path
) -> None:
    if DEFAULT_PATH.exists():
        pytest.skip(f"{DEFAULT_PATH} exists here: an export without --config reads it")
    out = tmp_path / "old.jsonl"
    exported = cli("export", "--journal", str(old_table.journal_path), "--shoe", "1",
                   "-o", str(out))  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert "the journal holds no table settings" in exported.stderr
    assert records(out)[0]["procedures"] is None
    bare = cli("verify", str(out))
    assert bare.returncode == 1
    assert "chain   intact" in bare.stdout
    assert (
        "replay  NOT DONE: the file carries no table settings: no table_settings input at or"
        " before input 1 (its journal was written before table settings were journaled), and"
        " none in its header; give --config (the daemon's file)"
    ) in bare.stdout.splitlines()
    with_config = cli("verify", str(out), "--config", str(old_table.config_path))
    assert with_config.returncode == 0, with_config.stdout
    assert "with the table settings of --config" in with_config.stdout
    # Exported with a configuration, as before: replayed with the header's, and said so.
    given = tmp_path / "old-given.jsonl"
    assert (
        cli(
            "export",
            "--journal",
            str(old_table.journal_path),
            "--config",
            str(old_table.config_path),
            "--shoe",
            "1",
            "-o",
            str(given),
        ).returncode
        == 0
    )
    header = cli("verify", str(given))
    assert header.returncode == 0, header.stdout
    assert "with the export header's table settings (not in the chain)" in header.stdout


def test_a_setting_changed_inside_the_file_breaks_the_chain(
    shoe_file: Path, tmp_path: Path
) -> None:
    lines = records(shoe_file)
    index, settings = next(
        (i, line) for i, line in enumerate(lines) if line.get("type") == "table_settings"
    )
    assert settings["input"]["settings"]["decks"] == 6
    settings["input"]["settings"]["decks"] = 8
    changed = write(tmp_path / "eight-decks.jsonl", lines)
    result = cli("verify", str(changed))
    assert result.returncode == 1
    name = f"input {settings['input_no']}"
    assert result.stdout.splitlines()[1].startswith(f"chain   BROKEN at {name}: {name} does not")
    assert result.stdout.endswith("NOT VERIFIED\n")
    assert index == 1  # the shoe's first record, right after the header


def test_a_real_daemons_shoe_verifies_without_its_configuration(tmp_path: Path) -> None:
    """The issue's case: a copy of a running daemon's journal, exported with --journal only
    and verified with no other file. 6 decks (not the default 8): shoe.shuffled says so, so
    the replay must use the settings the daemon journaled."""
    if DEFAULT_PATH.exists():
        pytest.skip(f"{DEFAULT_PATH} exists here: an export without --config reads it")
    copy = tmp_path / "copy.db"
    with (
        tempfile.TemporaryDirectory(prefix="xv-") as name,  # a short socket path
        TableRig(Path(name), RigOptions(decks=6)) as rig,
    ):
        rig.dealer.deal(12)
        rig.kill_daemon()  # a restart mid-shoe journals the settings again
        rig.start_daemon()
        rig.dealer.deal(8)
        live = sqlite3.connect(rig.records.journal_path)
        target = sqlite3.connect(copy)
        live.backup(target)  # as an operator copies a live journal
        live.close()
        target.close()
    out = tmp_path / "shoe-1.jsonl"
    exported = cli("export", "--journal", str(copy), "--shoe", "1", "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    inputs = [line for line in records(out) if line["record"] == "input"]
    settings = [line for line in inputs if line["type"] == "table_settings"]
    assert settings[0] is inputs[0]  # the shoe's first input
    assert len(settings) == 2  # and again at the restart, mid-shoe
    assert {line["input"]["settings"]["decks"] for line in settings} == {6}
    verified = cli("verify", str(out))
    assert verified.returncode == 0, verified.stdout
    assert "--config" not in verified.stdout
    assert verified.stdout.endswith("VERIFIED\n")


def test_what_names_nothing_is_said_and_writes_no_file(table: Table, tmp_path: Path) -> None:
    out = tmp_path / "none.jsonl"
    missing = cli("export", "--config", str(table.config_path), "--shoe", "9", "-o", str(out))
    assert missing.returncode == 1
    assert missing.stderr.endswith("shoe 9 is not in the journal (it holds shoe(s) 1, 2)\n")
    assert not out.exists()
    no_round = cli("export", "--config", str(table.config_path), "--round", "1:999")
    assert no_round.stderr.endswith("shoe 1 has no round 999 in the journal\n")
    for wrong in (["--shoe", "1", "--round", "1:2"], [], ["--round", "x"], ["--since", "soon"]):
        usage = cli("export", "--config", str(table.config_path), *wrong)
        assert usage.returncode == 2, wrong
    assert cli("verify").returncode == 2
    not_export = write(tmp_path / "other.jsonl", [{"hello": 1}])
    assert cli("verify", str(not_export)).stderr.endswith("(no export header)\n")


def test_verify_journal_walks_the_whole_chain_read_only(table: Table, tmp_path: Path) -> None:
    result = cli("verify", "--journal", str(table.journal_path))
    assert result.returncode == 0, result.stdout
    assert "chain    intact:" in result.stdout
    assert "from the start; linked as stored from input 1" in result.stdout
    copy = tmp_path / "tampered.db"
    live = sqlite3.connect(table.journal_path)
    conn = sqlite3.connect(copy)
    live.backup(conn)
    live.close()
    [(card,)] = conn.execute(
        "SELECT min(input_no) FROM inputs WHERE type = 'card' AND input_no >= 30"
    ).fetchall()
    conn.execute("UPDATE inputs SET body = replace(body, '\"card\"', '\"cards\"')"
                 " WHERE input_no = ?", (card,))  # fmt: skip
    conn.commit()
    conn.close()
    broken = cli("verify", "--journal", str(copy))
    assert broken.returncode == 1
    assert f"chain    BROKEN at input {card}: input {card} does not follow" in broken.stdout
    assert broken.stdout.endswith("NOT VERIFIED\n")
