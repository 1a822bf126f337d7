"""The stream sink's parts that need no broker (issue 27): what each failure becomes, and each
event's message as the sink hands it to rstream. test_stream_steps.py runs the sink against
a real node; test_amqp_parts.py has its config's logins (broker_target.py's).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shoe_testkit.broker_table import BROKER, Table
from shoe_testkit.delivery import CONTROLLER_ID, TABLE_ID, write_key

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.amqp import HEADER_SEQ
from shoe_controller.delivery.routing import EventFilter
from shoe_controller.delivery.sink_backlog import SinkBacklog

pytest.importorskip("rstream", reason="kind amqp-stream needs rstream (not installed here)")

from rstream import exceptions  # after the importorskip

from shoe_controller.delivery.amqp_stream import HEADER_TYPE, StreamConfig, StreamSink, _retryable


@pytest.mark.parametrize(
    ("error", "text", "fault"),
    [
        (
            exceptions.AuthenticationFailure(),
            "AuthenticationFailure",
            "broker refused our login: AuthenticationFailure",
        ),
        (
            exceptions.SASLAuthenticationFailureLoopback(),
            "SASLAuthenticationFailureLoopback",
            "broker refused our login: SASLAuthenticationFailureLoopback",
        ),
        (
            exceptions.VirtualHostAccessFailure(),
            "VirtualHostAccessFailure",
            "broker refused us the vhost: VirtualHostAccessFailure",
        ),
        (
            exceptions.AccessRefused(),
            "AccessRefused",
            "broker refused us stream shoe.events: AccessRefused",
        ),
    ],
)
def test_a_refused_login_vhost_or_stream_is_a_fault_for_a_person(
    error: Exception, text: str, fault: str
) -> None:
    refusal = _retryable(error, "shoe.events")
    assert str(refusal) == text  # rstream's server errors carry no text of their own
    assert refusal.fault == ("amqp_access_refused", fault)
    assert refusal.through is None


def test_a_stream_that_does_not_exist_is_named_and_retried() -> None:
    refusal = _retryable(exceptions.StreamDoesNotExist(), "studio.feed")
    assert str(refusal) == "stream studio.feed does not exist (deleted since the sink declared it)"
    assert refusal.fault is None


def test_any_other_failure_says_its_kind_and_its_text_and_is_retried() -> None:
    assert str(_retryable(ConnectionResetError(104, "reset by peer"), "s")) == (
        "ConnectionResetError: [Errno 104] reset by peer"
    )
    assert str(_retryable(exceptions.LeaderNotAvailable(), "s")) == "LeaderNotAvailable"
    assert _retryable(TimeoutError(), "s").fault is None


def test_each_event_is_an_amqp_1_0_message_whose_publishing_id_is_its_seq(
    tmp_path: Path,
) -> None:
    key_file = write_key(tmp_path)
    table = Table(tmp_path / "journal.db", {BROKER: EventFilter()})
    try:
        table.feed(8)
        sink = StreamSink(
            BROKER,
            SinkBacklog(table.journal, BROKER),
            StreamConfig(
                url="rabbitmq-stream://shoe:secret@mq1/floor",
                table_id=TABLE_ID,
                controller_id=CONTROLLER_ID,
                key_file=key_file,
                stream="studio.feed",
            ),
            clock=lambda: 1_790_000_000.5,
        )
        items = table.journal.sinks.events_after(BROKER, 0, 100)
        assert sink.target == (
            f"rabbitmq-stream://shoe@mq1/floor stream studio.feed producer {TABLE_ID}"
        )
        assert sink.kind == "amqp-stream"
    finally:
        table.close()
    key = pushapi.SigningKey.from_file(key_file)
    for item in items:
        message = sink._message(item)
        assert message.publishing_id == item.seq  # the broker's de-duplication id
        assert json.loads(bytes(message.body)) == item.to_wire()
        properties = message.properties
        assert (properties.message_id, properties.subject) == (
            item.event.id,
            f"table.{TABLE_ID}.{item.event.type}",
        )
        assert (properties.content_type, properties.content_encoding) == (
            "application/json",
            "utf-8",
        )
        headers = message.application_properties
        assert headers[HEADER_SEQ] == item.seq
        assert headers[HEADER_TYPE] == item.event.type
        assert headers[pushapi.HEADER_CONTROLLER] == CONTROLLER_ID
        assert headers[pushapi.HEADER_TIMESTAMP] == "1790000000"
        assert key.verify("1790000000", bytes(message.body), headers[pushapi.HEADER_SIGNATURE])


def test_the_producer_never_recovers_by_itself(tmp_path: Path) -> None:
    """The sink retries and moves to the next node itself: rstream's own recovery would
    reconnect behind its back, to the same node."""
    options = StreamConfig(
        url="rabbitmq-stream://shoe:secret@mq1/floor",
        table_id=TABLE_ID,
        controller_id=CONTROLLER_ID,
        key_file=write_key(tmp_path),
    ).producer_options()
    assert options["recovery_strategy"]._enable is False  # rstream has no getter for it
