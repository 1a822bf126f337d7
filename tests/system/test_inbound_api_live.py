"""The daemon's inbound API over real HTTP (docs/inbound-api.md): a real daemon
(simulated shoe on a pty, reference table server, real processes) told by httpx, a client
that is not the project's own, that bets are open and closed. Signed messages are taken,
journaled and change the round; unsigned, stale, replayed, badly signed ones and another
table's are refused, logged, and change nothing; a restart (SIGKILL) between bets closed and
the first card deals the round as closed.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from shoe_testkit.net import free_port
from shoe_testkit.rig import TABLE_ID, RigOptions, TableRig

from shoe_controller.delivery.pushapi import SigningKey
from shoe_controller.store.records import StoredEvent


class Server:
    """The table server's side of the inbound API: signed POSTs with httpx."""

    def __init__(self, rig: TableRig, port: int) -> None:
        self.rig = rig
        self.base = f"http://127.0.0.1:{port}"
        self.key = SigningKey.from_file(rig.key_file)

    def post(
        self,
        kind: str,
        document: dict[str, Any],
        *,
        stamp: float | None = None,
        table: str = TABLE_ID,
        signed: bool = True,
        key: SigningKey | None = None,
    ) -> httpx.Response:
        body = json.dumps({"table_id": table, **document}).encode()
        headers = {"Content-Type": "application/json", "X-Shoe-Server": "studio-1"}
        if signed:
            timestamp = str(int(time.time() if stamp is None else stamp))
            headers["X-Shoe-Timestamp"] = timestamp
            headers["X-Shoe-Signature"] = (key or self.key).sign(timestamp, body)
        url = f"{self.base}/v1/tables/{table}/{kind}"
        return httpx.post(url, content=body, headers=headers, timeout=10.0)

    def bets(self, state: str, number: int, **more: Any) -> httpx.Response:
        nonce = more.pop("nonce", None) or secrets.token_hex(8)
        document = {"shoe": 1, "round": number, "state": state, "nonce": nonce}
        return self.post("betting", {**document, **more.pop("fields", {})}, **more)


def _start(directory: Path, port: int) -> TableRig:
    rig = TableRig(directory, RigOptions(table={"betting": "server"}))
    rig.directory.mkdir(parents=True, exist_ok=True)
    rig.key_file.write_text(secrets.token_hex(32) + "\n")
    os.chmod(rig.key_file, 0o600)
    try:
        rig.start_receiver()
        rig.start_simulators()
        rig.write_config(api={"listen": f"127.0.0.1:{port}", "key_file": str(rig.key_file)})
        rig.start_daemon()
    except BaseException:
        rig.close()
        raise
    return rig


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TableRig, Server]]:
    port = free_port()
    rig = _start(tmp_path_factory.mktemp("inbound"), port)
    try:
        server = Server(rig, port)
        rig.wait_until(lambda: _listening(server), "the inbound API to listen")
        # The burn first (the shoe loads itself): then the table waits for bets.
        while not any(e.type == "shoe.burned" for e in rig.records.journal_events()):
            rig.dealer.deal(1)
        yield rig, server
    finally:
        rig.close()


def _listening(server: Server) -> bool:
    try:
        httpx.get(server.base, timeout=2.0)
    except httpx.TransportError:
        return False
    return True


def _events(rig: TableRig, after: int) -> list[StoredEvent]:
    return rig.records.journal_events(after)


def _log(rig: TableRig) -> str:
    return (rig.directory / "daemon.log").read_text(encoding="utf-8", errors="replace")


def test_signed_bets_open_and_close_the_round_and_name_it(table: tuple[TableRig, Server]) -> None:
    rig, server = table
    before = rig.records.last_seq()
    opened = server.bets("open", 1, fields={"server_round": "G-0001"})
    assert opened.status_code == 200, opened.text
    assert opened.json()["events"] == ["bets.opened"]
    closed = server.bets("closed", 1)
    assert closed.status_code == 200, closed.text
    (event,) = [e for e in _events(rig, before) if e.type == "bets.closed"]
    assert event.data == {"round": 1, "server_round": "G-0001", "by": "server",
                          "source": "studio-1"}  # fmt: skip
    events = rig.dealer.deal(1)
    (started,) = [e for e in events if e.type == "round.started"]
    assert started.data["bets_closed_at"] == event.at
    assert started.data["server_round"] == "G-0001"
    assert not [e for e in events if e.data.get("code") == "early_card"]
    (stored,) = [item for item in rig.records.journal_inputs() if item.get("type") == "betting"
                 and item["state"] == "closed"]  # fmt: skip
    assert stored["nonce"]
    assert stored["source"] == "studio-1"


