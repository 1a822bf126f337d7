"""The reference receiver answers exactly as docs/spec-push-api.md says, over real HTTP on
127.0.0.1."""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from shoe_testkit.delivery import CONTROLLER_ID, REPO, SECRET, TABLE_ID, LineProcess, write_key

from shoe_controller.delivery import pushapi
from shoe_controller.kit.receiver import FaultPlan, Receiver, ReceiverStore

NOW = 1_800_000_000.0
EVENTS_PATH = f"/v1/tables/{TABLE_ID}/events"


def wire_event(seq: int, **data: Any) -> dict[str, Any]:
    return {"seq": seq, "id": f"{CONTROLLER_ID}:{seq}", "type": "card.dealt",
            "at": "2026-11-30T10:00:00.123456Z", "shoe": 3, "round": 12,
            "data": {"position": "P1", "card": "QH", **data}}  # fmt: skip


def signed(body: bytes, *, timestamp: float = NOW, secret: str = SECRET) -> dict[str, str]:
    """Headers computed here from the page, not with the code under test."""
    stamp = str(int(timestamp))
    mac = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/json",
        "X-Shoe-Controller": CONTROLLER_ID,
        "X-Shoe-Timestamp": stamp,
        "X-Shoe-Signature": f"v1={mac}",
    }


def body_of(events: list[dict[str, Any]], **overrides: Any) -> bytes:
    document = {"controller_id": CONTROLLER_ID, "table_id": TABLE_ID, "events": events}
    return json.dumps({**document, **overrides}).encode()


class Server:
    """A Receiver on a thread plus a client that signs like the page says."""

    def __init__(self, tmp_path: Path, **options: Any) -> None:
        self.store = ReceiverStore(tmp_path / "receiver.db")
        key = pushapi.SigningKey.from_file(write_key(tmp_path))
        self.receiver = Receiver(
            self.store, key, TABLE_ID, clock=lambda: NOW, control=True, **options
        ).start()
        self.client = httpx.Client(base_url=self.receiver.url, trust_env=False, timeout=10)

    def post(self, events: list[dict[str, Any]], **header_options: Any) -> httpx.Response:
        body = body_of(events)
        return self.client.post(EVENTS_PATH, content=body, headers=signed(body, **header_options))

    def close(self) -> None:
        self.client.close()
        self.receiver.close()
        self.store.close()


@pytest.fixture
def server(tmp_path: Path):
    running = Server(tmp_path)
    yield running
    running.close()


def test_ack_is_zero_before_any_event(server: Server) -> None:
    response = server.client.get(f"/v1/tables/{TABLE_ID}/ack")
    assert response.status_code == 200
    assert response.json() == {"acked_through": 0}


def test_a_batch_is_stored_and_acknowledged(server: Server) -> None:
    response = server.post([wire_event(1), wire_event(2), wire_event(3)])
    assert (response.status_code, response.json()) == (200, {"acked_through": 3})
    assert server.store.events(TABLE_ID) == [wire_event(1), wire_event(2), wire_event(3)]
    assert server.client.get(f"/v1/tables/{TABLE_ID}/ack").json() == {"acked_through": 3}


def test_each_seq_is_stored_once(server: Server) -> None:
    server.post([wire_event(1), wire_event(2)])
    again = server.post([wire_event(1), wire_event(2)])
    overlapping = server.post([wire_event(2), wire_event(3), wire_event(4)])
    assert again.json() == {"acked_through": 2}
    assert overlapping.json() == {"acked_through": 4}
    assert [e["seq"] for e in server.store.events(TABLE_ID)] == [1, 2, 3, 4]
    stats = server.receiver.stats()
    assert (stats["stored"], stats["duplicates"], stats["conflicts"]) == (4, 3, 0)


def test_a_resent_seq_with_other_content_is_counted_as_a_conflict(server: Server) -> None:
    server.post([wire_event(1)])
    server.post([wire_event(1, card="KS")])
    assert server.receiver.stats()["conflicts"] == 1
    assert server.store.events(TABLE_ID) == [wire_event(1)]  # the first one stays


def test_a_batch_after_a_gap_is_refused_with_409(server: Server) -> None:
    server.post([wire_event(1), wire_event(2)])
    response = server.post([wire_event(4), wire_event(5)])
    assert (response.status_code, response.json()) == (409, {"acked_through": 2})
    assert len(server.store.events(TABLE_ID)) == 2


@pytest.mark.parametrize(
    ("header_options", "why"),
    [
        ({"secret": "not the key"}, "wrong key"),
        ({"timestamp": NOW - 301}, "timestamp 301 s old"),
        ({"timestamp": NOW + 301}, "timestamp 301 s ahead"),
    ],
)
def test_bad_signature_or_stale_timestamp_is_401(
    server: Server, header_options: dict[str, Any], why: str
) -> None:
    response = server.post([wire_event(1)], **header_options)
    assert response.status_code == 401, why
    assert server.store.events(TABLE_ID) == []
    assert server.receiver.stats()["unauthorized"] == 1


