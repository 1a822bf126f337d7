"""`shoectl pace` and `shoe-controller report` on a recorded shift: three shoes, two
dealers (tests/data/shift-29.jsonl; its schedule in tests/data/shift_29_make.py) journaled
through a real controller, then asked as a pit boss asks, as real processes, in a zone that
is not UTC. Both must agree with the hand count below, made from the schedule, not the code.

The hand count (UTC; the zone Asia/Macau is UTC+8, no daylight saving):
- rounds with a result: shoe 1 12, shoe 2 12 (round 13 voided), shoe 3 10: 34; each round's
  first card to result 15 s, but shoe 2 round 3 (held 30 s for its early card): 45 s; bets
  closed to first card 10 s (33 rounds: round 3 had none);
- D-1 in charge 06:58-08:00 (62 min): shoe 1 and shoe 2 rounds 1-5, 17 rounds; D-2 08:00-09:05
  (65 min): shoe 2 rounds 6-12 and shoe 3, 17 rounds;
- downtime: shoe 2's first round 07:45:10, 550 s after shoe 1 ended at 07:36:00; shoe 3's
  08:34:10, 670 s after 08:23:00;
- by local hour: 15:00 17 rounds (shoe 1, shoe 2 rounds 1-5), the early card hold (30 s),
  shoe 1 ended; 16:00 16 rounds (shoe 2 rounds 6-12, shoe 3 rounds 1-9), the void, shoe 2
  ended; 17:00 1 round (shoe 3 round 10), the supervisor's hold (90 s), shoe 3's misdeal;
- the last hour before 09:10 UTC (17:10 local): shoe 2 rounds 10-12 and shoe 3: 13 rounds.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.control import REPO, LiveTable, cli_env

from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.inputs import input_from_json

SHIFT = REPO / "tests" / "data" / "shift-29.jsonl"
ZONE = {"TZ": "Asia/Macau"}
SINCE, UNTIL = "2026-11-30 14:55", "2026-11-30 17:10"  # local: 06:55 to 09:10 UTC


@pytest.fixture(scope="module")
def journal_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shift") / "journal.db"
    with Journal.open(path, "tbl-07-shoe") as journal:
        controller = Controller(TableConfig(betting="server", insurance=False), journal)
        for line in SHIFT.read_text(encoding="utf-8").splitlines():
            controller.submit(input_from_json(json.loads(line)))
        alerts = [e.data["code"] for e in journal.reads.events_after(0, 10_000)
                  if e.type == "procedure.alert"]  # fmt: skip
    assert alerts == ["early_card", "supervisor_hold"]  # the recording is as the schedule says
    return path


def _run(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _report(journal_file: Path, form: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), **ZONE}
    return _run("-m", "shoe_controller.cli.main", "report", "--journal", str(journal_file),
                "--since", SINCE, "--until", UNTIL, "--format", form, env=env)  # fmt: skip


def test_the_report_agrees_with_the_hand_count(journal_file: Path) -> None:
    rows = {
        (row["kind"], row["name"]): row for row in json.loads(_report(journal_file, "json"))["rows"]
    }
    total = rows["total", ""]
    assert (total["rounds"], total["voided"], total["shoes_ended"], total["misdeals"]) == (
        34,
        1,
        3,
        1,
    )
    assert total["round_seconds_p50"] == 15.0
    assert total["bets_closed_to_first_card_p50"] == 10.0
    assert total["downtime_seconds"] == 550 + 670
    assert total["holds"]["early_card"]["resolve_seconds_p50"] == 30.0
    assert total["holds"]["supervisor_hold"]["resolve_seconds_max"] == 90.0
    hours = {name: row for (kind, name), row in rows.items() if kind == "hour"}
    assert list(hours) == [  # the local zone's hours, with its offset
        "2026-11-30T14:00:00+08:00", "2026-11-30T15:00:00+08:00",
        "2026-11-30T16:00:00+08:00", "2026-11-30T17:00:00+08:00",
    ]  # fmt: skip
    assert [row["rounds"] for row in hours.values()] == [0, 17, 16, 1]
    assert [row["voided"] for row in hours.values()] == [0, 0, 1, 0]
    assert [row["misdeals"] for row in hours.values()] == [0, 0, 0, 1]
    assert [row["shoes_ended"] for row in hours.values()] == [0, 1, 1, 1]
    assert [row["downtime_seconds"] for row in hours.values()] == [0, 550, 670, 0]
    assert list(hours["2026-11-30T15:00:00+08:00"]["holds"]) == ["early_card"]
    assert list(hours["2026-11-30T17:00:00+08:00"]["holds"]) == ["supervisor_hold"]
    for name, rounds, minutes in (("D-1", 17, 62), ("D-2", 17, 65)):
        dealer = rows["dealer", name]
        assert dealer["rounds"] == rounds
        assert dealer["hours"] == round(minutes / 60, 3)
        assert dealer["rounds_per_hour"] == round(rounds / (minutes / 60), 2)
    assert json.loads(_report(journal_file, "json"))["since"] == "2026-11-30T06:55:00.000000Z"


def test_the_csv_report_holds_the_same_rows(journal_file: Path) -> None:
    table = list(csv.DictReader(io.StringIO(_report(journal_file, "csv"))))
    assert [(row["kind"], row["name"]) for row in table][-3:] == [
        ("dealer", "D-1"), ("dealer", "D-2"), ("total", ""),
    ]  # fmt: skip
    total = table[-1]
    assert total["rounds"] == "34"
    assert total["rounds an hour"] == "15.11"  # 34 over the 2 h 15 min asked
    assert total["holds: card before bets closed"] == "1"
    assert total["median time to resolve (s): supervisor's hold"] == "90.0"
    assert not [heading for heading in table[0] if "_" in heading]  # headings in words


@pytest.fixture(scope="module")
def live(journal_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTable]:
    workdir = tmp_path_factory.mktemp("live")
    shutil.copy(journal_file, workdir / "journal.db")  # the daemon's journal: the recording
    table = LiveTable(workdir, procedures={"clock": True, "insurance": False})
    try:
        yield table
    finally:
        table.close()


def _pace(live: LiveTable, *more: str) -> str:
    env = cli_env(str(live.socket_path), ZONE)
    return _run("-m", "shoe_controller.cli.shoectl", "pace", "--since", SINCE, "--until", UNTIL,
                *more, env=env)  # fmt: skip


def test_shoectl_pace_agrees_with_the_hand_count(live: LiveTable) -> None:
    figures: dict[str, Any] = json.loads(_pace(live, "--json"))
    assert figures["shift"]["rounds"] == 34
    # Over the time with play: round 1's first card, 15:01:10, to 17:10 (not from 14:55).
    assert figures["shift"]["rounds_per_hour"] == round(34 / (2 + 8 / 60 + 50 / 3600), 2)
    assert figures["shift"]["played_since"] == "2026-11-30T07:01:10.000000Z"
    assert figures["last_hour"]["rounds"] == 13
    assert figures["shift"]["round_seconds_p50"] == 15.0
    assert figures["shift"]["round_seconds_p90"] == 15.0
    assert figures["shift"]["bets_closed_to_first_card_p90"] == 10.0
    assert figures["shift"]["voided"] == 1
    assert [(s["shoe"], s["downtime_seconds"]) for s in figures["shoes"]] == [
        (1, None), (2, 550.0), (3, 670.0),
    ]  # fmt: skip
    assert figures["shoes"][1]["first_round_at"] == "2026-11-30T07:45:10.000000Z"
    assert {name: d["rounds"] for name, d in figures["dealers"].items()} == {"D-1": 17, "D-2": 17}
    assert figures["dealers"]["D-2"]["voided"] == 1


def test_shoectl_pace_shows_local_times_for_a_person(live: LiveTable) -> None:
    text = _pace(live)
    assert "2026-11-30 14:55:00.000 +08:00" in text
    assert "15:45:10.000" in text  # shoe 2's first round, local
    assert "9 min 10 s" in text  # its downtime
    assert "dealer D-1" in text
    assert "dealer D-2" in text
