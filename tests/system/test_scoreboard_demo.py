"""`shoe-controller demo` starts the scoreboard page and prints its URL (a real process:
the demo's own simulated shoe, table server and daemon)."""

from __future__ import annotations

import json
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
from typing import IO

import pytest
from shoe_testkit.control import GUARD_S, REPO

pytestmark = pytest.mark.slow


class Lines:
    """A stream's lines as they come, read on a thread of their own."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.queue: queue.Queue[str] = queue.Queue()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.stream:
            self.queue.put(line)

    def next(self) -> str:
        return self.queue.get(timeout=GUARD_S)  # a hung demo fails the test, not the run

    def close(self) -> None:
        self.thread.join(GUARD_S)  # the demo has exited: its stdout ends
        self.stream.close()


def test_the_demo_serves_the_page_and_says_where(tmp_path: Path) -> None:
    command = ["-m", "shoe_controller.cli.main", "demo", "--pace", "0.05"]
    errors = (tmp_path / "demo.err").open("w")
    demo = subprocess.Popen(
        [sys.executable, *command, "--dir", str(tmp_path / "demo")],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    assert demo.stdout is not None
    said = Lines(demo.stdout)
    try:
        lines = [said.next(), said.next()]
        found = re.fullmatch(r"scoreboard on (http://127\.0\.0\.1:\d+/)\n", lines[1])
        assert found, (lines, (tmp_path / "demo.err").read_text())
        url = found.group(1)
        try:
            with urllib.request.urlopen(url, timeout=GUARD_S) as page:
                assert b"board.js" in page.read()
        except OSError as error:
            log = (tmp_path / "demo" / "daemon.log").read_text().splitlines()[-5:]
            raise AssertionError(f"{url}: {error}; the daemon's log ends: {log}") from None
        deadline = time.monotonic() + GUARD_S
        while True:  # the demo deals: the board fills
            with urllib.request.urlopen(url + "board.json", timeout=GUARD_S) as answer:
                board = json.load(answer)
            if board["stats"]["cards_dealt"] > 0:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert board["table"] == "07"
        assert board["shoe"] == 1
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(GUARD_S)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait()
        said.close()
        errors.close()
