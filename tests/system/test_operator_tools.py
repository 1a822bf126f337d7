"""What users of watch/upsc, nginx and journalctl expect: `shoectl status --watch`
redraws in place on a real pseudo-terminal without blanking the screen and ends cleanly on
Ctrl-C; `shoe-controller check --config FILE` runs the start-up checks alone (exit 0/1, like
`nginx -t`); `replay` reads a dispute file and standard input and shows a table. Real
processes against a live control socket over a real controller and journal."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.config import Baseline, toml_text
from shoe_testkit.control import GUARD_S, REPO, LiveTable, cli_env, open_shoe

HOME, ERASE_LINE, ERASE_BELOW, CLEAR = "\x1b[H", "\x1b[K", "\x1b[J", "\x1b[2J"
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
EXAMPLE = REPO / "docs" / "examples" / "inputs.jsonl"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveTable]:
    table = LiveTable(tmp_path)
    try:
        yield table
    finally:
        table.close()


def program(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli", *args], cwd=REPO, input=stdin,
        env=cli_env("/nonexistent", {"NO_COLOR": "1", "TZ": "UTC"}), capture_output=True,
        text=True, timeout=GUARD_S, check=False,
    )  # fmt: skip


class Terminal:
    """shoectl with its stdout on a real pseudo-terminal of 100 columns and 40 rows."""

    def __init__(self, live: LiveTable, *args: str) -> None:
        self.controller, terminal = pty.openpty()
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "shoe_controller.cli.shoectl", *args], cwd=REPO,
            env=cli_env(str(live.socket_path), {"NO_COLOR": "1"}), stdout=terminal,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        os.close(terminal)
        self.seen = ""

    def until(self, text: str, count: int = 1) -> str:
        """Read until `text` was seen `count` times; all read so far."""
        while self.seen.count(text) < count:
            ready, _, _ = select.select([self.controller], [], [], GUARD_S)
            assert ready, f"no {text!r} on the terminal: {self.seen[-400:]!r}"
            self.seen += os.read(self.controller, 65536).decode("utf-8")
        return self.seen

    def finish(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)  # Ctrl-C
        code = self.process.wait(GUARD_S)
        while True:
            ready, _, _ = select.select([self.controller], [], [], 0.5)
            if not ready:
                break
            try:
                chunk = os.read(self.controller, 65536)
            except OSError:  # EIO: the terminal closed
                break
            if not chunk:
                break
            self.seen += chunk.decode("utf-8")
        os.close(self.controller)
        assert self.process.stderr is not None
        return code, self.process.stderr.read().decode()


def test_status_watch_redraws_in_place_and_ctrl_c_ends_it(live: LiveTable) -> None:
    open_shoe(live)
    screen = Terminal(live, "status", "--watch", "--interval", "0.2")
    try:
        screen.until("Every 0.2 s: shoectl status", 1)
        live.deal(2)  # round 1 begins: the next frame shows it
        seen = screen.until("Round          1, P1", 1)
        seen = screen.until("Every 0.2 s: shoectl status", seen.count("Every 0.2 s") + 1)
    finally:
        code, errors = screen.finish()
    assert code == 0, errors
    assert errors == ""  # no traceback on Ctrl-C
    assert seen.startswith(HIDE_CURSOR + HOME + CLEAR)  # the screen cleared once
    assert seen.count(CLEAR) == 1  # and never again: frames are drawn over (no flicker)
    # After the first clear each frame starts at the top left (the terminal writes \r\n).
    frames = seen.replace("\r\n", "\n").split(HOME)[2:]
    assert len(frames) >= 2
    for frame in frames[:-1]:
        lines = frame.split("\n")
        assert all(line.endswith(ERASE_LINE) for line in lines[:-1])  # each line erased to its end
        assert frame.endswith(ERASE_BELOW)  # what the last frame had below is erased
        assert all(len(line.removesuffix(ERASE_LINE)) <= 100 for line in lines)  # no wrap
    assert "Health         OK" in seen
    assert screen.seen.endswith(SHOW_CURSOR)  # the cursor is back
    assert live.shoectl("status", "--watch", "--json").returncode == 2


def test_status_watch_piped_prints_frames_one_after_another(live: LiveTable) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", "status", "-w", "--interval", "0.1"],
        cwd=REPO, env=cli_env(str(live.socket_path)), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    heads = 0
    lines = []
    while heads < 2:
        line = process.stdout.readline()
        lines.append(line)
        heads += line.startswith("Every 0.1 s: shoectl status")
    process.send_signal(signal.SIGINT)
    assert process.wait(GUARD_S) == 0
    process.stdout.close()
    assert "\x1b" not in "".join(lines)  # no terminal codes into a pipe


def test_check_runs_the_start_up_checks_alone_like_nginx_t(tmp_path: Path) -> None:
    baseline = Baseline.make(tmp_path / "good")
    good = tmp_path / "good.toml"
    good.write_text(toml_text(baseline.mapping()))
    passed = program("check", "--config", str(good))
    assert passed.returncode == 0, passed.stderr
    # The baseline's shuffler port is not there (plugged in later): the daemon would start
    # and wait for it, so it is no failure, but it is said, and "every check passed" is not.
    shuffler = baseline.mapping()["shuffler"]["port"]
    assert f"shoe-controller: warning: shuffler port {shuffler} is not there now: the daemon" in (
        passed.stdout
    )
    assert passed.stdout.splitlines()[-1] == (
        f"shoe-controller: {good}: the start-up checks passed with 1 warning(s);"
        " `shoe-controller run` starts with it"
    )
    Path(shuffler).touch()  # the device is there now
    present = program("check", "--config", str(good))
    assert present.returncode == 0, present.stderr
    assert "warning" not in present.stdout
    assert present.stdout.splitlines()[-1] == (
        f"shoe-controller: {good}: every start-up check passed; `shoe-controller run` starts"
        " with it"
    )
    Path(shuffler).unlink()
    assert "shoe-controller: table 07 (tbl-07-shoe)" in passed.stdout
    assert not (baseline.directory / "journal.db").exists()  # nothing opened or created
    assert not (baseline.directory / "control.sock").exists()
    mapping = baseline.mapping()
    (baseline.directory / "table.key").chmod(0o644)  # a secret others may read
    failed = program("check", "--config", str(good))
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.splitlines() == [
        f"Error: {good}: [server] key_file = '{mapping['server']['key_file']}': others may use it"
        " (mode 0644); allowed: owner and group only, e.g. chmod 640 (docs/install.md)",
        f"shoe-controller: {good}: check failed",
    ]
    missing = program("check", "--config", str(tmp_path / "absent.toml"))
    assert missing.returncode == 1
    assert "Traceback" not in missing.stderr
    listed = program("--help").stdout
    assert re.search(r"^  check +Check a configuration as `run` does at start-up", listed, re.M)


def test_replay_shows_a_table_reads_a_dispute_file_and_standard_input(
    live: LiveTable, tmp_path: Path
) -> None:
    table = program("replay", str(EXAMPLE))
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[:2] == ["#", "TIME"]
    assert re.fullmatch(r"\([+-]\d\d:\d\d\)", header.split()[2])  # the zone of the times
    assert header.split()[3:] == ["SHOE/RND", "TYPE", "DETAILS"]
    assert rows[-1] == f"{len(EXAMPLE.read_text().splitlines())} input(s) replayed:" + (
        f" {len(rows) - 1} event(s)"
    )
    assert any(re.search(r"round\.result +Player wins \(8-5\): P 4♣ 8♣ 6♠ = 8", r) for r in rows)
    assert "['" not in table.stdout  # `released: supervisor_hold`, not a Python list
    as_json = program("replay", "--json", "-", stdin=EXAMPLE.read_text())
    assert as_json.returncode == 0, as_json.stderr
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert len(events) == len(rows) - 1
    # A dispute file of a live table: its inputs replayed with its own table settings.
    open_shoe(live)
    live.deal(6)
    dispute = tmp_path / "round1.jsonl"
    assert live.shoectl("round", "1", "--export", str(dispute)).returncode == 0
    replayed = program("replay", "--json", str(dispute))
    assert replayed.returncode == 0, replayed.stderr
    stored = [
        json.loads(line)
        for line in dispute.read_text().splitlines()
        if json.loads(line).get("record") == "event"
    ]
    again = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert [(e["type"], e["data"]) for e in again] == [(e["type"], e["data"]) for e in stored]
