"""`shoe-controller replay`: a file of recorded inputs in, the table's events out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.table import shuffled_shoe

from shoe_controller.cli.replay import replay_command
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.inputs import input_to_json


def _write_shoe(path: Path, config: TableConfig) -> list:
    dealt = deal_shoe(shuffled_shoe(config.decks, seed=2), config, cut_after=300)
    lines = [json.dumps(input_to_json(item)) for item in dealt.inputs]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")  # a blank line is skipped
    return dealt.inputs


def test_replay_with_json_prints_the_tables_events_as_json_lines(tmp_path: Path) -> None:
    inputs = _write_shoe(tmp_path / "shoe.jsonl", TableConfig())
    result = CliRunner().invoke(replay_command, [str(tmp_path / "shoe.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.output.splitlines()]
    table = Table(TableConfig())
    expected = [event.to_json() for item in inputs for event in table.apply(item)]
    assert printed == expected
    assert printed[-1]["type"] == "shoe.ended"


def test_replay_takes_table_settings_from_the_config_file_and_options(tmp_path: Path) -> None:
    _write_shoe(tmp_path / "shoe.jsonl", TableConfig(decks=6))
    config = tmp_path / "shoe-controller.toml"
    config.write_text('[table]\nid = "07"\ndecks = 6\nsqueeze = true\n', encoding="utf-8")
    result = CliRunner().invoke(
        replay_command,
        [str(tmp_path / "shoe.jsonl"), "--json", "--config", str(config), "--no-squeeze"],
    )
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.output.splitlines()]
    assert events[0]["data"]["total"] == 312  # six decks from the file
    dealt = [event["data"]["card"] for event in events if event["type"] == "card.dealt"]
    assert None not in dealt  # --no-squeeze overrode the file


def test_a_bad_line_is_named_and_nothing_is_printed(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"type": "shoe_state", "at": 1, "device": "scanner", "state": "loaded"}\n'
        "\n"
        '{"type": "card", "at": 2, "device": "scanner", "card": "ZZ"}\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(replay_command, [str(path)])
    assert result.exit_code == 1
    assert f"{path} line 3: card input, field 'card': not a card: 'ZZ'" in result.output
    assert "shoe.shuffled" not in result.output
    path.write_text("{not json\n", encoding="utf-8")
    assert "line 1: not JSON" in CliRunner().invoke(replay_command, [str(path)]).output
    path.write_text('{"type": ["card"], "at": 1}\n', encoding="utf-8")  # unhashable type
    assert (
        "line 1: an input's type must be a name, not a list; known: "  # words, not Python
        in CliRunner().invoke(replay_command, [str(path)]).output
    )
    path.write_bytes(b'{"type": "card"}\n\xff\xfe\n')
    assert "line 2: not UTF-8 text" in CliRunner().invoke(replay_command, [str(path)]).output


def test_bad_settings_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    result = CliRunner().invoke(replay_command, [str(path), "--decks", "5"])
    assert result.exit_code == 1
    assert "decks must be a whole number from 6 to 12" in result.output


def test_replay_runs_as_a_program(tmp_path: Path) -> None:
    inputs = _write_shoe(tmp_path / "shoe.jsonl", TableConfig(mode="batch_shuffler"))
    done = subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.replay", str(tmp_path / "shoe.jsonl"),
         "--json", "--mode", "batch_shuffler", "--last-shoe", "41"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert {event["shoe"] for event in events} == {42}
    assert len(inputs) < len(events)


def test_replay_for_a_person_says_the_zone_of_its_times(tmp_path: Path) -> None:
    _write_shoe(tmp_path / "shoe.jsonl", TableConfig())
    for options, zone in (([], "+08:00"), (["--utc"], "+00:00")):
        done = subprocess.run(
            [sys.executable, "-m", "shoe_controller.cli.replay", str(tmp_path / "shoe.jsonl"),
             *options],
            capture_output=True, text=True, check=False, timeout=60,
            env={**os.environ, "TZ": "Asia/Macau"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        heading, first, *_ = done.stdout.splitlines()
        assert heading.split()[:3] == ["#", "TIME", f"({zone})"]
        assert first[heading.index("SHOE/RND")] != " "  # the rows under their headings
