"""The broker sink against a real three-node RabbitMQ cluster: whichever node fails,
every event reaches the consumer's quorum queue, once after de-duplication, in order, and the
table deals on.

One cluster for the module (shoe_testkit.broker.Cluster: three nodes on 127.0.0.1 with their
own names, ports and data directories, joined at their first boot); each test finds it whole
again (the nodes a test killed are started again first). The consumer is
docs/examples/amqp_consumer.py, run as a process: it declares its quorum queue (replicated on
the three nodes) before the first event, and reads it once the sink is done. The first two
tests run the sink in this process; the last two run the real daemon (TableRig: the simulated
shoe over a pty, each card ACKed only after its commit) configured with the cluster's nodes,
and read its `shoectl outbox` and health.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.broker import Cluster, missing
from shoe_testkit.broker.procs import alive
from shoe_testkit.broker_session import unique_name
from shoe_testkit.broker_table import shoe_inputs
from shoe_testkit.delivery import CONTROLLER_ID, TABLE_ID, write_key
from shoe_testkit.fs import fill, small_tmpfs
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import shoectl
from shoe_testkit.waiting import PATIENCE_S, eventually, wait_until

from shoe_controller.delivery.amqp import AmqpConfig, AmqpSink
from shoe_controller.delivery.routing import EventFilter
from shoe_controller.delivery.sink import Backoff, Sink, SinkStatus
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.service.config import from_mapping
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal

pytestmark = pytest.mark.slow

CONSUMER = Path(__file__).resolve().parents[2] / "docs" / "examples" / "amqp_consumer.py"
SINK = "studio"
TIMEOUT_S = 2.0  # the sink's timeout: to connect, and for a window's confirms
MB = 1024 * 1024


# ---------------------------------------------------------------------- the cluster


@pytest.fixture(scope="module")
def whole_cluster() -> Iterator[Cluster]:
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    with Cluster(3, streams=True) as started:
        yield started


@pytest.fixture
def cluster(whole_cluster: Cluster) -> Cluster:
    """The module's cluster with every node running again (a test before may have killed
    some), and no fault left on."""
    whole_cluster.heal()
    return whole_cluster


def node_of(cluster: Cluster, status: Any) -> int:
    """Which node a sink's status says it is connected to."""
    endpoint = status["endpoint"] if isinstance(status, dict) else status.endpoint
    in_use = endpoint["in_use"]
    assert in_use is not None, "the sink is not connected"
    return cluster.index_of(int(in_use.rsplit(":", 1)[1]))


