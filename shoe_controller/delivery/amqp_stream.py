"""The broker stream's sink: each event an AMQP 1.0 message on a RabbitMQ stream, which drops a
republished duplicate itself.

For consumers that read a stream (an append-only log read by offset: docs/amqp.md "A queue or
a stream"), over RabbitMQ's stream protocol (the `rstream` client). The body, the message id,
the seq and the docs/spec-push-api.md signature are the broker sink's (amqp.py), as AMQP 1.0
properties
and application properties. Broker-side de-duplication: the sink publishes as the producer
named after the table (`producer name` = the table id) with this sink's seq as each message's
publishing id, a gap-free and strictly increasing number. The broker keeps the last publishing
id it stored per producer name and drops (and confirms) any message at or below it, so what
the sink sends again after a failover or a lost confirm is stored once. That last id is also
where the sink resyncs at start: the broker says what it holds, as a table server does.

A cluster's nodes are tried in turn as for the broker sink (amqp_nodes.py); the node the sink
connects to locates the stream's leader, which takes the messages. Imported only by a daemon
with an amqp-stream sink (rstream stays out of the others).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import rstream
from rstream.exceptions import (
    AccessRefused,
    AuthenticationFailure,
    SASLAuthenticationFailureLoopback,
    StreamDoesNotExist,
    VirtualHostAccessFailure,
)
from rstream.recovery import BackOffRecoveryStrategy

from shoe_controller.delivery.amqp_nodes import (
    STREAM,
    NodeLink,
    Nodes,
    node_name,
)
from shoe_controller.delivery.broker_target import BrokerConfig, BrokerSink, signed_message
from shoe_controller.delivery.sink import Confirmed, RetryableError
from shoe_controller.store.journal import BacklogEvent

HEADER_TYPE = "X-Shoe-Type"  # the event type: AMQP 1.0 has no `type` property


@dataclasses.dataclass(frozen=True)
class StreamConfig(BrokerConfig):
    """Which stream on which nodes, and how to sign (broker_target.py). `table_id` is the
    producer name: one amqp-stream sink per table and stream."""

    schemes: ClassVar[tuple[str, str]] = STREAM
    stream: str = "shoe.events"

    def producer_options(self, node: str | None = None) -> dict[str, Any]:
        """rstream.Producer's keywords for `node` (default: the first)."""
        login = self.login(node)
        options: dict[str, Any] = {
            "host": login.host,
            "port": login.port,
            "username": login.user,
            "password": login.password,
            "vhost": login.vhost,
            "connection_name": f"shoe-controller {self.controller_id}",
            # the sink retries and moves to the next node itself (Sink's backoff)
            "recovery_strategy": BackOffRecoveryStrategy(enable=False),
        }
        if login.tls is not None:
            options["ssl_context"] = login.tls
        return options


