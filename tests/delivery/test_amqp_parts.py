"""The broker sink's parts that need no broker: its configuration and what it checks, the
keywords it connects with, the routing key, each message as the broker gets it, and the
faults a failure is turned into (tests/system/test_amqp_sink.py runs the rest
against a real RabbitMQ node).

The errors are aio-pika's and aiormq's own classes, made as a broker's answer makes them.
"""

from __future__ import annotations

import json
import random
import ssl
from pathlib import Path
from typing import Any

import aio_pika
import aio_pika.exceptions
import aiormq.exceptions
import pytest
from pamqp import commands
from shoe_testkit.delivery import CONTROLLER_ID, TABLE_ID, write_key
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.pki import make_pki

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.amqp import (
    HEADER_SEQ,
    AmqpConfig,
    AmqpConfigError,
    AmqpSink,
    _refused,
    _retryable,
    routing_key,
)
from shoe_controller.delivery.broker_target import signed_message
from shoe_controller.delivery.routing import EventFilter
from shoe_controller.delivery.sink import Backoff
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.delivery.tls import TlsConfigError
from shoe_controller.service.config import from_mapping
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.store.records import BacklogEvent, StoredEvent
from shoe_controller.vocab.cards import Card, Suit

BROKER = "studio"


def shoe_start() -> list[Any]:
    """The first inputs of a correctly dealt shoe: its shuffle, cut, burn and a round."""
    cards = [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]
    random.Random(27).shuffle(cards)
    config = from_mapping({"table": {"id": TABLE_ID}}).procedures
    return deal_shoe(cards, config, cut_after=400).inputs[:20]


def config(key_file: Path, **fields: object) -> AmqpConfig:
    values: dict[str, object] = {
        "url": "amqp://shoe:secret@mq1.floor:5673/tables",
        "table_id": TABLE_ID,
        "controller_id": CONTROLLER_ID,
        "key_file": key_file,
    }
    return AmqpConfig(**(values | fields))  # type: ignore[arg-type]


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    return write_key(tmp_path)


def test_the_routing_key_names_the_table_and_the_event_type() -> None:
    assert routing_key("07", "round.result") == "table.07.round.result"
    # a table id's dots and wildcards would shift or widen every consumer's binding
    assert routing_key("floor.2*#", "card.dealt") == "table.floor_2__.card.dealt"


def test_the_config_routes_with_its_own_table_id(key_file: Path) -> None:
    assert config(key_file, table_id="pit.3").routing_key("shoe.ended") == (
        "table.pit_3.shoe.ended"
    )


@pytest.mark.parametrize("window", [1, 200, 10_000])
def test_a_window_of_one_to_ten_thousand_is_taken(key_file: Path, window: int) -> None:
    assert config(key_file, window=window).window == window


@pytest.mark.parametrize("window", [0, -1, 10_001])
def test_any_other_window_is_refused_saying_what_is_allowed(key_file: Path, window: int) -> None:
    with pytest.raises(AmqpConfigError) as refused:
        config(key_file, window=window)
    assert str(refused.value) == "window must be 1..10000"


def test_a_bad_url_is_a_config_error_naming_it_without_its_password(key_file: Path) -> None:
    with pytest.raises(AmqpConfigError) as refused:
        config(key_file, url="http://shoe:secret@mq1/tables")
    assert str(refused.value) == (
        "url must be amqp://host:port/vhost or amqps://..., got 'http://shoe@mq1/tables'"
    )


def test_shown_it_names_every_node_and_never_a_password(key_file: Path) -> None:
    one = config(key_file)
    assert str(one) == "amqp://shoe@mq1.floor:5673/tables"
    assert one.nodes == ("amqp://shoe:secret@mq1.floor:5673/tables",)
    cluster = config(
        key_file,
        urls=("amqp://shoe:secret@mq1/tables", "amqp://shoe:secret@mq2/tables"),
    )
    assert str(cluster) == "amqp://shoe@mq1/tables, amqp://shoe@mq2/tables"
    assert cluster.nodes == ("amqp://shoe:secret@mq1/tables", "amqp://shoe:secret@mq2/tables")


