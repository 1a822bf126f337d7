"""The broker sink against a real RabbitMQ node: every event arrives, once after the consumer's
de-duplication, in order, whatever the broker does meanwhile.

The consumer is docs/examples/amqp_consumer.py, the one docs/amqp.md explains, run as a
process: it declares its durable quorum queue and bindings first, and reads the queue once the
sink is done, so what it prints is what the broker kept, after a SIGKILL and a restart too.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.broker import Broker
from shoe_testkit.broker_session import unique_name
from shoe_testkit.broker_table import (
    BROKER,
    Table,
    amqp_sink,
    delivered_all,
    running,
    stopped,
)
from shoe_testkit.delivery import CONTROLLER_ID, TABLE_ID, write_key
from shoe_testkit.waiting import PATIENCE_S, eventually

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.amqp import HEADER_SEQ, AmqpConfig, AmqpSink
from shoe_controller.delivery.routing import EventFilter
from shoe_controller.delivery.sink import Backoff, Sink
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.kit.receiver import FaultPlan, Receiver, ReceiverStore
from shoe_controller.service.config import from_mapping
from shoe_controller.service.sink_kinds import build, routes

pytestmark = pytest.mark.slow

CONSUMER = Path(__file__).resolve().parents[2] / "docs" / "examples" / "amqp_consumer.py"


def consumer(broker: Broker, exchange: str, queue: str, *args: str) -> list[dict[str, Any]]:
    """docs/examples/amqp_consumer.py run to its end: what it printed, one dict a line."""
    done = subprocess.run(
        [sys.executable, str(CONSUMER), "--url", broker.url, "--exchange", exchange,
         "--queue", queue, *args],
        capture_output=True, text=True, timeout=PATIENCE_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    return write_key(tmp_path)


def test_a_whole_shoe_reaches_the_consumers_queue_complete_and_in_order(
    tmp_path: Path, broker: Broker, key_file: Path
) -> None:
    exchange, queue = unique_name("shoe.events"), unique_name("studio.feed")
    consumer(broker, exchange, queue, "--bind", f"table.{TABLE_ID}.#", "--declare-only")
    table = Table(tmp_path / "journal.db", {BROKER: EventFilter()})
    table.feed()
    sink = amqp_sink(table, broker.url, key_file, exchange)

    async def deliver() -> None:
        task = await running(sink)
        await eventually(delivered_all(sink), "the whole shoe confirmed")
        await stopped(sink, task)

    asyncio.run(deliver())
    expected = table.expected(BROKER)
    assert len(expected) > 400  # a whole shoe: cards, rounds, results, its end
    assert expected[-1]["type"] == "shoe.ended"
    got = consumer(broker, exchange, queue, "--until-seq", str(len(expected)))
    # exactly as docs/spec-push-api.md's events
    assert [message["event"] for message in got] == expected
    key = pushapi.SigningKey.from_file(key_file)
    for message, event in zip(got, expected, strict=True):
        assert message["routing_key"] == f"table.{TABLE_ID}.{event['type']}"
        assert message["message_id"] == event["id"]
        assert message["persistent"]
        headers = message["headers"]
        assert headers[HEADER_SEQ] == event["seq"]
        assert headers[pushapi.HEADER_CONTROLLER] == CONTROLLER_ID
        body = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()
        assert key.verify(
            headers[pushapi.HEADER_TIMESTAMP], body, headers[pushapi.HEADER_SIGNATURE]
        )
    assert broker.cli.queue_messages(queue) == 0  # every message acked by the consumer
    assert table.journal.sinks.marks()[BROKER].delivered_through == len(expected)


Trouble = Callable[[Table, Sink, Broker], Awaitable[None]]


def delivered_through_trouble(
    tmp_path: Path, broker: Broker, key_file: Path, trouble: Trouble, *queue_args: str,
    **config: Any,
) -> None:  # fmt: skip
    """A whole shoe dealt while the broker is in `trouble`: the consumer's queue (declared
    first, `queue_args` its kind) ends up with every event once, in order."""
    exchange, queue = unique_name("shoe.events"), unique_name("studio.feed")
    consumer(broker, exchange, queue, "--declare-only", *queue_args)
    table = Table(tmp_path / "journal.db", {BROKER: EventFilter()})
    sink = amqp_sink(table, broker.url, key_file, exchange, **config)

    async def deliver() -> None:
        task = await running(sink)
        await trouble(table, sink, broker)
        table.feed()
        await eventually(delivered_all(sink), "everything confirmed")
        await stopped(sink, task)

    asyncio.run(deliver())
    expected = table.expected(BROKER)
    got = consumer(broker, exchange, queue, *queue_args, "--until-seq", str(len(expected)))
    assert [message["event"] for message in got] == expected


def test_the_broker_killed_and_restarted_mid_shoe_loses_nothing(
    tmp_path: Path, broker: Broker, key_file: Path
) -> None:
    async def killed(table: Table, sink: Sink, broker: Broker) -> None:
        table.feed(120)
        await eventually(lambda: (sink.status().delivered_through or 0) > 50, "part of the shoe")
        await asyncio.to_thread(broker.kill)  # SIGKILL mid-shoe, events in flight
        table.feed(150)  # dealing goes on while the broker is down
        await eventually(lambda: sink.status().consecutive_failures >= 1, "a failed attempt")
        assert sink.status().delivered_through < sink.status().last_seq
        await asyncio.to_thread(broker.restart)

    # A classic durable queue: a one-node broker's quorum queue, SIGKILLed, finds no Raft
    # leader for minutes after its restart here (a cluster's other nodes elect one at once;
    # docs/amqp.md), and the broker holds every confirm for it meanwhile.
    delivered_through_trouble(tmp_path, broker, key_file, killed, "--classic")


def test_connections_refused_for_a_while_then_everything_arrives(
    tmp_path: Path, broker: Broker, key_file: Path
) -> None:
    async def refused(table: Table, sink: Sink, broker: Broker) -> None:
        table.feed(60)
        await eventually(lambda: sink.status().delivered_through, "the first events")
        await asyncio.to_thread(broker.faults.refuse_connections)  # open connections closed too
        table.feed(100)
        await eventually(lambda: sink.status().consecutive_failures >= 2, "refused twice")
        await asyncio.to_thread(broker.faults.accept_connections)

    delivered_through_trouble(tmp_path, broker, key_file, refused)


def test_confirms_withheld_count_as_undelivered_until_they_come(
    tmp_path: Path, broker: Broker, key_file: Path
) -> None:
    async def withheld(table: Table, sink: Sink, broker: Broker) -> None:
        table.feed(40)
        await eventually(delivered_all(sink), "the first events")
        before = sink.status().delivered_through
        # the memory alarm: publishers blocked
        await asyncio.to_thread(broker.faults.pause_confirms)
        table.feed(40)
        status = await eventually(
            lambda: (s := sink.status()).consecutive_failures >= 1 and s, "a withheld confirm"
        )
        assert "withholds confirms" in status.last_error
        assert sink.status().delivered_through == before  # nothing counted without a confirm
        assert table.journal.sinks.marks()[BROKER].delivered_through == before
        await asyncio.to_thread(broker.faults.resume_confirms)

    delivered_through_trouble(tmp_path, broker, key_file, withheld, timeout_s=1.0)


def test_a_filter_that_matches_nothing_numbers_nothing_and_holds_nothing_back(
    tmp_path: Path, broker: Broker, key_file: Path
) -> None:
    exchange = unique_name("shoe.events")
    routes = {BROKER: EventFilter(("nothing.*",)), "rounds": EventFilter(("round.*",))}
    table = Table(tmp_path / "journal.db", routes)
    table.feed()
    idle = amqp_sink(table, broker.url, key_file, exchange)

    async def deliver() -> None:
        task = await running(idle)
        await eventually(lambda: idle.status().state == "idle", "nothing to send")
        await stopped(idle, task)

    asyncio.run(deliver())
    marks = table.journal.sinks.marks()
    assert (marks[BROKER].last_seq, marks[BROKER].delivered_through) == (0, 0)
    rounds = table.expected("rounds")
    assert rounds  # the other sink numbered its own, gap-free
    assert [event["seq"] for event in rounds] == list(range(1, len(rounds) + 1))
    assert {event["type"].split(".")[0] for event in rounds} == {"round"}
    # retention is held back by the sink that still needs events, not by the idle one
    assert table.journal.prune(0).shoes == ()
    table.journal.sinks.mark_delivered("rounds", len(rounds))
    table.controller.submit(table.inputs[0])  # a new shoe begins: the old one may go
    assert table.journal.prune(0).shoes == (1,)


def test_the_table_server_and_the_broker_never_hold_each_other_back(
    tmp_path: Path, broker: Broker, key_file: Path
) -> None:
    exchange, queue = unique_name("shoe.events"), unique_name("studio.feed")
    consumer(broker, exchange, queue, "--declare-only")
    store = ReceiverStore(tmp_path / "receiver.db")
    receiver = Receiver(store, pushapi.SigningKey.from_file(key_file), TABLE_ID).start()
    config = from_mapping(
        {
            "table": {"id": TABLE_ID},
            "server": {"url": receiver.url, "key_file": str(key_file), "timeout": 2.0},
            "sink": [
                {
                    "kind": "amqp",
                    "name": BROKER,
                    "url": broker.url,
                    "exchange": exchange,
                    "key_file": str(key_file),
                    "timeout": 1.0,
                }
            ],
        }
    )
    table = Table(tmp_path / "journal.db", routes(config))
    table.sinks = build(config, table.journal)  # the daemon's own sinks for this config
    server, studio = table.sinks
    for sink in table.sinks:  # quick retries for the test; the defaults are 0.5 s to 30 s
        sink._backoff = Backoff(0.05, 0.3)

    async def deliver() -> None:
        tasks = [await running(sink) for sink in table.sinks]
        # the broker withholds its confirms: the table server still gets every event
        await asyncio.to_thread(broker.faults.pause_confirms)
        table.feed(150)
        await eventually(delivered_all(server), "the table server has everything")
        assert studio.status().backlog > 0
        await asyncio.to_thread(broker.faults.resume_confirms)
        await eventually(delivered_all(studio), "the broker caught up")
        # the table server fails every request: the broker still gets every event
        receiver.set_faults(FaultPlan(mode="status", status=503))
        table.feed()
        await eventually(delivered_all(studio), "the broker has everything")
        assert server.status().backlog > 0
        for sink, task in zip(table.sinks, tasks, strict=True):
            await stopped(sink, task)
        receiver.close()

    try:
        asyncio.run(deliver())
        held = store.events(TABLE_ID)
        assert held == table.expected("server")[: len(held)]  # in order, gap-free
        expected = table.expected(BROKER)
        got = consumer(broker, exchange, queue, "--until-seq", str(len(expected)))
        assert [message["event"] for message in got] == expected
    finally:
        store.close()
        table.close()


def test_a_broker_that_refuses_the_login_is_a_fault_for_a_person(
    tmp_path: Path, broker: Broker, key_file: Path
) -> None:
    table = Table(tmp_path / "journal.db", {BROKER: EventFilter()})
    table.feed(10)
    wrong = broker.url.replace(f":{broker.password}@", ":not-the-password@")
    assert wrong != broker.url
    sink = AmqpSink(
        BROKER,
        SinkBacklog(table.journal, BROKER),
        AmqpConfig(url=wrong, table_id=TABLE_ID, controller_id=CONTROLLER_ID,
                   key_file=key_file, timeout_s=2.0, backoff=Backoff(0.05, 0.2)),
    )  # fmt: skip

    async def attempt() -> None:
        task = await running(sink)
        fault = await eventually(lambda: sink.status().fault, "a fault")
        assert fault.code == "amqp_access_refused"
        assert sink.status().delivered_through is None  # never connected: nothing confirmed
        await stopped(sink, task)

    asyncio.run(attempt())
    assert "not-the-password" not in repr(sink)
    status = sink.status()
    for shown in (status.target, status.last_error, status.fault.text if status.fault else ""):
        assert "not-the-password" not in (shown or "")  # shown everywhere: no secret
    assert table.journal.sinks.marks()[BROKER].delivered_through == 0
