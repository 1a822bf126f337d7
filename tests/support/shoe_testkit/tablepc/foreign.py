"""Another architecture's programs on this host, to build that architecture's table PC.

mmdebstrap builds a foreign root file system, and dpkg-buildpackage a foreign package, only
where the kernel hands that architecture's ELF files to qemu-user (binfmt_misc). Registering
qemu-user in the host's binfmt_misc would change the host for every program on it; since
Linux 6.7 each user namespace may mount a binfmt_misc of its own instead. So a command runs
here as root of a new user, mount and PID namespace (user and group ids mapped one to one,
so what it writes belongs to whom it says), with its own /proc and its own binfmt_misc in
which qemu-user is registered for that architecture. The registration ends with the
namespace; the host's binfmt_misc is never mounted or written.

`python -m shoe_testkit.tablepc.foreign ARCH COMMAND...` runs COMMAND so.
"""

from __future__ import annotations

import ctypes
import functools
import os
import subprocess
import sys
from pathlib import Path

# Debian's architecture names and qemu-user's, for what the table PCs run on
QEMU_USER_ARCH = {"arm64": "aarch64"}
BINFMT = Path("/proc/sys/fs/binfmt_misc")
MAPPED_IDS = 65536  # every id a Debian system uses, root's included
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000


@functools.cache
def host_arch() -> str:
    return subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()


def registration(arch: str) -> Path:
    """qemu-user-static's binfmt_misc entry for `arch` (a systemd-binfmt file)."""
    return Path(f"/usr/lib/binfmt.d/qemu-{QEMU_USER_ARCH[arch]}.conf")


def command(arch: str, argv: list[str]) -> list[str]:
    """`argv` as run by this module: with `arch`'s programs handed to qemu-user."""
    return [sys.executable, "-m", "shoe_testkit.tablepc.foreign", arch, *argv]


def mmdebstrap(arch: str, options: list[str]) -> list[str]:
    """mmdebstrap building a root of `arch` with `options`: on this host as it is for its own
    architecture, else run by this module. A user namespace cannot mount a sysfs, and none of
    the maintainer scripts the table PC's roots run needs one: mmdebstrap skips it there."""
    own = ["mmdebstrap", f"--architectures={arch}", *options]
    if arch == host_arch():
        return own
    return command(arch, [*own[:2], "--skip=chroot/mount/sys", *own[2:]])


def why_not(arch: str) -> str | None:
    """Why this host cannot run `arch`'s programs so, or None."""
    if arch not in QEMU_USER_ARCH:
        return f"no qemu-user for {arch}"
    if not registration(arch).is_file():
        return f"{registration(arch)} missing: qemu-user-static not installed (.ci/run installs it)"
    tried = subprocess.run(
        command(arch, ["true"]), capture_output=True, text=True, timeout=60, check=False
    )
    if tried.returncode != 0:
        return (
            f"no binfmt_misc of a user namespace's own here (Linux >= 6.7): {tried.stderr[-300:]}"
        )
    return None


def _inside(arch: str, argv: list[str]) -> int:
    """PID 1 of the new namespaces: its /proc and binfmt_misc, then `argv`."""
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    subprocess.run(["mount", "-t", "proc", "proc", "/proc"], check=True)
    subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], check=True)
    entry = next(
        line
        for line in registration(arch).read_text().splitlines()
        if line.startswith(":")  # the file's comments are not an entry
    )
    (BINFMT / "register").write_text(entry)
    return subprocess.run(argv, check=False).returncode


def _unshare() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare: {os.strerror(errno)}")


def main(arch: str, argv: list[str]) -> int:
    """Fork a child into new namespaces; this process (still the host's root) writes its id
    maps, which only a process outside the namespace may write so widely."""
    unshared_r, unshared_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            _unshare()
            os.write(unshared_w, b".")
            os.read(mapped_r, 1)
            pid_one = os.fork()  # the first child in the new PID namespace is its PID 1
            if pid_one == 0:
                code = _inside(arch, argv)
            else:
                code = os.waitstatus_to_exitcode(os.waitpid(pid_one, 0)[1])
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"foreign {arch}: {error}", file=sys.stderr)
        finally:
            os._exit(code)
    if os.read(unshared_r, 1):
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{child}/{name}").write_text(f"0 0 {MAPPED_IDS}\n")
        os.write(mapped_w, b".")
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python -m shoe_testkit.tablepc.foreign ARCH COMMAND...")
    sys.exit(main(sys.argv[1], sys.argv[2:]))
