"""The publisher against a real receiver on 127.0.0.1: order, batches, signing, resync, faults."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import structlog
from shoe_testkit.delivery import CONTROLLER_ID, SECRET, TABLE_ID, write_key
from shoe_testkit.one_server import SERVER, backlog, delivered, open_journal, server_sink
from shoe_testkit.pki import make_pki
from shoe_testkit.waiting import PATIENCE_S, eventually

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.push import (
    PushConfig,
    PushSink,
)
from shoe_controller.delivery.sink import Backoff, SinkFault, backoff_delay
from shoe_controller.kit.receiver import FaultPlan, Receiver, ReceiverStore, server_ssl_context
from shoe_controller.store.journal import Journal
from shoe_controller.vocab.events import iso_time

NOW = 1_800_000_000.0


def fixed_clock() -> float:
    return NOW


def record(journal: Journal, inputs: int, per_input: int = 3, shoe: int = 1) -> None:
    for _ in range(inputs):
        n = journal.reads.last_input() + 1
        events = [
            {"type": "card.dealt", "at": iso_time(NOW + n), "shoe": shoe, "round": n,
             "data": {"input": n, "index": i}}
            for i in range(per_input)
        ]  # fmt: skip
        journal.record({"type": "card", "n": n}, events, shoe)


@contextlib.asynccontextmanager
async def publishing(
    journal: Journal, config: PushConfig, **options: Any
) -> AsyncIterator[PushSink]:
    options.setdefault("clock", fixed_clock)
    publisher = server_sink(journal, config, **options)
    task = asyncio.create_task(publisher.run())
    try:
        yield publisher
    finally:
        publisher.stop()
        await asyncio.wait_for(task, PATIENCE_S)
    assert publisher.status().state == "stopped"


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.key_file = write_key(tmp_path)
        self.store = ReceiverStore(tmp_path / "receiver.db")
        key = pushapi.SigningKey.from_file(self.key_file)
        self.receiver = Receiver(self.store, key, TABLE_ID, clock=fixed_clock).start()
        self.journal = open_journal(tmp_path / "journal.db", CONTROLLER_ID)
        self.config = PushConfig(
            base_url=self.receiver.url,
            table_id=TABLE_ID,
            controller_id=CONTROLLER_ID,
            key_file=self.key_file,
            timeout_s=5.0,
            backoff=Backoff(0.01, 0.05),
        )

    def held(self) -> list[dict[str, Any]]:
        return self.store.events(TABLE_ID)

    def expected(self) -> list[dict[str, Any]]:
        return [
            e.to_wire() for e in self.journal.reads.events_after(0, self.journal.reads.last_seq())
        ]

    def close(self) -> None:
        self.receiver.close()
        self.store.close()
        self.journal.close()


@pytest.fixture
def setup(tmp_path: Path):
    made = Setup(tmp_path)
    yield made
    made.close()


def all_delivered(setup: Setup, publisher: PushSink) -> Callable[[], bool]:
    return lambda: publisher.status().delivered_through == setup.journal.reads.last_seq()


def test_everything_is_delivered_in_order_in_batches_of_at_most_200(setup: Setup) -> None:
    record(setup.journal, 150)  # 450 events

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config) as publisher:
            await eventually(all_delivered(setup, publisher), "450 events acknowledged")

    asyncio.run(scenario())
    stats = setup.receiver.stats()
    assert (stats["posts"], stats["max_batch"]) == (3, 200)  # 200 + 200 + 50
    assert stats["duplicates"] == 0
    assert setup.held() == setup.expected()
    assert delivered(setup.journal) == 450
    assert backlog(setup.journal) == 0


class Capture(BaseHTTPRequestHandler):
    """Records requests byte for byte and acknowledges whatever arrives."""

    seen: list[tuple[str, str, dict[str, str], bytes]]

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, dict(self.headers), b""))
        self.answer({"acked_through": 0})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append(("POST", self.path, dict(self.headers), body))
        self.answer({"acked_through": json.loads(body)["events"][-1]["seq"]})

    def answer(self, document: dict[str, Any]) -> None:
        payload = json.dumps(document).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_requests_are_built_and_signed_exactly_as_the_page_says(setup: Setup) -> None:
    Capture.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}).start()
    record(setup.journal, 1, per_input=2)
    config = replace(setup.config, base_url=f"http://127.0.0.1:{server.server_address[1]}/")

    async def scenario() -> None:
        async with publishing(setup.journal, config, clock=lambda: NOW + 0.9) as publisher:
            await eventually(all_delivered(setup, publisher), "2 events acknowledged")

    try:
        asyncio.run(scenario())
    finally:
        server.shutdown()
        server.server_close()
    (get, post) = Capture.seen
    assert get[:2] == ("GET", f"/v1/tables/{TABLE_ID}/ack")
    method, path, headers, body = post
    assert (method, path) == ("POST", f"/v1/tables/{TABLE_ID}/events")
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Shoe-Controller"] == CONTROLLER_ID
    assert headers["X-Shoe-Timestamp"] == str(int(NOW))  # whole unix seconds
    mac = hmac.new(SECRET.encode("utf-8"), f"{int(NOW)}.".encode() + body, hashlib.sha256)
    assert headers["X-Shoe-Signature"] == "v1=" + mac.hexdigest()
    document = json.loads(body)
    assert list(document) == ["controller_id", "table_id", "events"]
    assert (document["controller_id"], document["table_id"]) == (CONTROLLER_ID, TABLE_ID)
    assert [list(event) for event in document["events"]] == [list(pushapi.EVENT_FIELDS)] * 2
    assert document["events"] == setup.expected()
    assert SECRET not in body.decode()


def test_start_up_resync_asks_the_server_before_sending(setup: Setup) -> None:
    record(setup.journal, 4)

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config) as publisher:
            await eventually(all_delivered(setup, publisher), "12 events acknowledged")
        # the journal's record of the ack is lost (as after a crash right before storing it)
        setup.journal.sinks.mark_delivered(SERVER, 0)
        record(setup.journal, 2)
        async with publishing(setup.journal, setup.config) as publisher:
            await eventually(all_delivered(setup, publisher), "18 events acknowledged")

    asyncio.run(scenario())
    stats = setup.receiver.stats()
    assert stats["duplicates"] == 0  # 1..12 were not sent again
    assert stats["posts"] == 2
    assert setup.held() == setup.expected()


def test_what_the_server_confirmed_reaches_the_file_without_a_commit(
    setup: Setup, tmp_path: Path
) -> None:
    """A confirmation is noted in memory and rides on the next commit; with no
    commit coming (the table quiet), the outbox stores it by itself shortly after."""
    record(setup.journal, 2)
    reader = Journal.open(tmp_path / "journal.db", None, read_only=True)

    def on_disk() -> int:
        return reader.sinks.marks()[SERVER].delivered_through

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config) as publisher:
            await eventually(all_delivered(setup, publisher), "6 events acknowledged")
            await eventually(lambda: on_disk() == 6, "the mark in the file")

    try:
        asyncio.run(scenario())
    finally:
        reader.close()


def test_a_409_makes_the_publisher_resend_from_the_servers_point(setup: Setup) -> None:
    record(setup.journal, 3)

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config) as publisher:
            await eventually(all_delivered(setup, publisher), "9 events acknowledged")
            setup.store.rewind(TABLE_ID, 4)  # the server forgot 5..9
            record(setup.journal, 1)
            publisher.notify()
            await eventually(all_delivered(setup, publisher), "12 events acknowledged")
            assert publisher.status().fault is None  # a 409 is not a fault

    asyncio.run(scenario())
    assert setup.receiver.stats()["gaps"] == 1
    assert setup.held() == setup.expected()


def test_a_4xx_raises_a_fault_that_clears_on_success(setup: Setup) -> None:
    record(setup.journal, 2)
    setup.receiver.set_faults(FaultPlan(mode="status", status=401, count=3))
    seen: list[SinkFault | None] = []

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config, on_fault=seen.append) as publisher:
            await eventually(all_delivered(setup, publisher), "6 events acknowledged")
            status = publisher.status()
            assert status.fault is None
            assert status.consecutive_failures == 0
            assert status.last_error == "HTTP 401"

    asyncio.run(scenario())
    assert [fault.code if fault else None for fault in seen] == ["http_401", None]
    assert seen[0] is not None
    assert "clock" in seen[0].text  # the technician's two suspects for a 401: key and clock
    assert setup.held() == setup.expected()


def test_a_lasting_refusal_is_visible_in_the_status(setup: Setup) -> None:
    record(setup.journal, 2)
    setup.receiver.set_faults(FaultPlan(mode="status", status=403, target="events"))

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config) as publisher:
            status = await eventually(
                lambda: (s := publisher.status()).consecutive_failures >= 3 and s, "3 failures"
            )
            assert status.fault is not None
            assert status.fault.code == "http_403"
            assert status.backlog == 6  # kept, never dropped
            assert status.delivered_through == 0
            assert json.loads(json.dumps(status.to_json()))["fault"]["code"] == "http_403"

    asyncio.run(scenario())
    assert setup.held() == []
    assert backlog(setup.journal) == 6


def test_no_polling_while_idle_and_notify_wakes_it(setup: Setup) -> None:
    record(setup.journal, 1)

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config) as publisher:
            await eventually(all_delivered(setup, publisher), "3 events acknowledged")
            requests = setup.receiver.stats()["requests"]
            record(setup.journal, 1)  # committed, but nobody says so
            await asyncio.sleep(0.3)
            assert setup.receiver.stats()["requests"] == requests  # no timer looked
            assert publisher.status().state == "idle"
            threading.Thread(target=publisher.notify).start()  # from another thread
            await eventually(all_delivered(setup, publisher), "6 events acknowledged")

    asyncio.run(scenario())
    assert setup.held() == setup.expected()


def test_a_slow_server_is_retried_and_resends_are_stored_once(setup: Setup) -> None:
    record(setup.journal, 2)
    setup.receiver.set_faults(FaultPlan(mode="slow", delay_s=1.0, count=1, target="events"))
    config = replace(setup.config, timeout_s=0.2)

    async def scenario() -> None:
        async with publishing(setup.journal, config) as publisher:
            await eventually(all_delivered(setup, publisher), "6 events acknowledged")
            assert publisher.status().last_error == "timeout"

    asyncio.run(scenario())
    assert setup.receiver.stats()["duplicates"] == 6
    assert setup.held() == setup.expected()


def test_a_server_ahead_of_the_journal_is_a_fault_and_gets_nothing(setup: Setup) -> None:
    record(setup.journal, 1)  # seq 1..3
    foreign = [
        {"seq": n, "id": f"x:{n}", "type": "t", "at": iso_time(NOW), "shoe": None,
         "round": None, "data": {}}
        for n in range(1, 6)
    ]  # fmt: skip
    setup.store.store(TABLE_ID, "x", foreign)

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config) as publisher:
            fault = await eventually(lambda: publisher.status().fault, "a fault")
            assert fault.code == "server_ahead"

    asyncio.run(scenario())
    assert setup.receiver.stats()["posts"] == 0
    assert delivered(setup.journal) == 0


def test_a_server_needing_pruned_events_is_a_fault(setup: Setup) -> None:
    record(setup.journal, 2, shoe=1)
    setup.journal.record(
        {"type": "end"}, [{"type": "shoe.ended", "at": iso_time(NOW), "shoe": 1, "round": None,
                           "data": {}}], 1
    )  # fmt: skip
    record(setup.journal, 1, shoe=2)

    async def scenario() -> None:
        async with publishing(setup.journal, setup.config) as publisher:
            await eventually(all_delivered(setup, publisher), "10 events acknowledged")
        assert setup.journal.prune(max_age_s=0).shoes == (1,)
        setup.store.rewind(TABLE_ID, 0)  # the server lost everything
        async with publishing(setup.journal, setup.config) as publisher:
            fault = await eventually(lambda: publisher.status().fault, "a fault")
            assert fault.code == "events_pruned"

    asyncio.run(scenario())
    assert setup.held() == []  # nothing sent out of order


def test_the_key_never_appears_in_logs_reprs_or_status(setup: Setup, tmp_path: Path) -> None:
    record(setup.journal, 1)
    wrong = tmp_path / "wrong.key"
    wrong.write_text("another secret")
    config = replace(setup.config, key_file=wrong)  # the server will answer 401

    async def scenario() -> list[str]:
        with structlog.testing.capture_logs() as logs:
            async with publishing(setup.journal, config) as publisher:
                status = await eventually(
                    lambda: (s := publisher.status()).consecutive_failures >= 2 and s, "401s"
                )
                shown = [repr(publisher), repr(status), json.dumps(status.to_json())]
        return [*shown, repr(config), *(repr(entry) for entry in logs)]

    texts = asyncio.run(scenario())
    assert any("401" in text for text in texts)  # the failure itself is reported ...
    assert not any("another secret" in text for text in texts)  # ... the key never


def test_backoff_doubles_from_half_a_second_to_thirty_with_jitter() -> None:
    no_jitter = [backoff_delay(n, 0.0, 0.5, 30.0) for n in range(1, 10)]
    assert no_jitter == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert backoff_delay(1, 0.999, 0.5, 30.0) == 0.5  # never below the minimum
    assert 15.0 < backoff_delay(50, 0.999, 0.5, 30.0) < 15.1  # jitter at the cap too
    assert backoff_delay(10_000, 0.5, 0.5, 30.0) == 22.5


def test_backoff_uses_the_injected_random_and_clock(setup: Setup) -> None:
    record(setup.journal, 1)
    setup.receiver.set_faults(FaultPlan(mode="status", status=500))
    config = replace(setup.config, backoff=Backoff(0.02, 10.0))

    async def scenario() -> None:
        async with publishing(setup.journal, config, rand=lambda: 0.5) as publisher:
            status = await eventually(
                lambda: (
                    (s := publisher.status()).next_attempt_at is not None
                    and s.consecutive_failures >= 3
                    and s
                ),
                "a third backoff",
            )
            expected = backoff_delay(status.consecutive_failures, 0.5, 0.02, 10.0)
            assert status.next_attempt_at == pytest.approx(NOW + expected)
            assert status.state == "backoff"

    asyncio.run(scenario())


def test_configuration_is_checked() -> None:
    base = {"table_id": "07", "controller_id": "c", "key_file": Path("k")}
    with pytest.raises(ValueError, match="http"):
        PushConfig(base_url="ftp://server", **base)
    with pytest.raises(ValueError, match="batch_size"):
        PushConfig(base_url="http://server", batch_size=201, **base)
    with pytest.raises(ValueError, match="backoff"):
        PushConfig(base_url="http://server", backoff=Backoff(5, 1), **base)


def test_mutual_tls(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    key_file = write_key(tmp_path)
    store = ReceiverStore(tmp_path / "receiver.db")
    context = server_ssl_context(pki["server.pem"], pki["server.key"], client_ca=pki["ca.pem"])
    receiver = Receiver(
        store, pushapi.SigningKey.from_file(key_file), TABLE_ID, clock=fixed_clock,
        ssl_context=context,
    ).start()  # fmt: skip
    journal = open_journal(tmp_path / "journal.db", CONTROLLER_ID)
    record(journal, 2)
    assert receiver.url.startswith("https://")
    config = PushConfig(
        base_url=receiver.url, table_id=TABLE_ID, controller_id=CONTROLLER_ID,
        key_file=key_file, ca_file=pki["ca.pem"], backoff=Backoff(0.01, 0.05),
    )  # fmt: skip

    async def scenario() -> None:
        # without a client certificate the server refuses the handshake: nothing delivered
        async with publishing(journal, config) as publisher:
            status = await eventually(
                lambda: (s := publisher.status()).consecutive_failures >= 2 and s, "failures"
            )
            assert status.delivered_through is None
        with_cert = replace(config, client_cert=pki["client.pem"], client_key=pki["client.key"])
        async with publishing(journal, with_cert) as publisher:
            await eventually(lambda: publisher.status().delivered_through == 6, "6 events acked")
        # a server certificate from a CA we were not told to trust is refused
        untrusted = replace(with_cert, ca_file=None)
        record(journal, 1)
        async with publishing(journal, untrusted) as publisher:
            status = await eventually(
                lambda: (s := publisher.status()).consecutive_failures >= 2 and s, "failures"
            )
            assert "CERTIFICATE_VERIFY_FAILED" in (status.last_error or "")

    try:
        asyncio.run(scenario())
        assert [e["seq"] for e in store.events(TABLE_ID)] == [1, 2, 3, 4, 5, 6]
    finally:
        receiver.close()
        store.close()
        journal.close()
