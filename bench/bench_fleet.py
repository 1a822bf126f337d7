"""Benchmark: a fleet of tables publishing to one RabbitMQ broker, as ratios to a bare publisher.

The fleet bench. N simulated tables (N = 1, 10, 100, 300), each with its own journal
file, its own real `AmqpSink` and its own broker connection, fed a perfect dealer's shoe
through the real `Controller`; the tables are split over a few worker processes, each running
its share on one asyncio loop. They publish to one private RabbitMQ node on 127.0.0.1
(`shoe_testkit.broker`), into one durable classic queue bound to `table.#`.
Each table starts at its own point of the shoe (the shoe so far is committed and confirmed
before the window, and is not timed), as the tables of a floor are. Two paces:
  pace  each table takes one input every 2-3 s (uniformly at random, random phase), the
        shoe's own mix: cards, buttons, round results, insurance windows, the cut card;
  flat  each table records as fast as it can while fewer than --backlog (400, two sink
        batches) of its events await a confirm; without that bound the tables' commits on
        the shared loop starve their own sinks, which measures the packing of many tables
        into one process rather than the broker. Latency is then the backlog's; the
        throughput is the figure that counts.
Measured per run: events committed/s and confirmed/s (inside the window, and overall until
the last confirm), p50/p99 from commit (`Controller.submit` returned) to broker confirm
(`on_delivered(n)`), the broker's memory (resident, idle, with every connection open, once
all was confirmed, peak while publishing; and the VM's own count) and CPU, disk used by the
node, the time to open every connection, and that nothing was lost: the queue holds exactly
the events confirmed, and (unless --no-consume) every one is read back, de-duplicated by
message_id, each table's seqs 1..last complete and in order.

The baseline, measured in the same run with the same process layout: a bare aio-pika
publisher per table with publisher confirms, publishing the same messages (same bodies, same
headers and properties, the same 200-message window) with no table, journal or sink; its
"commit" is the moment a message is made. sink/bare ratios show what the controller's
journal-backed delivery costs over the broker itself.

Against a cluster: `--cluster 3` starts a private three-node cluster
(`shoe_testkit.broker.Cluster`) and gives every sink its nodes; `--urls URL,URL,...` names
the nodes of a cluster already running (its figures are then the publishers' only: the
broker's memory, CPU and disk are read on the nodes the bench started). Either way each sink
shuffles the nodes and connects to the first (delivery/amqp_nodes.py), and the bare
publisher of the same table connects to that same node, so both spread alike; the queue is
then a quorum queue (led by the first node).

Run: python bench/bench_fleet.py [--quick] [--tables 1,10,100,300] [--workers 2]
         [--modes pace,flat] [--dir DIR (the journals' disk)] [--queue-type classic|quorum]
         [--cluster N | --urls URL,URL,...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import math
import multiprocessing
import os
import random
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import aio_pika
import structlog
from latency import percentile
from shoe_testkit.broker import Broker, Cluster, missing
from shoe_testkit.perfect_dealer import deal_shoe

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.amqp import HEADER_SEQ, AmqpConfig, AmqpSink
from shoe_controller.delivery.amqp_nodes import shuffled
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.service.config import from_mapping
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.inputs import Input

SINK = "broker"  # takes every event: its seqs are the journal's
PACE_S = (2.0, 3.0)  # seconds between a dealing table's inputs
WINDOW = 200  # messages in flight per table: AmqpConfig's default, the same for the baseline
SETUP_TIMEOUT_S = 180.0
DRAIN_TIMEOUT_S = 180.0
CONTENDERS = ("bare", "sink")
MB = 1024 * 1024


# ---------------------------------------------------------------------- pure parts


def table_rand(index: int) -> Callable[[], float]:
    """Table `index`'s random draws: the first orders its nodes, for sink and bare alike."""
    return random.Random(f"table {index}").random


def table_id(index: int) -> str:
    return f"t{index:04d}"


def controller_id(index: int) -> str:
    return f"fleet-{table_id(index)}"


def split(tables: int, workers: int) -> list[range]:
    """Table indexes per worker: as even as can be, never an empty worker."""
    workers = max(1, min(workers, tables))
    base, extra = divmod(tables, workers)
    ranges, start = [], 0
    for n in range(workers):
        size = base + (1 if n < extra else 0)
        ranges.append(range(start, start + size))
        start += size
    return ranges


