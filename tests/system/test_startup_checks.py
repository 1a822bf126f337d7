"""`shoe-controller run` refuses each bad configuration value as a real process: one line on stderr
naming the key, exit status 1, no traceback, no READY to systemd, nothing created; the same
configuration unbroken starts; the deck registry checked at start-up is the one the devices use.

Before, each of these passed the config check and then crashed start-up with a traceback at
every restart (systemd restarting the table forever), or ran half (no control socket, a journal
retried forever). docs/config.md lists the rules; tests/service/test_config_property.py sweeps every
key in-process through the same checks.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.config import REPO, Baseline, run_daemon, toml_text
from shoe_testkit.rig import TableRig

from drivers.translate.registry import DeckRegistry, RegistryError
from shoe_controller.service.config import DeviceSection
from shoe_controller.service.devices import DeviceRunner
from shoe_controller.service.preflight import load_checked

READY_WAIT_S = 30.0

Raw = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def baseline() -> Iterator[Baseline]:
    with tempfile.TemporaryDirectory(prefix="startup-") as name:  # short: socket paths
        yield Baseline.make(Path(name))


@pytest.fixture
def case_dir() -> Iterator[Path]:
    """This case's journal, socket, config file and notify socket (short paths)."""
    with tempfile.TemporaryDirectory(prefix="case-") as name:
        yield Path(name)


def unbroken(baseline: Baseline, case_dir: Path) -> Raw:
    raw = baseline.mapping()
    raw["journal"]["path"] = str(case_dir / "journal.db")
    raw["control"]["socket"] = str(case_dir / "control.sock")
    return raw


def _registry_missing(raw: Raw, here: Path) -> None:
    raw["scanner"]["registry"] = str(here / "no-such-decks")


def _registry_a_file(raw: Raw, here: Path) -> None:
    (here / "decks.csv").write_text("uid_hex,rank,suit,deck_serial\n04AABBCCDD,1,0,D\n")
    raw["scanner"]["registry"] = str(here / "decks.csv")


def _registry_malformed(raw: Raw, here: Path) -> None:
    (here / "decks").mkdir()
    (here / "decks" / "d.csv").write_text('uid_hex,rank,suit,deck_serial\n04AABBCCDD,"1,0\n')
    raw["scanner"]["registry"] = str(here / "decks")


def _url(url: str) -> Callable[[Raw, Path], None]:
    def breaks(raw: Raw, _here: Path) -> None:
        raw["server"]["url"] = url

    return breaks


def _key_world_readable(raw: Raw, here: Path) -> None:
    key = here / "table.key"
    key.write_text("secret\n")
    key.chmod(0o644)
    raw["server"]["key_file"] = str(key)


def _journal_empty(raw: Raw, _here: Path) -> None:
    raw["journal"]["path"] = ""


def _journal_a_directory(raw: Raw, here: Path) -> None:
    (here / "journal.db").mkdir()
    raw["journal"]["path"] = str(here / "journal.db")


def _socket_empty(raw: Raw, _here: Path) -> None:
    raw["control"]["socket"] = ""


def _socket_too_long(raw: Raw, here: Path) -> None:
    raw["control"]["socket"] = str(here / ("s" * (110 - len(str(here)))))


REPRODUCTIONS = [
    pytest.param(_registry_missing, "[scanner] registry", id="registry-missing"),
    pytest.param(_registry_a_file, "[scanner] registry", id="registry-a-file"),
    pytest.param(_registry_malformed, "[scanner] registry", id="registry-malformed-csv"),
    pytest.param(_url("https://127.0.0.1:99999"), "[server] url", id="url-port-99999"),
    pytest.param(_url("https://127.0.0.1:abc"), "[server] url", id="url-port-abc"),
    pytest.param(_url("http://[::1"), "[server] url", id="url-unclosed-ipv6"),
    pytest.param(_url("https://127.0.0.1:0"), "[server] url", id="url-port-0"),
    pytest.param(_key_world_readable, "[server] key_file", id="key-file-world-readable"),
    pytest.param(_journal_empty, "[journal] path", id="journal-path-empty"),
    pytest.param(_journal_a_directory, "[journal] path", id="journal-path-a-directory"),
    pytest.param(_socket_empty, "[control] socket", id="socket-empty"),
    pytest.param(_socket_too_long, "[control] socket", id="socket-over-108-bytes"),
]


