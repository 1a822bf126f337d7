"""Test support for the journal and delivery tests: real receiver and writer processes.

Not a test module. Starts `python -m shoe_controller.kit.receiver` and journal_writer.py (beside
this file) as real processes, reads their line protocol, and checks a receiver's file against a
journal.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from shoe_controller.kit.receiver import ReceiverStore
from shoe_controller.store.journal import Journal
from shoe_testkit.waiting import PATIENCE_S, wait_until

REPO = Path(__file__).resolve().parents[3]
WRITER = Path(__file__).resolve().parent / "journal_writer.py"
SECRET = "tbl-07 shared secret ✓"
TABLE_ID = "07"
CONTROLLER_ID = "tbl-07-shoe"


def write_key(directory: Path) -> Path:
    path = directory / "table.key"
    path.write_text(f"\n  {SECRET}  \n", encoding="utf-8")  # white space is not part of the key
    return path


class LineProcess:
    """A child process whose stdout lines are collected by a thread."""

    def __init__(self, argv: list[str], *, stdin: bool = False) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self.argv = argv
        self.proc = subprocess.Popen(
            argv,
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._new: queue.Queue[str] = queue.Queue()
        self.stderr_lines: list[str] = []
        self._pumps = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._pump_err, daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line.rstrip("\n"))

    def wait_line(self, predicate: Callable[[str], bool], what: str) -> str:
        def found() -> str | None:
            match = next((line for line in self.lines if predicate(line)), None)
            if match is None and self.proc.poll() is not None:
                tail = "\n".join(self.stderr_lines[-20:])
                raise AssertionError(f"{self.argv[1]} exited before {what}:\n{tail}")
            return match

        return wait_until(found, what)

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        """SIGKILL: no clean-up, no flush, no atexit."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.wait()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.wait()
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def wait(self) -> int:
        """Wait for the exit, then for every line it printed."""
        code = self.proc.wait(timeout=PATIENCE_S)
        for pump in self._pumps:
            pump.join(timeout=PATIENCE_S)
        return code


class ReceiverProcess(LineProcess):
    """`python -m shoe_controller.kit.receiver`; knows its port from the first stdout line."""

    def __init__(self, db: Path, key_file: Path, *options: str, port: int = 0) -> None:
        super().__init__(
            [
                sys.executable,
                "-m",
                "shoe_controller.kit.receiver",
                "--port",
                str(port),
                "--db",
                str(db),
                "--key-file",
                str(key_file),
                "--table-id",
                TABLE_ID,
                "--control",
                *options,
            ]
        )
        self.db = db
        first = self.wait_line(lambda line: True, "the receiver's port")
        self.port = int(first)
        self.url = f"http://127.0.0.1:{self.port}"

    def control(self, path: str, document: dict[str, Any] | None = None) -> Any:
        with httpx.Client(base_url=self.url, trust_env=False, timeout=10) as client:
            if document is None:
                response = client.get(f"/control/{path}")
            else:
                response = client.post(f"/control/{path}", json=document)
        response.raise_for_status()
        return response.json()


def start_writer(
    journal: Path, *options: str, receiver: ReceiverProcess | None = None, key_file: Path | None
) -> LineProcess:
    argv = [sys.executable, str(WRITER), "--journal", str(journal)]
    if receiver is not None:
        argv += ["--url", receiver.url, "--key-file", str(key_file)]
    return LineProcess(argv + list(options), stdin="--commands" in options)


def receiver_events(db: Path) -> list[dict[str, Any]]:
    store = ReceiverStore(db)
    try:
        return store.events(TABLE_ID)
    finally:
        store.close()


def assert_delivered_exactly_once(receiver_db: Path, journal_path: Path) -> int:
    """The receiver holds seq 1..last_seq once each, in order, equal to the journal's events."""
    with Journal.open(journal_path, CONTROLLER_ID, read_only=True) as journal:
        assert journal.integrity.check() == []
        last = journal.reads.last_seq()
        expected = [event.to_wire() for event in journal.reads.events_after(0, limit=last + 1)]
    held = receiver_events(receiver_db)
    assert [event["seq"] for event in held] == list(range(1, last + 1))
    assert held == expected
    return last


@contextlib.contextmanager
def running(process: LineProcess) -> Iterator[LineProcess]:
    try:
        yield process
    finally:
        process.kill()