class Ledger:
    """One table's commit and confirm times: latencies, and what was confirmed in the window."""

    def __init__(self) -> None:
        self._committed_at: dict[int, float] = {}
        self._through = 0
        self.last = 0  # the last seq committed
        self.committed = 0  # how many committed (not counting a preloaded start)
        self.preloaded = 0  # seqs 1..preloaded were in the journal, delivered, before the run
        self.confirmed = 0  # how many confirmed
        self.latencies: list[float] = []
        self.window_end = math.inf
        self.in_window = 0  # confirmed before window_end

    def preload(self, through: int) -> None:
        """Seqs up to `through` were delivered before the measurement: not timed, not
        counted, not expected in the consumer queue."""
        self._through = self.last = self.preloaded = through

    def commit(self, seqs: Sequence[int], at: float) -> None:
        for seq in seqs:
            self._committed_at[seq] = at
            self.last = max(self.last, seq)
            self.committed += 1

    def confirm(self, seq: int, at: float) -> None:
        committed = self._committed_at.pop(seq, None)
        if committed is None:
            return  # confirmed twice (a resend): counted once
        self.confirmed += 1
        self.latencies.append(at - committed)
        if at <= self.window_end:
            self.in_window += 1

    def confirm_through(self, through: int, at: float) -> None:
        """The sink's `on_delivered(through)`: every seq up to `through` is confirmed."""
        for seq in range(self._through + 1, through + 1):
            self.confirm(seq, at)
        self._through = max(self._through, through)

    @property
    def outstanding(self) -> int:
        return len(self._committed_at)


@dataclasses.dataclass(frozen=True)
class DeliveryCheck:
    """What the consumer queue held against what the tables had confirmed."""

    received: int
    distinct: int
    missing: int  # confirmed seqs never read back
    duplicates: int  # read back more than once (allowed: consumers de-duplicate)
    out_of_order: int  # a table's first sight of a seq below one already seen
    unexpected: int  # seqs read back that no table reported

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.out_of_order == 0 and self.unexpected == 0


def check_delivery(
    received: Mapping[str, Sequence[int]], expected: Mapping[str, range]
) -> DeliveryCheck:
    """Each table's seqs as read from the queue (by message_id, in queue order) against the
    seqs it published and saw confirmed: every one must be there, first sightings in order."""
    total = distinct = missing_count = duplicates = out_of_order = unexpected = 0
    for table in set(received) | set(expected):
        seqs = received.get(table, ())
        wanted = expected.get(table, range(0))
        seen: set[int] = set()
        highest = 0
        for seq in seqs:
            total += 1
            if seq in seen:
                duplicates += 1
                continue
            seen.add(seq)
            if seq < highest:
                out_of_order += 1
            highest = max(highest, seq)
            if seq not in wanted:
                unexpected += 1
        distinct += len(seen)
        missing_count += sum(1 for seq in wanted if seq not in seen)
    return DeliveryCheck(total, distinct, missing_count, duplicates, out_of_order, unexpected)


def shoe_offset(index: int, length: int) -> int:
    """Where in the shoe table `index` stands when the run starts: tables on a floor are at
    every point of their shoes (a fresh shoe opens with a dozen burn cards and no events),
    and each table of a contender stands where the same table of the other one does."""
    return random.Random(index).randrange(length)


def shoe_inputs(seed: int = 16) -> list[Input]:
    """A whole correctly dealt 8-deck shoe, as its devices report it."""
    config = from_mapping({"table": {"id": "fleet"}}).procedures
    cards = [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]
    random.Random(seed).shuffle(cards)
    return deal_shoe(cards, config, cut_after=400).inputs


