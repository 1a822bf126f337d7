"""Test support for the journal and delivery tests: real receiver and writer processes.

Not a test module. Starts `python -m shoe_controller.testing.receiver` and
tests/helpers/journal_writer.py as real processes, reads their line protocol, and checks a
receiver's file against a journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from shoe_controller.store.journal import Journal
from shoe_controller.testing.receiver import ReceiverStore

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO / "tests" / "helpers" / "journal_writer.py"
SECRET = "tbl-07 shared secret ✓"
TABLE_ID = "07"
CONTROLLER_ID = "tbl-07-shoe"
PATIENCE_S = 60.0  # a safety net for waits, never a speed assertion


def wait_until(predicate: Callable[[], Any], what: str, patience: float = PATIENCE_S) -> Any:
    """Poll `predicate` until truthy; fail (not hang) if it never happens."""
    deadline = time.monotonic() + patience
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


async def eventually(predicate: Callable[[], Any], what: str) -> Any:
    """wait_until on the running loop: the code under test runs while it waits."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE_S
    while not (value := predicate()):
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(0.005)
    return value


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
    """`python -m shoe_controller.testing.receiver`; knows its port from the first stdout line."""

    def __init__(self, db: Path, key_file: Path, *options: str, port: int = 0) -> None:
        super().__init__(
            [
                sys.executable,
                "-m",
                "shoe_controller.testing.receiver",
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
        assert journal.check() == []
        last = journal.last_seq()
        expected = [event.to_wire() for event in journal.events_after(0, limit=last + 1)]
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


def make_pki(directory: Path) -> dict[str, Path]:
    """A test CA, a server certificate for 127.0.0.1 and a client certificate (openssl CLI)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    for name, usage, alt in (("server", "serverAuth", "IP:127.0.0.1"),
                             ("client", "clientAuth", "DNS:tbl-07-shoe")):  # fmt: skip
        run("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        (directory / f"{name}.ext").write_text(
            f"subjectAltName={alt}\nbasicConstraints=CA:FALSE\nextendedKeyUsage={usage}\n"
        )
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2",
            "-extfile", f"{name}.ext")  # fmt: skip
    return {name: directory / name for name in (
        "ca.pem", "server.pem", "server.key", "client.pem", "client.key")}  # fmt: skip
