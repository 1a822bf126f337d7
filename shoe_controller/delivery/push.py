"""The table server's sink: events POSTed as PUSH_API.md says, to the byte.

Batches of at most 200 events in the sink's seq order, signed; the server's `acked_through`
is what it confirmed. Start-up asks it where it is (GET .../ack) before sending anything. A
4xx answer also raises a fault for the pit boss. The retry loop is sink.py's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from pathlib import Path
from typing import Any

import httpx

from shoe_controller.delivery import pushapi
from shoe_controller.delivery.sink import Backoff, RetryableError, Sink
from shoe_controller.delivery.tls import TlsConfigError, client_context
from shoe_controller.store.journal import OutboxEvent

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
        if not 1 <= self.batch_size <= pushapi.MAX_BATCH:
            raise ValueError(f"batch_size must be 1..{pushapi.MAX_BATCH}")
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("client_key given without client_cert")


class PushSink(Sink):
    """Delivers one sink's outbox to one table server."""

    kind = "http"

    def __init__(self, name: str, outbox: Any, config: PushConfig, **options: Any) -> None:
        """`options` are Sink's (clock, rand, on_fault, on_delivered, logger); the clock
        also gives the X-Shoe-Timestamp."""
        super().__init__(name, outbox, backoff=config.backoff, **options)
        self._config = config
        self._key = pushapi.SigningKey.from_file(config.key_file)
        self._client: httpx.AsyncClient | None = None

    @property
    def target(self) -> str:
        return self._config.base_url

    def _batch_size(self) -> int:
        return self._config.batch_size

    async def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # Built in a thread: httpx loads the CA bundle for its SSL context (~0.4 s on a
            # small PC), which would stall the loop, and with it the devices, at start-up.
            self._client = await asyncio.to_thread(self._make_client)
        return self._client

    async def _close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _resync(self) -> None:
        client = await self._http()
        url = self._config.base_url.rstrip("/") + pushapi.ack_path(self._config.table_id)
        headers = pushapi.signed_headers(self._key, self._config.controller_id, self._clock(), b"")
        del headers["Content-Type"]
        response = await self._exchange(client.get(url, headers=headers))
        if response.status_code != 200:
            self._http_failure(response)
        self._accept(self._parse(response))
        self._succeeded()  # the server answers properly again: clears a fault raised on GET
        self._log.info("delivery.resynced", acked_through=self._confirmed)

    async def _send(self, batch: list[OutboxEvent]) -> None:
        client = await self._http()
        body = pushapi.encode_body(
            self._config.controller_id, self._config.table_id, [e.to_wire() for e in batch]
        )
        headers = pushapi.signed_headers(self._key, self._config.controller_id, self._clock(), body)
        url = self._config.base_url.rstrip("/") + pushapi.events_path(self._config.table_id)
        response = await self._exchange(client.post(url, content=body, headers=headers))
        if response.status_code == 200:
            before = self._confirmed
            self._accept(self._parse(response))
            if before is not None and self._confirmed is not None and self._confirmed <= before:
                # a 200 that stored nothing would otherwise make us resend at full speed
                raise RetryableError(f"200 without progress (acked_through {self._confirmed})")
            self._succeeded()
        elif response.status_code == 409:
            acked = self._parse(response)
            self._log.warning("delivery.gap", sent_from=batch[0].seq, server_acked_through=acked)
            before = self._confirmed
            self._accept(acked)
            if acked == before:
                # 409 naming the very point we sent from: the server contradicts itself
                raise RetryableError(f"409 without a usable acked_through ({acked})")
        else:
            self._http_failure(response)

    async def _exchange(self, request: Any) -> httpx.Response:
        try:
            return await request
        except httpx.TimeoutException:
            raise RetryableError("timeout") from None
        except httpx.HTTPError as exc:
            raise RetryableError(f"{type(exc).__name__}: {exc}") from None
        except (ssl.SSLError, OSError) as exc:
            raise RetryableError(f"{type(exc).__name__}: {exc}") from None

    def _parse(self, response: httpx.Response) -> int:
        try:
            return pushapi.parse_acked_through(response.content)
        except ValueError as exc:
            raise RetryableError(f"HTTP {response.status_code} with a bad body: {exc}") from None

    def _http_failure(self, response: httpx.Response) -> None:
        status = response.status_code
        if 400 <= status < 500:
            text = response.text[:200]
            hint = (
                " (the table's key differs from the server's, or this PC's clock is more than"
                " 300 s off: check both)"
                if status == 401
                else ""
            )
            self._raise_fault(f"http_{status}", f"table server refused: HTTP {status} {text}{hint}")
        raise RetryableError(f"HTTP {status}")

    def _make_client(self) -> httpx.AsyncClient:
        config = self._config
        context = tls_context(config)
        return httpx.AsyncClient(
            verify=context if context is not None else True,
            timeout=httpx.Timeout(config.timeout_s),
            follow_redirects=False,
            trust_env=False,  # a proxy from the environment must not see the table's traffic
        )


def tls_context(config: PushConfig) -> ssl.SSLContext | None:
    """The TLS context for an https:// server (None for http://); TlsConfigError names the
    file at fault, so the daemon can refuse to start instead of failing at every retry."""
    if not config.base_url.startswith("https://"):
        return None
    return client_context(config.ca_file, config.client_cert, config.client_key)
