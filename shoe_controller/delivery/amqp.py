"""The message broker's sink: each event a persistent message on a durable topic exchange.

For studios and floors whose consumers read durable broker queues (docs/amqp.md): routing
key `table.<table id>.<event type>`, the body the event object exactly as in docs/spec-push-api.md's
`events` array (its `seq` this sink's own), `message_id` the event id (consumers
de-duplicate by it), the seq and the docs/spec-push-api.md signature in headers. An event counts as
delivered only once the broker confirmed it (publisher confirms). Up to `window` messages are
in flight on one channel, which keeps them in order; a failure drops the connection and
resends from the first unconfirmed one, so a consumer may see an event twice, never miss one.
A cluster's nodes (amqp_nodes.py) are tried in turn: a node that fails, refuses us or
withholds its confirms for `timeout` is left for the next one. Imported only by a daemon
with an amqp sink (aio-pika stays out of the others).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, ClassVar

import aio_pika
import aio_pika.abc
import aio_pika.exceptions
import aiormq.exceptions

from shoe_controller.delivery.amqp_nodes import AMQP, NodeLink, Nodes, node_name, safe_url
from shoe_controller.delivery.broker_target import (
    HEADER_SEQ,
    AmqpConfigError,
    BrokerConfig,
    BrokerSink,
    routing_key,
    signed_message,
)
from shoe_controller.delivery.sink import Confirmed, RetryableError
from shoe_controller.store.journal import BacklogEvent

__all__ = ["HEADER_SEQ", "AmqpConfig", "AmqpConfigError", "AmqpSink", "routing_key", "safe_url"]


@dataclasses.dataclass(frozen=True)
class AmqpConfig(BrokerConfig):
    """Which broker and exchange, and how to sign (broker_target.py)."""

    schemes: ClassVar[tuple[str, str]] = AMQP
    exchange: str = "shoe.events"

    def connect_options(self, node: str | None = None) -> dict[str, Any]:
        """aio_pika.connect's keywords for `node` (default: the first)."""
        login = self.login(node)
        options: dict[str, Any] = {
            "host": login.host,
            "port": login.port,
            "login": login.user,
            "password": login.password,
            "virtualhost": login.vhost,
            "timeout": self.timeout_s,
            "client_properties": {"connection_name": f"shoe-controller {self.controller_id}"},
        }
        if login.tls is not None:
            options["ssl"] = True
            options["ssl_context"] = login.tls
        return options


class BrokerLink(NodeLink):
    """A sink's one connection and channel, to one node at a time: opened on the node to try
    next, left (closed in the background) when it fails, so the next attempt goes to the
    next node without waiting for a dead or blocked node to answer a close."""

    def __init__(self, config: AmqpConfig, nodes: Nodes, log: Any) -> None:
        super().__init__(nodes, log, config.timeout_s)
        self._config = config
        self._connection: aio_pika.abc.AbstractConnection | None = None
        self._exchange: aio_pika.abc.AbstractExchange | None = None

    async def exchange(self, *, at: float, failures: int) -> aio_pika.abc.AbstractExchange:
        """The open channel's exchange, else a new connection on the first node that takes
        one, every node tried once; RetryableError when none did. `at` and `failures` (the
        failed attempts in a row) go into the failover this may be."""
        if self._exchange is not None and self._connection is not None:
            # aio-pika leaves is_closed False after the broker closed the connection
            if not self._connection.is_closed and self._connection.connected.is_set():
                return self._exchange
            self.failed("the broker closed the connection")
        refusals: list[tuple[str, BaseException]] = []
        for index, url in self.nodes.attempts():
            try:
                self._exchange = await self._open(url)
            except Exception as error:
                self._leave()
                refusals.append((node_name(url), error))
                continue
            failover = self.nodes.connected(index, at, failures)
            if failover is not None:
                self._log.warning("delivery.failover", **failover.to_json())
            return self._exchange
        raise _refused(refusals, self._config.exchange)

    async def _open(self, url: str) -> aio_pika.abc.AbstractExchange:
        self._connection = await aio_pika.connect(**self._config.connect_options(url))
        channel = await self._connection.channel(publisher_confirms=True)
        return await channel.declare_exchange(
            self._config.exchange, aio_pika.ExchangeType.TOPIC, durable=True
        )

    def _leave(self) -> None:
        connection, self._connection, self._exchange = self._connection, None, None
        if connection is not None and not connection.is_closed:
            self._close_later(connection)