@pytest.mark.parametrize(("breaks", "names"), REPRODUCTIONS)
def test_the_daemon_refuses_with_one_line_and_exit_1(
    baseline: Baseline, case_dir: Path, breaks: Callable[[Raw, Path], None], names: str
) -> None:
    raw = unbroken(baseline, case_dir)
    breaks(raw, case_dir)
    config_file = case_dir / "config.toml"
    config_file.write_text(toml_text(raw))
    refusal = run_daemon(config_file, case_dir / "notify")
    assert "Traceback" not in refusal.stderr
    assert len(refusal.lines) == 1, refusal.stderr
    assert names in refusal.lines[0]
    assert str(config_file) in refusal.lines[0]  # which file to edit
    assert refusal.returncode == 1
    assert not refusal.told_ready  # systemd never saw it up
    assert not (case_dir / "journal.db").is_file()  # refused before anything was opened
    assert not (case_dir / "control.sock").exists()


def test_the_same_configuration_unbroken_starts(baseline: Baseline, case_dir: Path) -> None:
    """The reproductions differ from a configuration that runs by the one broken value."""
    config_file = case_dir / "config.toml"
    config_file.write_text(toml_text(unbroken(baseline, case_dir)))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(case_dir / "notify"))
    notify.settimeout(READY_WAIT_S)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.main", "run", "--config", str(config_file)],
        env={**os.environ, "NOTIFY_SOCKET": str(case_dir / "notify"), "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while "READY=1" not in notify.recv(4096).decode().splitlines():
            pass
        assert (case_dir / "journal.db").is_file()
        assert (case_dir / "control.sock").is_socket()
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(READY_WAIT_S) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
        _, stderr = daemon.communicate()
        notify.close()
    assert "Traceback" not in stderr


def test_the_devices_use_the_registry_the_checks_loaded(baseline: Baseline, case_dir: Path) -> None:
    """Loaded once at start-up and handed on: the runner does not read the directory again
    (here it is gone by then, and the runner still has every card)."""
    raw = unbroken(baseline, case_dir)
    decks = case_dir / "decks"
    decks.mkdir()
    (decks / "d.csv").write_bytes(Path(raw["scanner"]["registry"], "SIM0000-01.csv").read_bytes())
    raw["scanner"]["registry"] = str(decks)
    config_file = case_dir / "config.toml"
    config_file.write_text(toml_text(raw))
    checked = load_checked(config_file)
    (decks / "d.csv").unlink()
    decks.rmdir()
    section = checked.config.scanner
    assert isinstance(section, DeviceSection)
    with pytest.raises(RegistryError):  # what reading it again would do
        DeviceRunner("scanner", section, lambda inputs, state: None, None)
    runner = DeviceRunner(
        "scanner", section, lambda inputs, state: None, None, registry=checked.registries["scanner"]
    )
    assert runner.status == "starting"


def test_the_table_rigs_configuration_passes(case_dir: Path) -> None:
    """The configuration the end-to-end tests run the daemon with is not refused."""
    rig = TableRig(case_dir / "rig")
    rig.directory.mkdir()
    rig.key_file.write_text("rig-secret\n")
    rig.key_file.chmod(0o600)
    rig.receiver_port = 8700
    checked = load_checked(rig.write_config())
    assert checked.config.table.id


def test_the_registry_says_a_file_is_not_a_directory(case_dir: Path) -> None:
    (case_dir / "decks.csv").write_text("04AABBCCDD,1,0,D\n")
    with pytest.raises(RegistryError, match=r"decks\.csv is not a directory"):
        DeckRegistry.load(case_dir / "decks.csv")
    with pytest.raises(RegistryError, match="decks does not exist"):
        DeckRegistry.load(case_dir / "decks")
