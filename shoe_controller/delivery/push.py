"""The table server's sink: events POSTed as docs/spec-push-api.md says, to the byte.

Batches of at most 200 events in the sink's seq order, signed; the server's `acked_through`
is what it confirmed. Start-up asks it where it is (GET .../ack) before sending anything. A
4xx answer also raises a fault for the pit boss. The retry loop, and what is done with the
confirmed seq, are sink.py's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.http_client import (
    HttpClient,
    HttpError,
    HttpResponse,
    HttpTimeout,
    parse_base_url,
)
from shoe_controller.delivery.sink import Backoff, Confirmed, RetryableError, Sink
from shoe_controller.delivery.tls import TlsConfigError, client_context
from shoe_controller.store.journal import BacklogEvent

__all__ = ["PushConfig", "PushSink", "TlsConfigError", "tls_context"]


@dataclasses.dataclass(frozen=True)
class PushConfig:
    """Where and how to deliver. Holds the key file's path, never the key."""

    base_url: str
    table_id: str
    controller_id: str
    key_file: Path
    ca_file: Path | None = None  # https: verify the server against this CA (else system CAs)
    client_cert: Path | None = None  # mutual TLS: client certificate (PEM) ...
    client_key: Path | None = None  # ... and its key (PEM; may be inside client_cert)
    timeout_s: float = 10.0
    batch_size: int = pushapi.MAX_BATCH
    backoff: Backoff = dataclasses.field(default_factory=Backoff)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be http:// or https://, not {self.base_url!r}")
        try:
            parse_base_url(self.base_url)  # what the sink connects with: refused now, not later
        except ValueError as error:
            raise ValueError(f"base_url {self.base_url!r}: {error}") from None
        if not self.timeout_s > 0:  # nan too
            raise ValueError(f"timeout_s must be above 0, not {self.timeout_s!r}")
        if not 1 <= self.batch_size <= pushapi.MAX_BATCH:
            raise ValueError(f"batch_size must be 1..{pushapi.MAX_BATCH}")
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("client_key given without client_cert")


class PushSink(Sink):
    """Delivers one sink's backlog to one table server."""

    kind = "http"
    resync_key = "acked_through"

    def __init__(self, name: str, backlog: Any, config: PushConfig, **options: Any) -> None:
        """`options` are Sink's (clock, rand, on_fault, on_delivered, logger); the clock
        also gives the X-Shoe-Timestamp."""
        super().__init__(name, backlog, backoff=config.backoff, **options)
        self._config = config
        self._key = pushapi.SigningKey.from_file(config.key_file)
        self._client: HttpClient | None = None

    @property
    def target(self) -> str:
        return self._config.base_url

    def _batch_size(self) -> int:
        return self._config.batch_size

    async def _http(self) -> HttpClient:
        if self._client is None:
            # The TLS context is built in a thread: loading the CA bundle takes ~0.4 s on a
            # small PC, which would stall the loop, and with it the devices, at start-up.
            context = await asyncio.to_thread(tls_context, self._config)
            self._client = HttpClient(
                self._config.base_url, ssl_context=context, timeout_s=self._config.timeout_s
            )
        return self._client

    async def _close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _resync(self) -> int:
        client = await self._http()
        headers = pushapi.signed_headers(self._key, self._config.controller_id, self._clock(), b"")
        del headers["Content-Type"]
        path = pushapi.ack_path(self._config.table_id)
        response = await self._exchange(client, "GET", path, headers)
        if response.status != 200:
            raise _refused(response)
        return self._parse(response)

    async def _send(self, batch: list[BacklogEvent]) -> Confirmed:
        client = await self._http()
        body = pushapi.encode_body(
            self._config.controller_id, self._config.table_id, [e.to_wire() for e in batch]
        )
        headers = pushapi.signed_headers(self._key, self._config.controller_id, self._clock(), body)
        path = pushapi.events_path(self._config.table_id)
        response = await self._exchange(client, "POST", path, headers, body)
        if response.status == 200:
            acked = self._parse(response)
            return Confirmed(acked, stalled=f"200 without progress (acked_through {acked})")
        if response.status == 409:
            acked = self._parse(response)
            self._log.warning("delivery.gap", sent_from=batch[0].seq, server_acked_through=acked)
            # 409 naming the very point we sent from: the server contradicts itself
            return Confirmed(
                acked, stalled=f"409 without a usable acked_through ({acked})", gap=True
            )
        raise _refused(response)

    async def _exchange(
        self,
        client: HttpClient,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes = b"",
    ) -> HttpResponse:
        """One request (the path follows base_url's); RetryableError when no answer came."""
        try:
            return await client.request(method, path, headers=headers, body=body)
        except HttpTimeout:
            raise RetryableError("timeout") from None
        except HttpError as exc:
            raise RetryableError(str(exc)) from None

    def _parse(self, response: HttpResponse) -> int:
        try:
            return pushapi.parse_acked_through(response.body)
        except ValueError as exc:
            raise RetryableError(f"HTTP {response.status} with a bad body: {exc}") from None


def _refused(response: HttpResponse) -> RetryableError:
    """The failure an answer other than 200 (or 409 to a batch) is; a 4xx is a fault too."""
    status = response.status
    if not 400 <= status < 500:
        return RetryableError(f"HTTP {status}")
    text = response.text[:200]
    hint = (
        " (the table's key differs from the server's, or this PC's clock is more than"
        " 300 s off: check both)"
        if status == 401
        else ""
    )
    return RetryableError(
        f"HTTP {status}",
        fault=(f"http_{status}", f"table server refused: HTTP {status} {text}{hint}"),
    )


def tls_context(config: PushConfig) -> ssl.SSLContext | None:
    """The TLS context for an https:// server (None for http://); TlsConfigError names the
    file at fault, so the daemon can refuse to start instead of failing at every retry."""
    if not config.base_url.startswith("https://"):
        return None
    return client_context(config.ca_file, config.client_cert, config.client_key)
