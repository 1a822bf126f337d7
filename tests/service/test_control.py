"""The control socket as an integrator sees it: JSON lines to a live ControlServer over a real
Controller, journal and simulated shoe (tests/support/shoe_testkit/control.py)."""

from __future__ import annotations

import grp
import json
import os
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.control import (
    GUARD_S,
    LiveTable,
    open_shoe,
)

from drivers.wire.messages import Severity
from shoe_controller.service.control import ControlError, ControlServer, ControlService
from shoe_controller.service.peers import Peer, authorize, peer_of
from shoe_controller.vocab.events import EventType

# A shoe: A♠ burns one more (4♣); then round by round (R7 order P1 B1 P2 B2 P3 B3):
# 2♠ 4♦ 7♥ 9♣: Player natural 9-3; Q♥ 5♦ A♥ A♦ 3♣: Banker 6-4 (stage-1 insurance offered);
# 3♥ 3♠ K♦ 5♣: Banker natural 8-3; 2♦ 9♠ J♣ J♠: Banker natural 9-2.


def lines_of(sock: socket.socket) -> Iterator[dict[str, Any]]:
    reader = sock.makefile("rb")
    while True:
        line = reader.readline()
        if not line:
            return
        yield json.loads(line)


# ---------------------------------------------------------------------- the protocol


def test_hello_names_the_commands_and_every_supervisor_action(live: LiveTable) -> None:
    answer = live.request({"cmd": "hello"})
    assert answer["ok"] is True
    result = answer["result"]
    assert result["protocol"] == 1
    assert result["table_id"] == "07"
    assert result["controller_id"] == "tbl-07-shoe"
    assert {
        "status",
        "check",
        "devices",
        "rounds",
        "round",
        "road",
        "events",
        "outbox",
        "act",
    } <= set(result["commands"])
    assert {"confirm", "correct", "void", "change_shoe", "resume", "end_trial"} <= set(
        result["actions"]
    )
    correct = {arg["name"]: arg for arg in result["actions"]["correct"]["args"]}
    assert correct["position"]["required"] is True
    assert correct["card"]["kind"] == "card"


def test_bad_lines_get_an_error_answer_and_the_connection_goes_on(live: LiveTable) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(GUARD_S)
        sock.connect(str(live.socket_path))
        sock.sendall(b"not json\n[1, 2]\n\n" + b'{"cmd": "dance"}\n{"cmd": "round"}\n')
        sock.sendall(b'{"cmd": "events", "types": ["card.flipped"]}\n{"cmd": "hello"}\n')
        answers = lines_of(sock)
        first, second, third, fourth, fifth, sixth = (next(answers) for _ in range(6))
        assert (first["ok"], first["error"]["code"]) == (False, "bad_request")
        assert "not a JSON line" in first["error"]["text"]
        assert second["error"] == {"code": "bad_request", "text": "a request is a JSON object"}
        assert third["error"]["code"] == "unknown_command"
        assert "dance" in third["error"]["text"]
        assert fourth["error"]["code"] == "bad_request"
        assert "round needs its number" in fourth["error"]["text"]
        assert fifth["error"]["code"] == "bad_request"
        assert "card.flipped" in fifth["error"]["text"]
        assert sixth["ok"] is True  # the same connection still serves


def test_an_overlong_request_is_refused_and_the_connection_closed(live: LiveTable) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(GUARD_S)
        sock.connect(str(live.socket_path))
        sock.sendall(b'{"cmd": "status", "pad": "' + b"x" * 70_000 + b'"}\n')
        answers = list(lines_of(sock))
    assert len(answers) == 1
    assert answers[0]["error"]["code"] == "bad_request"
    assert "64 KiB" in answers[0]["error"]["text"]


def test_a_socket_already_of_the_viewer_group_is_not_chowned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The daemon's own group as the viewer group: the socket is born with it, so no chown
    # (in systemd's @privileged: the unit allows @chown again for the other case).
    # Were chown called, the refusal would leave the socket 0600.
    def refused(*args: object) -> None:
        raise PermissionError("chown refused")

    monkeypatch.setattr(os, "chown", refused)
    own = grp.getgrgid(os.getegid()).gr_name
    table = LiveTable(tmp_path, viewer_group=own)
    try:
        mode = table.socket_path.stat()
        assert stat.S_IMODE(mode.st_mode) == 0o660
        assert mode.st_gid == os.getegid()
    finally:
        table.close()