def event_groups(inputs: Sequence[Input], directory: Path) -> list[list[dict[str, Any]]]:
    """The events each input gives, in wire form (the baseline publishes these)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "template.db"
    with Journal.open(path, "template", routes={SINK: lambda _type: True}) as journal:
        controller = Controller(from_mapping({}).procedures, journal)
        groups = [[event.to_wire() for event in controller.submit(item)] for item in inputs]
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()
    return groups


def message(
    key: pushapi.SigningKey, controller: str, wire: Mapping[str, Any], seq: int
) -> aio_pika.Message:
    """The baseline's message, built as AmqpSink._message builds the sink's."""
    event = dict(wire, seq=seq, id=f"{controller}:{seq}")
    body = json.dumps(event, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    signed = pushapi.signed_headers(key, controller, time.time(), body)
    return aio_pika.Message(
        body,
        content_type="application/json",
        content_encoding="utf-8",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        message_id=event["id"],
        type=event["type"],
        app_id="shoe-controller",
        headers={HEADER_SEQ: seq, **{name: signed[name] for name in pushapi.SIGNED_HEADERS}},
    )


# ---------------------------------------------------------------------- the worker's tables


@dataclasses.dataclass(frozen=True)
class WorkerSpec:
    contender: str  # "bare" or "sink"
    mode: str  # "pace" or "flat"
    tables: range
    urls: tuple[str, ...]  # the broker's nodes (one for a single node)
    exchange: str
    directory: str
    seconds: float
    seed: int
    backlog: int  # flat: a sink table waits while this many events are unconfirmed (0: never)


class SinkTable:
    """A real table: Controller, journal file, AmqpSink with its own connection."""

    def __init__(self, index: int, spec: WorkerSpec, inputs: Sequence[Input], key: Path) -> None:
        self.index = index
        self.ledger = Ledger()
        self._inputs = inputs
        self._next = 0
        path = Path(spec.directory) / f"{table_id(index)}.db"
        self.journal = Journal.open(path, controller_id(index), routes={SINK: lambda _type: True})
        self.controller = Controller(from_mapping({}).procedures, self.journal)
        self._next = shoe_offset(index, len(inputs))
        if self._next:
            # The shoe so far, in one transaction, and marked delivered as if an earlier run
            # had sent it: the run starts mid-shoe without a catch-up storm before it.
            stored = self.controller.submit_many(inputs[: self._next])
            if stored:
                self.journal.sinks.mark_delivered(SINK, stored[-1].seq)
                self.ledger.preload(stored[-1].seq)
        config = AmqpConfig(
            url=spec.urls[0],
            urls=spec.urls if len(spec.urls) > 1 else (),
            table_id=table_id(index),
            controller_id=controller_id(index),
            key_file=key,
            exchange=spec.exchange,
            window=WINDOW,
        )
        self.sink = AmqpSink(
            SINK,
            SinkBacklog(self.journal, SINK),
            config,
            on_delivered=self._delivered,
            rand=table_rand(index),  # its nodes' order: the bare table of this index's too
        )
        self._task: asyncio.Task[None] | None = None
        self._backlog = spec.backlog
        self._progress = asyncio.Event()

    def _delivered(self, through: int) -> None:
        self.ledger.confirm_through(through, time.monotonic())
        self._progress.set()

    async def start(self) -> None:
        self._task = asyncio.create_task(self.sink.run())
        while True:  # connected, resynced, and the shoe so far confirmed
            delivered = self.sink.status().delivered_through
            if delivered is not None and delivered >= self.ledger.preloaded:
                return
            await asyncio.sleep(0.05)

    async def step_paced(self) -> None:
        """One input through the table, committed; the sink told."""
        item = self._inputs[self._next % len(self._inputs)]
        self._next += 1
        stored = self.controller.submit(item)
        self.ledger.commit([event.seq for event in stored], time.monotonic())
        self.sink.notify()

    async def step_flat(self) -> None:
        """The next input as soon as fewer than `backlog` events await their confirm."""
        while self._backlog and self.ledger.outstanding >= self._backlog:
            self._progress.clear()
            await self._progress.wait()
        await self.step_paced()

    async def close(self) -> str | None:
        self.sink.stop()
        if self._task is not None:
            await self._task
        error = self.sink.status().last_error
        self.journal.close()
        return error


class BareTable:
    """The baseline: one aio-pika connection with confirms publishing the same messages."""

    def __init__(self, index: int, spec: WorkerSpec, groups: Sequence[Any], key: Path) -> None:
        self.index = index
        self.ledger = Ledger()
        self._groups = groups
        self._next = shoe_offset(index, len(groups))
        self._seq = 0
        self._spec = spec
        self._key = pushapi.SigningKey.from_file(key)
        node = shuffled(spec.urls, table_rand(index))[0]  # the sink's first node
        self._config = AmqpConfig(
            url=node, table_id=table_id(index), controller_id="-", key_file=key
        )
        self._window = asyncio.Semaphore(WINDOW)
        self._connection: aio_pika.abc.AbstractConnection | None = None
        self._exchange: aio_pika.abc.AbstractExchange | None = None
        self._in_flight: set[asyncio.Future[Any]] = set()
        self.failures = 0

    async def start(self) -> None:
        self._connection = await aio_pika.connect(**self._config.connect_options())
        channel = await self._connection.channel(publisher_confirms=True)
        self._exchange = await channel.declare_exchange(
            self._spec.exchange, aio_pika.ExchangeType.TOPIC, durable=True
        )

    def _made(self) -> list[tuple[int, aio_pika.Message, str]]:
        group = self._groups[self._next % len(self._groups)]
        self._next += 1
        made = []
        for wire in group:
            self._seq += 1
            made.append(
                (
                    self._seq,
                    message(self._key, controller_id(self.index), wire, self._seq),
                    self._config.routing_key(wire["type"]),
                )
            )
        self.ledger.commit([seq for seq, _, _ in made], time.monotonic())
        return made

    def _publish(self, seq: int, item: aio_pika.Message, routing_key: str) -> None:
        assert self._exchange is not None
        future = asyncio.ensure_future(self._exchange.publish(item, routing_key))
        self._in_flight.add(future)
        future.add_done_callback(partial(self._confirmed, seq))

    def _confirmed(self, seq: int, future: asyncio.Future[Any]) -> None:
        self._in_flight.discard(future)
        self._window.release()
        if future.cancelled() or future.exception() is not None:
            self.failures += 1
            return
        self.ledger.confirm(seq, time.monotonic())

    async def step_paced(self) -> None:
        for seq, item, routing_key in self._made():
            await self._window.acquire()
            self._publish(seq, item, routing_key)

    step_flat = step_paced

    async def close(self) -> str | None:
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=DRAIN_TIMEOUT_S)
        if self._connection is not None:
            await self._connection.close()
        return f"{self.failures} publishes failed" if self.failures else None


async def paced(
    step: Callable[[], Awaitable[None]], start: float, end: float, rng: random.Random
) -> None:
    """Steps at dealing pace: one every PACE_S seconds, from a random phase."""
    next_at = start + rng.uniform(0, PACE_S[1])
    while next_at < end:
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await step()
        next_at += rng.uniform(*PACE_S)


async def flat_out(step: Callable[[], Awaitable[None]], end: float) -> None:
    """Steps as fast as this table can, letting the other tables on the loop run between."""
    while time.monotonic() < end:
        await step()
        await asyncio.sleep(0)


@dataclasses.dataclass(frozen=True)
class Rendezvous:
    """Where the main process and the workers meet: all connected (`ready`), the common start
    (`go`, at `go_at` on the shared monotonic clock), all confirmed (`drained`, connections
    still open for the memory reading), and leave to close (`release`)."""

    ready: Any
    go: Any
    drained: Any
    release: Any
    go_at: Any

    @classmethod
    def for_workers(cls, context: Any, workers: int) -> Rendezvous:
        barriers = [context.Barrier(workers + 1) for _ in range(4)]
        return cls(*barriers, go_at=context.Value("d", 0.0))

    def abort(self) -> None:
        for barrier in (self.ready, self.go, self.drained, self.release):
            barrier.abort()


async def run_worker(spec: WorkerSpec, meet: Rendezvous) -> dict[str, Any]:
    directory = Path(spec.directory)
    key = directory / "table.key"
    inputs = shoe_inputs()
    tables: list[SinkTable | BareTable]
    if spec.contender == "sink":
        tables = [SinkTable(index, spec, inputs, key) for index in spec.tables]
    else:
        groups = event_groups(inputs, directory / f"template-{spec.tables.start}")
        tables = [BareTable(index, spec, groups, key) for index in spec.tables]
    began = time.monotonic()
    await asyncio.gather(*(table.start() for table in tables))
    connect_s = time.monotonic() - began
    await asyncio.to_thread(meet.ready.wait, SETUP_TIMEOUT_S)
    await asyncio.to_thread(meet.go.wait, SETUP_TIMEOUT_S)
    start = meet.go_at.value
    end = start + spec.seconds
    for table in tables:
        table.ledger.window_end = end
    await asyncio.sleep(max(0.0, start - time.monotonic()))
    cpu_start = time.process_time()
    rng = random.Random(spec.seed)
    runs = []
    for table in tables:
        if spec.mode == "pace":
            runs.append(paced(table.step_paced, start, end, rng))
        else:
            runs.append(flat_out(table.step_flat, end))
    await asyncio.gather(*runs)
    cpu_s = time.process_time() - cpu_start
    stopped = time.monotonic()
    backlog = sum(table.ledger.outstanding for table in tables)
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while any(table.ledger.outstanding for table in tables) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    finished = time.monotonic()
    drained_s = finished - stopped
    await asyncio.to_thread(meet.drained.wait, DRAIN_TIMEOUT_S + 60)
    await asyncio.to_thread(meet.release.wait, SETUP_TIMEOUT_S)
    errors = [error for error in [await table.close() for table in tables] if error]
    return {
        "latencies": [lat for table in tables for lat in table.ledger.latencies],
        "committed": sum(table.ledger.committed for table in tables),
        "preloaded": sum(table.ledger.preloaded for table in tables),
        "finished_s": finished - start,
        "in_window": sum(table.ledger.in_window for table in tables),
        "unconfirmed": sum(table.ledger.outstanding for table in tables),
        "published": {
            table_id(table.index): range(table.ledger.preloaded + 1, table.ledger.last + 1)
            for table in tables
        },
        "connect_s": connect_s,
        "cpu_s": cpu_s,
        "backlog_at_end": backlog,
        "drain_s": drained_s,
        "errors": errors[:3],
    }


def worker_main(spec: WorkerSpec, meet: Rendezvous, results: Any) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    try:
        results.put(asyncio.run(run_worker(spec, meet)))
    except BaseException as error:
        meet.abort()
        results.put({"failed": f"{type(error).__name__}: {error}"})
        raise


# ---------------------------------------------------------------------- the broker's side


class BrokerSampler:
    """The broker VMs' resident memory and CPU (summed over a cluster's nodes), read from
    /proc (no rabbitmqctl: that boots an Erlang VM of its own, a CPU burst that would
    disturb the measurement). No pids (a cluster the bench did not start): zeros."""

    def __init__(self, pids: Sequence[int], every_s: float = 0.25) -> None:
        self._pids = list(pids)
        self._every = every_s
        self.peak_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> BrokerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_rss = max(self.peak_rss, self.rss())
            self._stop.wait(self._every)

    def rss(self) -> int:
        return sum(_rss(pid) for pid in self._pids)

    def cpu_s(self) -> float:
        return sum(_cpu_s(pid) for pid in self._pids)


def _rss(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _cpu_s(pid: int) -> float:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass(frozen=True)
class BrokerMemory:
    """The node's memory as it accounts for it (`rabbitmqctl status`, the VM's own total)."""

    rss: int  # what the memory alarm compares with its watermark (NodeCli.memory_bytes)
    total: int  # the VM's own allocation count (for a 4 MB socket buffer, see docs/fleet.md)
    connections: int  # readers, writers, channels and the rest of every connection
    queues: int  # the queue processes (a classic queue keeps its messages there too)
    binary: int  # message bodies and other large binaries

    @classmethod
    def of(cls, broker: Broker) -> BrokerMemory:
        memory = json.loads(broker.cli.ctl("status", "--formatter", "json"))["memory"]
        return cls(
            rss=int(memory["total"]["rss"]),
            total=int(memory["total"]["erlang"]),
            connections=sum(int(v) for k, v in memory.items() if k.startswith("connection_")),
            queues=int(memory["queue_procs"]) + int(memory.get("quorum_queue_procs", 0)),
            binary=int(memory["binary"]),
        )

    @classmethod
    def summed(cls, nodes: Sequence[Broker]) -> BrokerMemory:
        """Summed over a cluster's nodes (zeros when the bench started none)."""
        each = [cls.of(node) for node in nodes]
        return cls(*(sum(getattr(m, f.name) for m in each) for f in dataclasses.fields(cls)))


