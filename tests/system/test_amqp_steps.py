"""The broker sink's own steps against a real RabbitMQ node, a few events each: the
messages as a queue holds them, the window, the resync, a nack, an exchange of other
settings, a connection the broker closed, nodes that refuse. test_amqp_sink.py deals whole
shoes through trouble; these are quick enough to run against every mutant of amqp.py.

Queues are read here with aio-pika itself, in the test's process.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aio_pika
import aio_pika.abc
import pytest
from shoe_testkit.broker import Broker
from shoe_testkit.broker_session import port_refuses, unique_name
from shoe_testkit.broker_table import (
    BROKER,
    Table,
    amqp_sink,
    delivered,
    delivered_all,
    running,
    stopped,
    suspended,
)
from shoe_testkit.delivery import CONTROLLER_ID, TABLE_ID, write_key
from shoe_testkit.net import free_port
from shoe_testkit.waiting import eventually, wait_until
from structlog.testing import capture_logs

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.amqp import HEADER_SEQ, safe_url
from shoe_controller.delivery.routing import EventFilter

INPUTS = 24  # a shuffle, a cut, a burn and the first rounds: about 20 events


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    return write_key(tmp_path)


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Table]:
    fed = Table(tmp_path / "journal.db", {BROKER: EventFilter()})
    try:
        yield fed
    finally:
        fed.close()


@asynccontextmanager
async def channel_on(broker: Broker) -> AsyncIterator[aio_pika.abc.AbstractChannel]:
    connection = await aio_pika.connect(broker.url)
    try:
        yield await connection.channel()
    finally:
        await connection.close()


async def bound_queue(broker: Broker, exchange: str, **arguments: Any) -> str:
    """A durable queue of its own bound to all of the table's events on `exchange`."""
    name = unique_name("studio.feed")
    async with channel_on(broker) as channel:
        declared = await channel.declare_exchange(
            exchange, aio_pika.ExchangeType.TOPIC, durable=True
        )
        queue = await channel.declare_queue(name, durable=True, arguments=arguments or None)
        await queue.bind(declared, f"table.{TABLE_ID}.#")
    return name


async def drained(broker: Broker, name: str) -> list[aio_pika.abc.AbstractIncomingMessage]:
    """Every message in queue `name`, in order, taken off it."""
    messages = []
    async with channel_on(broker) as channel:
        queue = await channel.get_queue(name)
        while (message := await queue.get(no_ack=True, fail=False)) is not None:
            messages.append(message)
    return messages


def connections(broker: Broker) -> list[Any]:
    """The node's client connections, as rabbitmqctl lists them."""
    return json.loads(broker.cli.ctl("list_connections", "name", "--formatter", "json"))


def node_of(broker: Broker, host: str = "127.0.0.1") -> str:
    return f"{host}:{broker.port}"


def aliases_of(broker: Broker) -> tuple[str, str]:
    """Two URLs of the one node, as a sink takes two nodes of a cluster: 127.0.0.1 and 127.1
    are the same address."""
    alias = broker.url.replace("@127.0.0.1:", "@127.1:")
    assert alias != broker.url
    return broker.url, alias


def test_each_event_arrives_signed_persistent_in_order_and_the_sink_hangs_up_at_its_end(
    broker: Broker, table: Table, key_file: Path
) -> None:
    exchange = unique_name("shoe.events")

    async def scenario() -> list[aio_pika.abc.AbstractIncomingMessage]:
        queue = await bound_queue(broker, exchange)
        table.feed(INPUTS)
        sink = amqp_sink(table, broker.url, key_file, exchange)
        await delivered(sink)
        assert sink.status().name == BROKER
        assert sink.status().target == f"{safe_url(broker.url)} exchange {exchange}"
        assert sink.status().endpoint == {
            "nodes": [node_of(broker)],
            "in_use": None,  # stopped: released
            "failovers": 0,
            "recent_failovers": [],
        }
        return await drained(broker, queue)

    messages = asyncio.run(scenario())
    expected = table.expected(BROKER)
    assert len(expected) > 15
    assert [json.loads(message.body) for message in messages] == expected
    key = pushapi.SigningKey.from_file(key_file)
    for message, event in zip(messages, expected, strict=True):
        assert message.routing_key == f"table.{TABLE_ID}.{event['type']}"
        assert (message.message_id, message.type, message.app_id) == (
            event["id"],
            event["type"],
            "shoe-controller",
        )
        assert message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
        assert (message.content_type, message.content_encoding) == ("application/json", "utf-8")
        headers = message.headers
        assert headers[HEADER_SEQ] == event["seq"]
        assert headers[pushapi.HEADER_CONTROLLER] == CONTROLLER_ID
        assert key.verify(
            str(headers[pushapi.HEADER_TIMESTAMP]),
            message.body,
            str(headers[pushapi.HEADER_SIGNATURE]),
        )
    exchanges = json.loads(
        broker.cli.ctl("list_exchanges", "-p", broker.vhost, "name", "type", "durable",
                       "--formatter", "json")
    )  # fmt: skip
    assert {"name": exchange, "type": "topic", "durable": True} in exchanges
    wait_until(lambda: connections(broker) == [], "no connection left")  # the sink's stop