def test_it_connects_as_the_url_says(key_file: Path) -> None:
    options = config(key_file, timeout_s=2.5).connect_options()
    assert options == {
        "host": "mq1.floor",
        "port": 5673,
        "login": "shoe",
        "password": "secret",
        "virtualhost": "tables",
        "timeout": 2.5,
        "client_properties": {"connection_name": f"shoe-controller {CONTROLLER_ID}"},
    }


def test_a_url_that_names_little_connects_as_guest_to_the_default_vhost_and_port(
    key_file: Path,
) -> None:
    options = config(key_file, url="amqp://mq1").connect_options()
    assert (options["port"], options["login"], options["password"], options["virtualhost"]) == (
        5672,
        "guest",
        "guest",
        "/",
    )


def test_each_node_of_a_cluster_is_connected_to_by_its_own_host(key_file: Path) -> None:
    cluster = config(key_file, url="amqp://shoe:secret@mq1:5672,mq2:5680/tables")
    second = cluster.connect_options(cluster.nodes[1])
    assert (second["host"], second["port"], second["login"], second["virtualhost"]) == (
        "mq2",
        5680,
        "shoe",
        "tables",
    )
    assert cluster.connect_options()["host"] == "mq1"  # the first node unless told


def test_the_password_file_is_read_stripped_and_wins_over_the_url(
    tmp_path: Path, key_file: Path
) -> None:
    secret = tmp_path / "broker.password"
    secret.write_text("  from-the-file \n", encoding="utf-8")
    options = config(key_file, password_file=secret).connect_options()
    assert options["password"] == "from-the-file"
    assert "from-the-file" not in str(config(key_file, password_file=secret))


def test_an_unreadable_password_file_is_a_config_error_naming_it(
    tmp_path: Path, key_file: Path
) -> None:
    missing = tmp_path / "no.password"
    with pytest.raises(AmqpConfigError) as refused:
        config(key_file, password_file=missing).connect_options()
    assert str(refused.value) == (
        f"password_file {missing}: [Errno 2] No such file or directory: '{missing}'"
    )
    binary = tmp_path / "binary.password"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(AmqpConfigError) as refused:
        config(key_file, password_file=binary).connect_options()
    assert str(refused.value).startswith(f"password_file {binary}: 'utf-8' codec can't decode")


def test_amqps_connects_with_tls_verifying_against_the_ca_file(
    tmp_path: Path, key_file: Path
) -> None:
    pki = make_pki(tmp_path)
    options = config(
        key_file,
        url="amqps://shoe@127.0.0.1/tables",
        ca_file=pki["ca.pem"],
        client_cert=pki["client.pem"],
        client_key=pki["client.key"],
    ).connect_options()
    assert options["port"] == 5671
    assert options["ssl"] is True
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert [cert["subject"] for cert in context.get_ca_certs()] == [((("commonName", "test CA"),),)]
    assert "ssl" not in config(key_file).connect_options()  # plain amqp: no TLS at all


def test_a_sink_whose_password_file_cannot_be_read_refuses_to_start(
    tmp_path: Path, key_file: Path
) -> None:
    absent = tmp_path / "absent"
    with (
        Journal.open(tmp_path / "journal.db", CONTROLLER_ID, routes={BROKER: EventFilter()}) as j,
        pytest.raises(AmqpConfigError, match=f"^password_file {absent}: "),
    ):
        AmqpSink(BROKER, SinkBacklog(j, BROKER), config(key_file, password_file=absent))


def login_refused() -> aio_pika.exceptions.ProbableAuthenticationError:
    return aio_pika.exceptions.ProbableAuthenticationError("ACCESS_REFUSED - Login was refused")


def test_a_refused_login_is_a_fault_for_a_person() -> None:
    error = _retryable(login_refused(), "shoe.events")
    assert error.fault == (
        "amqp_access_refused",
        "broker refused our login: ACCESS_REFUSED - Login was refused",
    )
    assert str(error) == "ProbableAuthenticationError: ACCESS_REFUSED - Login was refused"
    assert error.through is None


def test_a_refused_exchange_is_a_fault_for_a_person() -> None:
    error = _retryable(aiormq.exceptions.ChannelAccessRefused("no access to exchange"), "x")
    assert error.fault == (
        "amqp_access_refused",
        "broker refused the exchange: no access to exchange",
    )