@dataclasses.dataclass(frozen=True)
class Target:
    """Where the tables publish: the nodes' URLs, and the nodes themselves when the bench
    started them (their memory, CPU and disk are read; an outside cluster's are not)."""

    urls: tuple[str, ...]
    nodes: tuple[Broker, ...]
    description: str

    @property
    def url(self) -> str:
        return self.urls[0]

    def disk(self) -> int:
        return sum(tree_bytes(node.directory / "mnesia") for node in self.nodes)

    def pids(self) -> list[int]:
        return [node.beam_pid for node in self.nodes if node.beam_pid is not None]


def tree_bytes(path: Path) -> int:
    total = 0
    for item in path.rglob("*"):
        with contextlib.suppress(OSError):
            if item.is_file():
                total += item.stat().st_size
    return total


async def declare_queue(url: str, exchange: str, queue: str, queue_type: str) -> None:
    async with await aio_pika.connect(url) as connection:
        channel = await connection.channel()
        declared = await channel.declare_exchange(
            exchange, aio_pika.ExchangeType.TOPIC, durable=True
        )
        # A one-node quorum queue measures the Raft log's cost, not its replication; a
        # SIGKILLed one-node quorum queue does not recover here (docs/amqp.md), so the
        # default is classic.
        arguments = {"x-queue-type": queue_type}
        bound = await channel.declare_queue(queue, durable=True, arguments=arguments)
        await bound.bind(declared, routing_key="table.#")


