"""The RabbitMQ test broker really does what the AMQP sink's tests rely on.

A persistent, confirmed message survives SIGKILL of the Erlang VM and a restart; a refusing
broker refuses and then accepts; paused confirms are really withheld by the broker (also from a
client that ignores connection.blocked) and arrive once resumed; stop() and a dead owner leave
no process and no directory behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import aio_pika
import aiormq.exceptions
import pytest
from pamqp import body, commands, frame, header  # aio-pika's own framing layer
from pamqp.exceptions import UnmarshalingException
from shoe_testkit.broker import Broker, BrokerError, missing
from shoe_testkit.broker.cli import CLI_TIMEOUT_S
from shoe_testkit.broker_session import port_refuses, unique_name
from shoe_testkit.waiting import PATIENCE_S, wait_until

HELD_S = 1.5  # how long a withheld confirm is watched for not arriving
REPO = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"  # a zombie is dead, merely unreaped


async def publish_confirmed(url: str, queue: str, body: bytes, exchange: str = "") -> None:
    """Declare a durable queue (bound to a durable topic exchange, if named) and publish one
    persistent message; return once the broker confirmed it."""
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        declared = await channel.declare_queue(queue, durable=True)
        target, routing_key = channel.default_exchange, queue
        if exchange:
            target = await channel.declare_exchange(
                exchange, aio_pika.ExchangeType.TOPIC, durable=True
            )
            await declared.bind(target, routing_key="table.*.#")
            routing_key = "table.07.round.settled"
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        await target.publish(message, routing_key=routing_key, mandatory=True)


async def take_all(url: str, queue: str) -> list[bytes]:
    """Every message in the queue, acknowledged, in queue order."""
    connection = await aio_pika.connect(url)
    bodies = []
    async with connection:
        channel = await connection.channel()
        declared = await channel.declare_queue(queue, durable=True, passive=True)
        while (message := await declared.get(fail=False)) is not None:
            bodies.append(message.body)
            await message.ack()
    return bodies


def test_persistent_message_survives_sigkill_and_restart(broker: Broker) -> None:
    queue, exchange = unique_name("harness.kill"), unique_name("harness.events")
    asyncio.run(publish_confirmed(broker.url, queue, b"seq 1", exchange))
    assert broker.cli.queue_messages(queue) == 1
    beam = broker.beam_pid
    assert beam is not None
    tree = broker.processes()
    assert Path(f"/proc/{beam}/exe").resolve().name.startswith("beam"), "kill() must hit the VM"

    broker.kill()

    assert not broker.running
    assert [pid for pid in tree if alive(pid)] == broker.processes(), "only epmd may be left"
    assert not alive(beam)
    assert port_refuses(broker.port)
    with pytest.raises(BrokerError, match="not running"):
        broker.cli.queue_messages(queue)

    port, node = broker.port, broker.node
    broker.restart()

    assert (broker.port, broker.node) == (port, node)
    assert broker.beam_pid not in (None, beam)
    assert broker.cli.queue_messages(queue) == 1
    asyncio.run(publish_confirmed(broker.url, queue, b"seq 2", exchange))  # binding kept too
    assert asyncio.run(take_all(broker.url, queue)) == [b"seq 1", b"seq 2"]


def test_refused_for_a_while_then_accepted(broker: Broker) -> None:
    queue = unique_name("harness.refuse")
    asyncio.run(publish_confirmed(broker.url, queue, b"kept"))

    async def scenario() -> tuple[bool, int]:
        open_before = await aio_pika.connect(broker.url)
        await asyncio.to_thread(broker.faults.refuse_connections, 3.0)
        refused_now = port_refuses(broker.port)
        # The broker closed the connection that was open (connection.close 320, then EOF).
        while open_before.connected.is_set():
            await asyncio.sleep(0.02)
        # closing what the broker closed may re-raise its reason (320), as it did once here
        with contextlib.suppress(aiormq.exceptions.ConnectionClosed):
            await open_before.close()
        failures = 0
        while True:  # what a sink's reconnect loop does, without the backoff
            try:
                connection = await aio_pika.connect(broker.url)
            except ConnectionError:
                failures += 1
                await asyncio.sleep(0.1)
                continue
            await connection.close()
            return refused_now, failures

    refused_now, failures = asyncio.run(asyncio.wait_for(scenario(), PATIENCE_S))

    assert refused_now
    assert failures >= 1
    # A client may connect in the moment between the port opening and the timer's thread
    # noting it; the timed refusal must still end by itself within a CLI call's time.
    broker.faults.wait_accepting(timeout=CLI_TIMEOUT_S)
    assert not broker.faults.refusing
    assert broker.cli.queue_messages(queue) == 1, "refusing must not lose what the queue holds"


def test_refusal_until_told_and_heal(broker: Broker) -> None:
    broker.faults.refuse_connections()
    time.sleep(0.3)  # no timer: it stays refused until told otherwise
    assert port_refuses(broker.port)
    assert broker.faults.refusing
    broker.heal()
    assert not port_refuses(broker.port)
    assert not broker.faults.refusing


def test_paused_confirms_are_withheld_then_arrive(broker: Broker) -> None:
    queue = unique_name("harness.confirms")

    async def scenario() -> tuple[bool, int, int]:
        connection = await aio_pika.connect(broker.url)
        async with connection:
            channel = await connection.channel(publisher_confirms=True)
            await channel.declare_queue(queue, durable=True)
            await asyncio.to_thread(broker.faults.pause_confirms)
            message = aio_pika.Message(b"held", delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
            confirm = asyncio.ensure_future(
                channel.default_exchange.publish(message, routing_key=queue)
            )
            await asyncio.sleep(HELD_S)
            confirmed_while_paused = confirm.done()
            queued_while_paused = await asyncio.to_thread(broker.cli.queue_messages, queue)
            await asyncio.to_thread(broker.faults.resume_confirms)
            await asyncio.wait_for(confirm, PATIENCE_S)
            return confirmed_while_paused, queued_while_paused, broker.cli.queue_messages(queue)

    confirmed_while_paused, queued_while_paused, queued_after = asyncio.run(scenario())

    assert not confirmed_while_paused
    assert queued_while_paused == 0
    assert queued_after == 1
    assert not broker.faults.confirms_paused


class RawAmqp:
    """A bare AMQP 0-9-1 client on a socket that never honours connection.blocked: it shows
    that withholding confirms is the broker's doing, not aio-pika's."""

    def __init__(self, broker: Broker) -> None:
        self.sock = socket.create_connection((broker.host, broker.port), timeout=PATIENCE_S)
        self.buffer = b""
        self.sock.sendall(header.ProtocolHeader().marshal())
        self.expect(commands.Connection.Start)
        # No "connection.blocked" capability: the broker will not even tell us.
        login = f"\0{broker.user}\0{broker.password}"
        self.send(commands.Connection.StartOk(client_properties={}, response=login))
        tune = self.expect(commands.Connection.Tune)
        self.send(commands.Connection.TuneOk(tune.channel_max, tune.frame_max, heartbeat=0))
        self.send(commands.Connection.Open(virtual_host=broker.vhost))
        self.expect(commands.Connection.OpenOk)
        self.send(commands.Channel.Open(), channel=1)
        self.expect(commands.Channel.OpenOk)
        self.send(commands.Confirm.Select(), channel=1)
        self.expect(commands.Confirm.SelectOk)

    def send(self, value: Any, channel: int = 0) -> None:
        self.sock.sendall(frame.marshal(value, channel))

    def publish(self, queue: str, content: bytes) -> None:
        properties = commands.Basic.Properties(delivery_mode=2)
        self.send(commands.Basic.Publish(exchange="", routing_key=queue), 1)
        self.send(header.ContentHeader(0, len(content), properties), 1)
        self.send(body.ContentBody(content), 1)

    def next_frame(self, timeout: float) -> Any:
        """The next frame from the broker, or None if none came within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                used, _channel, value = frame.unmarshal(self.buffer)
            except UnmarshalingException:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.sock.settimeout(remaining)
                try:
                    chunk = self.sock.recv(65536)
                except TimeoutError:
                    return None
                assert chunk, "the broker closed the connection"
                self.buffer += chunk
                continue
            self.buffer = self.buffer[used:]
            return value

    def expect(self, kind: type) -> Any:
        value = self.next_frame(PATIENCE_S)
        assert isinstance(value, kind), f"expected {kind.__name__}, got {value!r}"
        return value

    def close(self) -> None:
        self.sock.close()