def test_only_the_window_waits_for_confirms_and_nothing_unconfirmed_counts(
    broker: Broker, table: Table, key_file: Path
) -> None:
    exchange = unique_name("shoe.events")

    async def scenario() -> None:
        await bound_queue(broker, exchange)
        with capture_logs() as logs:
            sink = amqp_sink(table, broker.url, key_file, exchange, window=3, timeout_s=1.0)
            task = await running(sink)
            await asyncio.to_thread(broker.faults.pause_confirms)  # the memory alarm
            table.feed(INPUTS)
            status = await eventually(
                lambda: (s := sink.status()).consecutive_failures >= 1 and s, "a withheld confirm"
            )
            # the blocked node reads nothing, a close either: the sink gives that up too
            await eventually(
                lambda: any(log["event"] == "delivery.close_failed" for log in logs),
                "the blocked connection's close given up",
            )
        assert status.last_error == "broker withholds confirms: 3 of 3 unconfirmed after 1 s"
        assert status.delivered_through is None or status.delivered_through == 0
        assert table.journal.sinks.marks()[BROKER].delivered_through == 0
        await asyncio.to_thread(broker.faults.resume_confirms)
        await eventually(delivered_all(sink), "everything once the alarm cleared")
        await stopped(sink, task)

    asyncio.run(scenario())


def test_confirms_withheld_for_part_of_a_batch_count_what_came_before(
    broker: Broker, table: Table, key_file: Path
) -> None:
    exchange = unique_name("shoe.events")
    name = unique_name("studio.rounds")

    async def scenario() -> None:
        async with channel_on(broker) as channel:
            declared = await channel.declare_exchange(
                exchange, aio_pika.ExchangeType.TOPIC, durable=True
            )
            queue = await channel.declare_queue(name, durable=True)
            await queue.bind(declared, f"table.{TABLE_ID}.round.#")  # the rest routes nowhere
        table.feed(INPUTS)
        sink = amqp_sink(table, broker.url, key_file, exchange, timeout_s=1.0)
        with suspended(broker, name):
            task = await running(sink)
            status = await eventually(
                lambda: (s := sink.status()).consecutive_failures >= 1 and s, "a withheld confirm"
            )
        await eventually(delivered_all(sink), "everything once the queue goes on")
        await stopped(sink, task)
        first_round = next(
            event["seq"] for event in table.expected(BROKER) if event["type"].startswith("round.")
        )
        assert first_round > 1
        assert status.last_error.startswith("broker withholds confirms: ")
        assert status.delivered_through == first_round - 1  # the batch's confirmed start

    asyncio.run(scenario())


def test_a_sink_started_again_sends_only_what_the_broker_never_confirmed(
    broker: Broker, table: Table, key_file: Path
) -> None:
    exchange = unique_name("shoe.events")

    async def scenario() -> list[aio_pika.abc.AbstractIncomingMessage]:
        queue = await bound_queue(broker, exchange)
        table.feed(INPUTS)
        await delivered(amqp_sink(table, broker.url, key_file, exchange))
        first = table.journal.sinks.marks()[BROKER].delivered_through
        table.feed(INPUTS)
        again = amqp_sink(table, broker.url, key_file, exchange)  # the daemon restarted
        await delivered(again)
        assert first < again.status().delivered_through
        return await drained(broker, queue)

    messages = asyncio.run(scenario())
    assert [message.headers[HEADER_SEQ] for message in messages] == [
        event["seq"] for event in table.expected(BROKER)
    ]  # each once: the second sink began where the journal says the first one ended


def test_a_nack_is_retried_and_what_was_confirmed_before_it_counts(
    broker: Broker, table: Table, key_file: Path
) -> None:
    exchange = unique_name("shoe.events")

    async def scenario() -> None:
        # a queue that takes 4 messages and refuses the rest: the broker nacks them
        await bound_queue(broker, exchange, **{"x-max-length": 4, "x-overflow": "reject-publish"})
        table.feed(INPUTS)
        sink = amqp_sink(table, "", key_file, exchange, urls=aliases_of(broker))
        task = await running(sink)
        status = await eventually(
            lambda: (s := sink.status()).consecutive_failures >= 2 and s, "nacked twice"
        )
        await stopped(sink, task)
        assert status.last_error.startswith("broker refused a message (nack): ")
        assert status.fault is None  # the broker's trouble, retried: no person needed
        await asyncio.to_thread(
            wait_until, lambda: connections(broker) == [], "the left nodes' connections closed"
        )
        # the node that nacked was left for the next one, for that reason
        assert status.endpoint["recent_failovers"][0]["reason"].startswith(
            "broker refused a message (nack): "
        )
        assert status.delivered_through == 4
        assert table.journal.sinks.marks()[BROKER].delivered_through == 4

    asyncio.run(scenario())


