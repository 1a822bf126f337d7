"""Who holds a serial port: the holder of its lock in /proc/locks, named as a person knows it.

pyserial opens a port exclusively with a flock; a second program's open fails with
"Could not exclusively lock port". `port_holder(path)` then says which process holds it
("held by shoe-controller, pid 4242 (python -m shoe_controller.cli run ...)").
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def is_held_elsewhere(error: str) -> bool:
    """pyserial's words for a port another program holds (its exclusive open is a flock), or
    the system's as the serial transport says them (`resource temporarily unavailable`)."""
    lowered = error.lower()
    return "exclusively lock" in lowered or "resource temporarily unavailable" in lowered


def lock_holders(locks: Iterable[str], device: tuple[int, int, int]) -> list[int]:
    """The pids holding a lock on the file `device` = (major, minor, inode) of the file system
    it lives on, from the lines of /proc/locks (pyserial's exclusive open is a flock)."""
    major, minor, inode = device
    wanted = f"{major:02x}:{minor:02x}:{inode}"
    pids = []
    for line in locks:
        fields = line.split()
        if "->" in fields or len(fields) < 6:  # a waiter, not a holder
            continue
        if fields[5] == wanted and fields[4].isdigit():
            pids.append(int(fields[4]))
    return pids


def program_name(argv: list[str], comm: str) -> str:
    """How a person knows a process: shoe-controller (any of its ways to run), else its name."""
    for index, arg in enumerate(argv):
        base = os.path.basename(arg)
        if base in ("shoe-controller", "shoectl"):
            return base
        if arg == "-m" and index + 1 < len(argv):
            module = argv[index + 1]
            if module.startswith("shoe_controller"):
                return "shoe-controller"
            if module.startswith("drivers"):
                return f"shoe-controller ({module})"
    return comm or "another program"


def port_holder(url: str, proc: Path = Path("/proc")) -> str:
    """`held by shoe-controller, pid 4242 (python -m shoe_controller.cli run ...)`, or what can
    be said without /proc/locks naming anyone."""
    try:
        status = os.stat(url)
        locks = (proc / "locks").read_text().splitlines()
    except OSError:
        return "held by another program"
    device = (os.major(status.st_dev), os.minor(status.st_dev), status.st_ino)
    holders = [pid for pid in lock_holders(locks, device) if pid != os.getpid()]
    if not holders:
        return (
            "held by another program (no lock on it in /proc/locks; `fuser -v PORT` shows who"
            " has it open)"
        )
    pid = holders[0]
    try:
        argv = (proc / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
        comm = (proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return f"held by pid {pid}"
    argv = [arg for arg in argv if arg]
    command = " ".join(argv)
    if len(command) > 100:
        command = command[:97] + "..."
    return f"held by {program_name(argv, comm)}, pid {pid} ({command})"