def test_an_exchange_of_other_settings_is_a_fault_naming_the_exchange() -> None:
    clash = aiormq.exceptions.ChannelPreconditionFailed("inequivalent arg 'type'")
    error = _retryable(clash, "shoe.events")
    assert error.fault == (
        "amqp_exchange_mismatch",
        "exchange shoe.events exists with other settings (it must be a durable topic exchange):"
        " inequivalent arg 'type'",
    )


def test_a_nack_is_retried_and_says_the_broker_refused_a_message() -> None:
    nack = aio_pika.exceptions.DeliveryError(None, commands.Basic.Nack(delivery_tag=7))
    error = _retryable(nack, "shoe.events", through=41)
    assert str(error) == f"broker refused a message (nack): {nack}"
    assert error.fault is None  # the broker's own trouble (full, a queue's limit): retry
    assert error.through == 41  # what it confirmed before the nack still counts


def test_any_other_failure_is_retried_naming_its_kind() -> None:
    error = _retryable(ConnectionResetError("reset by peer"), "shoe.events", through=3)
    assert (str(error), error.fault, error.through) == (
        "ConnectionResetError: reset by peer",
        None,
        3,
    )


def test_one_node_refusing_is_that_nodes_error_itself() -> None:
    error = _refused([("mq1:5672", login_refused())], "shoe.events")
    assert str(error) == "ProbableAuthenticationError: ACCESS_REFUSED - Login was refused"
    assert error.fault == (
        "amqp_access_refused",
        "broker refused our login: ACCESS_REFUSED - Login was refused",
    )


def test_every_node_refusing_names_each_and_keeps_the_first_fault() -> None:
    error = _refused(
        [
            ("mq1:5672", ConnectionRefusedError("refused")),
            ("mq2:5672", login_refused()),
            ("mq3:5672", aiormq.exceptions.ChannelAccessRefused("no access")),
        ],
        "shoe.events",
    )
    assert str(error) == (
        "no node took the connection: mq1:5672 ConnectionRefusedError: refused;"
        " mq2:5672 ProbableAuthenticationError: ACCESS_REFUSED - Login was refused;"
        " mq3:5672 ChannelAccessRefused: no access"
    )
    assert error.fault == (
        "amqp_access_refused",
        "broker refused our login: ACCESS_REFUSED - Login was refused",
    )
    assert error.through is None


def test_an_exchange_clash_behind_another_nodes_failure_still_names_the_exchange() -> None:
    clash = aiormq.exceptions.ChannelPreconditionFailed("inequivalent arg 'type'")
    error = _refused(
        [("mq1:5672", ConnectionRefusedError("refused")), ("mq2:5672", clash)], "floor.events"
    )
    assert error.fault == (
        "amqp_exchange_mismatch",
        "exchange floor.events exists with other settings (it must be a durable topic"
        " exchange): inequivalent arg 'type'",
    )


def test_nodes_that_only_fail_give_no_fault() -> None:
    error = _refused(
        [("mq1:5672", TimeoutError("slow")), ("mq2:5672", OSError("unreachable"))], "x"
    )
    assert error.fault is None
    assert str(error) == (
        "no node took the connection: mq1:5672 TimeoutError: slow; mq2:5672 OSError: unreachable"
    )


def test_each_message_is_the_event_signed_persistent_and_named_by_its_id(
    tmp_path: Path, key_file: Path
) -> None:
    with Journal.open(tmp_path / "journal.db", CONTROLLER_ID, routes={BROKER: EventFilter()}) as j:
        controller = Controller(from_mapping({}).procedures, j)
        for item in shoe_start():
            controller.submit(item)
        sink = AmqpSink(
            BROKER,
            SinkBacklog(j, BROKER),
            config(key_file, exchange="floor.events", window=37, backoff=Backoff(0.1, 1.0)),
            clock=lambda: 1_790_000_000.75,
        )
        items = j.sinks.events_after(BROKER, 0, 10)
    assert sink.target == "amqp://shoe@mq1.floor:5673/tables exchange floor.events"
    assert sink._batch_size() == 37
    assert items
    key = pushapi.SigningKey.from_file(key_file)
    for item in items:
        message = sink._message(item)
        event = item.to_wire()
        assert json.loads(message.body) == event
        assert message.body == json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()
        assert (message.content_type, message.content_encoding) == ("application/json", "utf-8")
        assert message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
        assert (message.message_id, message.type, message.app_id) == (
            item.event.id,
            item.event.type,
            "shoe-controller",
        )
        headers = message.headers
        assert set(headers) == {HEADER_SEQ, *pushapi.SIGNED_HEADERS}
        assert headers[HEADER_SEQ] == item.seq
        assert headers[pushapi.HEADER_CONTROLLER] == CONTROLLER_ID
        assert headers[pushapi.HEADER_TIMESTAMP] == "1790000000"
        assert key.verify("1790000000", message.body, str(headers[pushapi.HEADER_SIGNATURE]))


