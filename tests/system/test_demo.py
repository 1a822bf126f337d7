"""`shoe-controller demo` as a real process (issue 18): SIGTERM and SIGHUP stop every process
it started, cards are printed as shoectl prints them and no Python dict, and a reused --dir
is said for what it holds."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from shoe_controller.cli.demo import found_in

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 60.0  # only stops a hung test
# An ignored signal stays ignored across exec: the demo must set its own handler.
IGNORING_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN);"
    " os.execv(sys.argv[1], sys.argv[1:])"
)
SYMBOL_CARD = re.compile(r"(?:[AKQJ2-9]|10)[♠♥♦♣]")


def descendants(pid: int) -> set[int]:
    """Every process below `pid`, from /proc (children, their children ...)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def run_until_a_round_then(directory: Path, signum: int) -> tuple[list[str], int, set[int]]:
    """Start the demo, wait for its first round, send `signum`; its lines, exit code and the
    processes it had started."""
    demo = [sys.executable, "-m", "shoe_controller.cli", "demo", "--dir", str(directory),
            "--pace", "0.005"]  # fmt: skip
    if signum == signal.SIGINT:  # as a background job gets Ctrl-C: SIGINT ignored from the start
        demo = [sys.executable, "-c", IGNORING_SIGINT, *demo]
    process = subprocess.Popen(
        demo, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(line) for line in process.stdout], daemon=True
    ).start()  # type: ignore[union-attr]
    seen: list[str] = []
    try:
        while not any(" round " in line for line in seen):
            seen.append(lines.get(timeout=GUARD_S))
        started = descendants(process.pid)
        process.send_signal(signum)
        code = process.wait(GUARD_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    time.sleep(0.1)  # the reader thread takes the last lines
    while not lines.empty():
        seen.append(lines.get_nowait())
    return seen, code, started


def wait_gone(pids: set[int]) -> set[int]:
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    return {pid for pid in pids if alive(pid)}


def test_sigterm_sighup_and_ctrl_c_stop_every_process_of_the_demo(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    assert found_in(directory) is None
    lines, code, started = run_until_a_round_then(directory, signal.SIGTERM)
    assert code == 0, lines
    assert len(started) >= 3  # the table server, the shoe, the daemon
    assert wait_gone(started) == set()
    assert lines[-1] == "stopped (SIGTERM): every process of the demo stopped\n"
    rounds = [line for line in lines if " round " in line]
    assert SYMBOL_CARD.search(rounds[0])
    assert not re.search(r"\b(?:[AKQJT2-9])[SHDC]\b", "".join(rounds))  # never `QH`
    assert "{" not in "".join(lines)  # no Python dict
    burned = next(line for line in lines if "shoe.burned" in line)
    assert re.match(r"shoe 1: shoe\.burned first (?:[AKQJ2-9]|10)[♠♥♦♣], \d+ card\(s\): ", burned)

    found = found_in(directory)
    assert found is not None
    assert found.startswith(f"reusing {directory}: its journal holds shoe 1 and ")
    again, code, started = run_until_a_round_then(directory, signal.SIGHUP)
    assert code == 0, again
    assert again[0].startswith(f"reusing {directory}: its journal holds shoe 1 and ")
    assert again[-1] == "stopped (SIGHUP): every process of the demo stopped\n"
    assert wait_gone(started) == set()
    # Ctrl-C: the same, even when the demo was started with SIGINT ignored.
    last, code, started = run_until_a_round_then(directory, signal.SIGINT)
    assert code == 0, last
    assert last[-1] == "stopped (SIGINT): every process of the demo stopped\n"
    assert wait_gone(started) == set()
