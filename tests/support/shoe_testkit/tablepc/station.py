"""A whole table with its controller on the virtual table PC: what a technician does to it.

`TableStation` holds the two halves (`HostTable`: the shoe and the table server on the host;
`TablePC`: the booted guest) and does in the guest what docs/install.md tells a technician:
install the .deb with apt, name the shoe's port with a udev rule, write the configuration and
the key, start the service; then what a test reads back: the service's state, the journal
(copied out through the share and read by the project's own reader), the logs.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from shoe_testkit.tablepc.host_table import HostTable
from shoe_testkit.tablepc.machine import TablePC

UNIT = "shoe-controller.service"
STATE_DIR = "/var/lib/shoe-controller"
JOURNAL = f"{STATE_DIR}/journal.db"
SHARE = "/mnt/share"
# The technician's rule naming the shoe's port /dev/shoe-scanner, as the package's rule names
# the shoe's own USB adapters: the onboard COM port, or a USB serial adapter (qemu's
# usb-serial is an FTDI FT232, 0403:6001) named by vendor and product.
SHOE_RULES = "/etc/udev/rules.d/98-shoe-serial.rules"
SERIAL_RULE = (
    'SUBSYSTEM=="tty", KERNEL=="ttyS1", SYMLINK+="shoe-scanner",'
    ' GROUP="shoe-controller", MODE="0660"\n'
)
USB_SERIAL_RULE = (
    'SUBSYSTEM=="tty", ATTRS{idVendor}=="0403", ATTRS{idProduct}=="6001",'
    ' SYMLINK+="shoe-scanner", GROUP="shoe-controller", MODE="0660"\n'
)
USERS = {
    "viewer": "shoe-viewers",
    "boss": "shoe-viewers,shoe-supervisors",
    "watcher": "shoe-viewers,shoe-surveillance",  # the surveillance room's login
    "outsider": "",
}


@dataclass(frozen=True)
class ServiceState:
    active: str  # ActiveState
    sub: str
    main_pid: int
    restarts: int  # NRestarts
    ready_after_s: float  # from the guest's power-on to READY=1 (ActiveEnterTimestampMonotonic)
    result: str


class TableStation:
    def __init__(self, host: HostTable, pc: TablePC, share: Path) -> None:
        self.host = host
        self.pc = pc
        self.share = share
        self.install_log = ""  # what apt said at the last install
        self._changed: int | None = None  # shoes ended that the dealer took out

    # ------------------------------------------------------------------ the technician

    def install(self, deb: Path) -> str:
        """`apt-get install ./shoe-controller_*.deb`, as the README says, from the share."""
        shutil.copy2(deb, self.share / deb.name)
        self.pc.mount_share(SHARE)
        done = self.pc.sh(
            f"cd {SHARE} && DEBIAN_FRONTEND=noninteractive apt-get install --yes ./{deb.name}",
            timeout=900,
        ).check()
        self.install_log = done.text
        return done.text

    def state_disk(self, device: str = "/dev/vdb") -> None:
        """/var/lib/shoe-controller on a small file system of its own, as a table PC may have
        it (mounted at boot from fstab, before the package makes the directory)."""
        self.pc.sh(
            f"mkfs.ext4 -q -F -m 0 -L shoe-state {device}; mkdir -p {STATE_DIR};"
            f" echo '{device} {STATE_DIR} ext4 defaults 0 2' >> /etc/fstab; mount {STATE_DIR}"
        ).check()

    def configure(self, config: str | None = None, *, shoe_rule: str = SERIAL_RULE) -> None:
        """The udev rule for the shoe's port (ttyS1 unless told), the configuration, the key,
        the pit's logins."""
        self.write_shoe_rule(shoe_rule)
        self.pc.sh(
            "udevadm control --reload && udevadm trigger --action=add --subsystem-match=tty"
            " && udevadm settle"
        ).check()
        self.write_config(config or self.host.config_text())
        self.pc.run(
            [
                "/bin/sh",
                "-ec",
                "install -m 640 -g shoe-controller /dev/stdin /etc/shoe-controller/table.key",
            ],
            stdin=self.host.key + "\n",
        ).check()
        for user, groups in USERS.items():
            extra = f" -G {groups}" if groups else ""
            self.pc.sh(f"id {user} >/dev/null 2>&1 || useradd -m{extra} {user}").check()

    def write_shoe_rule(self, rule: str) -> None:
        self.pc.run(["/bin/sh", "-ec", f"cat > {SHOE_RULES}"], stdin=rule).check()

    def move_shoe(self, *, usb: bool) -> ServiceState:
        """What a technician does to move the shoe's cable: the rule for its new port written,
        the table PC powered off, the cable moved (to a USB serial adapter, or back to the
        onboard COM port), powered on. Returns the service once it is up again by itself."""
        self.host.wait_acked()
        self.write_shoe_rule(USB_SERIAL_RULE if usb else SERIAL_RULE)
        self.pc.shutdown()
        port = self.host.shoe_tty
        self.pc.wiring = replace(
            self.pc.wiring,
            serial_port=None if usb else port,
            usb_serial_port=port if usb else None,
        )
        self.pc.boot()
        return self.wait_active()

    def write_config(self, text: str) -> None:
        self.pc.run(
            ["/bin/sh", "-ec", "cat > /etc/shoe-controller/shoe-controller.toml"], stdin=text
        ).check()

    # ------------------------------------------------------------------ the service

    def service(self, unit: str = UNIT) -> ServiceState:
        props = "ActiveState,SubState,MainPID,NRestarts,ActiveEnterTimestampMonotonic,Result"
        shown = self.pc.run(["systemctl", "show", unit, f"--property={props}"]).check().stdout
        values = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
        return ServiceState(
            values["ActiveState"],
            values["SubState"],
            int(values["MainPID"] or 0),
            int(values.get("NRestarts") or 0),
            int(values.get("ActiveEnterTimestampMonotonic") or 0) / 1e6,
            values.get("Result", ""),
        )

    def wait_active(
        self, unit: str = UNIT, *, restarts_above: int = -1, patience: float = 300.0
    ) -> ServiceState:
        """The unit active (for the controller's Type=notify: READY=1 sent) with a main PID."""
        deadline = time.monotonic() + patience
        while True:
            state = self.service(unit)
            if state.active == "active" and state.main_pid and state.restarts > restarts_above:
                return state
            if time.monotonic() > deadline:
                logs = self.pc.run(["journalctl", "-u", unit, "-n", "40", "--no-pager"]).text
                raise AssertionError(f"{unit} not active after {patience:.0f} s: {state}\n{logs}")
            time.sleep(1.0)

    def shoectl(self, *args: str, user: str = "boss") -> Any:
        return self.pc.run(["shoectl", *args], user=user)

    # ------------------------------------------------------------------ the dealer

    def shoes_ended(self) -> int:
        return int(self.sql("SELECT count(*) FROM events WHERE type = 'shoe.ended'") or 0)

    def deal(self, count: int) -> int:
        """`count` cards in lock step with the ACKs; an ended shoe is changed as a dealer
        does, before the next card. Returns how many shoes ended meanwhile."""
        ended_before = self.shoes_ended()
        if self._changed is None:
            self._changed = ended_before  # the dealer arrives at a table whose shoe is open
        for _ in range(count):
            self.host.wait_acked()
            if self.host.past_cut() and self.shoes_ended() > self._changed:
                self._changed += 1
                self.host.new_shoe()
                self.host.wait_acked()
            if not self.host.deal_one():  # a shoe dealt to its last card
                self.host.new_shoe()
                self.host.wait_acked()
                self.host.deal_one()
        self.host.wait_acked()
        return self.shoes_ended() - ended_before

    def deal_shoe(self, max_cards: int = 600) -> None:
        """Until the shoe in progress ends (and the next is loaded)."""
        ended = self.shoes_ended()
        for _ in range(max_cards):
            if self.deal(1):
                return
        raise AssertionError(f"no shoe.ended after {max_cards} cards (shoes ended: {ended})")

    # ------------------------------------------------------------------ what it stored

    def sql(self, query: str) -> str:
        """One query on the live journal, read-only, beside the daemon (sqlite3 in the guest)."""
        return self.pc.run(["sqlite3", "-readonly", JOURNAL, query]).check().stdout.strip()

    def journal_copy(self, name: str = "journal-copy.db") -> Path:
        """A consistent copy of the live journal (SQLite's online backup, beside the daemon),
        written to the share and read on the host."""
        # written in the guest's /tmp first: SQLite's locks do not hold on a 9p file
        self.pc.mount_share(SHARE)  # again after a power cut: the mount went with the boot
        self.pc.sh(
            f'rm -f /tmp/{name}; sqlite3 -readonly {JOURNAL} ".backup /tmp/{name}";'
            f" cp /tmp/{name} {SHARE}/{name}.part; mv {SHARE}/{name}.part {SHARE}/{name}"
        ).check()
        return self.share / name

    def journal_inputs(self, copy: Path) -> list[dict[str, Any]]:
        with sqlite3.connect(f"file:{copy}?mode=ro", uri=True) as connection:
            connection.row_factory = sqlite3.Row
            return [
                dict(row) for row in connection.execute("SELECT * FROM inputs ORDER BY input_no")
            ]

    def verify(self) -> str:
        """`shoe-controller verify --journal`, in the guest, beside the running daemon."""
        return self.pc.run(["shoe-controller", "verify", "--journal", JOURNAL]).text

    def verify_copy(self) -> str:
        """The same check of the same bytes, on the host: a consistent copy of the live journal
        verified by the project's own `verify --journal` (a Python start in the guest costs
        ten seconds under an emulated CPU, and a power-cut run does it at every boot)."""
        copy = self.journal_copy("journal-verify.db")
        done = subprocess.run(
            [sys.executable, "-m", "shoe_controller.cli", "verify", "--journal", str(copy)],
            check=False,  # its words are the answer, whatever its exit
            capture_output=True,
            text=True,
            timeout=300,
        )
        return done.stdout + done.stderr
