"""Commands that agree: one rule for a shoe that is not there, a header row on
`events`, "Needs a person" lined up, refused commands apart from the round's alerts, KIND
of a scanner that failed to open, a --socket that is a folder, house edge and player edge
named. Real processes: shoectl against a live control socket over a real controller and
journal (tests/support/shoe_testkit/control.py), and a real daemon (TableRig) whose scanner
cannot be opened."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.control import GUARD_S, REPO, LiveTable, cli_env, open_shoe
from shoe_testkit.rig import TableRig
from shoe_testkit.users import run_cli

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveTable]:
    table = LiveTable(tmp_path)
    try:
        yield table
    finally:
        table.close()


def test_a_shoe_that_is_not_there_is_an_error_for_every_command(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(4)  # round 1 begun
    missing_round = live.shoectl("round", "99")
    assert missing_round.returncode == 2
    assert missing_round.stderr == "shoectl: shoe 1 has no round 99 in the journal\n"
    for command in (["rounds", "--shoe", "2"], ["road", "--shoe", "2"]):
        result = live.shoectl(*command)
        assert result.returncode == 2, command
        assert result.stdout == ""
        assert result.stderr == ("shoectl: shoe 2 has not been dealt yet: the shoe in play is 1\n")
    for command in (["rounds"], ["road"], ["round", "1"], ["edge"]):
        zero = live.shoectl(*command, "--shoe", "0")
        assert zero.returncode == 2, command
        assert "Invalid value for '--shoe': 0 is not in the range x>=1" in zero.stderr
    assert live.shoectl("round", "0").returncode == 2
    # The shoe in play is there, even before its first round ends.
    assert live.shoectl("rounds", "--shoe", "1").returncode == 0
    assert live.shoectl("road", "--shoe", "1").returncode == 0


def test_needs_a_person_lines_up_and_refused_commands_stand_apart(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(2)  # round 1 in progress: P1, B1
    refused = live.shoectl("resume", "--by", "sup7", "--reason", "nothing held")
    assert refused.returncode == 1
    assert refused.stderr == "refused: nothing to resume\n"  # not "refused: resume refused"
    rounds = live.shoectl("rounds")
    row = next(line for line in rounds.stdout.splitlines() if line.startswith("1 "))
    assert row.endswith("1 refused command(s)")
    assert "alert(s)" not in row  # a person's refused command is no alert of the round
    healthy = live.shoectl("status")
    assert healthy.returncode == 0, healthy.stdout
    assert "Recent alerts:" not in healthy.stdout
    assert re.search(
        r"^Recent refused commands:\nSEQ +TIME \(\+00:00\) +SHOE/RND +ALERT +TEXT\n\d+ +\S+ +1/1 +"
        r"refused +resume refused: nothing to resume$",
        healthy.stdout,
        re.MULTILINE,
    ), healthy.stdout

    live.start_publisher()  # towards a port nobody listens on: a WARNING
    live.wait_for(lambda: live.call(live.publisher.status).consecutive_failures >= 1)
    assert live.shoectl("hold", "--by", "sup7", "--reason", "dispute").returncode == 0  # CRITICAL
    status = live.shoectl("status")
    needs = status.stdout.split("Needs a person:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    levels = {line.split()[0] for line in needs if not line.strip().startswith("->")}
    assert levels == {"WARNING", "CRITICAL"}, needs
    columns = {len(re.match(r"  (WARNING|CRITICAL) +", line)[0]) for line in needs  # type: ignore[index]
               if not line.strip().startswith("->")}  # fmt: skip
    assert columns == {len("  CRITICAL  ")}  # every text starts in the same column
    actions = [line for line in needs if line.strip().startswith("->")]
    assert all(line.startswith(" " * len("  CRITICAL  ") + "->") for line in actions)
    assert "Recent alerts:" in status.stdout  # the hold is an alert of play


def test_events_has_a_header_row_as_round_has(live: LiveTable) -> None:
    open_shoe(live)
    events = live.shoectl("events").stdout.splitlines()
    round_table = live.shoectl("round", "1")  # none yet: the burn only
    assert round_table.returncode == 2
    assert events[0].split() == ["SEQ", "TIME", "(+00:00)", "SHOE/RND", "TYPE", "DETAILS"]


def test_a_socket_that_is_a_folder_says_so(tmp_path: Path) -> None:
    result = run_cli(str(tmp_path), "status")
    assert result.returncode == 2
    assert result.stderr == (
        f"shoectl: cannot reach the controller: {tmp_path} is a folder, not the control socket"
        f" (give the socket in it, e.g. --socket {tmp_path / 'control.sock'})\n"
    )
    plain = tmp_path / "notes.txt"
    plain.write_text("x")
    assert "is a file, not a socket" in run_cli(str(plain), "status").stderr


def test_a_scanner_that_failed_to_open_shows_its_kind_and_the_docs_level(tmp_path: Path) -> None:
    """status says WARNING with no shoe open (play is not stopped), CRITICAL once a shoe is
    open (docs/control.md's health model); docs/shoectl.md says the same."""
    rig = TableRig(tmp_path / "t")
    try:
        rig.directory.mkdir(parents=True)
        rig.key_file.write_text("k" * 64 + "\n")
        rig.key_file.chmod(0o600)
        rig.start_receiver()
        rig.write_config(scanner={"port": str(rig.directory / "no-such-tty")})
        rig.start_daemon()
        socket_path = str(rig.directory / "control.sock")
        devices = run_cli(socket_path, "devices")
        assert devices.returncode == 0, devices.stderr
        header, row = devices.stdout.splitlines()[:2]
        assert header.split()[:3] == ["DEVICE", "STATUS", "KIND"]
        assert row.split()[:4] == ["scanner", "not", "opened", "optical"]
        status = run_cli(socket_path, "status")
        assert status.returncode == 1
        assert re.search(r"^Health +WARNING$", status.stdout, re.MULTILINE), status.stdout
        assert re.search(r"^  WARNING  .*scanner", status.stdout, re.MULTILINE), status.stdout
    finally:
        rig.close()
    guide = " ".join((REPO / "docs" / "shoectl.md").read_text().split())
    assert "a configured device down (lost, silent, failed to open, stopped) while a shoe is" in (
        guide
    )
    assert "WARNING: a device warning, a configured device down while no shoe is open" in guide


def test_odds_names_the_house_edge_and_edge_the_player_edge() -> None:
    odds = subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli", "odds", "--decks", "1"], cwd=REPO,
        env=cli_env("/nonexistent"), capture_output=True, text=True, timeout=GUARD_S, check=True,
    )  # fmt: skip
    assert "house edge: what the house keeps of each unit staked, positive when the house" in (
        odds.stdout
    )
    assert "`shoectl edge` shows the player edge" in odds.stdout
    edge_help = run_cli("/nonexistent", "edge", "--help").stdout
    assert "player edge" in edge_help