class AmqpSink(BrokerSink[AmqpConfig, BrokerLink]):
    """Delivers one sink's backlog to one broker exchange (one node of a cluster at a time)."""

    kind = "amqp"
    resync_key = "delivered_through"

    def _link_for(self, config: AmqpConfig, nodes: Nodes) -> BrokerLink:
        config.connect_options()
        return BrokerLink(config, nodes, self._log)

    @property
    def target(self) -> str:
        return f"{self._config} exchange {self._config.exchange}"

    def _endpoint(self) -> dict[str, Any] | None:
        return self._link.nodes.to_json()

    async def _resync(self) -> int:
        # The broker keeps no place for us: what the journal says it confirmed is where we
        # are (a mark lost to a power cut only sends a few events again).
        await self._exchange()
        return self._backlog.delivered_through()

    async def _exchange(self) -> aio_pika.abc.AbstractExchange:
        return await self._link.exchange(at=self._clock(), failures=self._failures)

    async def _send(self, batch: list[BacklogEvent]) -> Confirmed:
        exchange = await self._exchange()
        publishing = [
            asyncio.ensure_future(
                exchange.publish(self._message(item), self._config.routing_key(item.event.type))
            )
            for item in batch  # the channel's lock takes them in this order
        ]
        done, pending = await asyncio.wait(publishing, timeout=self._config.timeout_s)
        confirmed: int | None = None  # the last seq of the batch's confirmed start
        failure: BaseException | None = None
        for item, future in zip(batch, publishing, strict=True):
            if future not in done or future.exception() is not None:
                failure = None if future not in done else future.exception()
                break
            confirmed = item.seq
        for future in pending:
            future.cancel()
        for future in done:
            future.exception()  # each one's failure is taken: the first one is reported
        if len(done) == len(publishing) and failure is None:
            return Confirmed(batch[-1].seq)
        if failure is None:
            error = RetryableError(
                f"broker withholds confirms: {len(pending)} of {len(batch)} unconfirmed"
                f" after {self._config.timeout_s:g} s",
                through=confirmed,
            )
        else:
            error = _retryable(failure, self._config.exchange, through=confirmed)
        self._link.failed(str(error))  # a dead, refusing or blocked node: try the next
        raise error

    def _message(self, item: BacklogEvent) -> aio_pika.Message:
        body, headers = signed_message(self._key, self._config.controller_id, self._clock(), item)
        return aio_pika.Message(
            body,
            content_type="application/json",
            content_encoding="utf-8",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            message_id=item.event.id,
            type=item.event.type,
            app_id="shoe-controller",
            headers=headers,
        )


def _refused(refusals: list[tuple[str, BaseException]], exchange: str) -> RetryableError:
    """No node took the connection: the RetryableError to raise, with the first fault any
    node gave (a refused login is the cluster's, not one node's)."""
    if len(refusals) == 1:
        return _retryable(refusals[0][1], exchange)
    errors = [(node, _retryable(error, exchange)) for node, error in refusals]
    text = "no node took the connection: " + "; ".join(f"{node} {err}" for node, err in errors)
    fault = next((err.fault for _, err in errors if err.fault is not None), None)
    return RetryableError(text, fault=fault)


def _retryable(
    error: BaseException, exchange: str, *, through: int | None = None
) -> RetryableError:
    """The RetryableError `error` is, with a fault where a person must act; `through` what
    the broker confirmed before it."""
    text = f"{type(error).__name__}: {error}"
    fault = None
    if isinstance(error, aio_pika.exceptions.ProbableAuthenticationError):
        fault = ("amqp_access_refused", f"broker refused our login: {error}")
    elif isinstance(error, aiormq.exceptions.ChannelAccessRefused):
        fault = ("amqp_access_refused", f"broker refused the exchange: {error}")
    elif isinstance(error, aiormq.exceptions.ChannelPreconditionFailed):
        fault = (
            "amqp_exchange_mismatch",
            f"exchange {exchange} exists with other settings"
            f" (it must be a durable topic exchange): {error}",
        )
    elif isinstance(error, aio_pika.exceptions.DeliveryError):
        text = f"broker refused a message (nack): {error}"
    return RetryableError(text, fault=fault, through=through)
