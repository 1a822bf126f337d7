"""Each command says what it did, or why it did nothing, as the real programs do.

A file that cannot be written is one line and exit 1, from the option's check or from the
write itself (the one helper, cli/output_file.py); a replay of nothing is an error, not an
empty table; a demo's `--fresh` with no `--dir` to clear, and a `dealer` with neither `--id`
nor `--out`, are usage errors before anything runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from shoe_testkit.control import REPO

from shoe_controller.store.journal import Journal

GUARD_S = 60.0


def program(*args: str, module: str = "shoe_controller.cli") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    env.pop("SHOECTL_SOCKET", None)
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True,
        text=True, timeout=GUARD_S, check=False,
    )  # fmt: skip


def shoectl(*args: str) -> subprocess.CompletedProcess[str]:
    return program(*args, module="shoe_controller.cli.shoectl")


def _journal(path: Path) -> Path:
    with Journal.open(path, "tbl-07-shoe"):
        pass
    return path


def test_an_export_into_a_folder_that_is_not_there_is_one_line_and_exit_1(
    tmp_path: Path,
) -> None:
    journal = _journal(tmp_path / "journal.db")
    target = tmp_path / "gone" / "shift.jsonl"
    done = program("export", "--journal", str(journal), "--since", "-1h", "-o", str(target))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Error: Could not open file '{target}': there is no folder {target.parent}"
    ]
    assert not target.parent.exists()


def test_a_place_the_check_cannot_tell_is_said_when_the_write_fails(tmp_path: Path) -> None:
    """/proc takes no file, whoever asks (root's permission checks pass): the write says it."""
    journal = _journal(tmp_path / "journal.db")
    done = program("report", "--journal", str(journal), "--since", "-1h", "-o", "/proc/x.csv")
    assert done.returncode == 1
    assert done.stdout == ""
    [line] = done.stderr.splitlines()  # no traceback: one line
    assert line.startswith("Error: Could not open file '/proc/x.csv': ")


def test_a_round_export_and_a_road_picture_are_checked_before_the_controller_is_asked(
    tmp_path: Path,
) -> None:
    socket_path = str(tmp_path / "no.sock")  # not asked: the place is refused first
    exported = shoectl("--socket", socket_path, "round", "3", "--export", str(tmp_path))
    assert exported.returncode == 1
    assert exported.stderr.splitlines() == [
        f"Error: Could not open file '{tmp_path}': it is a folder: give the name of a file in it"
    ]
    drawn = shoectl("--socket", socket_path, "--json", "road", "--svg", "/nowhere/road.svg")
    assert drawn.returncode == 1
    assert json.loads(drawn.stdout) == {
        "error": "file",
        "message": "Could not open file '/nowhere/road.svg': there is no folder /nowhere",
    }


def test_a_replay_of_no_input_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    done = program("replay", str(empty))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [f"Error: {empty} holds no input to replay"]
    piped = program("replay", "--json", str(empty))
    assert piped.returncode == 1
    assert json.loads(piped.stdout) == {
        "error": "failed",
        "message": f"{empty} holds no input to replay",
    }


def test_demo_fresh_needs_a_folder_to_clear() -> None:
    done = program("demo", "--fresh")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith(
        "Error: --fresh deletes what an earlier demo left in --dir: give --dir DIR"
    )


def test_dealer_needs_an_id_or_out_before_the_controller_is_asked(tmp_path: Path) -> None:
    socket_path = str(tmp_path / "no.sock")
    done = shoectl("--socket", socket_path, "dealer", "--by", "sup1", "--reason", "shift")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "Error: dealer needs --id or --out"
    asked = shoectl("--socket", socket_path, "dealer", "--out", "--by", "sup1", "--reason", "x")
    assert asked.returncode == 2  # given: it goes to the controller, which is not there
    assert asked.stderr.startswith("shoectl: cannot reach the controller")


def test_an_unreachable_controller_under_json_is_a_json_error(tmp_path: Path) -> None:
    socket_path = tmp_path / "no.sock"
    done = shoectl("--socket", str(socket_path), "rounds", "--json")
    assert done.returncode == 2
    assert done.stderr == ""
    answer = json.loads(done.stdout)
    assert answer["error"] == "unreachable"
    assert answer["message"].startswith(f"cannot reach the controller: no socket at {socket_path}")
