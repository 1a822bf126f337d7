"""Test support for the broker sinks' tests: a journal fed a real shoe, and a sink on it.

Not a test module. `Table` numbers events for the sinks it is given routes for; `amqp_sink`
makes an AmqpSink on it with quick retries; `running` and `stopped` start and stop a sink's
task, `delivered_all` says when it confirmed everything the journal numbered for it and
`delivered` runs it until then; `suspended` holds a queue's confirms.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from shoe_controller.delivery.amqp import AmqpConfig, AmqpSink
from shoe_controller.delivery.sink import Backoff, Sink
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.service.config import from_mapping
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.vocab.cards import Card, Suit
from shoe_testkit.broker import Broker
from shoe_testkit.delivery import CONTROLLER_ID, TABLE_ID
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.waiting import PATIENCE_S, eventually

BROKER = "studio"


def shoe_inputs(seed: int = 16) -> list[Any]:
    """The inputs of a whole correctly dealt 8-deck shoe (some 80 rounds), shuffled by `seed`."""
    config = from_mapping({"table": {"id": TABLE_ID}}).procedures
    cards = [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]
    random.Random(seed).shuffle(cards)
    return deal_shoe(cards, config, cut_after=400).inputs


class Table:
    """A journal numbering events for the broker sink (and any others), fed a real shoe."""

    def __init__(self, path: Path, routes: dict[str, Callable[[str], bool]]) -> None:
        self.journal = Journal.open(path, CONTROLLER_ID, routes=routes)
        self.controller = Controller(from_mapping({}).procedures, self.journal)
        self.inputs = shoe_inputs()
        self.fed = 0
        self.sinks: list[Sink] = []

    def close(self) -> None:
        self.journal.close()

    def feed(self, count: int | None = None) -> None:
        end = len(self.inputs) if count is None else min(len(self.inputs), self.fed + count)
        for item in self.inputs[self.fed : end]:
            self.controller.submit(item)
        self.fed = end
        for sink in self.sinks:
            sink.notify()

    def expected(self, sink: str) -> list[dict[str, Any]]:
        return [item.to_wire() for item in self.journal.sinks.events_after(sink, 0, 10**6)]


def amqp_sink(
    table: Table, url: str, key_file: Path, exchange: str, *, rand: float = 0.0, **config: Any
) -> AmqpSink:
    """An AmqpSink on `table`'s journal (quick retries; `rand` fixes its order of nodes)."""
    options = {"timeout_s": 2.0, "backoff": Backoff(0.05, 0.5)} | config
    sink = AmqpSink(
        BROKER,
        SinkBacklog(table.journal, BROKER),
        AmqpConfig(
            url=url,
            table_id=TABLE_ID,
            controller_id=CONTROLLER_ID,
            key_file=key_file,
            exchange=exchange,
            **options,
        ),
        rand=lambda: rand,
    )
    table.sinks.append(sink)
    return sink


def delivered_all(sink: Sink) -> Callable[[], bool]:
    def check() -> bool:
        status = sink.status()
        return status.delivered_through == status.last_seq > 0

    return check


async def running(sink: Sink) -> asyncio.Task[None]:
    return asyncio.create_task(sink.run())


async def stopped(sink: Sink, task: asyncio.Task[None]) -> None:
    sink.stop()
    await asyncio.wait_for(task, PATIENCE_S)


async def delivered(sink: Sink) -> None:
    """Run `sink` until it confirmed everything the journal numbered for it, then stop it."""
    task = await running(sink)
    await eventually(delivered_all(sink), "everything confirmed")
    await stopped(sink, task)


@contextlib.contextmanager
def suspended(broker: Broker, queue: str) -> Iterator[None]:
    """Queue `queue`'s process suspended (a stream's: its writer): what is routed to it waits
    unconfirmed, while messages routed elsewhere (or nowhere) are confirmed at once."""
    lookup = f'{{ok, Q}} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"{broker.vhost}">>, queue,'
    lookup += f' <<"{queue}">>)), sys:%s(amqqueue:get_pid(Q)).'
    broker.cli.ctl("eval", lookup % "suspend")
    try:
        yield
    finally:
        broker.cli.ctl("eval", lookup % "resume")