def test_broker_itself_withholds_the_confirm(broker: Broker) -> None:
    queue = unique_name("harness.raw")
    asyncio.run(publish_confirmed(broker.url, queue, b"declares the queue"))
    client = RawAmqp(broker)
    try:
        broker.faults.pause_confirms()
        client.publish(queue, b"raw")
        while_paused = client.next_frame(HELD_S)
        queued_while_paused = broker.cli.queue_messages(queue)
        broker.faults.resume_confirms()
        after = client.expect(commands.Basic.Ack)
    finally:
        client.close()

    assert while_paused is None, f"nothing may come while paused, got {while_paused!r}"
    assert queued_while_paused == 1, "the held message must not be routed yet"
    assert after.delivery_tag == 1
    assert broker.cli.queue_messages(queue) == 2


def test_credentials_and_loopback_only(broker: Broker) -> None:
    wrong = broker.url.replace(f":{broker.password}@", ":not-the-password@")
    with pytest.raises(aio_pika.exceptions.ProbableAuthenticationError):
        asyncio.run(aio_pika.connect(wrong))
    assert broker.url.startswith(f"amqp://{broker.user}:{broker.password}@127.0.0.1:")
    asyncio.run(publish_confirmed(broker.url, unique_name("harness.login"), b"ok"))
    listeners = json.loads(broker.cli.ctl("status", "--formatter", "json"))["listeners"]
    assert {listener["protocol"] for listener in listeners} >= {"amqp", "clustering"}
    assert {listener["interface"] for listener in listeners} == {"127.0.0.1"}