def test_timestamps_within_300_s_are_accepted(server: Server) -> None:
    assert server.post([wire_event(1)], timestamp=NOW - 300).status_code == 200
    assert server.post([wire_event(2)], timestamp=NOW + 300).status_code == 200


def test_signature_covers_the_raw_body(server: Server) -> None:
    body = body_of([wire_event(1)])
    headers = signed(body)
    tampered = body.replace(b'"QH"', b'"KH"')
    response = server.client.post(EVENTS_PATH, content=tampered, headers=headers)
    assert response.status_code == 401
    headers.pop("X-Shoe-Signature")
    assert server.client.post(EVENTS_PATH, content=body, headers=headers).status_code == 401


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{not json", 400),
        (body_of([wire_event(1), wire_event(3)]), 400),  # seqs not consecutive
        (body_of([wire_event(2), wire_event(1)]), 400),  # not in order
        (body_of([{**wire_event(1), "extra": 1}]), 400),
        (body_of([wire_event(1)], table_id="08"), 400),
        (body_of([wire_event(1)], controller_id="someone-else"), 400),
        (body_of([wire_event(n) for n in range(1, 202)]), 413),  # more than 200
    ],
    ids=["not-json", "gap-inside", "order", "extra-field", "table", "controller", "201"],
)
def test_malformed_batches_are_refused_and_nothing_stored(
    server: Server, body: bytes, status: int
) -> None:
    response = server.client.post(EVENTS_PATH, content=body, headers=signed(body))
    assert response.status_code == status
    assert "error" in response.json()
    assert server.store.events(TABLE_ID) == []


def test_200_events_is_the_largest_batch_accepted(server: Server) -> None:
    response = server.post([wire_event(n) for n in range(1, 201)])
    assert response.json() == {"acked_through": 200}


def test_other_tables_and_paths_are_404(server: Server) -> None:
    assert server.client.get("/v1/tables/08/ack").status_code == 404
    assert server.client.get("/v2/tables/07/ack").status_code == 404
    assert server.client.get(EVENTS_PATH).status_code == 405


def test_events_survive_a_restart(tmp_path: Path) -> None:
    first = Server(tmp_path)
    first.post([wire_event(1), wire_event(2)])
    first.close()
    second = Server(tmp_path)
    try:
        assert second.client.get(f"/v1/tables/{TABLE_ID}/ack").json() == {"acked_through": 2}
        assert second.post([wire_event(2), wire_event(3)]).json() == {"acked_through": 3}
    finally:
        second.close()


def test_injected_status_faults_count_down(server: Server) -> None:
    server.receiver.set_faults(FaultPlan(mode="status", status=503, count=2))
    answers = [server.post([wire_event(1)]).status_code for _ in range(3)]
    assert answers == [503, 503, 200]


def test_garbage_fault_stores_but_answers_junk(server: Server) -> None:
    server.client.post("/control/faults", json={"mode": "garbage", "count": 1})
    response = server.post([wire_event(1)])
    assert response.status_code == 200
    with pytest.raises(ValueError, match="not JSON"):
        pushapi.parse_acked_through(response.content)
    assert len(server.store.events(TABLE_ID)) == 1


def test_reset_fault_drops_the_connection(server: Server) -> None:
    server.receiver.set_faults(FaultPlan(mode="reset", count=1, target="events"))
    with pytest.raises(httpx.TransportError):
        server.post([wire_event(1)])
    assert server.client.get(f"/v1/tables/{TABLE_ID}/ack").json() == {"acked_through": 0}


def test_rewind_makes_the_server_forget(server: Server) -> None:
    server.post([wire_event(n) for n in range(1, 6)])
    assert server.client.post("/control/rewind", json={"acked_through": 2}).json() == {
        "acked_through": 2
    }
    assert server.post([wire_event(5)]).status_code == 409


def test_bad_fault_plans_are_refused(server: Server) -> None:
    response = server.client.post("/control/faults", json={"mode": "explode"})
    assert response.status_code == 400
    with pytest.raises(ValueError, match="target"):
        FaultPlan(target="everything")


def test_control_endpoints_are_off_by_default(tmp_path: Path) -> None:
    store = ReceiverStore(tmp_path / "r.db")
    key = pushapi.SigningKey.from_text(SECRET)
    with Receiver(store, key, TABLE_ID).start() as receiver:
        response = httpx.get(f"{receiver.url}/control/stats", trust_env=False)
        assert response.status_code == 404
    store.close()