@pytest.mark.parametrize(
    ("how", "status", "code"),
    [
        ("unsigned", 401, "unsigned"),
        ("stale", 401, "stale_timestamp"),
        ("future", 401, "stale_timestamp"),
        ("bad signature", 401, "bad_signature"),
        ("wrong table", 404, "wrong_table"),
        ("replayed", 401, "replayed"),
    ],
)
def test_a_message_not_rightly_signed_is_refused_logged_and_changes_nothing(
    table: tuple[TableRig, Server], how: str, status: int, code: str
) -> None:
    rig, server = table
    nonce = secrets.token_hex(8)
    if how == "replayed":
        first = server.bets("open", 2, nonce=nonce)
        assert first.status_code == 200, first.text
    before, inputs = rig.records.last_seq(), len(rig.records.journal_inputs())
    options: dict[str, Any] = {
        "unsigned": {"signed": False},
        "stale": {"stamp": time.time() - 400},
        "future": {"stamp": time.time() + 400},
        "bad signature": {"key": SigningKey(b"not the table's key")},
        "wrong table": {"table": "99"},
        "replayed": {},
    }[how]
    answer = server.bets("closed" if how != "replayed" else "open", 2, nonce=nonce, **options)
    assert answer.status_code == status, answer.text
    assert answer.json()["error"] == code
    assert rig.records.last_seq() == before  # no event
    assert len(rig.records.journal_inputs()) == inputs  # no input
    rig.wait_until(lambda: f'"code": "{code}"' in _log(rig), "the refusal in the log")
    assert "inbound request refused" in _log(rig)


def test_a_message_for_the_wrong_round_is_journaled_as_refused(
    table: tuple[TableRig, Server],
) -> None:
    rig, server = table
    rig.dealer.settle()
    number = 1 + max(e.round or 0 for e in rig.records.journal_events())
    before = rig.records.last_seq()
    answer = server.bets("closed", number + 5)
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"] == "wrong_round"
    (alert,) = _events(rig, before)
    assert alert.data["code"] == "wrong_round"


def test_a_restart_between_bets_closed_and_the_first_card(
    table: tuple[TableRig, Server],
) -> None:
    rig, server = table
    rig.dealer.settle()
    while True:  # finish the round in progress
        events = rig.records.journal_events()
        last = [e for e in events if e.type in ("round.started", "round.result", "round.voided")]
        if not last or last[-1].type != "round.started":
            break
        rig.dealer.deal(1)
    number = 1 + max(e.round or 0 for e in rig.records.journal_events())
    nonce = secrets.token_hex(8)
    assert server.bets("closed", number, nonce=nonce).status_code == 200
    rig.kill_daemon()
    before = rig.records.last_seq()
    rig.start_daemon()
    rig.wait_until(lambda: _listening(server), "the inbound API to listen again")
    # The API forgot its nonces; the table did not: the same message is refused again.
    again = server.bets("closed", number, nonce=nonce)
    assert again.status_code == 409, again.text
    assert again.json()["error"] == "repeated_message"
    events = [e for e in rig.dealer.deal(1) if e.seq > before]
    (started,) = [e for e in events if e.type == "round.started"]
    assert started.round == number
    assert started.data["bets_closed_at"] is not None
    assert not [e for e in events if e.data.get("code") == "early_card"]


def test_the_server_signs_a_dealer_in(table: tuple[TableRig, Server]) -> None:
    rig, server = table
    before = rig.records.last_seq()
    nonce = secrets.token_hex(8)
    answer = server.post("dealer", {"dealer": "D-042", "signed": "in", "nonce": nonce})
    assert answer.status_code == 200, answer.text
    (action,) = _events(rig, before)
    assert action.type == "supervisor.action"
    assert action.data["details"] == {"dealer": "D-042", "signed": "in"}
    assert action.data["by"] == "studio-1"
    bad = server.post("dealer", {"signed": "in", "nonce": secrets.token_hex(8)})
    assert bad.status_code == 400
