"""The stream sink's own steps against a real RabbitMQ node with the stream protocol on, a few
events each: the messages as the stream holds them, the resync from what the broker
stored, a table the broker is ahead of, withheld confirms, a stream deleted under the sink,
logins and vhosts refused, nodes that refuse. test_amqp_cluster.py deals a whole shoe through
a cluster's failures; these are quick enough to run against every mutant of amqp_stream.py.

The stream is read back with rstream itself, in the test's process (shoe_testkit.broker_stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from shoe_testkit.broker import Broker, missing
from shoe_testkit.broker_session import port_refuses, unique_name
from shoe_testkit.broker_table import (
    BROKER,
    Table,
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
from shoe_controller.delivery.amqp import HEADER_SEQ
from shoe_controller.delivery.amqp_nodes import shuffled
from shoe_controller.delivery.routing import EventFilter
from shoe_controller.delivery.sink import Sink, SinkStatus

pytest.importorskip("rstream", reason="kind amqp-stream needs rstream (the `stream` extra)")

from shoe_testkit.broker_stream import (  # after the importorskip: rstream checked first
    body_of,
    declare_stream,
    delete_stream,
    read_stream,
    stored_through,
    stream_sink,
    stream_url,
    text_of,
)

from shoe_controller.delivery.amqp_stream import HEADER_TYPE

INPUTS = 24  # a shuffle, a cut, a burn and the first rounds: about 20 events


@pytest.fixture(scope="module")
def node() -> Iterator[Broker]:
    """One node with the stream protocol for the module (the session's broker has it off)."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    with Broker(streams=True) as started:
        yield started


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    return write_key(tmp_path)


@contextlib.contextmanager
def fed_table(path: Path) -> Iterator[Table]:
    table = Table(path, {BROKER: EventFilter()})
    try:
        yield table
    finally:
        table.close()


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Table]:
    with fed_table(tmp_path / "journal.db") as fed:
        yield fed


async def failing(sink: Sink, times: int = 1) -> SinkStatus:
    """The sink's status once it failed `times` attempts in a row."""
    return await eventually(
        lambda: (s := sink.status()).consecutive_failures >= times and s, "a failed attempt"
    )


def stream_connections(node: Broker) -> list[object]:
    listed = node.cli.run("rabbitmq-streams", "list_stream_connections", "--formatter", "json")
    return json.loads(listed)


def test_each_event_is_one_signed_message_stored_under_the_tables_producer_name(
    node: Broker, table: Table, key_file: Path
) -> None:
    stream = unique_name("shoe.stream")  # not declared: the sink declares it

    async def scenario() -> list[object]:
        table.feed(INPUTS)
        sink = stream_sink(table, (stream_url(node),), key_file, stream)
        with capture_logs() as logs:
            await delivered(sink)
        assert {"event": "delivery.resynced", "sink": BROKER, "stored_through": 0} in [
            {key: log[key] for key in ("event", "sink", "stored_through") if key in log}
            for log in logs
        ]
        status = sink.status()
        assert (status.name, status.kind) == (BROKER, "amqp-stream")
        assert status.target == (
            f"rabbitmq-stream://{node.user}@127.0.0.1:{node.stream_port}/{node.vhost}"
            f" stream {stream} producer {TABLE_ID}"
        )
        assert node.password not in status.target
        assert status.endpoint == {
            "nodes": [f"127.0.0.1:{node.stream_port}"],
            "in_use": None,  # stopped: released
            "failovers": 0,
            "recent_failovers": [],
            "sent_again": 0,
        }
        assert await stored_through(node, stream) == status.delivered_through
        return await read_stream(node, stream)

    held = asyncio.run(scenario())
    expected = table.expected(BROKER)
    assert len(expected) > 15
    assert [json.loads(body_of(message)) for message in held] == expected
    key = pushapi.SigningKey.from_file(key_file)
    for message, event in zip(held, expected, strict=True):
        properties = message.properties
        assert text_of(properties.message_id) == event["id"]
        assert text_of(properties.subject) == f"table.{TABLE_ID}.{event['type']}"
        assert text_of(properties.content_type) == "application/json"
        assert text_of(properties.content_encoding) == "utf-8"
        headers = {text_of(name): value for name, value in message.application_properties.items()}
        assert headers[HEADER_SEQ] == event["seq"]
        assert text_of(headers[HEADER_TYPE]) == event["type"]
        assert text_of(headers[pushapi.HEADER_CONTROLLER]) == CONTROLLER_ID
        assert key.verify(
            text_of(headers[pushapi.HEADER_TIMESTAMP]),
            body_of(message),
            text_of(headers[pushapi.HEADER_SIGNATURE]),
        )
    wait_until(lambda: stream_connections(node) == [], "no stream connection left")


