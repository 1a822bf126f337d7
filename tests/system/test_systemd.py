"""The daemon under systemd: the unit file passes `systemd-analyze`, and the process speaks
sd_notify (READY with STATUS, WATCHDOG from the main loop, STOPPING, a clean exit on SIGTERM).

The notify tests bind the datagram socket systemd would (NOTIFY_SOCKET) and read each
message with the sender's credentials, as systemd does for NotifyAccess=main.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from shoe_testkit.groups import CONTROL_TOML, SURVEILLANCE_TOML
from shoe_testkit.rig import RigOptions, TableRig

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "systemd" / "shoe-controller.service"
COMPANION = REPO / "systemd" / "shoe-surveillance.service"  # docs/surveillance.md
WATCHDOG_USEC = 300_000  # the daemon pings every half of it
MAX_EXPOSURE = 2.0  # systemd-analyze security: lower is better; 10 is an unhardened service
WAIT_S = 20.0  # generous: a loaded CI machine; nothing here is timed

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze is not installed here (systemd is not this machine's init)",
)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # Unix socket paths must stay under 108 bytes: not pytest's long tmp_path.
    with tempfile.TemporaryDirectory(prefix="sd-") as name:
        yield Path(name)


def installable_unit(directory: Path, source: Path = UNIT) -> Path:
    """The unit with ExecStart pointing at a binary that exists on this machine."""
    binary = shutil.which("shoe-controller") or sys.executable
    text = source.read_text()
    exec_start = re.search(r"^ExecStart=(\S+)", text, re.MULTILINE)
    assert exec_start is not None, "the unit has no ExecStart"
    if binary == sys.executable:
        binary = f"{sys.executable} -m shoe_controller.cli.main"
    unit = directory / source.name
    unit.write_text(text.replace(exec_start.group(0), f"ExecStart={binary}", 1))
    return unit


# ---------------------------------------------------------------------- the unit file


@needs_systemd_analyze
@pytest.mark.parametrize("source", [UNIT, COMPANION], ids=lambda path: path.stem)
def test_unit_file_passes_systemd_analyze_verify(short_dir: Path, source: Path) -> None:
    if source == COMPANION:  # it names the controller's unit: verify finds it beside it
        installable_unit(short_dir)
    unit = installable_unit(short_dir, source)
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # verify exits 0 even for unknown keys and bad values; those come as lines naming the file
    complaints = [line for line in done.stderr.splitlines() if unit.name in line]
    assert done.returncode == 0, done.stderr
    assert complaints == []


@needs_systemd_analyze
@pytest.mark.parametrize("source", [UNIT, COMPANION], ids=lambda path: path.stem)
def test_unit_file_is_hardened(short_dir: Path, source: Path) -> None:
    unit = installable_unit(short_dir, source)
    done = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    level = re.search(r"Overall exposure level for \S+: (\d+\.\d)", done.stdout)
    assert level is not None, done.stdout[-500:]
    assert float(level.group(1)) <= MAX_EXPOSURE


def test_unit_file_has_what_the_daemon_relies_on() -> None:
    """Type=notify with a watchdog (sd_notify below), its own user, state and runtime
    directories, a read-only system, and device access only to the table's devices."""
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    assert settings["Type"] == ["notify"]
    assert float(settings["WatchdogSec"][0]) > 0
    assert settings["User"][0] not in ("", "root")
    assert settings["StateDirectory"] == ["shoe-controller"]
    assert settings["RuntimeDirectory"] == ["shoe-controller"]
    assert settings["ProtectSystem"] == ["strict"]
    assert settings["NoNewPrivileges"] == ["yes"]
    assert settings["DevicePolicy"] == ["closed"]
    allowed = {value.split()[0] for value in settings["DeviceAllow"]}
    assert {"/dev/shoe-scanner", "/dev/shoe-shuffler"} <= allowed
    assert settings["ExecReload"] == ["/bin/kill -HUP $MAINPID"]  # SIGHUP reopens the logs


# ---------------------------------------------------------------------- sd_notify


@dataclass(frozen=True)
class Notification:
    pid: int
    fields: dict[str, str]


