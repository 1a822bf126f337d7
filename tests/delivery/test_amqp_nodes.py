"""A broker sink's nodes (delivery/amqp_nodes.py): parsed from `urls` or one URL's
hosts, shuffled once per sink and then tried in turn, and each failover recorded for
`shoectl outbox`. Pure bookkeeping; tests/system/test_amqp_cluster.py runs it on three nodes.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from shoe_testkit.delivery import write_key

from shoe_controller.cli.shoectl.render import node_pairs
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.delivery.amqp import AmqpConfig, AmqpConfigError
from shoe_controller.delivery.amqp_nodes import (
    STREAM,
    Nodes,
    node_name,
    node_urls,
    safe_url,
    shuffled,
)
from shoe_controller.service.config import ConfigError, from_mapping
from shoe_controller.service.sink_kinds import amqp_config, stream_config

CLUSTER = "amqp://shoe:s3cret@mq1:5672,mq2:5673,[::1]/floor?heartbeat=30"


def test_one_url_with_several_hosts_is_one_url_per_node_sharing_the_rest() -> None:
    assert node_urls(CLUSTER) == (
        "amqp://shoe:s3cret@mq1:5672/floor?heartbeat=30",
        "amqp://shoe:s3cret@mq2:5673/floor?heartbeat=30",
        "amqp://shoe:s3cret@[::1]/floor?heartbeat=30",
    )
    assert [node_name(url) for url in node_urls(CLUSTER)] == [
        "mq1:5672",
        "mq2:5673",
        "[::1]:5672",
    ]
    assert node_name("amqps://mq") == "mq:5671"
    assert node_urls("amqp://mq/") == ("amqp://mq/",)  # one node, as before


def test_a_list_of_urls_is_taken_as_it_is() -> None:
    urls = ("amqp://a@mq1/floor", "amqps://b@mq2:5671/floor")
    assert node_urls("amqp://ignored/", urls) == urls


@pytest.mark.parametrize(
    ("url", "urls", "problem"),
    [
        ("http://mq/", (), "url must be amqp://"),
        ("amqp://mq1,/", (), "url must be amqp://"),  # an empty host
        ("amqp://mq:56x2/", (), "a port of digits"),
        ("amqp://x", ("amqp://mq1,mq2/",), "one host per URL"),
        ("amqp://x", ("amqp://mq1/", "ftp://mq2/"), "urls: url must be amqp://"),
        ("amqp://mq1,mq1/", (), "listed twice"),
    ],
)
def test_a_bad_node_is_refused_by_name(url: str, urls: tuple[str, ...], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        node_urls(url, urls)


def test_a_password_is_never_shown() -> None:
    assert safe_url(CLUSTER) == "amqp://shoe@mq1:5672,mq2:5673,[::1]/floor?heartbeat=30"
    assert safe_url("amqp://shoe@mq/") == "amqp://shoe@mq/"
    with pytest.raises(ValueError, match="url must be") as refused:
        node_urls("amqp://shoe:s3cret@mq1,/")
    assert "s3cret" not in str(refused.value)


def test_each_sink_shuffles_once_so_a_floor_spreads_over_the_nodes() -> None:
    nodes = [f"amqp://mq{n}/" for n in range(3)]
    firsts = [shuffled(nodes, random.Random(table).random)[0] for table in range(300)]
    counts = {node: firsts.count(node) for node in nodes}
    assert min(counts.values()) > 50  # about 100 each: no node takes the whole floor
    assert sorted(shuffled(nodes, random.random)) == nodes  # a reordering, nothing lost


def order_of(nodes: Nodes) -> list[str]:
    return [url for _, url in nodes.attempts()]


def test_after_a_failure_the_next_attempt_starts_at_the_next_node() -> None:
    nodes = Nodes([f"amqp://mq{n}:5672/" for n in range(3)], random.Random(4).random)
    first = order_of(nodes)
    assert sorted(first) == [f"amqp://mq{n}:5672/" for n in range(3)]
    assert nodes.connected(0, at=10.0, failures=0) is None  # the first connection: no failover
    assert nodes.in_use == first[0]
    nodes.failed("ConnectionResetError: gone")
    assert nodes.in_use is None
    assert order_of(nodes) == first[1:] + first[:1]  # each node once, the failed one last
    failover = nodes.connected(1, at=11.5, failures=1)
    assert failover is not None
    assert failover.to_json() == {
        "at": 11.5,
        "from": node_name(first[0]),
        "to": node_name(first[1]),
        "reason": "ConnectionResetError: gone",
        "after_failures": 1,
    }
    nodes.failed("broker withholds confirms")
    nodes.connected(1, at=12.0, failures=1)  # back on the same node: not a failover
    shown = nodes.to_json()
    assert shown["nodes"] == [node_name(url) for url in first]
    assert shown["in_use"] == node_name(first[1])
    assert shown["failovers"] == 1
    assert [item["to"] for item in shown["recent_failovers"]] == [node_name(first[1])]


def test_only_the_recent_failovers_are_kept_and_every_one_is_counted() -> None:
    nodes = Nodes(["amqp://mq1/", "amqp://mq2/"], random.Random(1).random)
    nodes.connected(0, at=0.0, failures=0)
    for n in range(30):
        nodes.failed(f"failure {n}")
        nodes.connected((n + 1) % 2, at=float(n), failures=1)
    shown = nodes.to_json()
    assert shown["failovers"] == 30
    assert len(shown["recent_failovers"]) == 20
    assert shown["recent_failovers"][-1]["reason"] == "failure 29"


def test_the_config_takes_urls_or_a_url_with_several_hosts(tmp_path: Path) -> None:
    key = write_key(tmp_path)
    urls = ["amqp://shoe@mq1:5672/floor", "amqp://shoe@mq2:5672/floor"]
    sink = {"kind": "amqp", "name": "studio", "key_file": str(key)}
    listed = from_mapping({"sink": [dict(sink, urls=urls)]})
    assert amqp_config(listed.sinks[0], listed).nodes == tuple(urls)
    hosts = from_mapping({"sink": [dict(sink, url="amqp://shoe@mq1:5672,mq2:5672/floor")]})
    assert amqp_config(hosts.sinks[0], hosts).nodes == tuple(urls)
    single = from_mapping({"sink": [dict(sink, url="amqp://shoe@mq1:5672/floor")]})
    assert amqp_config(single.sinks[0], single).nodes == (urls[0],)  # as before
    with pytest.raises(ConfigError, match=r"\[sink studio\] give url or urls, not both"):
        from_mapping({"sink": [dict(sink, url="amqp://mq9/", urls=urls)]})
    with pytest.raises(ConfigError, match=r"\[sink studio\] urls: one host per URL"):
        from_mapping({"sink": [dict(sink, urls=["amqp://mq1,mq2/"])]})
    with pytest.raises(ConfigError, match=r"urls = 'amqp://mq1/': must be a list of strings"):
        from_mapping({"sink": [dict(sink, urls="amqp://mq1/")]})


def test_the_sinks_own_config_checks_its_nodes_too(tmp_path: Path) -> None:
    key = write_key(tmp_path)
    config = AmqpConfig(
        url="amqp://x/", urls=("amqp://a:pw@mq1/v", "amqp://a:pw@mq2:5673/v"),
        table_id="07", controller_id="tbl-07-shoe", key_file=key,
    )  # fmt: skip
    assert str(config) == "amqp://a@mq1/v, amqp://a@mq2:5673/v"
    options = config.connect_options(config.nodes[1])
    assert (options["host"], options["port"], options["password"]) == ("mq2", 5673, "pw")
    assert config.connect_options()["host"] == "mq1"  # the first node by default
    with pytest.raises(AmqpConfigError, match="url must be amqp://"):
        AmqpConfig(url="amqp://mq1,/", table_id="07", controller_id="c", key_file=key)


def test_shoectl_outbox_shows_the_node_in_use_and_each_failover() -> None:
    nodes = Nodes(["amqp://mq1:5672/", "amqp://mq2:5672/"], random.Random(2).random)
    order = [node_name(url) for url in order_of(nodes)]
    nodes.connected(0, at=1_780_000_000.0, failures=0)
    nodes.failed("ConnectionResetError: gone")
    nodes.connected(1, at=1_780_000_001.0, failures=1)
    times = Times.chosen(utc=True)
    pairs = dict(node_pairs({"endpoint": nodes.to_json()}, times))
    assert pairs["Node"] == f"{order[1]} (of {', '.join(order)})"
    assert pairs["Failovers"] == "1"
    assert pairs[""] == (
        f"{times.stamp(1_780_000_001.0)} {order[0]} -> {order[1]} after 1 failed attempt(s):"
        " ConnectionResetError: gone"
    )
    assert node_pairs({"endpoint": None}, times) == []  # a table server's sink


def test_a_stream_sink_takes_its_nodes_the_same_way(tmp_path: Path) -> None:
    key = write_key(tmp_path)
    sink = {"kind": "amqp-stream", "name": "history", "key_file": str(key)}
    config = from_mapping(
        {"sink": [dict(sink, url="rabbitmq-stream://shoe@mq1,mq2:5553/floor", stream="floor")]}
    )
    (section,) = config.sinks
    assert node_urls(section.url, section.urls, STREAM) == (
        "rabbitmq-stream://shoe@mq1/floor",
        "rabbitmq-stream://shoe@mq2:5553/floor",
    )
    assert [node_name(url) for url in node_urls(section.url, (), STREAM)] == [
        "mq1:5552",  # the stream protocol's port
        "mq2:5553",
    ]
    with pytest.raises(ConfigError, match=r"\[sink history\] url must be rabbitmq-stream://"):
        from_mapping({"sink": [dict(sink, url="amqp://mq1/")]})
    with pytest.raises(ConfigError, match=r"\[sink history\] stream must be"):
        from_mapping({"sink": [dict(sink, stream="a b")]})
    pytest.importorskip("rstream", reason="kind amqp-stream needs rstream (not installed here)")
    stream = stream_config(section, config)
    assert stream.nodes == node_urls(section.url, (), STREAM)
    assert stream.table_id == config.table.id  # the producer name the broker de-duplicates by
    options = stream.producer_options(stream.nodes[1])
    assert (options["host"], options["port"], options["vhost"]) == ("mq2", 5553, "floor")


def test_a_password_holding_an_at_sign_or_a_colon_is_hidden_all_the_same() -> None:
    assert safe_url("amqp://shoe:p@ss:w0rd@mq1:5672/floor") == "amqp://shoe@mq1:5672/floor"
    assert safe_url("amqp://shoe:a:b@mq1,mq2/floor") == "amqp://shoe@mq1,mq2/floor"


def test_each_refusal_says_what_a_node_url_must_be_and_names_it() -> None:
    refusals = {
        ("amqp://mq1,mq1/", ()): "the same node is listed twice",
        ("amqp://mq:56x2/", ()): (
            "url must be amqp://host:port/vhost with a port of digits, got 'amqp://mq:56x2/'"
        ),
        ("amqp://x", ("amqp://mq1,mq2/",)): "urls: one host per URL, got 'amqp://mq1,mq2/'",
    }
    for (url, urls), text in refusals.items():
        with pytest.raises(ValueError, match=f"^{re.escape(text)}$"):
            node_urls(url, urls)
    text = (
        "url must be rabbitmq-stream://host:port/vhost with a port of digits,"
        " got 'rabbitmq-stream://mq:5x/'"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(text)}$"):
        node_urls("rabbitmq-stream://mq:5x/", (), STREAM)


def test_a_list_of_stream_urls_is_checked_against_the_stream_schemes() -> None:
    urls = ("rabbitmq-stream://mq1/floor", "rabbitmq-stream+tls://mq2/floor")
    assert node_urls("", urls, STREAM) == urls
    assert [node_name(url) for url in urls] == ["mq1:5552", "mq2:5551"]
    with pytest.raises(ValueError, match=r"^urls: url must be rabbitmq-stream://"):
        node_urls("", ("amqp://mq1/",), STREAM)


def test_a_sinks_order_is_drawn_from_its_own_random_source() -> None:
    nodes = [f"amqp://mq{n}/" for n in range(8)]
    drawn = shuffled(nodes, lambda: 0.25)
    assert shuffled(nodes, lambda: 0.25) == drawn  # the same draw, the same order
    assert order_of(Nodes(nodes, lambda: 0.25)) == drawn
    assert shuffled(nodes, lambda: 0.75) != drawn


def test_a_sink_not_yet_connected_uses_no_node_and_shows_none() -> None:
    nodes = Nodes(["amqp://mq1/", "amqp://mq2/"], random.Random(3).random)
    assert nodes.in_use is None
    assert nodes.to_json() == {
        "nodes": [node_name(url) for url in order_of(nodes)],
        "in_use": None,
        "failovers": 0,
        "recent_failovers": [],
    }


def test_a_move_to_another_node_without_a_failure_says_the_connection_was_closed() -> None:
    nodes = Nodes(["amqp://mq1/", "amqp://mq2/"], random.Random(5).random)
    nodes.connected(0, at=1.0, failures=0)
    nodes.released()
    failover = nodes.connected(1, at=2.0, failures=0)
    assert failover is not None
    assert failover.reason == "the connection was closed"