class StreamLink(NodeLink):
    """A sink's one producer, on one node at a time (the stream declared), left in the
    background when it fails so the next attempt goes to the next node at once."""

    def __init__(self, config: StreamConfig, nodes: Nodes, log: Any) -> None:
        super().__init__(nodes, log, config.timeout_s)
        self._config = config
        self._producer: rstream.Producer | None = None

    async def producer(self, *, at: float, failures: int) -> rstream.Producer:
        """The started producer, else a new one on the first node that takes it."""
        if self._producer is not None:
            return self._producer
        refusals: list[tuple[str, RetryableError]] = []
        for index, url in self.nodes.attempts():
            try:
                self._producer = await asyncio.wait_for(self._open(url), self._config.timeout_s)
            except Exception as error:
                self._leave()
                refusals.append((node_name(url), _retryable(error, self._config.stream)))
                continue
            failover = self.nodes.connected(index, at, failures)
            if failover is not None:
                self._log.warning("delivery.failover", **failover.to_json())
            return self._producer
        text = "; ".join(f"{node} {refusal}" for node, refusal in refusals)
        # a refused login is the cluster's, not one node's: the first fault any node gave
        fault = next((refusal.fault for _, refusal in refusals if refusal.fault), None)
        if len(refusals) > 1:
            text = f"no node took the connection: {text}"
        raise RetryableError(text, fault=fault)

    async def _open(self, url: str) -> rstream.Producer:
        producer = rstream.Producer(**self._config.producer_options(url))
        self._producer = producer  # left (closed) by the caller if what follows fails
        await producer.start()
        await producer.create_stream(self._config.stream, exists_ok=True)
        return producer

    async def last_stored(self, producer: rstream.Producer) -> int:
        """The last publishing id the broker stored for our producer name (0: none)."""
        client = await producer.default_client
        return int(await client.query_publisher_sequence(self._config.stream, self.reference))

    @property
    def reference(self) -> str:
        return self._config.table_id

    def _leave(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            self._close_later(producer)


class StreamSink(BrokerSink[StreamConfig, StreamLink]):
    """Delivers one sink's backlog to one RabbitMQ stream, duplicates dropped by the broker."""

    kind = "amqp-stream"
    resync_key = "stored_through"

    def __init__(self, name: str, backlog: Any, config: StreamConfig, **options: Any) -> None:
        super().__init__(name, backlog, config, **options)
        self.sent_again = 0  # events sent more than once (the broker stored each once)
        self._sent_through = 0

    def _link_for(self, config: StreamConfig, nodes: Nodes) -> StreamLink:
        config.producer_options()
        return StreamLink(config, nodes, self._log)

    @property
    def target(self) -> str:
        return f"{self._config} stream {self._config.stream} producer {self._link.reference}"

    def _endpoint(self) -> dict[str, Any] | None:
        return {**self._link.nodes.to_json(), "sent_again": self.sent_again}

    async def _resync(self) -> int:
        # The broker knows what it stored for our producer name: that is where we are. More
        # than the journal's last seq is another table's producer or a replaced journal
        # (Sink raises server_ahead); less, a stream truncated by its retention: sent again.
        # a failover here is recorded at its time, after the failures that led to it
        producer = await self._link.producer(at=self._clock(), failures=self._failures)
        try:
            stored = await self._link.last_stored(producer)
        except Exception as error:
            refusal = _retryable(error, self._config.stream)
            self._link.failed(str(refusal))
            raise refusal from None
        self._sent_through = stored
        return stored

    async def _send(self, batch: list[BacklogEvent]) -> Confirmed:
        producer = await self._link.producer(at=self._clock(), failures=self._failures)
        self.sent_again += sum(1 for item in batch if item.seq <= self._sent_through)
        self._sent_through = max(self._sent_through, batch[-1].seq)
        answers: dict[int, rstream.ConfirmationStatus] = {}
        all_answered = asyncio.Event()

        def answered(status: rstream.ConfirmationStatus) -> None:
            answers[status.message_id] = status
            if len(answers) >= len(batch):
                all_answered.set()

        error = None
        try:
            await asyncio.wait_for(
                producer.send_batch(
                    self._config.stream,
                    [self._message(item) for item in batch],
                    publisher_name=self._link.reference,
                    on_publish_confirm=answered,
                ),
                self._config.timeout_s,
            )
            await asyncio.wait_for(all_answered.wait(), self._config.timeout_s)
        except Exception as raised:  # a TimeoutError too: the broker withholds confirms
            error = raised
        seqs = [item.seq for item in batch]
        outcome = _outcome(seqs, answers, error, self._config.stream, self._config.timeout_s)
        if isinstance(outcome, Confirmed):
            return outcome
        self._link.failed(str(outcome))
        raise outcome

    def _message(self, item: BacklogEvent) -> rstream.AMQPMessage:
        body, headers = signed_message(self._key, self._config.controller_id, self._clock(), item)
        message = rstream.AMQPMessage(
            body=body,
            properties=rstream.Properties(
                message_id=item.event.id,
                content_type="application/json",
                content_encoding="utf-8",
                subject=self._config.routing_key(item.event.type),
            ),
            application_properties={**headers, HEADER_TYPE: item.event.type},
        )
        message.publishing_id = item.seq  # rstream's constructor does not take it (1.1.1)
        return message


def _retryable(error: BaseException, stream: str) -> RetryableError:
    """The RetryableError `error` is, with a fault where a person must act, as the broker
    sink's (amqp.py). rstream's server errors are a response code's name without a text."""
    name = type(error).__name__
    text = f"{name}: {error}" if str(error) else name
    fault = None
    if isinstance(error, AuthenticationFailure | SASLAuthenticationFailureLoopback):
        fault = ("amqp_access_refused", f"broker refused our login: {text}")
    elif isinstance(error, VirtualHostAccessFailure):
        fault = ("amqp_access_refused", f"broker refused us the vhost: {text}")
    elif isinstance(error, AccessRefused):
        fault = ("amqp_access_refused", f"broker refused us stream {stream}: {text}")
    elif isinstance(error, StreamDoesNotExist):
        text = f"stream {stream} does not exist (deleted since the sink declared it)"
    return RetryableError(text, fault=fault)


def _outcome(
    seqs: Sequence[int],
    answers: Mapping[int, rstream.ConfirmationStatus],
    error: BaseException | None,
    stream: str,
    timeout_s: float,
) -> Confirmed | RetryableError:
    """What a batch's sending raised (`error`) and the broker's answers by publishing id say:
    confirmed through its last message, or the failure, with how far the broker confirmed
    the batch in order (up to its first message not confirmed)."""
    failure = None
    if isinstance(error, TimeoutError):
        unanswered = sum(1 for seq in seqs if seq not in answers)
        failure = RetryableError(
            f"broker withholds confirms: {unanswered} of {len(seqs)} unconfirmed"
            f" after {timeout_s:g} s"
        )
    elif error is not None:
        failure = _retryable(error, stream)
    through = None
    for seq in seqs:
        status = answers.get(seq)
        if status is None or not status.is_confirmed:
            if failure is None:
                failure = RetryableError(
                    "the broker confirmed part of the batch"
                    if status is None
                    else f"broker refused a message (code {status.response_code})"
                )
            break
        through = seq
    if failure is None:
        return Confirmed(seqs[-1])  # every message confirmed
    return RetryableError(str(failure), fault=failure.fault, through=through)