def test_a_sink_started_again_begins_where_the_broker_stored_and_sends_nothing_twice(
    node: Broker, tmp_path: Path, table: Table, key_file: Path
) -> None:
    """The daemon's journal replaced by a copy that never saw the confirms (the same events,
    marks at 0): the broker says what it holds, and only the events after it go out."""
    stream = unique_name("shoe.stream")

    async def scenario() -> None:
        await declare_stream(node, stream)  # declared before: taken as it is
        table.feed(INPUTS)
        await delivered(stream_sink(table, (stream_url(node),), key_file, stream))
        stored = await stored_through(node, stream)
        assert stored == len(table.expected(BROKER))
        with fed_table(tmp_path / "copy.db") as copy:
            copy.feed(INPUTS)
            again = stream_sink(copy, (stream_url(node),), key_file, stream)
            task = await running(again)
            await eventually(delivered_all(again), "the copy at the broker's mark")
            assert again.status().last_delivered_at is None  # nothing delivered: resynced
            copy.feed(INPUTS)
            await eventually(delivered_all(again), "the copy's new events")
            status = again.status()
            await stopped(again, task)
            assert status.delivered_through > stored
            assert status.endpoint["sent_again"] == 0
            held = await read_stream(node, stream)
            seqs = [message.application_properties[HEADER_SEQ.encode()] for message in held]
            assert seqs == list(range(1, status.delivered_through + 1))

    asyncio.run(scenario())


def test_a_broker_that_stored_more_than_the_journal_holds_is_a_fault(
    node: Broker, tmp_path: Path, table: Table, key_file: Path
) -> None:
    stream = unique_name("shoe.stream")

    async def scenario() -> None:
        table.feed(INPUTS)
        await delivered(stream_sink(table, (stream_url(node),), key_file, stream))
        with fed_table(tmp_path / "other.db") as other:  # another table under the same name
            other.feed(4)
            behind = stream_sink(other, (stream_url(node),), key_file, stream)
            task = await running(behind)
            fault = await eventually(lambda: behind.status().fault, "a fault")
            await stopped(behind, task)
        assert fault.code == "server_ahead"
        assert await stored_through(node, stream) == len(table.expected(BROKER))

    asyncio.run(scenario())


def test_withheld_confirms_are_a_timeout_and_each_event_is_stored_once_after_it(
    node: Broker, table: Table, key_file: Path
) -> None:
    stream = unique_name("shoe.stream")

    async def scenario() -> None:
        await declare_stream(node, stream)
        sink = stream_sink(table, (stream_url(node),), key_file, stream, window=3, timeout_s=1.0)
        task = await running(sink)
        table.feed(4)
        await eventually(delivered_all(sink), "the first events")
        first = sink.status().delivered_through
        with suspended(node, stream):
            table.feed(INPUTS)
            status = await failing(sink)
        await eventually(delivered_all(sink), "everything once the stream goes on")
        await stopped(sink, task)
        assert status.last_error == "broker withholds confirms: 3 of 3 unconfirmed after 1 s"
        assert status.fault is None
        assert status.delivered_through == first
        assert status.endpoint["in_use"] is None  # the node left after the timeout
        assert status.endpoint["recent_failovers"] == []  # one node: no move
        assert sink.status().endpoint["sent_again"] == 3  # the window that timed out
        held = await read_stream(node, stream)
        assert [json.loads(body_of(message)) for message in held] == table.expected(BROKER)

    asyncio.run(scenario())


