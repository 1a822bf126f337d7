"""A viewer's queries of the journal never hold a card back: with a real daemon process, its
reader process held (SIGSTOP) while it builds a viewer's `events` answer, the dealer deals
and every card is stored and ACKed, other clients are answered, and the viewer's answer
comes, right and in order, once the reader goes on (docs/control.md "Requests that
read the journal")."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.rig import TableRig

pytestmark = pytest.mark.slow

GUARD_S = 60.0
READER = b"shoe_controller.service.control.reader"


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def the_reader(daemon: int) -> int:
    (reader,) = [
        child for child in children(daemon) if READER in Path(f"/proc/{child}/cmdline").read_bytes()
    ]
    return reader


@contextlib.contextmanager
def asking(rig: TableRig) -> Iterator[tuple[socket.socket, Any]]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(GUARD_S)
        client.connect(str(rig.directory / "control.sock"))
        yield client, client.makefile("rb")


def ask(rig: TableRig, request: dict[str, Any]) -> dict[str, Any]:
    with asking(rig) as (client, lines):
        client.sendall(json.dumps(request).encode() + b"\n")
        return json.loads(lines.readline())


def test_cards_are_acked_while_a_viewers_answer_is_being_built(tmp_path: Path) -> None:
    with TableRig(tmp_path) as rig:
        rig.dealer.deal(6)
        assert rig.daemon is not None
        assert ask(rig, {"cmd": "events", "limit": 1000})["ok"] is True  # the reader starts
        reader = the_reader(rig.daemon.pid)
        dealt = ask(rig, {"cmd": "status"})["result"]["table"]["cards_dealt"]
        os.kill(reader, signal.SIGSTOP)
        try:
            with asking(rig) as (viewer, lines):
                viewer.sendall(b'{"cmd": "events", "limit": 1000}\n{"cmd": "hello"}\n')
                events = rig.dealer.deal(4)  # in lock step: each card stored and ACKed
                status = ask(rig, {"cmd": "status"})["result"]  # others are answered
                assert status["table"]["cards_dealt"] == dealt + 4
                assert select.select([viewer], [], [], 0)[0] == []  # its answer: not built
                os.kill(reader, signal.SIGCONT)
                answer, hello = json.loads(lines.readline()), json.loads(lines.readline())
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(reader, signal.SIGCONT)
        assert answer["ok"] is True
        assert answer["result"]["events"][-1]["seq"] == events[-1].seq
        assert hello["cmd"] == "hello"  # in the order asked
        assert the_reader(rig.daemon.pid) == reader  # the same reader, never on the loop
