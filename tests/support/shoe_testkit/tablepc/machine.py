"""The virtual table PC: the image booted by qemu, with systemd as PID 1, driven from the host.

What the guest has, and nothing more:
- its disk, a qcow2 overlay on the cached image in writeback cache mode, so that killing
  qemu (a power cut) loses whatever the guest's page cache held;
- a console (ttyS0) written to a file on the host, the boot's and the kernel's words;
- the shoe on a real serial port: ttyS1 (`serial_port`), or a USB serial adapter through
  the guest's USB stack (`usb_serial_port`, the guest's ttyUSB0), each the other end of a
  simulator's pty on the host;
- the agent's virtio serial port (`agent.GuestAgent`);
- a 9p share of one host folder (the .deb in, journal copies out), mounted by the
  test where it wants it;
- qemu's user network with `restrict=on`: the guest reaches nothing but the one forward,
  10.0.2.100:8700, which leads to 127.0.0.1 on the host (the reference table server);
- more disks, for a file system of its own (`extra_disks`: /dev/vdb, ...).

KVM exists on these machines but a nested guest hangs at boot, so TCG is the default;
`SHOE_TABLEPC_ACCEL=kvm` asks for KVM where it works.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from shoe_testkit.tablepc.agent import GuestAgent, Ran
from shoe_testkit.tablepc.image import QEMU_SYSTEM, Image

SERVER_IN_GUEST = ("10.0.2.100", 8700)  # what the guest's configuration names
BOOT_PATIENCE_S = 600.0  # TCG on two busy cores; never a speed assertion


class BootError(RuntimeError):
    """The table PC did not come up."""


@dataclass
class Wiring:
    """What the host connects to the guest."""

    serial_port: Path | None = None  # a host tty (the simulator's pty) on the guest's ttyS1
    usb_serial_port: Path | None = None  # one on a USB serial adapter (the guest's ttyUSB0)
    server_port: int | None = None  # 127.0.0.1:port on the host, as 10.0.2.100:8700
    share: Path | None = None  # the 9p tag "share" in the guest
    extra_disks: Sequence[Path] = field(default_factory=tuple)  # raw images: vdb, vdc, ...


class TablePC:
    """Boot, cut the power, boot again; `run` commands in the guest through its agent."""

    def __init__(self, image: Image, directory: Path, wiring: Wiring, *, memory_mb: int = 1536):
        self.image = image
        self.directory = directory
        self.wiring = wiring
        self.memory_mb = memory_mb
        self.disk = directory / "disk.qcow2"
        self.console = directory / "console.log"
        self.agent_socket = directory / "agent.sock"
        self.process: subprocess.Popen[bytes] | None = None
        self.agent = GuestAgent(self.agent_socket)
        self.boots = 0

    # ------------------------------------------------------------------ power

    def boot(self, patience: float = BOOT_PATIENCE_S) -> float:
        """Power on and wait until the guest's agent answers; the seconds it took."""
        if self.process is not None:
            raise BootError("the table PC is already on")
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self.disk.exists():
            subprocess.run(
                [
                    "qemu-img",
                    "create",
                    "-q",
                    "-f",
                    "qcow2",
                    "-F",
                    "raw",
                    "-b",
                    str(self.image.root),
                    str(self.disk),
                ],
                check=True,
            )
        self.agent_socket.unlink(missing_ok=True)
        started = time.monotonic()
        with (self.directory / "qemu.log").open("ab") as log:
            self.process = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        self.boots += 1
        deadline = started + patience
        while not self.agent.ping(timeout=5.0):
            if self.process.poll() is not None:
                self.process = None
                raise BootError(
                    f"qemu exited at boot:\n{self.tail('qemu.log')}\n{self.tail('console.log')}"
                )
            if time.monotonic() > deadline:
                raise BootError(
                    f"no guest agent after {patience:.0f} s:\n{self.tail('console.log')}"
                )
            time.sleep(1.0)
        return time.monotonic() - started

    def power_cut(self) -> None:
        """qemu killed: the guest's page cache and every write it did not flush are gone."""
        process, self.process = self.process, None
        self.agent.close()
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()

    def shutdown(self, patience: float = 180.0) -> None:
        """A clean power-off (systemd stops every unit), else the plug pulled."""
        process = self.process
        if process is None:
            return
        with contextlib.suppress(Exception):  # the guest may already be going down
            self.agent.execute("guest-shutdown", {"mode": "powerdown"})
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(patience)
        self.power_cut()

    @property
    def is_on(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # ------------------------------------------------------------------ the guest

    def run(
        self,
        argv: list[str],
        *,
        user: str | None = None,
        stdin: str | None = None,
        timeout: float = 300.0,
    ) -> Ran:
        """`argv` in the guest, as root or as `user` (runuser: no password, a login's groups)."""
        if user is not None:
            argv = ["/usr/sbin/runuser", "-u", user, "--", *argv]
        return self.agent.run(argv, stdin=stdin, timeout=timeout)

    def sh(self, script: str, *, timeout: float = 300.0) -> Ran:
        return self.agent.sh(script, timeout=timeout)

    def mount_share(self, where: str = "/mnt/share") -> str:
        self.sh(
            f"mkdir -p {where}; mountpoint -q {where} || mount -t 9p -o trans=virtio share {where}"
        )
        return where

    def tail(self, name: str, size: int = 4000) -> str:
        path = self.directory / name
        return path.read_bytes()[-size:].decode(errors="replace") if path.exists() else ""

    # ------------------------------------------------------------------ qemu

    def command(self) -> list[str]:
        image, wiring = self.image, self.wiring
        accel = os.environ.get("SHOE_TABLEPC_ACCEL", "tcg")
        command = [
            QEMU_SYSTEM[image.arch],
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-m",
            str(self.memory_mb),
            "-smp",
            "2",
            "-accel",
            "tcg,thread=multi" if accel == "tcg" else accel,
            "-kernel",
            str(image.kernel),
            "-initrd",
            str(image.initrd),
            "-drive",
            f"file={self.disk},if=virtio,format=qcow2,cache=writeback",
            "-chardev",
            f"file,id=console,path={self.console},append=on",
            "-chardev",
            f"socket,id=agent,path={self.agent_socket},server=on,wait=off",
            "-device",
            "virtio-serial",
            "-device",
            "virtserialport,chardev=agent,name=org.qemu.guest_agent.0",
        ]
        if image.arch == "amd64":
            command += ["-machine", "pc", "-cpu", "max", "-serial", "chardev:console"]
            console = "ttyS0"
        else:
            # qemu's own pointer authentication, not the architecture's: the same checks,
            # a fraction of the emulated cost
            command += [
                "-machine",
                "virt",
                "-cpu",
                "max,pauth-impdef=on",
                "-serial",
                "chardev:console",
            ]
            console = "ttyAMA0"
        command += ["-append", f"root=/dev/vda rw console={console} quiet panic=-1"]
        if wiring.serial_port is not None:
            if image.arch != "amd64":
                raise BootError("the virt machine has one UART: put the shoe on usb_serial_port")
            command += [
                "-chardev",
                f"serial,id=shoe,path={wiring.serial_port}",
                "-serial",
                "chardev:shoe",
            ]
        if wiring.usb_serial_port is not None:
            command += [
                "-chardev",
                f"serial,id=shoeusb,path={wiring.usb_serial_port}",
                "-device",
                "qemu-xhci",
                "-device",
                "usb-serial,chardev=shoeusb",
            ]
        for number, disk in enumerate(wiring.extra_disks):
            command += [
                "-drive",
                f"file={disk},if=virtio,format=raw,cache=writeback,index={number + 1}",
            ]
        if wiring.share is not None:
            command += [
                "-virtfs",
                f"local,path={wiring.share},mount_tag=share,security_model=none",
            ]
        netdev = "user,id=net,restrict=on"
        if wiring.server_port is not None:
            address, port = SERVER_IN_GUEST
            netdev += (
                f",guestfwd=tcp:{address}:{port}-cmd:socat - TCP:127.0.0.1:{wiring.server_port}"
            )
        command += ["-netdev", netdev, "-device", "virtio-net-pci,netdev=net"]
        return command