def test_the_socket_is_not_world_replaces_a_dead_daemons_socket_and_refuses_a_live_one(
    live: LiveTable, tmp_path: Path
) -> None:
    # The live table's viewer and supervisor groups exist nowhere (shoe_testkit.groups), on
    # a machine with the package's groups too: root and the daemon only.
    assert stat.S_IMODE(live.socket_path.stat().st_mode) == 0o600
    second = ControlServer(live.socket_path, live.service, live.config.control)
    with pytest.raises(ControlError, match="already listens"):
        live.run(second.start())
    assert live.request({"cmd": "hello"})["ok"]  # the first one still serves
    stale = live.socket_dir / "stale.sock"
    leftover = socket.socket(socket.AF_UNIX)
    leftover.bind(str(stale))
    leftover.close()  # a crashed daemon leaves its socket file behind
    third = ControlServer(stale, live.service, live.config.control)
    live.run(third.start())
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(stale))
    finally:
        live.run(third.close())
    assert not stale.exists()
    not_a_socket = live.socket_dir / "plain"
    not_a_socket.write_text("keep me")
    with pytest.raises(ControlError, match="not a socket"):
        live.run(ControlServer(not_a_socket, live.service, live.config.control).start())
    assert not_a_socket.read_text() == "keep me"


# ---------------------------------------------------------------------- seeing


