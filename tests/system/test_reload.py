"""SIGHUP (`systemctl reload`): the daemon takes the config file's [log] section again; the
table settings stay those of the start, the ones it journaled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.groups import CONTROL_TOML, SURVEILLANCE_TOML

from shoe_controller.store.journal import Journal

GUARD_S = 30.0


@pytest.fixture
def directory() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="hup-") as name:  # a short socket path
        yield Path(name)


def write_config(directory: Path, level: str, table: str = "") -> Path:
    (directory / "table.key").write_text("secret\n")
    (directory / "table.key").chmod(0o640)  # docs/install.md: never readable by others
    config = directory / "config.toml"
    config.write_text(
        f'[server]\nurl = "http://127.0.0.1:9"\nkey_file = "{directory / "table.key"}"\n'
        f'[journal]\npath = "{directory / "journal.db"}"\n'
        f'[control]\nsocket = "{directory / "control.sock"}"\n{CONTROL_TOML}'
        f'[log]\nformat = "json"\nlevel = "{level}"\n{SURVEILLANCE_TOML}{table}'
    )
    return config


def log_lines(path: Path) -> list[dict[str, object]]:
    lines = []
    for line in path.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return lines


def wait_for(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + GUARD_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {GUARD_S} s for {what}")
        time.sleep(0.05)


def shoectl(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    socket = str(directory / "control.sock")
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", "--socket", socket, *args],
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )


def test_sighup_applies_a_new_log_level_without_a_restart(directory: Path) -> None:
    config = write_config(directory, "warning")
    log = directory / "daemon.log"
    with log.open("w") as stderr:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "shoe_controller.cli.main", "run", "--config", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_for((directory / "control.sock").exists, "the control socket")
        held = shoectl(directory, "hold", "--by", "sup7", "--reason", "quiet at warning level")
        assert held.returncode == 0, held.stderr
        wait_for(  # what needs a person is a warning: shown
            lambda: any(line.get("type") == "procedure.alert" for line in log_lines(log)),
            "the hold's alert at warning level",
        )
        assert not any(line.get("type") == "supervisor.action" for line in log_lines(log))
        write_config(directory, "info")
        os.kill(daemon.pid, signal.SIGHUP)
        wait_for(
            lambda: any(line.get("event") == "logs reopened" for line in log_lines(log)),
            "the logs to be reopened",
        )
        resumed = shoectl(directory, "resume", "--by", "sup7", "--reason", "heard at info level")
        assert resumed.returncode == 0, resumed.stderr
        wait_for(
            lambda: any(line.get("type") == "supervisor.action" for line in log_lines(log)),
            "the resume to be logged at info level",
        )
        assert daemon.poll() is None  # reloaded, not restarted
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=GUARD_S) == 0


def test_sighup_keeps_the_journaled_table_settings_and_says_the_file_changed(
    directory: Path,
) -> None:
    config = write_config(directory, "info")
    log = directory / "daemon.log"
    with log.open("w") as stderr:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "shoe_controller.cli.main", "run", "--config", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_for((directory / "control.sock").exists, "the control socket")
        write_config(directory, "info", '[table]\nid = "07"\ndecks = 6\n')
        os.kill(daemon.pid, signal.SIGHUP)
        wait_for(
            lambda: any(line.get("event") == "logs reopened" for line in log_lines(log)),
            "the logs to be reopened",
        )
        changed = [line for line in log_lines(log) if line.get("changed")]
        assert [(line["level"], line["changed"]) for line in changed] == [("warning", ["decks"])]
        with Journal.open(directory / "journal.db", None, read_only=True) as journal:
            settings = [
                step.input["settings"]["decks"]
                for step in journal.reads.replay_steps(1)
                if step.input["type"] == "table_settings"
            ]
        assert settings == [8]  # journaled at the start; nothing new is in force
        assert daemon.poll() is None
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=GUARD_S) == 0
