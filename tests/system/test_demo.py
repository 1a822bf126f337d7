"""`shoe-controller demo` as a real process: SIGTERM and SIGHUP stop every process
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
import urllib.request
from pathlib import Path

from shoe_testkit.control import cli_env

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
    assert re.match(r"shoe 1: shoe\.burned first (?:[AKQJ2-9]|10)[♠♥♦♣], \d+ cards?: ", burned)

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


# ---------------------------------------------------------------------- A sandbox


class DemoRun:
    """`shoe-controller demo ARGS` as a real process, its stdout read line by line."""

    def __init__(self, *args: str) -> None:
        command = [sys.executable, "-m", "shoe_controller.cli", "demo", *args]
        self.process = subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def line_matching(self, pattern: str) -> re.Match[str]:
        """The first line (seen or to come) matching `pattern`."""
        for line in self.lines:
            if found := re.search(pattern, line):
                return found
        while True:
            line = self._queue.get(timeout=GUARD_S)
            assert line is not None, f"the demo ended without {pattern!r}: {self.lines[-20:]}"
            self.lines.append(line)
            if found := re.search(pattern, line):
                return found

    def finish(self, signum: int | None = None) -> int:
        """Wait for the demo to exit (after `signum`, if given); its exit code."""
        if signum is not None:
            self.process.send_signal(signum)
        try:
            code = self.process.wait(GUARD_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        self._reader.join(GUARD_S)
        while (line := self._queue.get_nowait() if not self._queue.empty() else None) is not None:
            self.lines.append(line)
        return code


BROKEN = ("counter_went_back", "shoe_already_open", "shoe_removed", "Traceback")


def dealt_rounds(lines: list[str]) -> list[tuple[int, int]]:
    """(shoe, round) of every round line the demo printed."""
    found = (re.match(r"shoe (\d+) round +(\d+): ", line) for line in lines)
    return [(int(match[1]), int(match[2])) for match in found if match]


def test_a_second_run_in_the_same_folder_goes_on_from_the_journal(tmp_path: Path) -> None:
    """The same --dir again deals on (no counter_went_back, no shoe_already_open),
    a shoe left open is ended as a supervisor would, and the rounds said are this run's."""
    directory = str(tmp_path / "demo")
    first = DemoRun("--fast", "--dir", directory)
    assert first.finish() == 0, first.lines
    rounds = dealt_rounds(first.lines)
    assert {shoe for shoe, _ in rounds} == {1}
    assert first.lines[-1] == f"{len(rounds)} rounds dealt"

    second = DemoRun("--fast", "--dir", directory)
    assert second.finish() == 0, second.lines
    assert second.lines[0].startswith(f"reusing {directory}: its journal holds shoe")
    assert "the demo goes on from it (--fresh starts from an empty journal)" in second.lines[0]
    again = dealt_rounds(second.lines)
    assert {shoe for shoe, _ in again} == {2}  # not shoe 1's rounds shown again
    assert [number for _, number in again] == list(range(1, len(again) + 1))
    assert second.lines[-1] == f"{len(again)} rounds dealt"
    assert not [line for line in second.lines if any(word in line for word in BROKEN)]

    # Stopped in the middle of a shoe: the next run ends that shoe first, then deals on.
    stopped = DemoRun("--pace", "0.005", "--dir", directory)
    stopped.line_matching(r"^shoe 3 round +1: ")
    assert stopped.finish(signal.SIGTERM) == 0
    assert stopped.lines[-1] == "stopped (SIGTERM): every process of the demo stopped"
    said = int(re.fullmatch(r"(\d+) rounds dealt", stopped.lines[-2])[1])  # type: ignore[index]
    assert said == len(dealt_rounds(stopped.lines))

    third = DemoRun("--fast", "--dir", directory)
    assert third.finish() == 0, third.lines
    assert any(line.startswith("shoe 3 was left open by an earlier run") for line in third.lines)
    ended = r"shoe 3: shoe\.ended \d+ rounds?, \d+ cards?: a supervisor changed the shoe"
    assert [line for line in third.lines if re.fullmatch(ended, line)]
    last = dealt_rounds(third.lines)
    assert {shoe for shoe, _ in last} == {4}
    assert third.lines[-1] == f"{len(last)} rounds dealt"
    assert not [line for line in third.lines if any(word in line for word in BROKEN)]

    fresh = DemoRun("--fast", "--fresh", "--dir", directory)
    assert fresh.finish() == 0, fresh.lines
    assert fresh.lines[0].startswith("--fresh: deleted the earlier demo's ")
    assert {shoe for shoe, _ in dealt_rounds(fresh.lines)} == {1}


def test_the_demo_is_a_sandbox_for_shoectl_edge_and_metrics() -> None:
    """The surveillance companion and metrics run, the demo prints the socket to
    give shoectl and what to try, its user may act, and its temporary folder is said to go."""
    demo = DemoRun("--pace", "0.01")
    try:
        first = demo.line_matching(r"^table 07: .* logs and journal in (\S+)")
        folder = Path(first[1])
        assert first.string.endswith(
            "(a temporary folder, deleted when the demo stops; --dir DIR keeps it)"
        )
        socket_path = demo.line_matching(r"^  export SHOECTL_SOCKET=(\S+)$")[1]
        metrics_url = demo.line_matching(r"^metrics on (http://127\.0\.0\.1:\d+/metrics)$")[1]
        assert demo.line_matching(r"^  curl -s (\S+)$")[1] == metrics_url
        for command in ("status", "rounds", "edge"):
            demo.line_matching(rf"shoectl {command} +# ")
        demo.line_matching(r"^shoe 1 round +2: ")
        env = cli_env(socket_path)

        def shoectl(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "shoe_controller.cli.shoectl", *args], cwd=REPO, env=env,
                capture_output=True, text=True, timeout=GUARD_S, check=False,
            )  # fmt: skip

        edge = shoectl("edge")
        deadline = time.monotonic() + GUARD_S  # the companion's first report is on its way
        while edge.returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.1)
            edge = shoectl("edge")
        assert edge.returncode == 0, edge.stderr
        assert re.match(r"Shoe \d+ \(open\), next round \d+: \d+ cards not seen", edge.stdout)
        assert "player edge: what a player gains on average per unit staked" in edge.stdout
        summary = shoectl("edge", "--summary")
        title = r"Shoe \d+: the player's edge per round, rounds 1 to \d+, every one reported"
        assert re.match(title, summary.stdout), summary.stdout  # the companion ran from round 1
        assert "LARGEST PLAYER EDGE" in summary.stdout
        with urllib.request.urlopen(metrics_url, timeout=GUARD_S) as page:
            metrics = page.read().decode()
        assert re.search(r"^shoe_status_up 1(\.0)?$", metrics, re.MULTILINE), metrics[:500]
        acted = shoectl("void", "--by", "sup1", "--reason", "a try")
        assert acted.returncode in (0, 1), acted.stderr  # accepted, or no round to void now
        assert "supervisor group" not in acted.stderr
        demo.line_matching(r"shoectl dealer --id D-1 .* +# ")
        # The demo keeps the round's clock, as a table with dealers does: a dealer signs in.
        signed = shoectl("dealer", "--id", "D-1", "--by", "sup1", "--reason", "shift")
        assert signed.returncode == 0, signed.stderr
        assert signed.stdout.startswith("accepted: dealer by sup1")
    finally:
        code = demo.finish(signal.SIGINT)
    assert code == 0, demo.lines[-10:]
    assert not folder.exists()
