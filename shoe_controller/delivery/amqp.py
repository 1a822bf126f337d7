"""The message broker's sink: each event a persistent message on a durable topic exchange.

For studios and floors whose consumers read durable broker queues (docs/amqp.md): routing
key `table.<table id>.<event type>`, the body the event object exactly as in PUSH_API.md's
`events` array (its `seq` this sink's own), `message_id` the event id (consumers
de-duplicate by it), the seq and the PUSH_API.md signature in headers. An event counts as
delivered only once the broker confirmed it (publisher confirms). Up to `window` messages are
in flight on one channel, which keeps them in order; a failure drops the connection and
resends from the first unconfirmed one, so a consumer may see an event twice, never miss
one. Imported only by a daemon with an amqp sink (aio-pika stays out of the others).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import aio_pika
import aio_pika.abc
import aio_pika.exceptions
import aiormq.exceptions
from yarl import URL

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.sink import Backoff, Confirmed, RetryableError, Sink
from shoe_controller.delivery.tls import client_context
from shoe_controller.store.journal import OutboxEvent

HEADER_SEQ = "X-Shoe-Seq"
_ROUTING_SAFE = str.maketrans({".": "_", "*": "_", "#": "_"})


class AmqpConfigError(ValueError):
    """A broker URL or credentials file that cannot be used; the message names it."""


@dataclasses.dataclass(frozen=True)
class AmqpConfig:
    """Which broker and exchange, and how to sign. Holds file paths, never a secret."""

    url: str  # amqp://user@host:5672/vhost or amqps://...; a password in it is allowed
    table_id: str
    controller_id: str
    key_file: Path  # the table's PUSH_API.md key: signs each message
    exchange: str = "shoe.events"
    password_file: Path | None = None  # the broker password, instead of one in the url
    ca_file: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    timeout_s: float = 10.0  # to connect, and for a window's confirms
    window: int = 200  # messages awaiting the broker's confirm at once
    backoff: Backoff = dataclasses.field(default_factory=Backoff)

    def __post_init__(self) -> None:
        parts = URL(self.url)
        if parts.scheme not in ("amqp", "amqps") or not parts.host:
            raise AmqpConfigError(f"url must be amqp://host... or amqps://host..., not {self!s}")
        if not 1 <= self.window <= 10_000:
            raise AmqpConfigError("window must be 1..10000")

    def __str__(self) -> str:
        return safe_url(self.url)

    def routing_key(self, event_type: str) -> str:
        # A table id with a dot would shift every binding's words: routing keys are dotted.
        return f"table.{self.table_id.translate(_ROUTING_SAFE)}.{event_type}"

    def connect_options(self) -> dict[str, Any]:
        """aio_pika.connect's keywords: the password from its file, TLS from the files."""
        parts = URL(self.url)
        password = parts.password or ""
        if self.password_file is not None:
            try:
                password = self.password_file.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as error:
                raise AmqpConfigError(f"password_file {self.password_file}: {error}") from None
        secure = parts.scheme == "amqps"
        options: dict[str, Any] = {
            "host": parts.host,
            "port": parts.port or (5671 if secure else 5672),
            "login": parts.user or "guest",
            "password": password or "guest",
            "virtualhost": parts.path[1:] or "/",
            "timeout": self.timeout_s,
            "client_properties": {"connection_name": f"shoe-controller {self.controller_id}"},
        }
        if secure:
            options["ssl"] = True
            options["ssl_context"] = client_context(self.ca_file, self.client_cert, self.client_key)
        return options


def safe_url(url: str) -> str:
    """The URL without its password, for status and logs."""
    parts = URL(url)
    return str(parts.with_password(None)) if parts.password else url


class AmqpSink(Sink):
    """Delivers one sink's backlog to one broker exchange."""

    kind = "amqp"
    resync_key = "delivered_through"

    def __init__(self, name: str, backlog: Any, config: AmqpConfig, **options: Any) -> None:
        super().__init__(name, backlog, backoff=config.backoff, **options)
        self._config = config
        self._key = pushapi.SigningKey.from_file(config.key_file)
        config.connect_options()  # a password file that cannot be read: refuse at start
        self._connection: aio_pika.abc.AbstractConnection | None = None
        self._exchange: aio_pika.abc.AbstractExchange | None = None

    @property
    def target(self) -> str:
        return f"{self._config} exchange {self._config.exchange}"

    def _batch_size(self) -> int:
        return self._config.window

    async def _resync(self) -> int:
        # The broker keeps no place for us: what the journal says it confirmed is where we
        # are (a mark lost to a power cut only sends a few events again).
        await self._connected()
        return self._backlog.delivered_through()

    async def _send(self, batch: list[OutboxEvent]) -> Confirmed:
        exchange = await self._connected()
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
        if len(done) == len(publishing) and failure is None:
            return Confirmed(batch[-1].seq)
        await self._drop_connection()
        if failure is None:
            raise RetryableError(
                f"broker withholds confirms: {len(pending)} of {len(batch)} unconfirmed"
                f" after {self._config.timeout_s:g} s",
                through=confirmed,
            )
        raise _retryable(failure, self._config.exchange, through=confirmed)

    def _message(self, item: OutboxEvent) -> aio_pika.Message:
        body = json.dumps(
            item.to_wire(), separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
        signed = pushapi.signed_headers(self._key, self._config.controller_id, self._clock(), body)
        return aio_pika.Message(
            body,
            content_type="application/json",
            content_encoding="utf-8",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            message_id=item.event.id,
            type=item.event.type,
            app_id="shoe-controller",
            headers={
                HEADER_SEQ: item.seq,
                **{name: signed[name] for name in pushapi.SIGNED_HEADERS},
            },
        )

    async def _connected(self) -> aio_pika.abc.AbstractExchange:
        if self._exchange is not None and self._connection is not None:
            # aio-pika leaves is_closed False after the broker closed the connection
            if not self._connection.is_closed and self._connection.connected.is_set():
                return self._exchange
            await self._drop_connection()
        try:
            self._connection = await aio_pika.connect(**self._config.connect_options())
            channel = await self._connection.channel(publisher_confirms=True)
            self._exchange = await channel.declare_exchange(
                self._config.exchange, aio_pika.ExchangeType.TOPIC, durable=True
            )
        except Exception as error:
            await self._drop_connection()
            raise _retryable(error, self._config.exchange) from None
        assert self._exchange is not None
        return self._exchange

    async def _drop_connection(self) -> None:
        connection, self._connection, self._exchange = self._connection, None, None
        if connection is not None and not connection.is_closed:
            try:
                await asyncio.wait_for(connection.close(), self._config.timeout_s)
            except Exception as error:  # a broken connection may fail to close: it is gone
                self._log.debug("delivery.close_failed", error=repr(error))

    async def _close(self) -> None:
        await self._drop_connection()


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
