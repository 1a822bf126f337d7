"""Test support for the stream sink's tests: a RabbitMQ stream on one node, declared, read back
whole and asked what it stored, with rstream itself (the client the sink uses).

Not a test module. `node` is a `shoe_testkit.broker.Broker` started with `streams=True` (alone,
or one of a Cluster's nodes); import rstream only where it is installed (the `stream` extra).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import rstream

from shoe_controller.delivery.amqp_stream import StreamConfig, StreamSink
from shoe_controller.delivery.sink import Backoff
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_testkit.broker import Broker
from shoe_testkit.broker_table import BROKER, Table
from shoe_testkit.delivery import CONTROLLER_ID, TABLE_ID
from shoe_testkit.waiting import PATIENCE_S

END_MARKER = b"end of test"


def stream_url(node: Broker, host: str = "127.0.0.1") -> str:
    """The node's stream protocol URL, as an amqp-stream sink takes it."""
    return f"rabbitmq-stream://{node.user}:{node.password}@{host}:{node.stream_port}/{node.vhost}"


def _options(node: Broker) -> dict[str, Any]:
    return {"vhost": node.vhost, "username": node.user, "password": node.password}


async def declare_stream(node: Broker, stream: str) -> None:
    """A stream declared through `node` (so, in a cluster, it leads it)."""
    async with rstream.Producer("127.0.0.1", node.stream_port, **_options(node)) as producer:
        await producer.create_stream(stream)


async def delete_stream(node: Broker, stream: str) -> None:
    async with rstream.Producer("127.0.0.1", node.stream_port, **_options(node)) as producer:
        await producer.delete_stream(stream)


async def stored_through(node: Broker, stream: str, producer_name: str = TABLE_ID) -> int:
    """The last publishing id the stream stored for `producer_name` (0: none)."""
    async with rstream.Producer("127.0.0.1", node.stream_port, **_options(node)) as producer:
        client = await producer.default_client
        return int(await client.query_publisher_sequence(stream, producer_name))


async def read_stream(node: Broker, stream: str) -> list[Any]:
    """Everything the stream holds, in order: read from its first offset up to an end marker
    published after the test's last event (so nothing that came later is missed)."""
    options = _options(node)
    async with rstream.Producer("127.0.0.1", node.stream_port, **options) as producer:
        await producer.send_wait(stream, rstream.AMQPMessage(body=END_MARKER))
    got: list[Any] = []
    ended = asyncio.Event()

    async def take(message: Any, _context: Any) -> None:
        if body_of(message) == END_MARKER:
            ended.set()
        elif not ended.is_set():
            got.append(message)

    consumer = rstream.Consumer("127.0.0.1", node.stream_port, **options)
    await consumer.start()
    try:
        await consumer.subscribe(
            stream, take, decoder=rstream.amqp_decoder,
            offset_specification=rstream.ConsumerOffsetSpecification(rstream.OffsetType.FIRST),
        )  # fmt: skip
        await asyncio.wait_for(ended.wait(), PATIENCE_S)
    finally:
        await consumer.close()
    return got


def body_of(message: Any) -> bytes:
    body = message.body
    return b"".join(body) if isinstance(body, list) else bytes(body)


def text_of(value: Any) -> str:
    """An AMQP 1.0 property as text: the decoder gives bytes for strings."""
    return bytes(value).decode() if isinstance(value, bytes | bytearray) else str(value)


def stream_sink(
    table: Table, urls: tuple[str, ...], key_file: Path, stream: str, **config: Any
) -> StreamSink:
    """A StreamSink on `table`'s journal with quick retries, its nodes tried in their order."""
    options = {"timeout_s": 2.0, "backoff": Backoff(0.05, 0.5)} | config
    sink = StreamSink(
        BROKER,
        SinkBacklog(table.journal, BROKER),
        StreamConfig(
            url=urls[0],
            urls=urls,
            table_id=TABLE_ID,
            controller_id=CONTROLLER_ID,
            key_file=key_file,
            stream=stream,
            **options,
        ),
        rand=lambda: 0.0,
    )
    table.sinks.append(sink)
    return sink