def test_signing_key_is_stripped_and_never_shown(tmp_path: Path) -> None:
    key = pushapi.SigningKey.from_file(write_key(tmp_path))
    body = b'{"events":[]}'
    assert (
        key.sign("17", body)
        == "v1=" + hmac.new(SECRET.encode("utf-8"), b"17." + body, hashlib.sha256).hexdigest()
    )
    assert SECRET not in repr(key)
    assert SECRET not in str(key)
    empty = tmp_path / "empty.key"
    empty.write_text("  \n")
    with pytest.raises(pushapi.KeyFileError):
        pushapi.SigningKey.from_file(empty)


def test_receiver_runs_as_a_process(tmp_path: Path) -> None:
    key_file = write_key(tmp_path)
    argv = [sys.executable, "-m", "shoe_controller.kit.receiver", "--port", "0",
            "--db", str(tmp_path / "r.db"), "--key-file", str(key_file),
            "--table-id", TABLE_ID]  # fmt: skip
    process = LineProcess(argv)
    try:
        port = int(process.wait_line(lambda line: True, "the port on the first line"))
        url = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{url}/v1/tables/{TABLE_ID}/ack", trust_env=False).json() == {
            "acked_through": 0
        }
        body = body_of([wire_event(1)])
        headers = signed(body, timestamp=time.time())  # the process runs on the real clock
        posted = httpx.post(f"{url}{EVENTS_PATH}", content=body, headers=headers, trust_env=False)
        assert posted.json() == {"acked_through": 1}
    finally:
        process.proc.send_signal(signal.SIGTERM)
    assert process.wait() == 0


def test_receiver_command_rejects_bad_options(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shoe_controller.kit.receiver", "--db", str(tmp_path / "r.db"),
         "--key-file", str(write_key(tmp_path)), "--table-id", "07", "--fail-mode", "boom"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "fail-mode" in done.stderr


def resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow a local `$ref` ("#/components/...") once."""
    if "$ref" not in node:
        return node
    for part in node["$ref"].removeprefix("#/").split("/"):
        document = document[part]
    return document


def test_openapi_document_describes_the_push_api() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML reads docs/openapi.yaml")
    document = yaml.safe_load((REPO / "docs" / "openapi.yaml").read_text(encoding="utf-8"))
    assert set(document["paths"]) == {
        "/v1/tables/{table_id}/events",
        "/v1/tables/{table_id}/ack",
    }
    post = document["paths"]["/v1/tables/{table_id}/events"]["post"]
    assert {"200", "401", "409"} <= set(post["responses"])
    parameters = [resolve(document, p) for p in post["parameters"]]
    headers = {p["name"] for p in parameters if p["in"] == "header"}
    assert headers == {"X-Shoe-Controller", "X-Shoe-Timestamp", "X-Shoe-Signature"}
    event = document["components"]["schemas"]["Event"]
    assert set(event["required"]) == set(pushapi.EVENT_FIELDS)
    batch = document["components"]["schemas"]["Batch"]["properties"]["events"]
    assert batch["maxItems"] == pushapi.MAX_BATCH
    validator = pytest.importorskip(
        "openapi_spec_validator", reason="openapi-spec-validator checks the document"
    )
    validator.validate(document)


def test_the_checkpoints_it_holds_are_given_out_as_a_cp_file(server: Server) -> None:
    """docs/delivery.md "Checkpoints at the table server": the reference server keeps the
    `journal.checkpoint` events like any other and gives them back, as received, as JSON
    lines: the file `shoe-controller verify --checkpoints` reads."""
    checkpoint = {**wire_event(2), "type": "journal.checkpoint", "shoe": None, "round": None,
                  "data": {"version": 1, "controller_id": CONTROLLER_ID, "records": 1,
                           "input_no": 1, "seq": 0, "head": "ab" * 32,
                           "time": "2026-11-30T10:00:00.123456Z", "key": "cd" * 32,
                           "signature": "ef" * 64}}  # fmt: skip
    later = {**checkpoint, "seq": 4, "id": f"{CONTROLLER_ID}:4"}
    assert server.post([wire_event(1), checkpoint, wire_event(3), later]).status_code == 200
    server.receiver.set_faults(FaultPlan(mode="status", status=503, count=5))  # all requests
    response = server.client.get(f"/v1/tables/{TABLE_ID}/checkpoints")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-ndjson"
    assert [json.loads(line) for line in response.text.splitlines()] == [checkpoint, later]
    assert server.client.post(f"/v1/tables/{TABLE_ID}/checkpoints").status_code == 405
    assert server.client.get("/v1/tables/08/checkpoints").status_code == 404
    plan = server.store._conn.execute(  # the plan of the store's query, in its own file
        "EXPLAIN QUERY PLAN SELECT seq FROM events WHERE table_id = ? AND type = ? ORDER BY seq",
        (TABLE_ID, "journal.checkpoint"),
    ).fetchall()
    assert "events_by_type" in " ".join(str(row) for row in plan)