def test_the_stream_sink_logs_in_the_same_way_on_its_own_ports(
    tmp_path: Path, key_file: Path
) -> None:
    pytest.importorskip("rstream", reason="kind amqp-stream needs rstream (not installed here)")
    from shoe_controller.delivery.amqp_stream import StreamConfig  # noqa: PLC0415

    pki = make_pki(tmp_path)
    secret = tmp_path / "broker.password"
    secret.write_text("from-the-file\n", encoding="utf-8")
    plain = StreamConfig(
        url="rabbitmq-stream://shoe@mq1,mq2:5560/floor",
        table_id="07",
        controller_id=CONTROLLER_ID,
        key_file=key_file,
        password_file=secret,
    )
    options = plain.producer_options(plain.nodes[0])
    assert {name: options[name] for name in ("host", "port", "username", "password", "vhost")} == {
        "host": "mq1",
        "port": 5552,
        "username": "shoe",
        "password": "from-the-file",
        "vhost": "floor",
    }
    assert options["connection_name"] == f"shoe-controller {CONTROLLER_ID}"
    assert "ssl_context" not in options
    assert plain.producer_options(plain.nodes[1])["port"] == 5560
    secure = StreamConfig(
        url="rabbitmq-stream+tls://127.0.0.1",
        table_id="07",
        controller_id=CONTROLLER_ID,
        key_file=key_file,
        ca_file=pki["ca.pem"],
    ).producer_options()
    assert (secure["port"], secure["username"], secure["password"], secure["vhost"]) == (
        5551,
        "guest",
        "guest",
        "/",
    )
    assert secure["ssl_context"].verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(AmqpConfigError) as refused:
        StreamConfig(url="amqp://mq1", table_id="07", controller_id="c", key_file=key_file)
    assert str(refused.value) == (
        "url must be rabbitmq-stream://host:port/vhost or rabbitmq-stream+tls://...,"
        " got 'amqp://mq1'"
    )


def dealer_signed_in(name: str, **data: object) -> BacklogEvent:
    stored = StoredEvent(
        seq=9,
        id=f"{CONTROLLER_ID}:9",
        type="dealer.signed_in",
        at="2027-01-15T08:00:00.000000Z",
        shoe=None,
        round=None,
        data={"dealer": name, **data},
        input_no=4,
    )
    return BacklogEvent(seq=3, event=stored)


def test_a_body_is_utf_8_as_push_api_md_signs_it_not_escaped(key_file: Path) -> None:
    key = pushapi.SigningKey.from_file(key_file)
    body, headers = signed_message(key, CONTROLLER_ID, 1_790_000_000.0, dealer_signed_in("陳美玲"))
    assert '"dealer":"陳美玲"'.encode() in body  # as the table server's body carries it
    assert headers[HEADER_SEQ] == 3
    assert key.verify("1790000000", body, headers[pushapi.HEADER_SIGNATURE])


def test_a_number_json_cannot_carry_is_refused_not_sent(key_file: Path) -> None:
    key = pushapi.SigningKey.from_file(key_file)
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        signed_message(key, CONTROLLER_ID, 0.0, dealer_signed_in("A", minutes=float("nan")))


def test_a_client_certificate_whose_key_cannot_be_read_is_a_config_error(
    tmp_path: Path, key_file: Path
) -> None:
    pki = make_pki(tmp_path)
    missing = tmp_path / "no-client.key"
    secure = config(
        key_file,
        url="amqps://shoe@127.0.0.1/tables",
        ca_file=pki["ca.pem"],
        client_cert=pki["client.pem"],
        client_key=missing,
    )
    with pytest.raises(TlsConfigError, match=f"^client_cert {pki['client.pem']} / client_key "):
        secure.connect_options()