def test_a_stream_deleted_under_the_sink_is_named_and_declared_again_on_the_next_node(
    node: Broker, table: Table, key_file: Path
) -> None:
    """Two URLs of the one node, as a sink takes two nodes of a cluster (127.0.0.1 and 127.1
    are the same address): the failed send leaves the first for the second."""
    stream = unique_name("shoe.stream")
    urls = (stream_url(node), stream_url(node, "127.1"))
    gone = f"stream {stream} does not exist (deleted since the sink declared it)"

    async def scenario() -> None:
        sink = stream_sink(table, urls, key_file, stream)
        task = await running(sink)
        table.feed(INPUTS)
        await eventually(delivered_all(sink), "the first events")
        first = sink.status().delivered_through
        in_use = sink.status().endpoint["in_use"]
        await delete_stream(node, stream)
        before = time.time()
        with capture_logs() as logs:
            table.feed(INPUTS)
            status = await failing(sink)
            await eventually(delivered_all(sink), "the next events, in the stream declared again")
        moved = sink.status().endpoint
        await stopped(sink, task)
        warned = [log for log in logs if log["event"] == "delivery.failover"]
        assert [(log["from"], log["to"], log["reason"], log["log_level"]) for log in warned] == [
            (in_use, moved["in_use"], gone, "warning")
        ]
        assert status.last_error == gone
        assert status.fault is None
        (failover,) = moved["recent_failovers"]
        assert (failover["from"], failover["reason"], failover["after_failures"]) == (
            in_use,
            gone,
            1,
        )
        assert failover["to"] == moved["in_use"] != in_use
        assert before <= failover["at"] <= time.time()  # the sink's clock: unix seconds
        held = await read_stream(node, stream)  # the deleted stream's events went with it
        seqs = [message.application_properties[HEADER_SEQ.encode()] for message in held]
        assert seqs == list(range(first + 1, sink.status().delivered_through + 1))

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("login", "fault_text"),
    [
        ({"password": "wrong"}, "broker refused our login: AuthenticationFailure"),
        ({"user": "nobody", "password": "pw"}, "broker refused us the vhost:"),
        ({"user": "reader", "password": "pw"}, "broker refused us stream shoe.stream."),
    ],
)
def test_a_login_or_vhost_the_broker_refuses_is_a_fault_for_a_person(
    node: Broker, table: Table, key_file: Path, login: dict[str, str], fault_text: str
) -> None:
    if login.get("user") in ("nobody", "reader"):
        with contextlib.suppress(Exception):  # the module's node keeps its users
            node.cli.ctl("add_user", login["user"], "pw")
    if login.get("user") == "reader":  # may read and write, not declare a stream
        node.cli.ctl("set_permissions", "-p", node.vhost, "reader", "^$", ".*", ".*")
    user, password = login.get("user", node.user), login["password"]
    url = f"rabbitmq-stream://{user}:{password}@127.0.0.1:{node.stream_port}/{node.vhost}"

    async def scenario() -> SinkStatus:
        table.feed(INPUTS)
        sink = stream_sink(table, (url,), key_file, unique_name("shoe.stream"))
        task = await running(sink)
        status = await eventually(lambda: (s := sink.status()).fault and s, "a fault")
        await stopped(sink, task)
        return status

    status = asyncio.run(scenario())
    # a producer started before the broker refused the stream is closed, not left open
    wait_until(lambda: stream_connections(node) == [], "no stream connection left")
    assert status.fault is not None
    assert status.fault.code == "amqp_access_refused"
    assert status.fault.text.startswith(fault_text)
    assert status.last_error.startswith(f"127.0.0.1:{node.stream_port} ")
    assert password not in status.last_error + status.fault.text
    assert status.delivered_through in (None, 0)


def test_nodes_that_refuse_are_named_each_and_a_live_one_after_them_takes_the_events(
    node: Broker, table: Table, key_file: Path
) -> None:
    stream = unique_name("shoe.stream")
    dead = [free_port(), free_port()]
    assert all(port_refuses(port) for port in dead)
    live = stream_url(node)
    dead_urls = tuple(live.replace(f":{node.stream_port}/", f":{port}/") for port in dead)

    async def scenario() -> None:
        table.feed(INPUTS)
        nowhere = stream_sink(table, dead_urls, key_file, stream)
        task = await running(nowhere)
        status = await failing(nowhere)
        await stopped(nowhere, task)
        names = status.endpoint["nodes"]  # in the order the sink tried them
        assert sorted(names) == sorted(f"127.0.0.1:{port}" for port in dead)
        assert status.last_error.startswith(f"no node took the connection: {names[0]} ")
        assert f"; {names[1]} " in status.last_error
        assert status.fault is None
        table.sinks.remove(nowhere)
        then = stream_sink(table, (dead_urls[0], live), key_file, stream)
        await delivered(then)
        assert then.status().endpoint["failovers"] == 0  # its first connection, not a move
        assert await stored_through(node, stream) == then.status().delivered_through

    asyncio.run(scenario())