def consumer(url: str, exchange: str, queue: str, *args: str) -> list[dict[str, Any]]:
    """docs/examples/amqp_consumer.py run to its end (a quorum queue): what it printed."""
    done = subprocess.run(
        [sys.executable, str(CONSUMER), "--url", url, "--exchange", exchange,
         "--queue", queue, *args],
        capture_output=True, text=True, timeout=PATIENCE_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def declared_on(cluster: Cluster, index: int, exchange: str) -> str:
    """A consumer's quorum queue declared through node `index`, so that node leads it (the
    leader locator is client-local), and checked so."""
    queue = unique_name("studio.feed")
    consumer(cluster.urls[index], exchange, queue, "--declare-only")
    assert cluster.leader(queue) == index
    return queue


def read_back(cluster: Cluster, index: int, exchange: str, queue: str, last: int) -> list[Any]:
    """Every event the consumer keeps, once each, in the order it first saw them."""
    got = consumer(cluster.urls[index], exchange, queue, "--until-seq", str(last))
    return [message["event"] for message in got]


# ---------------------------------------------------------------------- a sink in this process


class Table:
    """A journal numbering the events for the broker sink, fed a real shoe, and the sink."""

    def __init__(self, directory: Path, cluster: Cluster, exchange: str) -> None:
        self.journal = Journal.open(
            directory / "journal.db", CONTROLLER_ID, routes={SINK: EventFilter()}
        )
        self.controller = Controller(from_mapping({}).procedures, self.journal)
        self.inputs = shoe_inputs(seed=30)
        self.fed = 0
        self.sink: Sink = AmqpSink(
            SINK,
            SinkBacklog(self.journal, SINK),
            AmqpConfig(
                url=cluster.urls[0], urls=tuple(cluster.urls),
                table_id=TABLE_ID, controller_id=CONTROLLER_ID,
                key_file=write_key(directory), exchange=exchange,
                timeout_s=TIMEOUT_S, backoff=Backoff(0.05, 0.5), window=50,
            ),
        )  # fmt: skip

    def feed(self, count: int | None = None) -> None:
        end = len(self.inputs) if count is None else min(len(self.inputs), self.fed + count)
        for item in self.inputs[self.fed : end]:
            self.controller.submit(item)
        self.fed = end
        self.sink.notify()

    def expected(self) -> list[dict[str, Any]]:
        return [item.to_wire() for item in self.journal.sinks.events_after(SINK, 0, 10**6)]

    def confirmed(self) -> int:
        return self.sink.status().delivered_through or 0

    def all_confirmed(self) -> bool:
        return self.confirmed() == self.sink.status().last_seq > 0


@dataclasses.dataclass(frozen=True)
class Outcome:
    table: Table
    sink_node: int  # the node the sink was on when the trouble began
    killed: int
    status: SinkStatus  # the sink's once it had delivered everything, before it stopped


def delivered_despite(
    tmp_path: Path, cluster: Cluster, victim: Callable[[int, int], int]
) -> Outcome:
    """A whole shoe dealt into the cluster while the node `victim(sink's node, leader)` is
    SIGKILLed mid-shoe (the consumer's queue led by a node other than the sink's); the
    consumer then has every event once, in order."""
    exchange = unique_name("shoe.events")
    table = Table(tmp_path, cluster, exchange)

    async def deal() -> tuple[int, int, str, SinkStatus]:
        task = asyncio.create_task(table.sink.run())
        await eventually(lambda: table.sink.status().endpoint["in_use"], "a connection")
        sink_node = node_of(cluster, table.sink.status())
        leader = (sink_node + 1) % cluster.size
        queue = await asyncio.to_thread(declared_on, cluster, leader, exchange)
        table.feed(120)
        await eventually(lambda: table.confirmed() > 50, "part of the shoe")
        killed = victim(sink_node, leader)
        await asyncio.to_thread(cluster.nodes[killed].kill)  # SIGKILL, events in flight
        table.feed(150)  # dealing goes on
        table.feed()
        await eventually(table.all_confirmed, "the whole shoe confirmed")
        assert not cluster.nodes[killed].running  # delivered without the node
        status = table.sink.status()
        table.sink.stop()
        await asyncio.wait_for(task, PATIENCE_S)
        return sink_node, killed, queue, status

    sink_node, killed, queue, status = asyncio.run(deal())
    expected = table.expected()
    assert expected[-1]["type"] == "shoe.ended"
    reader = next(n for n in range(cluster.size) if n != killed)
    assert read_back(cluster, reader, exchange, queue, len(expected)) == expected
    table.journal.close()
    return Outcome(table, sink_node, killed, status)


def test_the_sinks_node_sigkilled_mid_shoe_the_sink_moves_on_and_loses_nothing(
    tmp_path: Path, cluster: Cluster
) -> None:
    outcome = delivered_despite(tmp_path, cluster, lambda sink, _leader: sink)
    killed = outcome.killed
    status = outcome.status
    assert status.endpoint is not None
    assert node_of(cluster, status) != killed
    failover = status.endpoint["recent_failovers"][-1]
    assert failover["from"] == f"127.0.0.1:{cluster.nodes[killed].port}"
    assert failover["to"] == status.endpoint["in_use"]
    # It did not wait for the node to come back (it is still down): the first attempt after
    # the failure went to another node, within one timeout and one backoff.
    assert failover["after_failures"] <= 1
    assert status.endpoint["failovers"] == 1


def test_the_quorum_queues_leader_sigkilled_loses_nothing(tmp_path: Path, cluster: Cluster) -> None:
    outcome = delivered_despite(tmp_path, cluster, lambda _sink, leader: leader)
    killed = outcome.killed
    assert killed != outcome.sink_node  # the leader went, the sink's node stayed
    endpoint = outcome.status.endpoint
    assert endpoint is not None
    # the queue's new leader took over (confirms may have waited for the election; the
    # sink may have moved, never to the dead node)
    assert all(item["to"] != f"127.0.0.1:{cluster.nodes[killed].port}"
               for item in endpoint["recent_failovers"])  # fmt: skip


# ---------------------------------------------------------------------- a stream


def stream_urls(cluster: Cluster) -> tuple[str, ...]:
    from shoe_testkit.broker_stream import stream_url  # noqa: PLC0415 - needs rstream

    return tuple(stream_url(node) for node in cluster.nodes)


def test_a_stream_holds_each_event_once_after_the_sink_sent_them_again(
    tmp_path: Path, cluster: Cluster
) -> None:
    pytest.importorskip("rstream", reason="kind amqp-stream needs rstream (not installed here)")
    from shoe_testkit.broker_stream import body_of, declare_stream, read_stream  # noqa: PLC0415

    from shoe_controller.delivery.amqp_stream import StreamConfig, StreamSink  # noqa: PLC0415

    stream = unique_name("shoe.stream")
    asyncio.run(declare_stream(cluster.nodes[0], stream))
    assert cluster.leader(stream) == 0
    table = Table(tmp_path, cluster, "unused")
    table.sink = StreamSink(
        SINK,
        SinkBacklog(table.journal, SINK),
        StreamConfig(
            url=stream_urls(cluster)[0], urls=stream_urls(cluster), table_id=TABLE_ID,
            controller_id=CONTROLLER_ID, key_file=write_key(tmp_path), stream=stream,
            timeout_s=TIMEOUT_S, backoff=Backoff(0.05, 0.5), window=50,
        ),
    )  # fmt: skip
    sink = table.sink
    assert isinstance(sink, StreamSink)

    async def deal() -> None:
        task = asyncio.create_task(sink.run())
        table.feed(60)
        await eventually(table.all_confirmed, "the first events stored")
        # the leader alone: it writes what it gets but confirms nothing without a majority,
        # so the sink times out and sends the same publishing ids again
        await asyncio.to_thread(cluster.nodes[1].kill)
        await asyncio.to_thread(cluster.nodes[2].kill)
        table.feed(120)
        await eventually(lambda: sink.sent_again > 0, "events sent again")
        await asyncio.to_thread(cluster.nodes[1].start)  # a majority again
        table.feed()
        await eventually(table.all_confirmed, "the whole shoe stored")
        sink.stop()
        await asyncio.wait_for(task, PATIENCE_S)

    asyncio.run(deal())
    expected = table.expected()
    assert expected[-1]["type"] == "shoe.ended"
    held = asyncio.run(read_stream(cluster.nodes[0], stream))
    # no consumer de-duplication here: the broker kept each event once, in order
    assert [json.loads(body_of(message)) for message in held] == expected
    ids = [message.properties.message_id for message in held]  # AMQP 1.0 gives bytes
    assert [bytes(each).decode() for each in ids] == [event["id"] for event in expected]
    assert sink.sent_again > 0
    table.journal.close()


# ---------------------------------------------------------------------- the real daemon


def sink_section(cluster: Cluster, rig: TableRig, exchange: str, *, one_url: bool) -> str:
    """The daemon's [[sink]] for the cluster: its nodes as `urls`, or as the hosts of one
    `url`; the password in its own file, as docs/amqp.md asks."""
    password_file = rig.directory / "amqp.password"
    password_file.write_text(cluster.password + "\n", encoding="utf-8")
    password_file.chmod(0o640)

    def without_password(url: str) -> str:
        return url.replace(f":{cluster.password}@", "@")

    nodes = (
        f"url = {json.dumps(without_password(cluster.url))}"
        if one_url
        else f"urls = {json.dumps([without_password(url) for url in cluster.urls])}"
    )
    return f"""
[[sink]]
kind = "amqp"
name = "{SINK}"
{nodes}
password_file = "{password_file}"
exchange = "{exchange}"
key_file = "{rig.key_file}"
timeout = {TIMEOUT_S}
window = 50
"""


def started_rig(rig: TableRig, sink: Callable[[TableRig], str]) -> TableRig:
    """TableRig.start() with the broker's [[sink]] added to the daemon's configuration."""
    rig.directory.mkdir(parents=True, exist_ok=True)
    rig.key_file.write_text(secrets.token_hex(32) + "\n")
    os.chmod(rig.key_file, 0o600)
    try:
        rig.start_receiver()
        rig.start_simulators()
        path = rig.write_config(health={"backlog_warning_s": 1.0, "backlog_critical_s": 600.0})
        path.write_text(path.read_text() + sink(rig))
        rig.start_daemon()
    except BaseException:
        rig.close()
        raise
    return rig


def ask(rig: TableRig, request: dict[str, Any]) -> dict[str, Any]:
    """One request to the daemon's control socket, as shoectl sends it (root: may act)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30.0)
        client.connect(str(rig.directory / "control.sock"))
        client.sendall(json.dumps(request).encode() + b"\n")
        answer = json.loads(client.makefile("rb").readline())
    assert answer["ok"], answer
    return answer["result"]


def broker_sink(rig: TableRig) -> dict[str, Any]:
    """The broker sink in the daemon's outbox answer."""
    return next(sink for sink in ask(rig, {"cmd": "outbox"})["sinks"] if sink["name"] == SINK)


def all_delivered(rig: TableRig) -> Callable[[], bool]:
    def check() -> bool:
        sink = broker_sink(rig)
        return sink["backlog"] == 0 and sink["delivered_through"] == sink["last_seq"] > 0

    return check


def daemons_events(rig: TableRig) -> list[dict[str, Any]]:
    journal = rig.records.journal()
    assert journal is not None
    return [item.to_wire() for item in journal.sinks.events_after(SINK, 0, 10**6)]


def cards_acked(rig: TableRig) -> int:
    """Cards the shoe dealt and had ACKed (none waits: `pending` 0), as the shoe counts."""
    status = rig.shoe.request("status") if rig.shoe is not None else {}
    assert status["pending"] == 0
    return int(status["dealt"])


@pytest.fixture
def rig_directory() -> Iterator[Path]:
    # Not tmp_path: the simulators' control sockets need a path under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="amqp-cluster-") as name:
        yield Path(name)


def test_a_rolling_restart_while_the_dealer_deals_loses_nothing_and_holds_no_card(
    rig_directory: Path, cluster: Cluster
) -> None:
    exchange = unique_name("shoe.events")
    queue = declared_on(cluster, 0, exchange)
    rig = started_rig(
        TableRig(rig_directory), lambda rig: sink_section(cluster, rig, exchange, one_url=False)
    )
    try:
        rig.dealer.deal(12)
        rig.wait_until(all_delivered(rig), "the first cards at the broker")
        first_node = node_of(cluster, broker_sink(rig))
        acked_while_down = []
        for index in range(cluster.size):  # one node at a time, as an upgrade goes
            cluster.wait_not_quorum_critical(index)  # the one before has caught up
            rig.dealer.deal(8, wait=False)  # cards coming while the node goes down
            cluster.nodes[index].shutdown()
            rig.dealer.settle()
            before = cards_acked(rig)
            rig.dealer.deal(10)  # lock step: each card is drawn once the last one is ACKed
            acked_while_down.append(cards_acked(rig) - before)
            assert not cluster.nodes[index].running
            cluster.nodes[index].start()
            cluster.wait_running()
        rig.dealer.deal(6)
        rig.wait_until(all_delivered(rig), "every event at the broker")
        # The card path never waited for the broker: every card was ACKed while a node was
        # down, the sink's own among them.
        assert acked_while_down == [10, 10, 10]
        sink = broker_sink(rig)
        endpoint = sink["endpoint"]
        assert endpoint["failovers"] >= 1  # its node went down once at least
        first_port = cluster.nodes[first_node].port
        assert endpoint["recent_failovers"][0]["from"] == f"127.0.0.1:{first_port}"
        assert sink["fault"] is None
        shown = shoectl(rig, "outbox")
        assert shown.returncode == 0, shown.stderr
        lines = [" ".join(line.split()) for line in shown.stdout.splitlines()]
        assert f"Node {endpoint['in_use']} (of {', '.join(endpoint['nodes'])})" in lines
        assert f"Failovers {endpoint['failovers']}" in lines
        moves = [line for line in lines if " -> " in line and "failed attempt(s)" in line]
        assert len(moves) == endpoint["failovers"]  # each failover, with its reason
        assert cluster.password not in shown.stdout
        expected = daemons_events(rig)
        assert read_back(cluster, 1, exchange, queue, len(expected)) == expected
        rig.wait_delivered()  # the table server's sink was never held back either
    finally:
        rig.close()


@pytest.fixture
def small_disk() -> Iterator[Path]:
    with (
        tempfile.TemporaryDirectory(prefix="amqp-space-") as name,
        small_tmpfs(Path(name), "16m") as mount_point,
    ):
        yield mount_point


def space_fault(rig: TableRig) -> bool:
    faults = ask(rig, {"cmd": "status"})["table"]["faults"]
    return any(fault["device"] == "journal" and fault["code"] == 0xF004 for fault in faults)


def test_two_of_three_nodes_down_the_sink_holds_the_table_deals_then_all_arrives(
    rig_directory: Path, cluster: Cluster, small_disk: Path
) -> None:
    limit_mb = 6  # [journal] min_free_mb on the 16 MB disk
    exchange = unique_name("shoe.events")
    queue = declared_on(cluster, 0, exchange)
    rig = TableRig(rig_directory, RigOptions(journal={"min_free_mb": limit_mb}))
    rig.records.use_journal(small_disk / "journal.db")
    started_rig(rig, lambda rig: sink_section(cluster, rig, exchange, one_url=True))
    try:
        rig.dealer.deal(8)
        rig.wait_until(all_delivered(rig), "the first cards at the broker")
        sink_node = node_of(cluster, broker_sink(rig))
        other = (sink_node + 1) % cluster.size
        survivor = (sink_node + 2) % cluster.size
        cluster.nodes[sink_node].kill()
        cluster.nodes[other].kill()  # no majority left: no quorum queue confirms anything

        before = cards_acked(rig)
        rig.dealer.deal(10)  # the table plays on
        assert cards_acked(rig) - before == 10
        held = broker_sink(rig)["backlog"]
        assert held > 0
        rig.dealer.deal(10)
        rig.wait_until(lambda: broker_sink(rig)["backlog"] > held, "the backlog to grow")
        assert broker_sink(rig)["delivered_through"] < broker_sink(rig)["last_seq"]

        def health_says_so() -> bool:
            problems = [p["text"] for p in ask(rig, {"cmd": "status"})["health"]["problems"]]
            return any(f"undelivered to sink {SINK}" in text for text in problems) and any(
                f"delivery to sink {SINK} failing" in text for text in problems
            )

        rig.wait_until(health_says_so, "the health to name the sink's backlog and failures")
        # The disk guard still holds while the sink keeps everything: the table is held
        # before the journal's disk is full, never an event dropped.
        filler = fill(small_disk, (limit_mb - 2) * MB)
        rig.wait_until(lambda: space_fault(rig), "the journal's space fault")
        assert ask(rig, {"cmd": "status"})["table"]["state"] == "held"
        filler.unlink()
        rig.wait_until(lambda: not space_fault(rig), "the fault lifted")
        resumed = shoectl(rig, "resume", "--by", "sup7", "--reason", "disk freed")
        assert resumed.returncode == 0, resumed.stderr
        rig.dealer.settle()
        rig.dealer.deal(6)
        assert broker_sink(rig)["backlog"] > held

        cluster.nodes[other].start()  # a majority again
        rig.wait_until(all_delivered(rig), "every held event at the broker")
        endpoint = broker_sink(rig)["endpoint"]
        assert endpoint["in_use"] in (
            f"127.0.0.1:{cluster.nodes[index].port}" for index in (survivor, other)
        )
        expected = daemons_events(rig)
        assert read_back(cluster, survivor, exchange, queue, len(expected)) == expected
    finally:
        rig.close()


def test_an_owner_dying_takes_its_cluster_with_it(tmp_path: Path) -> None:
    """No stop(), no atexit: the watchdogs kill every node and the epmd, and remove the
    directory (two nodes are enough to show it, and boot faster than three)."""
    if missing() is not None:
        pytest.skip(missing())
    owner = textwrap.dedent(
        f"""
        import json, sys
        from shoe_testkit.broker import Cluster
        cluster = Cluster(2, base_dir={str(tmp_path)!r})
        cluster.start()
        print(json.dumps([cluster.processes(), str(cluster.directory)]), flush=True)
        sys.stdin.read()
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", owner],
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        tree, directory = json.loads(process.stdout.readline())
        assert len(tree) >= 3, "two VMs and the epmd at least"
        assert all(alive(pid) for pid in tree)
        process.send_signal(signal.SIGKILL)
        process.wait(PATIENCE_S)
        wait_until(lambda: not any(alive(pid) for pid in tree), "the cluster to die")
        wait_until(lambda: not Path(directory).exists(), "the directory to go")
    finally:
        process.kill()
        process.wait()


def test_the_cluster_stops_leaving_no_process_and_no_directory(whole_cluster: Cluster) -> None:
    whole_cluster.heal()
    tree = whole_cluster.processes()
    directory = whole_cluster.directory
    assert directory is not None
    assert directory.exists()
    assert len(tree) >= 4, "three VMs and the cluster's epmd at least"
    assert len(whole_cluster.running_nodes()) == 3
    whole_cluster.stop()
    assert [pid for pid in tree if alive(pid)] == []
    assert not directory.exists()