def test_an_exchange_of_other_settings_is_a_fault_naming_it(
    broker: Broker, table: Table, key_file: Path
) -> None:
    exchange = unique_name("shoe.events")

    async def scenario() -> None:
        async with channel_on(broker) as channel:
            await channel.declare_exchange(exchange, aio_pika.ExchangeType.FANOUT, durable=True)
        table.feed(INPUTS)
        sink = amqp_sink(table, broker.url, key_file, exchange)
        task = await running(sink)
        fault = await eventually(lambda: sink.status().fault, "a fault")
        await stopped(sink, task)
        assert fault.code == "amqp_exchange_mismatch"
        assert fault.text.startswith(
            f"exchange {exchange} exists with other settings"
            " (it must be a durable topic exchange): "
        )
        assert sink.status().delivered_through in (None, 0)

    asyncio.run(scenario())


def test_a_connection_the_broker_closed_is_left_for_the_next_node_without_a_failure(
    broker: Broker, table: Table, key_file: Path
) -> None:
    """Two URLs of the one node (aliases_of): the broker closes the idle sink's connection,
    and the next batch goes out on the other URL, a failover for the closed connection, not
    a failed attempt."""
    exchange = unique_name("shoe.events")
    first, second = aliases_of(broker)

    async def scenario() -> list[dict[str, Any]]:
        queue = await bound_queue(broker, exchange)
        with capture_logs() as logs:
            sink = amqp_sink(table, "", key_file, exchange, urls=(first, second))
            task = await running(sink)
            table.feed(INPUTS)
            await eventually(delivered_all(sink), "the first events")
            in_use = sink.status().endpoint["in_use"]
            before_close = time.time()
            await asyncio.to_thread(broker.cli.ctl, "close_all_connections", "--global", "test")
            connection = sink._link._connection
            await eventually(
                lambda: connection.is_closed or not connection.connected.is_set(),
                "the sink's client noticed the close",
            )
            table.feed(INPUTS)
            await eventually(delivered_all(sink), "the next events")
            status = sink.status()
            await stopped(sink, task)
        assert (status.consecutive_failures, status.last_error) == (0, None)
        (failover,) = status.endpoint["recent_failovers"]
        assert before_close <= failover["at"] <= time.time()  # the sink's clock: unix seconds
        assert (failover["from"], failover["reason"]) == (
            in_use,
            "the broker closed the connection",
        )
        assert failover["to"] != in_use
        assert failover["after_failures"] == 0
        warned = [log for log in logs if log["event"] == "delivery.failover"]
        assert [(log["from"], log["to"], log["log_level"]) for log in warned] == [
            (failover["from"], failover["to"], "warning")
        ]
        got = await drained(broker, queue)
        assert [message.headers[HEADER_SEQ] for message in got] == [
            event["seq"] for event in table.expected(BROKER)
        ]
        return logs

    asyncio.run(scenario())


def test_nodes_that_refuse_are_named_each_and_a_live_one_after_them_takes_the_events(
    broker: Broker, table: Table, key_file: Path
) -> None:
    exchange = unique_name("shoe.events")
    dead = [free_port(), free_port()]
    assert all(port_refuses(port) for port in dead)
    dead_urls = tuple(broker.url.replace(f":{broker.port}/", f":{port}/") for port in dead)

    async def scenario() -> None:
        table.feed(INPUTS)
        nowhere = amqp_sink(table, "", key_file, exchange, urls=dead_urls)
        task = await running(nowhere)
        status = await eventually(
            lambda: (s := nowhere.status()).consecutive_failures >= 1 and s, "a failed attempt"
        )
        await stopped(nowhere, task)
        names = status.endpoint["nodes"]  # in the order the sink tried them
        assert sorted(names) == sorted(f"127.0.0.1:{port}" for port in dead)
        assert status.last_error.startswith(f"no node took the connection: {names[0]} ")
        assert f"; {names[1]} " in status.last_error
        assert status.fault is None
        table.sinks.remove(nowhere)
        await bound_queue(broker, exchange)
        live = amqp_sink(table, "", key_file, exchange, urls=(dead_urls[0], broker.url))
        await delivered(live)
        assert live.status().endpoint["failovers"] == 0  # its first connection, not a move

    asyncio.run(scenario())