def test_a_frozen_node_is_a_timeout_and_the_sink_goes_on_when_it_thaws(
    node: Broker, table: Table, key_file: Path
) -> None:
    """The node stopped (SIGSTOP) once the sink's producer is open: the first send declares
    the producer to the broker, which never answers; the sink gives up after its timeout."""
    stream = unique_name("shoe.stream")

    async def scenario() -> None:
        sink = stream_sink(table, (stream_url(node),), key_file, stream, timeout_s=1.0)
        task = await running(sink)
        await eventually(lambda: sink.status().state == "idle", "resynced, nothing to send")
        beam = node.beam_pid
        assert beam is not None
        os.kill(beam, signal.SIGSTOP)
        try:
            table.feed(INPUTS)
            status = await failing(sink)
        finally:
            os.kill(beam, signal.SIGCONT)
        await eventually(delivered_all(sink), "everything once the node thawed")
        await stopped(sink, task)
        events = len(table.expected(BROKER))
        assert status.last_error == (
            f"broker withholds confirms: {events} of {events} unconfirmed after 1 s"
        )
        assert status.delivered_through in (None, 0)
        assert await stored_through(node, stream) == events

    asyncio.run(scenario())


def test_a_node_that_never_answers_is_given_up_after_the_timeout(
    node: Broker, table: Table, key_file: Path
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # takes connections, says nothing
        port = silent.getsockname()[1]
        url = stream_url(node).replace(f":{node.stream_port}/", f":{port}/")

        async def scenario() -> SinkStatus:
            table.feed(INPUTS)
            sink = stream_sink(table, (url,), key_file, unique_name("shoe.stream"), timeout_s=1.0)
            task = await running(sink)
            status = await failing(sink)
            await stopped(sink, task)
            return status

        status = asyncio.run(scenario())
    assert status.last_error == f"127.0.0.1:{port} TimeoutError"
    assert status.fault is None


QUERY_PUBLISHER_SEQUENCE = 5  # the stream protocol's key for "what did this producer store"


@contextlib.asynccontextmanager
async def hanging_up_on_the_query(port: int) -> AsyncIterator[int]:
    """A TCP proxy to the node's stream port that passes every frame on until a client asks
    what a producer stored, and hangs up then: the producer opens, the resync's query fails.
    Yields the proxy's port."""

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, cut: bool) -> None:
        buffer = b""
        try:
            while data := await reader.read(65536):
                buffer += data
                while len(buffer) >= 6:  # a frame: its size (4 bytes), then its key (2)
                    end = 4 + int.from_bytes(buffer[:4], "big")
                    if len(buffer) < end:
                        break
                    if cut and int.from_bytes(buffer[4:6], "big") == QUERY_PUBLISHER_SEQUENCE:
                        return
                    writer.write(buffer[:end])
                    buffer = buffer[end:]
                await writer.drain()
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        node_reader, node_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(
            pump(reader, node_writer, cut=True),
            pump(node_reader, writer, cut=False),
            return_exceptions=True,
        )

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def test_a_node_lost_while_resyncing_is_a_failover_at_its_time_after_its_failures(
    node: Broker, table: Table, key_file: Path
) -> None:
    stream = unique_name("shoe.stream")
    live = stream_url(node)

    async def scenario() -> None:
        async with hanging_up_on_the_query(node.stream_port) as port:
            cut = live.replace(f":{node.stream_port}/", f":{port}/")
            urls = (cut, live)
            if shuffled(urls, lambda: 0.0)[0] != cut:  # the proxy tried first
                urls = (live, cut)
            table.feed(INPUTS)
            before = time.time()
            sink = stream_sink(table, urls, key_file, stream)
            with capture_logs() as logs:
                await delivered(sink)
        first_failure = next(log for log in logs if log["event"] == "delivery.retry")
        (failover,) = sink.status().endpoint["recent_failovers"]
        assert (failover["from"], failover["to"]) == (
            f"127.0.0.1:{port}",
            f"127.0.0.1:{node.stream_port}",
        )
        assert failover["after_failures"] == 1
        assert before <= failover["at"] <= time.time()  # the sink's clock, not 1970
        # left for what the query raised, as the sink's retry said it
        assert failover["reason"] == first_failure["reason"] != "the connection was closed"
        assert await stored_through(node, stream) == len(table.expected(BROKER))

    asyncio.run(scenario())