async def delete_queue(url: str, exchange: str, queue: str) -> None:
    async with await aio_pika.connect(url) as connection:
        channel = await connection.channel()
        await channel.queue_delete(queue)
        await channel.exchange_delete(exchange)


async def read_back(url: str, queue: str, count: int) -> dict[str, list[int]]:
    """Consume the queue: at least `count` messages, then on until it is quiet for a second
    (10 s while fewer); seqs by table, taken from message_id (the consumers' de-duplication
    key), in queue order. Acked as read: nothing left unread is lost to the next reading."""
    received: dict[str, list[int]] = {}
    seen = 0
    async with await aio_pika.connect(url) as connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=2000)
        source = await channel.declare_queue(queue, passive=True)
        async with source.iterator() as messages:
            while True:
                try:
                    item = await asyncio.wait_for(
                        messages.__anext__(), 1.0 if seen >= count else 10.0
                    )
                except (TimeoutError, StopAsyncIteration):
                    break
                controller, _, seq = (item.message_id or "").rpartition(":")
                received.setdefault(controller.removeprefix("fleet-"), []).append(int(seq))
                seen += 1
                if seen % 500 == 0:
                    await item.ack(multiple=True)
                last = item
            if seen:
                await last.ack(multiple=True)
    return received


async def queue_length(url: str, queue: str) -> int:
    """The queue's messages as its declare-ok counts them (any broker, no CLI)."""
    async with await aio_pika.connect(url) as connection:
        channel = await connection.channel()
        declared = await channel.declare_queue(queue, passive=True)
        return int(declared.declaration_result.message_count or 0)


def settled_count(target: Target, queue: str, expected: int, patience_s: float = 30.0) -> int:
    """The queue's message count once it reaches `expected` or stops growing: a quorum
    queue reports its count every few seconds, not at once."""

    def count_now() -> int:
        if target.nodes:
            return next(n for n in target.nodes if n.running).cli.queue_messages(queue)
        return asyncio.run(queue_length(target.url, queue))

    deadline = time.monotonic() + patience_s
    count, previous, steady = count_now(), -1, 0
    while count < expected and time.monotonic() < deadline and steady < 5:
        time.sleep(1.0)
        previous, count = count, count_now()
        steady = steady + 1 if count == previous else 0
    return count