def test_memory_is_the_vm_resident_size(broker: Broker) -> None:
    reported = broker.cli.memory_bytes()
    status = Path(f"/proc/{broker.beam_pid}/status").read_text(encoding="ascii")
    rss_kib = next(int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:")
    assert rss_kib * 1024 / 2 < reported < rss_kib * 1024 * 2


def test_missing_queue_is_a_key_error(broker: Broker) -> None:
    with pytest.raises(KeyError, match="no queue"):
        broker.cli.queue_messages(unique_name("harness.absent"))


@pytest.fixture
def installed() -> None:
    reason = missing()
    if reason is not None:
        pytest.skip(reason)


@pytest.mark.usefixtures("installed")
def test_stop_leaves_no_process_and_no_directory() -> None:
    with Broker() as own:
        tree = own.processes()
        directory = own.directory
        assert own.beam_pid in tree
        assert len(tree) >= 2, "the VM and our epmd at least"
        own.faults.pause_confirms()  # stop() must not care about the state it finds
    assert [pid for pid in tree if alive(pid)] == []
    assert not directory.exists()


@pytest.mark.usefixtures("installed")
def test_failed_start_raises_with_the_log() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        own = Broker(port=taken.getsockname()[1])
        try:
            with pytest.raises(BrokerError, match="eaddrinuse"):
                own.start()
            assert not own.running
        finally:
            own.stop()


@pytest.mark.usefixtures("installed")
def test_owner_dying_takes_the_broker_with_it(tmp_path: Path) -> None:
    owner = textwrap.dedent(
        f"""
        import json, os, sys
        from shoe_testkit.broker import Broker
        broker = Broker(base_dir={str(tmp_path)!r})
        broker.start()
        print(json.dumps([broker.processes(), str(broker.directory)]), flush=True)
        sys.stdin.read()
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", owner],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        tree, directory = json.loads(process.stdout.readline())
        assert tree
        assert all(alive(pid) for pid in tree)
        process.send_signal(signal.SIGKILL)  # no stop(), no atexit, nothing
        process.wait(PATIENCE_S)
        wait_until(lambda: not any(alive(pid) for pid in tree), "the broker to die")
        wait_until(lambda: not Path(directory).exists(), "the directory to go")
    finally:
        process.kill()
        process.wait()
