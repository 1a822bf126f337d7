"""The fleet bench's own bookkeeping (bench/bench_fleet.py): how it splits tables over workers,
times each event from commit to confirm, decides that nothing was lost, and that its baseline
publishes the very messages the AMQP sink publishes. No broker: the bench itself runs one.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from shoe_testkit.bench import bench_module

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.amqp import HEADER_SEQ, AmqpConfig, AmqpSink
from shoe_controller.delivery.amqp_nodes import node_name, shuffled
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.store.journal import Journal


@pytest.fixture(scope="module")
def fleet() -> ModuleType:
    return bench_module("bench_fleet")


@pytest.mark.parametrize(("tables", "workers"), [(1, 2), (10, 2), (301, 2), (7, 3), (300, 4)])
def test_every_table_goes_to_exactly_one_worker_evenly(
    fleet: ModuleType, tables: int, workers: int
) -> None:
    shares = fleet.split(tables, workers)
    assert len(shares) == min(tables, workers)
    assert sorted(index for share in shares for index in share) == list(range(tables))
    sizes = [len(share) for share in shares]
    assert max(sizes) - min(sizes) <= 1


def test_the_ledger_times_each_event_from_its_commit_to_the_confirm_covering_it(
    fleet: ModuleType,
) -> None:
    ledger = fleet.Ledger()
    ledger.window_end = 10.0
    ledger.commit([1, 2], at=1.0)
    ledger.commit([3], at=2.0)
    ledger.confirm_through(2, at=1.5)
    assert ledger.latencies == [0.5, 0.5]
    assert ledger.outstanding == 1
    ledger.confirm_through(2, at=3.0)  # the same mark again: nothing counted twice
    ledger.confirm_through(3, at=11.0)  # after the window: timed, not counted in it
    assert ledger.latencies == [0.5, 0.5, 9.0]
    assert (ledger.confirmed, ledger.in_window, ledger.outstanding, ledger.last) == (3, 2, 0, 3)


def test_a_table_started_mid_shoe_times_only_what_it_commits_in_the_run(
    fleet: ModuleType,
) -> None:
    ledger = fleet.Ledger()
    ledger.preload(40)  # the shoe so far, delivered before the run
    ledger.commit([41], at=1.0)
    ledger.confirm_through(41, at=1.25)
    assert ledger.latencies == [0.25]
    assert (ledger.committed, ledger.confirmed, ledger.last) == (1, 1, 41)


def test_a_complete_feed_in_order_passes_with_duplicates_allowed(fleet: ModuleType) -> None:
    check = fleet.check_delivery(
        {"t0000": [1, 2, 2, 3], "t0001": [5]}, {"t0000": range(1, 4), "t0001": range(5, 6)}
    )
    assert check.ok
    assert (check.received, check.distinct, check.duplicates) == (5, 4, 1)


@pytest.mark.parametrize(
    ("received", "problem"),
    [
        ({"t0000": [1, 3]}, "missing"),  # seq 2 never arrived
        ({"t0000": [1, 3, 2]}, "out_of_order"),
        ({"t0000": [1, 2, 3, 4]}, "unexpected"),  # a seq no table confirmed
        ({"t0000": [0, 1, 2, 3]}, "unexpected"),  # one delivered before the run
        ({}, "missing"),  # a table whose events never arrived at all
    ],
)
def test_a_lost_reordered_or_foreign_event_fails_the_check(
    fleet: ModuleType, received: dict[str, list[int]], problem: str
) -> None:
    check = fleet.check_delivery(received, {"t0000": range(1, 4)})
    assert not check.ok
    assert getattr(check, problem) > 0


def test_the_baseline_publishes_the_sinks_own_message(fleet: ModuleType, tmp_path: Path) -> None:
    """The ratio means "the sink over the broker itself" only if both send the same bytes."""
    key_file = tmp_path / "table.key"
    key_file.write_text("fleet bench secret\n", encoding="utf-8")
    inputs = fleet.shoe_inputs()[:12]
    groups = fleet.event_groups(inputs, tmp_path / "template")
    wire = next(event for group in groups for event in group)
    controller = fleet.controller_id(5)
    with Journal.open(tmp_path / "j.db", controller, routes={"broker": lambda _t: True}) as journal:
        fields = ("type", "at", "shoe", "round", "data")
        journal.record({"type": "bench"}, [{name: wire[name] for name in fields}], 1)
        item = journal.sinks.events_after("broker", 0, 1)[0]
        config = AmqpConfig(
            url="amqp://127.0.0.1/", table_id="t0005", controller_id=controller, key_file=key_file
        )
        sink = AmqpSink("broker", SinkBacklog(journal, "broker"), config, clock=lambda: 5.0)
        theirs = sink._message(item)  # the sink's message for this event (private on purpose)
    ours = fleet.message(pushapi.SigningKey.from_file(key_file), controller, wire, item.seq)
    assert ours.body == theirs.body
    assert ours.headers[HEADER_SEQ] == theirs.headers[HEADER_SEQ] == item.seq
    assert set(ours.headers) == set(theirs.headers)
    for name in ("message_id", "type", "content_type", "delivery_mode", "app_id"):
        assert getattr(ours, name) == getattr(theirs, name), name


def test_on_a_cluster_the_bare_table_uses_the_node_its_sink_would(
    fleet: ModuleType, tmp_path: Path
) -> None:
    """Both contenders spread their tables over the nodes alike, table by table."""
    key_file = tmp_path / "table.key"
    key_file.write_text("fleet bench secret\n", encoding="utf-8")
    urls = tuple(f"amqp://shoe@127.0.0.1:{5672 + n}/shoe" for n in range(3))
    firsts = set()
    with Journal.open(tmp_path / "j.db", "c", routes={"broker": lambda _t: True}) as journal:
        for index in range(12):
            config = AmqpConfig(
                url=urls[0], urls=urls, table_id=fleet.table_id(index), controller_id="c",
                key_file=key_file,
            )  # fmt: skip
            sink = AmqpSink(
                "broker", SinkBacklog(journal, "broker"), config, rand=fleet.table_rand(index)
            )
            endpoint = sink.status().endpoint
            assert endpoint is not None
            bare_node = shuffled(urls, fleet.table_rand(index))[0]
            assert endpoint["nodes"][0] == node_name(bare_node)
            firsts.add(bare_node)
    assert len(firsts) > 1  # and the tables do not all take the same node