class NotifySocket:
    """The socket systemd listens on for a Type=notify service."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.address = address
        self.received: list[Notification] = []

    def env(self) -> dict[str, str]:
        return {"NOTIFY_SOCKET": self.address, "WATCHDOG_USEC": str(WATCHDOG_USEC)}

    def next(self, timeout: float = WAIT_S) -> Notification:
        self.sock.settimeout(timeout)
        data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = 0
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", payload[:12])[0]
        fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
        notification = Notification(pid, fields)
        self.received.append(notification)
        return notification

    def wait_for(self, key: str, value: str | None = None) -> Notification:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            notification = self.next(max(deadline - time.monotonic(), 0.01))
            if key in notification.fields and value in (None, notification.fields[key]):
                return notification
        raise AssertionError(f"no {key}={value} within {WAIT_S} s: {self.received}")

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("kind", ["path", "abstract"])
def test_daemon_speaks_sd_notify(short_dir: Path, kind: str) -> None:
    address = str(short_dir / "notify") if kind == "path" else f"@shoe-test-{os.getpid()}"
    notify = NotifySocket(address)
    rig = TableRig(short_dir, RigOptions())
    try:
        rig.start(daemon_env=notify.env())
        assert rig.daemon is not None
        pid = rig.daemon.pid
        ready = notify.wait_for("READY", "1")
        assert notify.received[0] is ready  # nothing before READY
        assert ready.pid == pid  # from the main process (NotifyAccess=main)
        assert "backlog" in ready.fields["STATUS"]
        assert "scanner" in ready.fields["STATUS"]
        # The watchdog is pinged from the loop, again and again, while the table deals.
        rig.dealer.deal(12)
        pings = [notify.wait_for("WATCHDOG", "1") for _ in range(3)]
        assert {ping.pid for ping in pings} == {pid}
        status = notify.wait_for("STATUS")
        assert "round" in status.fields["STATUS"]  # the summary follows the table
        assert re.search(r"loop lag \d+ ms", status.fields["STATUS"])  # the loop's worst stall
        assert "\n" not in status.fields["STATUS"]
        assert rig.stop_daemon() == 0  # SIGTERM: finish, say so, exit cleanly
        stopping = notify.wait_for("STOPPING", "1")
        assert stopping.pid == pid
    finally:
        rig.close()
        notify.close()


def test_journal_fault_still_reports_ready_and_stops_on_sigterm(short_dir: Path) -> None:
    """A journal that cannot be opened: READY with the fault in STATUS (systemd must not
    restart us in a loop; the daemon retries), and SIGTERM still ends it cleanly."""
    damaged = short_dir / "journal.db"
    damaged.write_bytes(b"not a database, though the start-up check lets a file through" * 100)
    key = short_dir / "table.key"
    key.write_text("secret\n")
    key.chmod(0o640)
    config = short_dir / "config.toml"
    config.write_text(
        f'[table]\nid = "07"\n\n[server]\nurl = "http://127.0.0.1:9"\nkey_file = "{key}"\n\n'
        f'[journal]\npath = "{damaged}"\n\n[control]\nsocket = "{short_dir / "c.sock"}"\n'
        f'{CONTROL_TOML}\n[log]\nformat = "json"\n\n{SURVEILLANCE_TOML}'
    )
    notify = NotifySocket(str(short_dir / "notify"))
    daemon = subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.main", "run", "--config", str(config)],
        env={**os.environ, **notify.env(), "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = notify.wait_for("READY", "1")
        assert ready.pid == daemon.pid
        assert ready.fields["STATUS"].startswith("journal fault")
        # Still pinging while it waits to retry (10 s): WatchdogSec=10 would kill it else.
        pings = [notify.wait_for("WATCHDOG", "1") for _ in range(3)]
        assert {ping.pid for ping in pings} == {daemon.pid}
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(WAIT_S) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
        daemon.communicate()
        notify.close()


def test_a_notify_socket_nobody_reads_does_not_stop_the_table(short_dir: Path) -> None:
    """systemd busy or hung: its socket's queue fills (10 datagrams by default); the daemon
    drops notifications rather than block its loop, so cards are still stored and ACKed."""
    notify = NotifySocket(str(short_dir / "notify"))  # bound, never read
    rig = TableRig(short_dir, RigOptions())
    try:
        rig.start(daemon_env={**notify.env(), "WATCHDOG_USEC": "20000"})  # a ping every 10 ms
        rig.dealer.deal(40)  # seconds of pings: the queue is long full
        assert rig.stop_daemon() == 0
    finally:
        rig.close()
        notify.close()
