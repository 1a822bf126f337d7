"""The stream sink's parts that need no broker: what each failure becomes, and each
event's message as the sink hands it to rstream. test_stream_steps.py runs the sink against
a real node; test_amqp_parts.py has its config's logins (broker_target.py's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.broker_table import BROKER, Table
from shoe_testkit.delivery import CONTROLLER_ID, TABLE_ID, write_key

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.amqp import HEADER_SEQ
from shoe_controller.delivery.routing import EventFilter
from shoe_controller.delivery.sink import Confirmed, RetryableError
from shoe_controller.delivery.sink_backlog import SinkBacklog

pytest.importorskip("rstream", reason="kind amqp-stream needs rstream (not installed here)")

from rstream import ConfirmationStatus, exceptions  # after the importorskip

from shoe_controller.delivery.amqp_stream import (
    HEADER_TYPE,
    StreamConfig,
    StreamSink,
    _outcome,
    _retryable,
)


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


def answers(confirmed: list[int], refused: dict[int, int] | None = None) -> dict[int, Any]:
    """The broker's answers by publishing id: confirms, and refusals with their code."""
    given = {seq: ConfirmationStatus(seq, True) for seq in confirmed}
    for seq, code in (refused or {}).items():
        given[seq] = ConfirmationStatus(seq, False, code)
    return given


def test_a_batch_all_confirmed_is_confirmed_through_its_last_message() -> None:
    outcome = _outcome([4, 5, 6], answers([6, 4, 5]), None, "s", 1.0)  # in any order
    assert outcome == Confirmed(6)


def test_confirms_withheld_for_part_of_a_batch_count_what_came_before_in_order() -> None:
    outcome = _outcome([4, 5, 6, 7, 8], answers([4, 5, 7]), TimeoutError(), "s", 2.5)
    assert isinstance(outcome, RetryableError)
    assert str(outcome) == "broker withholds confirms: 2 of 5 unconfirmed after 2.5 s"
    assert outcome.through == 5  # 7's confirm counts only once 6 is confirmed
    assert outcome.fault is None


def test_a_message_the_broker_refused_is_named_by_its_code_and_stops_the_count() -> None:
    outcome = _outcome([4, 5, 6], answers([4, 6], {5: 16}), None, "s", 1.0)
    assert isinstance(outcome, RetryableError)
    assert str(outcome) == "broker refused a message (code 16)"
    assert (outcome.through, outcome.fault) == (4, None)
    first = _outcome([4, 5], answers([5], {4: 2}), None, "s", 1.0)
    assert (str(first), first.through) == ("broker refused a message (code 2)", None)


def test_an_error_while_sending_keeps_its_fault_and_what_was_confirmed_before_it() -> None:
    outcome = _outcome([4, 5, 6], answers([4, 5], {6: 16}), exceptions.AccessRefused(), "s", 1)
    assert isinstance(outcome, RetryableError)
    assert str(outcome) == "AccessRefused"  # the error, not the refused message after it
    assert outcome.fault == ("amqp_access_refused", "broker refused us stream s: AccessRefused")
    assert outcome.through == 5


def test_answers_that_stop_short_without_an_error_are_no_confirm() -> None:
    outcome = _outcome([4, 5, 6], answers([4, 5]), None, "s", 1.0)
    assert isinstance(outcome, RetryableError)
    assert (str(outcome), outcome.through) == ("the broker confirmed part of the batch", 5)