@dataclasses.dataclass
class RunResult:
    mode: str
    tables: int
    contender: str
    workers: int
    seconds: float
    committed: int
    preloaded: int
    finished_s: float  # from the start until every event was confirmed
    in_window: int
    unconfirmed: int
    latencies: list[float]
    connect_s: float
    worker_cpu_s: float
    backlog_at_end: int
    drain_s: float
    memory_idle: BrokerMemory
    memory_connected: BrokerMemory
    rss_peak: int
    memory_end: BrokerMemory
    broker_cpu_s: float  # in the window
    broker_cpu_total_s: float  # from the start until every event was confirmed
    disk_bytes: int
    queued: int
    check: DeliveryCheck | None
    errors: list[str]

    @property
    def committed_per_s(self) -> float:
        return self.committed / self.seconds

    @property
    def confirmed_per_s(self) -> float:
        return self.in_window / self.seconds

    @property
    def overall_per_s(self) -> float:
        """Events confirmed over the time until the last one was: the sustained rate."""
        confirmed = self.committed - self.unconfirmed
        return confirmed / max(self.seconds, self.finished_s)

    def p(self, q: float) -> float:
        return percentile(self.latencies, q) if self.latencies else math.nan

    @property
    def lossless(self) -> bool:
        """Every event confirmed is in the queue, at least once (a sink resends what the
        broker did not confirm in time; consumers de-duplicate by message_id)."""
        confirmed = self.committed - self.unconfirmed
        if self.unconfirmed or self.queued < confirmed:
            return False
        check = self.check
        return check is None or (check.ok and check.distinct == confirmed)


def worker_failure(results: Any) -> str:
    """What a worker that broke the barrier reported."""
    with contextlib.suppress(Exception):
        while True:
            report = results.get(timeout=5.0)
            if "failed" in report:
                return f"a worker failed: {report['failed']}"
    return "a worker did not get ready"


def run_one(
    target: Target, args: argparse.Namespace, *, mode: str, tables: int, contender: str, seed: int
) -> RunResult:
    seconds = args.pace_seconds if mode == "pace" else args.flat_seconds
    name = f"fleet.{mode}.{tables}.{contender}.{secrets.token_hex(3)}"
    exchange, queue = f"{name}.events", f"{name}.all"
    asyncio.run(declare_queue(target.url, exchange, queue, args.queue_type))
    memory_idle = BrokerMemory.summed(target.nodes)
    disk_before = target.disk()
    context = multiprocessing.get_context("spawn")
    layout = split(tables, args.workers)
    meet = Rendezvous.for_workers(context, len(layout))
    results = context.Queue()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-", dir=args.dir) as tmp:
        (Path(tmp) / "table.key").write_text("fleet bench secret\n", encoding="utf-8")
        workers = [
            context.Process(
                target=worker_main,
                args=(
                    WorkerSpec(
                        contender,
                        mode,
                        share,
                        target.urls,
                        exchange,
                        tmp,
                        seconds,
                        seed + n,
                        args.backlog,
                    ),
                    meet,
                    results,
                ),
                daemon=True,
            )
            for n, share in enumerate(layout)
        ]
        for worker in workers:
            worker.start()
        try:
            try:
                meet.ready.wait(SETUP_TIMEOUT_S)
                memory_connected = BrokerMemory.summed(target.nodes)
                with BrokerSampler(target.pids()) as sampler:
                    meet.go_at.value = time.monotonic() + 0.2
                    meet.go.wait(SETUP_TIMEOUT_S)
                    cpu_start = sampler.cpu_s()
                    time.sleep(max(0.0, meet.go_at.value + seconds - time.monotonic()))
                    broker_cpu_s = sampler.cpu_s() - cpu_start
                    meet.drained.wait(DRAIN_TIMEOUT_S + 60)
                    broker_cpu_total_s = sampler.cpu_s() - cpu_start
                memory_end = BrokerMemory.summed(target.nodes)  # all confirmed, still connected
                meet.release.wait(SETUP_TIMEOUT_S)
            except threading.BrokenBarrierError:
                failure = worker_failure(results)
                raise RuntimeError(f"{mode} {tables} {contender}: {failure}") from None
            reports = [results.get(timeout=SETUP_TIMEOUT_S) for _ in workers]
            for worker in workers:
                worker.join(60)
        finally:
            for worker in workers:
                if worker.is_alive():
                    worker.terminate()
                    worker.join()
    failed = [report["failed"] for report in reports if "failed" in report]
    if failed:
        raise RuntimeError(f"{mode} {tables} {contender}: a worker failed: {failed[0]}")
    confirmed = sum(report["committed"] - report["unconfirmed"] for report in reports)
    queued = settled_count(target, queue, confirmed)
    disk_bytes = target.disk() - disk_before
    published = {table: seqs for report in reports for table, seqs in report["published"].items()}
    check = None
    if not args.no_consume:
        check = check_delivery(
            asyncio.run(read_back(target.url, queue, max(queued, confirmed))), published
        )
    asyncio.run(delete_queue(target.url, exchange, queue))
    return RunResult(
        mode=mode,
        tables=tables,
        contender=contender,
        workers=len(layout),
        seconds=seconds,
        committed=sum(report["committed"] for report in reports),
        preloaded=sum(report["preloaded"] for report in reports),
        finished_s=max(report["finished_s"] for report in reports),
        in_window=sum(report["in_window"] for report in reports),
        unconfirmed=sum(report["unconfirmed"] for report in reports),
        latencies=[lat for report in reports for lat in report["latencies"]],
        connect_s=max(report["connect_s"] for report in reports),
        worker_cpu_s=sum(report["cpu_s"] for report in reports),
        backlog_at_end=sum(report["backlog_at_end"] for report in reports),
        drain_s=max(report["drain_s"] for report in reports),
        memory_idle=memory_idle,
        memory_connected=memory_connected,
        rss_peak=sampler.peak_rss,
        memory_end=memory_end,
        broker_cpu_s=broker_cpu_s,
        broker_cpu_total_s=broker_cpu_total_s,
        disk_bytes=disk_bytes,
        queued=queued,
        check=check,
        errors=[error for report in reports for error in report["errors"]][:3],
    )


