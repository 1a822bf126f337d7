"""Processes and ports of the test broker, read from /proc and the loopback interface."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 right now (all held open while choosing)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((LOOPBACK, 0))
            ports.append(sock.getsockname()[1])
        return ports


def connects(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1.0):
            return True
    except OSError:
        return False


def stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # Fields after the command name, which is in parentheses and may hold spaces.
    return raw[raw.rindex(")") + 2 :].split()


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a zombie is dead, merely unreaped)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def start_time(pid: int) -> str:
    """When `pid` started (clock ticks since boot): tells a process from a reused pid."""
    fields = stat_fields(pid)
    return fields[19] if fields is not None else "0"


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, theirs ...), found through /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat_fields(int(entry.name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return found


def kill_all(pids: list[int]) -> None:
    """SIGKILL each of `pids` that is still there."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 5 s; reaped either way."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
