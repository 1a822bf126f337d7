"""The requests that read the journal are answered by a reader process, not on the loop that
ACKs the cards (docs/control.md "Requests that read the journal"): a live control
socket (shoe_testkit.control.LiveTable) with its real reader process, held with SIGSTOP where
a test needs an answer that is still being built."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.control import GUARD_S, LiveTable, open_shoe
from shoe_testkit.groups import can_make_groups, temporary_group
from shoe_testkit.users import as_nobody, can_switch_user

from shoe_controller.service.control.reads import READER_MODULE


@contextlib.contextmanager
def held(pid: int) -> Iterator[None]:
    """The reader process stopped (its answer cannot come) until the block ends."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def reader_pid() -> int | None:
    """The pid of the reader process this test's live table runs, if one runs (a child of
    this process running the reader module)."""
    found = []
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in map(int, children.read_text().split()):
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if READER_MODULE.encode() in argv:
                    found.append(pid)
    return found[-1] if found else None


def reader_of(live: LiveTable) -> int:
    """The reader's pid, started by a first request if none runs."""
    assert live.request({"cmd": "rounds"})["ok"] is True
    pid = reader_pid()
    assert pid is not None
    return pid


def waiting(live: LiveTable) -> int:
    return live.call(lambda: live.server.reads.waiting)


def answering(live: LiveTable) -> bool:
    return live.call(lambda: live.server.reads.answering)


def connect(live: LiveTable) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(GUARD_S)
    client.connect(str(live.socket_path))
    return client


def answers(client: socket.socket, count: int) -> list[dict[str, Any]]:
    reader = client.makefile("rb")
    return [json.loads(reader.readline()) for _ in range(count)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_read_being_built_keeps_no_card_waiting(live: LiveTable) -> None:
    open_shoe(live)
    reader = reader_of(live)
    dealt = live.view()["cards_dealt"]
    with held(reader), connect(live) as viewer:
        viewer.sendall(b'{"cmd": "events", "limit": 1000}\n{"cmd": "hello"}\n')
        live.wait_for(lambda: answering(live))
        live.deal(4)  # stored and ACKed while the viewer's answer is still to be built
        status = live.request({"cmd": "status"})["result"]  # the loop answers others
        assert status["table"]["cards_dealt"] == dealt + 4
        assert select.select([viewer], [], [], 0)[0] == []  # nothing built: none came
        os.kill(reader, signal.SIGCONT)
        events, hello = answers(viewer, 2)  # in the order asked
    assert events["ok"] is True
    assert [event["seq"] for event in events["result"]["events"]] == [
        event.seq for event in live.events()
    ]
    assert hello["cmd"] == "hello"


def test_an_answer_over_the_bound_is_refused_and_the_connection_serves_on(tmp_path: Path) -> None:
    live = LiveTable(tmp_path, control={"max_answer_bytes": 2048})
    try:
        open_shoe(live)
        live.deal(8)
        with connect(live) as client:
            client.sendall(b'{"cmd": "events", "limit": 1000}\n{"cmd": "events", "limit": 1}\n')
            big, small = answers(client, 2)
        assert big["ok"] is False
        assert big["cmd"] == "events"
        assert big["error"]["code"] == "too_large"
        text = big["error"]["text"]
        assert "more than the 2048 one answer may hold ([control] max_answer_bytes)" in text
        assert "fewer events (limit)" in text
        assert small["ok"] is True
        assert small["result"]["events"][0]["seq"] == live.events()[-1].seq
    finally:
        live.close()


def test_an_answer_not_built_in_time_is_refused_and_a_new_reader_serves(tmp_path: Path) -> None:
    live = LiveTable(tmp_path, control={"answer_time_limit_s": 0.5})
    try:
        open_shoe(live)
        live.deal(4)  # round 1
        reader = reader_of(live)
        with held(reader), connect(live) as client:
            client.sendall(b'{"cmd": "road"}\n{"cmd": "rounds"}\n')
            slow, again = answers(client, 2)
        assert slow == {
            "ok": False,
            "cmd": "road",
            "error": {
                "code": "too_slow",
                "text": "the answer took more than 0.5 s to build ([control]"
                " answer_time_limit_s): ask for less",
            },
        }
        assert again["ok"] is True  # a new reader built it
        assert again["result"]["total"] == 1
        live.wait_for(lambda: not alive(reader))  # the stuck one was killed, not left
        assert reader_pid() not in (None, reader)
    finally:
        live.close()


def test_a_reader_that_dies_is_replaced(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(4)
    reader = reader_of(live)
    os.kill(reader, signal.SIGKILL)
    live.wait_for(lambda: not alive(reader))
    road = live.request({"cmd": "road"})
    assert road["ok"] is True
    assert road["result"]["results"] == live.view()["road"]


# Asks `export` of round 1 on COUNT connections, one each, and prints each answer's export
# time (the moment its request was taken from the queue: journal_answers.Live.now).
ASKER = textwrap.dedent(
    """
    import json, socket, sys
    path, count = sys.argv[1], int(sys.argv[2])
    held = []
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(path)
        sock.sendall(b'{"cmd": "export", "round": 1}\\n')
        held.append(sock)
    print("asked", flush=True)
    for sock in held:
        answer = json.loads(sock.makefile("rb").readline())
        print(answer["result"]["records"][0]["exported_at"], flush=True)
    """
)


def test_one_users_flood_does_not_starve_another_user(tmp_path: Path) -> None:
    """Taken user by user: a user with one request waits for at most one of a user's with
    many (and the one being built), where first come, first served would make it wait for
    all of them."""
    if not can_switch_user() or not can_make_groups():
        pytest.skip("needs root, setpriv and groupadd to ask as a second user (nobody)")
    with temporary_group() as (viewers, gid):
        live = LiveTable(tmp_path, viewer_group=viewers)
        try:
            open_shoe(live)
            live.deal(4)  # round 1 done
            reader = reader_of(live)
            with held(reader), connect(live) as first:
                first.sendall(b'{"cmd": "export", "round": 1}\n')  # being built
                live.wait_for(lambda: answering(live))
                flood = [connect(live) for _ in range(6)]  # root's six more
                for client in flood:
                    client.sendall(b'{"cmd": "export", "round": 1}\n')
                live.wait_for(lambda: waiting(live) == 6)
                other = subprocess.Popen(
                    [*as_nobody(gid), sys.executable, "-c", ASKER, str(live.socket_path), "1"],
                    stdout=subprocess.PIPE, text=True,
                )  # fmt: skip
                assert other.stdout is not None
                assert other.stdout.readline() == "asked\n"
                live.wait_for(lambda: waiting(live) == 7)
                os.kill(reader, signal.SIGCONT)
                times = [answers(client, 1)[0]["result"]["records"][0]["exported_at"]
                         for client in (first, *flood)]  # fmt: skip
                nobodys = other.stdout.readline().strip()
                other.wait(GUARD_S)
                for client in flood:
                    client.close()
            assert sorted([*times, nobodys]).index(nobodys) == 2  # root's first two, then it
        finally:
            live.close()