# ---------------------------------------------------------------------- printing

DELIVERY_HEADER = (
    f"{'mode':<5} {'tables':>6} {'publisher':<9} {'commit/s':>9} {'confirm/s':>9}"
    f" {'overall/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'events':>7}  delivered"
)
BROKER_HEADER = (
    f"{'mode':<5} {'tables':>6} {'publisher':<9} {'RSS MB idle/conn/end/peak':>25}"
    f" {'erl MB':>6} {'buf MB':>6} {'KB/conn':>7} {'brk cores':>9} {'brk us/ev':>9}"
    f" {'wrk cores':>9} {'conn s':>6} {'drain s':>7} {'disk B/ev':>9}"
)


LEGEND = """
commit/s   events committed per second (bare: messages made); confirm/s: confirmed inside
           the window; overall/s: all confirmed over the time until the last one was
p50/p99    commit to broker confirm, over every event committed in the window
delivered  the queue holds every event confirmed, read back and de-duplicated by message_id:
           none missing, each table in order; dup: sent again after a confirm timed out
RSS MB     the broker's resident memory (NodeCli.memory_bytes; a cluster's nodes summed):
           before the run, with every connection open, once all was confirmed (queue full,
           connections open); peak: sampled from /proc while publishing
erl MB     the VM's own count at the end; buf MB: of it, binaries (socket buffers, bodies)
KB/conn    the connection processes' memory per table at the end
brk cores  broker CPU cores busy in the window; brk us/ev: broker CPU from the start until
           all was confirmed, per event (its idle work included: large at dealing pace)
wrk cores  the publishing processes' CPU; conn s: time to open every connection
drain s    after the last commit until every event was confirmed
disk B/ev  what the data directories grew by, per message queued (a cluster: every replica)"""


def delivery_row(result: RunResult) -> str:
    check = result.check
    verdict = "ok" if result.lossless else "LOST?"
    detail = f"queue {result.queued}"
    if check is not None:
        detail += f", read {check.received} ({check.duplicates} dup, {check.missing} missing)"
    if result.unconfirmed:
        detail += f", {result.unconfirmed} unconfirmed"
    if result.errors:
        detail += f", errors: {result.errors[0]}"
    return (
        f"{result.mode:<5} {result.tables:>6} {result.contender:<9}"
        f" {result.committed_per_s:>9.1f} {result.confirmed_per_s:>9.1f}"
        f" {result.overall_per_s:>9.1f} {result.p(0.50) * 1e3:>9.2f}"
        f" {result.p(0.99) * 1e3:>9.2f} {len(result.latencies):>7}"
        f"  {verdict}: {detail}"
    )


def broker_row(result: RunResult) -> str:
    memory = (
        f"{result.memory_idle.rss / MB:.0f}/{result.memory_connected.rss / MB:.0f}/"
        f"{result.memory_end.rss / MB:.0f}/{result.rss_peak / MB:.0f}"
    )
    per_connection = result.memory_end.connections / result.tables / 1024
    confirmed = result.committed - result.unconfirmed
    per_event = result.broker_cpu_total_s / confirmed * 1e6 if confirmed else math.nan
    per_message = result.disk_bytes / result.queued if result.queued else math.nan
    return (
        f"{result.mode:<5} {result.tables:>6} {result.contender:<9} {memory:>25}"
        f" {result.memory_end.total / MB:>6.0f} {result.memory_end.binary / MB:>6.0f}"
        f" {per_connection:>7.0f}"
        f" {result.broker_cpu_s / result.seconds:>9.2f} {per_event:>9.0f}"
        f" {result.worker_cpu_s / result.seconds:>9.2f} {result.connect_s:>6.2f}"
        f" {result.drain_s:>7.2f} {per_message:>9.0f}"
    )