def test_status_is_the_tables_view_with_devices_outbox_and_health(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(3)
    status = live.request({"cmd": "status"})["result"]
    view = live.view()
    assert status["table"] == view
    assert status["table"]["round"]["cards"] == {"P1": "2S", "B1": "4D", "P2": "7H"}
    assert status["health"] == {"level": 0, "status": "OK", "problems": []}
    (scanner,) = status["devices"]
    assert scanner["status"] == "connected"
    assert scanner["configured"] is True
    assert scanner["identity"] == {
        "kind": "optical",
        "vendor": "Acme Gaming",
        "model": "OS-9",
        "serial": "SN-4711",
        "firmware": "2.3.1",
    }
    assert scanner["link"]["frames_in"] >= 7  # HELLO, SHOE, five cards at least
    last_seq = live.call(live.journal.reads.last_seq)
    assert status["outbox"]["last_seq"] == last_seq
    assert status["outbox"]["backlog"] == last_seq  # the table server has nothing yet
    (server,) = status["outbox"]["sinks"]
    assert (server["name"], server["kind"], server["state"]) == ("server", "http", "starting")
    assert server["backlog"] == last_seq


def test_a_hold_makes_status_critical_and_resume_clears_it(live: LiveTable) -> None:
    open_shoe(live)
    hold = live.request({"cmd": "act", "action": "hold", "by": "sup7", "reason": "player dispute"})
    assert hold["ok"] is True
    check = live.request({"cmd": "check"})["result"]
    assert check["level"] == 2
    assert check["line"].startswith("SHOE CRITICAL - table held (supervisor's hold)")
    assert "| backlog=" in check["line"]
    status = live.request({"cmd": "status"})["result"]
    assert status["table"]["state"] == "held"
    assert status["alerts"][-1]["code"] == "supervisor_hold"
    resume = live.request({"cmd": "act", "action": "resume", "by": "sup7", "reason": "settled"})
    assert resume["result"]["accepted"] is True
    assert live.request({"cmd": "check"})["result"]["level"] == 0


def test_a_lost_device_makes_status_critical(live: LiveTable) -> None:
    open_shoe(live)
    live.sim.call(lambda device: live.sim.unplug(GUARD_S))
    status = live.wait_for(
        lambda: (s := live.request({"cmd": "status"})["result"])["health"]["level"] == 2 and s
    )
    texts = [problem["text"] for problem in status["health"]["problems"]]
    assert any(text.startswith("scanner is ") for text in texts), texts
    assert status["devices"][0]["status"] in ("lost", "silent", "open_failed")


def test_device_faults_warn_or_need_a_person_by_severity(live: LiveTable) -> None:
    open_shoe(live)

    def problems() -> list[dict[str, Any]]:
        return live.request({"cmd": "status"})["result"]["health"]["problems"]

    live.sim.call(lambda device: device.raise_fault(0x0201, Severity.WARNING, "lamp dim"))
    warned = live.wait_for(problems)
    assert [(p["status"], p["text"]) for p in warned] == [
        ("WARNING", "scanner: device fault 0x0201: lamp dim")
    ]
    devices = live.request({"cmd": "devices"})["result"]["devices"]
    assert devices[0]["faults"] == [
        {"device": "scanner", "code": 0x0201, "severity": 1, "text": "lamp dim"}
    ]
    live.sim.call(lambda device: device.clear_fault(0x0201))
    live.wait_for(lambda: not problems())
    live.sim.call(lambda device: device.raise_fault(0x0203, Severity.ERROR, "sensor jam"))
    failed = live.wait_for(lambda: len(problems()) >= 2 and problems())
    texts = {(p["status"], p["text"]) for p in failed}
    assert ("CRITICAL", "scanner: device fault 0x0203: sensor jam") in texts
    assert [t for s, t in texts if s == "CRITICAL" and t.startswith("table held (device fault): ")]


def test_undelivered_events_grow_from_warning_to_critical_with_time(live: LiveTable) -> None:
    open_shoe(live)

    def health_at(offset: float) -> dict[str, Any]:
        later = ControlService(
            live.controller,
            lambda: [live.publisher.status()],
            lambda: [live.scanner.stats()],
            live.config,
            lambda: time.time() + offset,
        )
        return live.call(later.answer, {"cmd": "status"})["health"]

    limits = live.config.health
    assert health_at(0)["level"] == 0
    warning = health_at(limits.backlog_warning_s + 5)
    assert warning["status"] == "WARNING"
    last_seq = live.call(live.journal.reads.last_seq)
    assert warning["problems"][0]["text"].startswith(f"{last_seq} event(s) undelivered to the")
    critical = health_at(limits.backlog_critical_s + 5)
    assert critical["status"] == "CRITICAL"
    assert "undelivered to the table server for" in critical["problems"][0]["text"]


def test_one_request_reads_a_bounded_part_of_the_journal(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(4)
    service = live.service
    everything = live.call(service.last_matching, 100, ())
    assert [e.seq for e in everything] == [e.seq for e in live.events()]
    started = live.call(service.last_matching, 5, ("controller",))
    assert [e.type for e in started] == ["controller.started"]
    assert live.call(service.last_matching, 5, ("controller",), 3) == []  # beyond the scan
    assert live.call(service.matching_after, 0, ("round",), 5, 3) == []
    assert [e.type for e in live.call(service.matching_after, 0, ("round",), 5)] == [
        "round.started",
        "round.result",
    ]


def test_events_last_after_and_types(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(4)
    stored = [event.to_wire() for event in live.events()]
    last = live.request({"cmd": "events", "limit": 3})["result"]["events"]
    assert last == stored[-3:]
    after = live.request({"cmd": "events", "after": 2, "limit": 2})["result"]["events"]
    assert after == stored[2:4]
    dealt = live.request({"cmd": "events", "types": ["card.dealt"], "limit": 100})["result"]
    assert [e["data"]["position"] for e in dealt["events"]] == ["P1", "B1", "P2", "B2"]
    family = live.request({"cmd": "events", "types": ["round"], "limit": 100})["result"]
    assert [e["type"] for e in family["events"]] == ["round.started", "round.result"]
    assert live.request({"cmd": "events", "limit": 0})["error"]["code"] == "bad_request"


def test_rounds_round_and_road_come_from_the_journal(live: LiveTable) -> None:
    open_shoe(live)
    trial = live.request({"cmd": "act", "action": "trial", "by": "s", "reason": "players ask"})
    assert trial["ok"] is True
    live.deal(4 + 5)  # a trial round (natural), then a real one: Q♥ 5♦ A♥ A♦ 3♣
    live.deal(4 + 2)  # round 3 (a natural) and two cards of round 4
    view = live.view()
    rounds = live.request({"cmd": "rounds"})["result"]
    assert rounds["shoe"] == view["shoe"]
    assert rounds["total"] == len(rounds["rounds"]) == 4
    assert rounds["rounds"][-1]["status"] == "in_progress"
    assert rounds["rounds"][-1]["cards"] == {"P1": "2D", "B1": "9S"}
    first, second = rounds["rounds"][:2]
    assert first["trial"] is True
    assert (first["status"], first["winner"], first["natural"]) == ("result", "player", "player")
    assert first["cards"] == {"P1": "2S", "B1": "4D", "P2": "7H", "B2": "9C"}
    assert second["trial"] is False
    assert (second["winner"], second["player_total"], second["banker_total"]) == ("banker", 4, 6)
    assert second["cards"] == {"P1": "QH", "B1": "5D", "P2": "AH", "B2": "AD", "P3": "3C"}
    assert second["insurance_offers"] == 1
    last_one = live.request({"cmd": "rounds", "last": 1})["result"]
    assert last_one["rounds"] == rounds["rounds"][-1:]
    assert last_one["total"] == rounds["total"]

    one = live.request({"cmd": "round", "round": 2})["result"]
    assert one["summary"] == second
    types = [event["type"] for event in one["events"]]
    assert types[0] == "round.started"
    assert types[-1] == "round.result"
    assert [e for e in one["events"] if e["type"] == "card.dealt"][-1]["data"]["card"] == "3C"
    missing = live.request({"cmd": "round", "round": 99})
    assert missing["error"]["code"] == "not_found"

    road = live.request({"cmd": "road"})["result"]
    assert road["results"] == view["road"]  # the journal's reading agrees with the table's
    assert [entry["round"] for entry in road["results"]] == [
        r["round"] for r in rounds["rounds"] if r["status"] == "result" and not r["trial"]
    ]
    assert road["bead_plate"][0]["winner"] == "banker"
    assert road["summary"]["rounds"] == len(view["road"])


# ---------------------------------------------------------------------- acting


def test_an_accepted_action_is_journaled_and_pushed_with_the_os_user(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(2)
    answer = live.request({"cmd": "act", "action": "void", "by": "sup7", "reason": "cards dropped"})
    assert answer["ok"] is True
    result = answer["result"]
    assert result["accepted"] is True
    assert (result["os_user"], result["uid"]) == ("root", 0)
    action, *consequences = result["events"]
    assert action["type"] == "supervisor.action"
    assert action["data"]["action"] == "void"
    assert action["data"]["by"] == "sup7"
    assert action["data"]["reason"] == "cards dropped"
    assert action["data"]["details"]["os_user"] == "root (uid 0)"
    assert [event["type"] for event in consequences] == ["round.voided"]
    stored = live.events()[-len(result["events"]) :]
    assert [event.to_wire() for event in stored] == result["events"]
    journaled = live.call(live.journal.reads.replay_steps)[-1].input
    assert journaled["type"] == "supervisor"
    assert journaled["reason"] == "cards dropped"
    assert journaled["os_user"] == "root (uid 0)"  # from the kernel, not from the client
    assert live.view()["round"] is None


def test_a_refused_action_says_why_and_changes_nothing(live: LiveTable) -> None:
    open_shoe(live)
    before = live.call(live.controller.table.snapshot)
    answer = live.request({"cmd": "act", "action": "resume", "by": "sup7", "reason": "go on"})
    assert answer["ok"] is False
    assert answer["error"] == {"code": "refused", "text": "resume refused: nothing to resume"}
    assert answer["result"]["accepted"] is False
    (alert,) = answer["result"]["events"]
    assert alert["type"] == "procedure.alert"
    assert alert["data"]["code"] == "command_refused"
    assert live.events()[-1].to_wire() == alert  # journaled, and so pushed
    assert live.call(live.controller.table.snapshot) == before


def test_an_action_without_who_or_why_is_not_submitted(live: LiveTable) -> None:
    open_shoe(live)
    last_seq = live.call(live.journal.reads.last_seq)
    cases = [
        ({"action": "void", "reason": "x"}, "by is required"),
        ({"action": "void", "by": "sup7", "reason": "  "}, "reason is required"),
        ({"action": "fly", "by": "sup7", "reason": "x"}, "unknown action"),
        ({"action": "void", "by": "s", "reason": "x", "args": [1]}, "args must be an object"),
    ]
    for fields, text in cases:
        answer = live.request({"cmd": "act", **fields})
        assert answer["error"]["code"] == "bad_request"
        assert text in answer["error"]["text"]
    assert live.call(live.journal.reads.last_seq) == last_seq


def test_an_action_with_text_sqlite_cannot_store_is_refused_and_changes_nothing(
    live: LiveTable,
) -> None:
    # shoectl run with a non-UTF-8 argv sends "\udcff": valid JSON, a lone surrogate in Python,
    # which SQLite cannot encode. The table must not keep a void the journal never got (R10).
    open_shoe(live)
    live.deal(2)
    before = live.call(live.controller.table.snapshot)
    last_seq = live.call(live.journal.reads.last_seq)
    answer = live.request(
        {"cmd": "act", "action": "void", "by": "sup7", "reason": "bad \udcff byte"}
    )
    assert answer["ok"] is False
    assert answer["error"]["code"] == "bad_request"
    assert "void was not stored, nothing changed" in answer["error"]["text"]
    assert live.call(live.controller.table.snapshot) == before
    assert live.call(live.journal.reads.last_seq) == last_seq
    again = live.request({"cmd": "act", "action": "void", "by": "sup7", "reason": "x"})
    assert again["result"]["accepted"] is True


def test_an_action_stored_is_reported_stored_even_if_a_listener_then_fails(
    live: LiveTable,
) -> None:
    # After the commit the action has happened: an "internal error" answer would make the
    # supervisor repeat it (a second void, a second correction).
    open_shoe(live)
    live.deal(2)
    listener = live.controller._on_stored

    def failing(stored: list) -> None:  # type: ignore[type-arg]
        raise RuntimeError("indicator unplugged")

    live.controller._on_stored = failing
    try:
        answer = live.request({"cmd": "act", "action": "void", "by": "sup7", "reason": "x"})
    finally:
        live.controller._on_stored = listener
    assert answer["ok"] is True
    assert answer["result"]["accepted"] is True
    assert live.events()[-1].to_wire() == answer["result"]["events"][-1]


def test_a_journal_that_cannot_store_loses_the_action_and_says_so(tmp_path: Path) -> None:
    live = LiveTable(tmp_path, busy_timeout_s=0.2)
    try:
        open_shoe(live)
        live.deal(2)
        before = live.call(live.controller.table.snapshot)
        blocker = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            answer = live.request({"cmd": "act", "action": "void", "by": "s", "reason": "x"})
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert answer["error"]["code"] == "not_stored"
        assert "void was not stored, nothing changed" in answer["error"]["text"]
        assert live.call(live.controller.table.snapshot) == before
        again = live.request({"cmd": "act", "action": "void", "by": "s", "reason": "x"})
        assert again["result"]["accepted"] is True
    finally:
        live.close()


class Group:
    def __init__(self, gid: int) -> None:
        self.gr_gid = gid


def lookup(name: str) -> Group:
    if name != "shoe-supervisors":
        raise KeyError(name)
    return Group(1234)


@pytest.mark.parametrize(
    ("peer", "group", "refusal"),
    [
        (Peer(1, 0, 0, (), "root"), "no-such-group", None),
        (Peer(1, 1001, 1234, (), "alice"), "shoe-supervisors", None),
        (Peer(1, 1001, 100, (27, 1234), "alice"), "shoe-supervisors", None),
        (Peer(1, 1001, 100, (27,), "alice"), "shoe-supervisors", "not in the supervisor group"),
        (Peer(1, 1001, 1234, (), "alice"), "no-such-group", "does not exist"),
    ],
)
def test_who_may_act(peer: Peer, group: str, refusal: str | None) -> None:
    answer = authorize(peer, group, lookup)
    if refusal is None:
        assert answer is None
    else:
        assert answer is not None
        assert refusal in answer


def test_peer_credentials_come_from_the_kernel(tmp_path: Path) -> None:
    """SO_PEERCRED / SO_PEERGROUPS of a process running as nobody with chosen groups."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a client under another uid and groups")
    nobody = 65534
    extra = sorted({grp.getgrnam("nogroup").gr_gid, 27, 4242})
    socket_dir = Path(os.path.realpath("/tmp")) / f"peer-{os.getpid()}"
    socket_dir.mkdir(mode=0o755)
    path = socket_dir / "peer.sock"
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
            path.chmod(0o666)
            server.listen()
            client = subprocess.Popen(
                [
                    "setpriv",
                    f"--reuid={nobody}",
                    "--regid=nogroup",
                    f"--groups={','.join(map(str, extra))}",
                    sys.executable,
                    "-c",
                    "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]);"
                    " s.recv(1)",
                    str(path),
                ]
            )
            server.settimeout(GUARD_S)
            connection, _ = server.accept()
            with connection:
                peer = peer_of(connection)
                connection.sendall(b"x")
            client.wait(GUARD_S)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    assert peer.pid == client.pid
    assert (peer.uid, peer.user) == (nobody, "nobody")
    assert peer.gid == grp.getgrnam("nogroup").gr_gid
    assert sorted(peer.groups) == extra


# ---------------------------------------------------------------------- following


def follow(live: LiveTable, request: dict[str, Any]) -> tuple[socket.socket, Iterator[dict]]:
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(GUARD_S)
    sock.connect(str(live.socket_path))
    sock.sendall(json.dumps({"cmd": "events", "follow": True, **request}).encode() + b"\n")
    return sock, lines_of(sock)


def test_follow_sees_a_round_live_and_ends_when_the_client_closes(live: LiveTable) -> None:
    open_shoe(live)
    sock, lines = follow(live, {"types": ["card.dealt", "round"], "limit": 0})
    with sock:
        first = next(lines)
        assert first["ok"] is True
        assert first["result"]["following"] is True
        assert first["result"]["from_seq"] == live.call(live.journal.reads.last_seq)
        live.wait_for(lambda: live.service.followers == 1)
        live.deal(4)  # P 2♠ 7♥ / B 4♦ 9♣: a natural, the round ends
        seen = []
        for line in lines:
            seen.append(line["event"])
            if line["event"]["type"] == "round.result":
                break
        sock.shutdown(socket.SHUT_RDWR)  # the client goes away (makefile() keeps the fd open)
    types = [event["type"] for event in seen]
    assert types == ["round.started"] + ["card.dealt"] * 4 + ["round.result"]
    assert [e["data"].get("card") for e in seen[1:5]] == ["2S", "4D", "7H", "9C"]
    seqs = [event["seq"] for event in seen]
    assert seqs == sorted(seqs)
    assert seen[-1]["data"]["winner"] == "player"
    live.wait_for(lambda: live.service.followers == 0)


def test_follow_starts_with_the_last_events_and_misses_nothing(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(4)
    stored = [event.to_wire() for event in live.events()]
    sock, lines = follow(live, {"limit": 3})
    with sock:
        assert next(lines)["ok"] is True
        backlog = [next(lines)["event"] for _ in range(3)]
        assert backlog == stored[-3:]
        # Several commits while the client reads nothing: all of them come, in order, once.
        for _ in range(3):
            live.request({"cmd": "act", "action": "hold", "by": "s", "reason": "x"})
            live.request({"cmd": "act", "action": "resume", "by": "s", "reason": "x"})
        expected = [event.to_wire() for event in live.events(stored[-1]["seq"])]
        got = [next(lines)["event"] for _ in expected]
        assert got == expected


def test_closing_the_server_ends_followers(tmp_path: Path) -> None:
    live = LiveTable(tmp_path)
    try:
        sock, lines = follow(live, {"limit": 0})
        with sock:
            assert next(lines)["ok"] is True
            live.wait_for(lambda: live.service.followers == 1)
            live.run(live.server.close())
            assert list(lines) == []  # the stream ends: EOF
        assert not live.socket_path.exists()
        assert live.service.followers == 0
        live.run(live.server.start())  # and it can listen again
        assert live.request({"cmd": "hello"})["ok"]
    finally:
        live.close()


# ---------------------------------------------------------------------- squeeze (R15)


SECRET = ["2S", "4D", "7H", "9C"]  # the first round's cards, squeezed


def every_answer(live: LiveTable) -> str:
    requests: list[dict[str, Any]] = [
        {"cmd": "status"},
        {"cmd": "check"},
        {"cmd": "devices"},
        {"cmd": "rounds"},
        {"cmd": "round", "round": 1},
        {"cmd": "road"},
        {"cmd": "events", "limit": 1000},
        {"cmd": "outbox"},
    ]
    return "\n".join(json.dumps(live.request(request)) for request in requests)


def test_squeeze_no_answer_shows_a_card_before_its_reveal(tmp_path: Path) -> None:
    live = LiveTable(tmp_path, procedures={"squeeze": True})
    try:
        open_shoe(live)
        live.deal(4)
        assert live.view()["state"] == "reveal"
        hold = live.request({"cmd": "act", "action": "hold", "by": "s", "reason": "wait"})
        assert "2S" not in json.dumps(hold)
        before = every_answer(live)
        for card in SECRET:
            assert f'"{card}"' not in before
        live.request({"cmd": "act", "action": "resume", "by": "s", "reason": "go"})
        live.press_reveal()
        after = every_answer(live)
        for card in SECRET:  # the same answers show them once revealed: the check can fail
            assert f'"{card}"' in after
        revealed = [e for e in live.events() if e.type == EventType.CARD_REVEALED]
        assert [e.data["card"] for e in revealed] == SECRET
    finally:
        live.close()


def test_requests_answer_in_order_on_one_connection(live: LiveTable) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(GUARD_S)
        sock.connect(str(live.socket_path))
        sock.sendall(b'{"cmd": "hello"}\n{"cmd": "check"}\n{"cmd": "outbox"}\n')
        answers = lines_of(sock)
        assert [next(answers)["cmd"] for _ in range(3)] == ["hello", "check", "outbox"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"[" * 50_000, "nested too deep"),
        (b'{"cmd": "status", "x": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001, "nested"),
        (b'{"cmd": "status", "n": ' + b"7" * 5000 + b"}", "digits"),
        (b"\xff\xfe not text", "not a JSON line"),
    ],
    ids=["50000 brackets", "deep object", "5000-digit integer", "not UTF-8"],
)
def test_every_line_gets_one_answer_whatever_it_holds(
    live: LiveTable, line: bytes, reason: str
) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(GUARD_S)
        sock.connect(str(live.socket_path))
        sock.sendall(line + b'\n{"cmd": "hello"}\n')
        sock.shutdown(socket.SHUT_WR)
        answers = list(lines_of(sock))
    assert [answer["ok"] for answer in answers] == [False, True]  # and the connection lives on
    assert answers[0]["error"]["code"] == "bad_request"
    assert reason in answers[0]["error"]["text"]


def test_connections_beyond_the_caps_are_refused_politely_and_idle_ones_closed(
    tmp_path: Path,
) -> None:
    live = LiveTable(
        tmp_path, control={"max_connections": 4, "max_connections_per_user": 4, "idle_timeout_s": 1}
    )
    try:
        held = [socket.socket(socket.AF_UNIX) for _ in range(4 + 4 + 2)]
        for sock in held:
            sock.settimeout(GUARD_S)
            sock.connect(str(live.socket_path))
        # Root has four more than the cap (the pit boss's sudo shoectl always gets in).
        firsts = [next(lines_of(sock)) for sock in held]
        refused = [answer for answer in firsts if answer.get("error", {}).get("code") == "busy"]
        idle = [answer for answer in firsts if answer.get("error", {}).get("code") == "idle"]
        assert len(refused) == 2
        assert "serves 8 connections already" in refused[0]["error"]["text"]
        assert len(idle) == 8  # each held connection that asked nothing, after 1 s
        assert live.request({"cmd": "hello"})["ok"]  # freed
    finally:
        for sock in held:
            sock.close()
        live.close()


def test_the_same_command_sent_again_is_answered_with_its_first_outcome(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(2)
    act = {"cmd": "act", "action": "void", "by": "sup7", "reason": "misdeal", "key": "k-1"}
    first = live.request(act)
    assert first["ok"]
    assert "repeated" not in first["result"]
    again = live.request(act)  # e.g. after an unknown outcome and a restart
    assert again["ok"]
    assert again["result"]["repeated"] is True
    assert again["result"]["events"] == first["result"]["events"]
    voids = [e for e in live.events() if e.type == "supervisor.action"]
    assert len(voids) == 1
    other = live.request({**act, "key": "k-2"})  # another invocation: judged afresh
    assert other["error"]["code"] == "refused"
    assert "no round is in progress" in other["error"]["text"]


@pytest.mark.parametrize("key", [7, "x" * 101, "tab\there"])
def test_a_bad_key_is_refused_and_nothing_submitted(live: LiveTable, key: Any) -> None:
    live.wait_connected()  # the scanner's device.connected is in before we count
    before = live.call(live.journal.reads.last_seq)
    act = {"cmd": "act", "action": "hold", "by": "sup7", "reason": "x", "key": key}
    answer = live.request(act)
    assert answer["error"]["code"] == "bad_request"
    assert live.call(live.journal.reads.last_seq) == before
