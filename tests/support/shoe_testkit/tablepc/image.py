"""The virtual table PC's disk: Debian 12 built from Debian's own packages by mmdebstrap.

Why mmdebstrap (docs/table-pc.md, "The image"): it builds a root file system from the
archive alone, as root, with no loop device, no partition table and no boot loader; the
file system is then written by `mkfs.ext4 -d` from that directory, and qemu boots the
image's own kernel and initramfs directly. autopkgtest-build-qemu and mkosi both want loop
devices (or a nested VM) and a boot loader, which only cost boot time here.

The image is built once per recipe: the recipe is this file, so any change to it gives a
new cache key and a new image, cached outside the repository as `cache` keeps the table PC's
builds (a build cut short leaves no half image).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from shoe_testkit.tablepc import foreign
from shoe_testkit.tablepc.cache import cached

SUITE = "bookworm"
MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
# What a table PC runs, and what the tests use inside it: systemd and udev as PID 1 and its
# device manager, the agent the host drives it through, and what the package depends on.
PACKAGES = (
    "systemd-sysv",
    "udev",
    "dbus",
    "initramfs-tools",
    "kmod",
    "qemu-guest-agent",
    "python3",
    "libusb-1.0-0",
    "e2fsprogs",
    "procps",
    "util-linux",
    "iproute2",
    "man-db",
    "sqlite3",
)
KERNEL = {"amd64": "linux-image-amd64", "arm64": "linux-image-arm64"}
ROOT_SIZE = "3G"
GUEST_ADDRESS = "10.0.2.15/24"  # qemu's user network; the host's table server is forwarded
# The initramfs carries only what finds the root disk: a small one unpacks in a second
# under TCG, where Debian's default (every module) takes six.
INITRAMFS_MODULES = ("virtio_pci", "virtio_mmio", "virtio_blk", "ext4")
# Timers and services a table PC needs no more than the tests do; each one's boot time
# under TCG is seconds.
MASKED = (
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "man-db.timer",
    "systemd-networkd-wait-online.service",
    "getty@tty1.service",
)

CUSTOMIZE = r"""
set -e
root="$1"
echo tablepc > "$root/etc/hostname"
printf '127.0.1.1 tablepc\n' >> "$root/etc/hosts"
printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' > "$root/etc/fstab"
chroot "$root" passwd --delete root >/dev/null
mkdir -p "$root/var/log/journal"
mkdir -p "$root/etc/systemd/network"
printf '[Match]\nName=en* eth*\n\n[Network]\nAddress={address}\n' \
    > "$root/etc/systemd/network/10-host.network"
chroot "$root" systemctl enable systemd-networkd >/dev/null 2>&1
for unit in {masked}; do ln -sf /dev/null "$root/etc/systemd/system/$unit"; done
printf 'MODULES=list\nCOMPRESS=zstd\n' > "$root/etc/initramfs-tools/conf.d/table-pc.conf"
printf '%s\n' {modules} >> "$root/etc/initramfs-tools/modules"
chroot "$root" update-initramfs -u -k all >/dev/null
"""


@dataclass(frozen=True)
class Image:
    """A built table PC: its root file system and the kernel and initramfs to boot it."""

    arch: str
    root: Path
    kernel: Path
    initrd: Path


def why_no_image(arch: str = "amd64") -> str | None:
    """Why this machine cannot build or boot the image, or None."""
    if os.geteuid() != 0:
        return "building the table PC's image needs root (mmdebstrap, mkfs.ext4 -d)"
    qemu = QEMU_SYSTEM[arch]
    missing = [
        tool for tool in ("mmdebstrap", "mkfs.ext4", "qemu-img", qemu) if not shutil.which(tool)
    ]
    if missing:
        return f"{', '.join(missing)} not installed (.ci/run installs them)"
    if arch != foreign.host_arch():
        return foreign.why_not(arch)
    return None


QEMU_SYSTEM = {"amd64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64"}


def built_image(arch: str = "amd64", *, log: Path | None = None) -> Image:
    """The image of today's recipe (this file), built first if the cache has none."""
    ready = cached(arch, Path(__file__), lambda work: _build(arch, work, log))
    return Image(arch, ready / "root.img", ready / "vmlinuz", ready / "initrd.img")


def _build(arch: str, work: Path, log: Path | None) -> None:
    """The root file system by mmdebstrap, its kernel and initramfs, the ext4 image of it."""
    tree = work / "tree"
    script = CUSTOMIZE.replace("{address}", GUEST_ADDRESS)
    script = script.replace("{masked}", " ".join(MASKED))
    script = script.replace("{modules}", " ".join(INITRAMFS_MODULES))
    with (log or work / "build.log").open("w") as output:
        subprocess.run(
            foreign.mmdebstrap(
                arch,
                [
                    "--variant=minbase",
                    "--mode=root",
                    "--format=directory",
                    f"--include={','.join((*PACKAGES, KERNEL[arch]))}",
                    f"--customize-hook={script}",
                    SUITE,
                    str(tree),
                    *MIRRORS,
                ],
            ),
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=1800 if arch == foreign.host_arch() else 7200,  # arm64: about 30 min
        )
        kernels = sorted((tree / "boot").glob("vmlinuz-*"))
        initrds = sorted((tree / "boot").glob("initrd.img-*"))
        assert kernels, f"no kernel in the image: {list((tree / 'boot').iterdir())}"
        assert initrds, f"no kernel in the image: {list((tree / 'boot').iterdir())}"
        shutil.copy2(kernels[-1], work / "vmlinuz")
        shutil.copy2(initrds[-1], work / "initrd.img")
        subprocess.run(
            ["mkfs.ext4", "-q", "-F", "-L", "tablepc", "-d", str(tree), str(work / "root.img"),
             ROOT_SIZE],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=600,
        )  # fmt: skip
    shutil.rmtree(tree)