def ratio_row(sink: RunResult, bare: RunResult) -> str:
    def ratio(ours: float, base: float) -> str:
        return f"{ours / base:.2f}x" if base > 0 and math.isfinite(base) else "n/a"

    return (
        f"{'':<5} {'':>6} {'sink/bare':<9} {'':>9}"
        f" {ratio(sink.confirmed_per_s, bare.confirmed_per_s):>9}"
        f" {ratio(sink.overall_per_s, bare.overall_per_s):>9}"
        f" {ratio(sink.p(0.50), bare.p(0.50)):>9} {ratio(sink.p(0.99), bare.p(0.99)):>9}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 1, 10 for a few seconds")
    parser.add_argument("--tables", default=None, help="comma-separated N (1,10,100,300)")
    parser.add_argument("--modes", default="pace,flat", help="pace, flat or both")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (2 cores)")
    parser.add_argument("--pace-seconds", type=float, default=None)
    parser.add_argument("--flat-seconds", type=float, default=None)
    parser.add_argument(
        "--backlog",
        type=int,
        default=2 * WINDOW,
        help="flat: a table records while fewer events than this await their confirm"
        " (0: without limit; the loop then spends itself on commits)",
    )
    parser.add_argument("--no-consume", action="store_true", help="count the queue only")
    parser.add_argument(
        "--queue-type", choices=("classic", "quorum"), default="classic", help="the consumer queue"
    )
    parser.add_argument("--dir", default=None, help="where the journals go (their disk)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--cluster", type=int, default=0, help="start a private N-node cluster")
    where.add_argument("--urls", default="", help="a running cluster's nodes, comma-separated")
    args = parser.parse_args(argv)
    reason = missing()
    if reason is not None and not args.urls:
        print(f"no broker here: {reason}", file=sys.stderr)
        return 2
    tables = [
        int(n) for n in (args.tables or ("1,10" if args.quick else "1,10,100,300")).split(",")
    ]
    modes = [mode for mode in args.modes.split(",") if mode]
    if args.pace_seconds is None:
        args.pace_seconds = 6.0 if args.quick else 25.0
    if args.flat_seconds is None:
        args.flat_seconds = 3.0 if args.quick else 12.0
    if (args.cluster or args.urls) and args.queue_type == "classic":
        args.queue_type = "quorum"  # a cluster's consumers use quorum queues (docs/amqp.md)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    with target_of(args) as target:
        print(
            f"fleet bench: {target.description}, {os.cpu_count()} cores,"
            f" up to {args.workers} worker processes, one connection per table,"
            f" one durable {args.queue_type} queue bound to table.#, journals in"
            f" {args.dir or tempfile.gettempdir()}; pace = an input every"
            f" {PACE_S[0]:g}-{PACE_S[1]:g} s per table ({args.pace_seconds:g} s),"
            f" flat = as fast as each table can ({args.flat_seconds:g} s)"
        )
        done = run_all(target, args, tables, modes)
    print(LEGEND)
    return 1 if any(not result.lossless for result in done) else 0


@contextlib.contextmanager
def target_of(args: argparse.Namespace) -> Iterator[Target]:
    """The broker the tables publish to: a private node, a private cluster, or the nodes
    named by --urls."""
    base_dir = Path(args.dir) if args.dir else None
    if args.urls:
        urls = tuple(url.strip() for url in args.urls.split(",") if url.strip())
        yield Target(urls, (), f"the cluster of {len(urls)} node(s) at --urls")
    elif args.cluster:
        with Cluster(args.cluster, base_dir=base_dir) as cluster:
            version = cluster.nodes[0].cli.ctl("version").strip()
            description = f"RabbitMQ {version}, a cluster of {args.cluster} nodes on 127.0.0.1"
            yield Target(tuple(cluster.urls), tuple(cluster.nodes), description)
    else:
        with Broker(base_dir=base_dir) as broker:
            version = broker.cli.ctl("version").strip()
            yield Target((broker.url,), (broker,), f"RabbitMQ {version} (one node, 127.0.0.1)")


def run_all(
    target: Target, args: argparse.Namespace, tables: list[int], modes: list[str]
) -> list[RunResult]:
    """Each mode and N, bare then sink, with their rows and ratios printed as they come."""
    print(DELIVERY_HEADER)
    done: list[RunResult] = []
    seed = 0
    for mode in modes:
        for count in tables:
            seed += 1000
            results = {
                contender: run_one(
                    target, args, mode=mode, tables=count, contender=contender, seed=seed
                )
                for contender in CONTENDERS
            }
            for contender in CONTENDERS:
                print(delivery_row(results[contender]), flush=True)
                done.append(results[contender])
            print(ratio_row(results["sink"], results["bare"]), flush=True)
    if target.nodes:  # the broker's side: only of nodes the bench started and can read
        print(f"\nthe broker ({len(target.nodes)} node(s), summed) during the same runs")
        print(BROKER_HEADER)
        for result in done:
            print(broker_row(result))
    return done


if __name__ == "__main__":
    sys.exit(main())
