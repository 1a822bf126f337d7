"""A valid configuration naming every kind of file, its TOML text, and `shoe-controller run`
as a real process, for the start-up check tests (docs/config.md)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoe_controller.store.checkpoint_keys import write_new_key
from shoe_testkit.groups import CONTROL, SURVEILLANCE
from shoe_testkit.pki import make_pki

REPO = Path(__file__).resolve().parents[3]
SAMPLE_DECK = REPO / "config" / "decks" / "SIM0000-01.csv"
PROCESS_TIMEOUT_S = 60


@dataclass(frozen=True)
class Baseline:
    """Files for a configuration that passes every check: a key file (0640), a checkpoint key
    (0640), a CA file, a client certificate and key, one deck registry per device; journal and
    socket absent."""

    directory: Path

    @classmethod
    def make(cls, directory: Path) -> Baseline:
        directory.mkdir(parents=True, exist_ok=True)
        key = directory / "table.key"
        key.write_text("baseline-secret\n")
        key.chmod(0o640)
        write_new_key(directory / "checkpoint.key")  # made 0600, as `shoe-controller key --new`
        (directory / "checkpoint.key").chmod(0o640)  # as postinst leaves it
        make_pki(directory)
        for name in ("scanner-decks", "shuffler-decks"):
            (directory / name).mkdir()
            shutil.copy(SAMPLE_DECK, directory / name / SAMPLE_DECK.name)
        return cls(directory)

    def mapping(self) -> dict[str, dict[str, Any]]:
        """The configuration as parsed TOML: every section, every file key given."""
        here = self.directory
        return {
            "table": {"id": "07"},
            "scanner": {
                "port": "socket://127.0.0.1:9",
                "kind": "rfid",
                "registry": str(here / "scanner-decks"),
            },
            "shuffler": {
                "port": str(here / "shuffler.tty"),  # not there: plugged in later
                "kind": "shuffler",
                "registry": str(here / "shuffler-decks"),
            },
            "server": {
                "url": "https://127.0.0.1:9/push",
                "key_file": str(here / "table.key"),
                "ca_file": str(here / "ca.pem"),
                "client_cert": str(here / "client.pem"),
                "client_key": str(here / "client.key"),
                "timeout": 1.0,
            },
            "journal": {
                "path": str(here / "journal.db"),
                "checkpoint_key": str(here / "checkpoint.key"),
            },
            "control": {"socket": str(here / "control.sock"), **CONTROL},  # no group: groups.py
            "surveillance": {**SURVEILLANCE},  # a copy: tests change their sections
            "log": {"format": "json"},
            "api": {
                "listen": "127.0.0.1:9",  # checked, never bound
                "key_file": str(here / "table.key"),
                "tls_cert": str(here / "server.pem"),
                "tls_key": str(here / "server.key"),
                "client_ca": str(here / "ca.pem"),
            },
        }


def toml_text(config: Mapping[str, Mapping[str, Any]]) -> str:
    """TOML for flat sections of strings, numbers (nan and inf too), booleans and lists."""
    lines = []
    for section, keys in config.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(value)  # a JSON string is a TOML basic string; numbers are the same


@dataclass(frozen=True)
class Refusal:
    """What `shoe-controller run` did with a configuration it should refuse."""

    returncode: int
    stderr: str
    told_ready: bool  # a READY=1 reached the notify socket

    @property
    def lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def run_daemon(config_file: Path, notify_path: Path) -> Refusal:
    """`shoe-controller run --config FILE` as systemd starts it (NOTIFY_SOCKET set), to its
    end; the daemon of a configuration that passes would run until the timeout."""
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("WATCHDOG_USEC", "WATCHDOG_PID")}
        env.update(NOTIFY_SOCKET=str(notify_path), PYTHONPATH=str(REPO))
        done = subprocess.run(
            [sys.executable, "-m", "shoe_controller.cli.main", "run", "--config", str(config_file)],
            env=env,
            capture_output=True,
            text=True,
            timeout=PROCESS_TIMEOUT_S,
            check=False,
        )
        notify.setblocking(False)
        datagrams = []
        with contextlib.suppress(BlockingIOError):
            while True:
                datagrams.append(notify.recv(4096).decode())
        told_ready = any("READY=1" in datagram.splitlines() for datagram in datagrams)
        return Refusal(done.returncode, done.stderr, told_ready)
    finally:
        notify.close()
