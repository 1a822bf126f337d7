"""Publisher: delivers the journal's events to the table server as PUSH_API.md says.

One asyncio task. It reads batches of at most 200 events in seq order from the outbox (the
journal), signs and POSTs them, and records the server's `acked_through` back in the journal.
It never drops or reorders an event: on any failure it keeps its place and retries with
exponential backoff and jitter (0.5 s up to 30 s). A 4xx answer also raises a fault for the
pit boss. When everything is delivered it sleeps on an asyncio.Event until `notify()` (the
daemon calls it after each journal commit): no timer polling while idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx
import structlog

from shoe_controller.delivery import pushapi
from shoe_controller.store.journal import JournalError, StoredEvent


class Outbox(Protocol):
    """What the publisher needs from the journal (Journal implements it)."""

    def last_seq(self) -> int: ...
    def acked_through(self) -> int: ...
    def events_after(self, seq: int, limit: int = 200) -> list[StoredEvent]: ...
    def mark_acked(self, acked_through: int) -> None: ...


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
    backoff_min_s: float = 0.5
    backoff_max_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be http:// or https://, not {self.base_url!r}")
        if not 1 <= self.batch_size <= pushapi.MAX_BATCH:
            raise ValueError(f"batch_size must be 1..{pushapi.MAX_BATCH}")
        if not 0 < self.backoff_min_s <= self.backoff_max_s:
            raise ValueError("backoff needs 0 < backoff_min_s <= backoff_max_s")
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("client_key given without client_cert")


@dataclasses.dataclass(frozen=True)
class PushFault:
    """A fault the pit boss must see: the server refused us (4xx) or contradicts the journal."""

    code: str  # "http_401", "http_403", ..., "server_ahead", "events_pruned"
    text: str
    since: float  # unix seconds

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class PublisherStatus:
    """A snapshot for `shoectl outbox`."""

    state: str  # "starting", "idle", "sending", "backoff", "stopped"
    acked_through: int | None  # as last confirmed by the server (None before the first answer)
    last_seq: int
    backlog: int
    last_error: str | None
    last_error_at: float | None
    consecutive_failures: int
    last_ack_at: float | None
    next_attempt_at: float | None
    fault: PushFault | None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def backoff_delay(failures: int, rand: float, minimum: float, maximum: float) -> float:
    """Seconds to wait after `failures` consecutive failures (≥ 1): doubling from `minimum`
    up to `maximum`, then jittered down by up to half (`rand` in [0, 1)) so that many
    controllers do not retry in step, and never below `minimum`."""
    capped = min(maximum, minimum * 2 ** min(failures - 1, 64))
    return max(minimum, capped * (1.0 - rand / 2))


class _RetryableError(Exception):
    """This attempt failed; back off and try again."""


class Publisher:
    """Delivers the outbox to one table server. Run `run()` as a task; call `notify()`."""

    def __init__(
        self,
        outbox: Outbox,
        config: PushConfig,
        *,
        clock: Callable[[], float] = time.time,
        rand: Callable[[], float] = random.random,
        on_fault: Callable[[PushFault | None], None] | None = None,
        on_acked: Callable[[int], None] | None = None,
        logger: Any = None,
    ) -> None:
        """`on_fault(fault)` is called when a fault is raised and `on_fault(None)` when it
        clears; `on_acked(n)` after the server acknowledges through seq n. `clock` gives
        the X-Shoe-Timestamp and status times; `rand` the jitter (both injectable)."""
        self._outbox = outbox
        self._config = config
        self._key = pushapi.SigningKey.from_file(config.key_file)
        self._clock = clock
        self._rand = rand
        self._on_fault = on_fault
        self._on_acked = on_acked
        self._log = logger if logger is not None else structlog.get_logger("publisher")
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server_acked: int | None = None
        self._persisted_ack: int | None = None
        self._state = "starting"
        self._failures = 0
        self._last_error: str | None = None
        self._last_error_at: float | None = None
        self._last_ack_at: float | None = None
        self._next_attempt_at: float | None = None
        self._fault: PushFault | None = None
        self._last_seq = 0
        self._stored_ack = 0

    def __repr__(self) -> str:
        return f"Publisher({self._config.base_url!r}, table {self._config.table_id!r})"

    # ------------------------------------------------------------------ control

    def notify(self) -> None:
        """New events are in the journal: wake up if idle. Safe from any thread."""
        loop = self._loop
        if loop is None or _running_loop() is loop:
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

    def stop(self) -> None:
        """Ask `run()` to return after the request in flight (safe from any thread)."""
        loop = self._loop
        if loop is None or _running_loop() is loop:
            self._stopping.set()
        else:
            loop.call_soon_threadsafe(self._stopping.set)

    def status(self) -> PublisherStatus:
        acked = self._server_acked
        try:
            self._last_seq = self._outbox.last_seq()
            if acked is None:
                self._stored_ack = self._outbox.acked_through()
        except JournalError:
            pass  # show what was last known; the loop reports the journal fault
        last_seq = self._last_seq
        backlog = last_seq - (acked if acked is not None else self._stored_ack)
        return PublisherStatus(
            state=self._state,
            acked_through=acked,
            last_seq=last_seq,
            backlog=max(0, backlog),
            last_error=self._last_error,
            last_error_at=self._last_error_at,
            consecutive_failures=self._failures,
            last_ack_at=self._last_ack_at,
            next_attempt_at=self._next_attempt_at,
            fault=self._fault,
        )

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        """Deliver until `stop()` or cancellation. Never raises for delivery failures."""
        self._loop = asyncio.get_running_loop()
        try:
            # Built in a thread: httpx loads the CA bundle for its SSL context (~0.4 s on a
            # small PC), which would stall the loop, and with it the devices, at start-up.
            client = await asyncio.to_thread(self._client)
            async with client:
                while not self._stopping.is_set():
                    try:
                        delivered_all = await self._step(client)
                    except _RetryableError as exc:
                        await self._back_off(str(exc))
                        continue
                    except JournalError as exc:  # e.g. a damaged file: report, keep trying
                        self._raise_fault("journal", f"cannot read the journal: {exc}")
                        await self._back_off(f"journal: {exc}")
                        continue
                    if delivered_all:
                        await self._idle()
        finally:
            self._state = "stopped"
            self._loop = None

    async def _step(self, client: httpx.AsyncClient) -> bool:
        """One exchange with the server; True when nothing is left to send."""
        if self._server_acked is None:
            await self._resync(client)
            return False
        self._wake.clear()  # cleared before reading, so a commit after the read wakes us
        self._persist_ack()
        batch = self._outbox.events_after(self._server_acked, self._config.batch_size)
        if not batch:
            self._state = "idle"
            return True
        if batch[0].seq != self._server_acked + 1:
            self._raise_fault(
                "events_pruned",
                f"server needs seq {self._server_acked + 1} but the journal holds only "
                f"from {batch[0].seq} (pruned); the server lost events",
            )
            raise _RetryableError(f"journal no longer holds seq {self._server_acked + 1}")
        self._state = "sending"
        await self._post(client, batch)
        return False

    async def _resync(self, client: httpx.AsyncClient) -> None:
        """Start-up: ask the server where it is (GET .../ack) before sending anything."""
        url = self._config.base_url.rstrip("/") + pushapi.ack_path(self._config.table_id)
        headers = pushapi.signed_headers(self._key, self._config.controller_id, self._clock(), b"")
        del headers["Content-Type"]
        response = await self._exchange(client.get(url, headers=headers))
        if response.status_code != 200:
            self._http_failure(response)
        self._accept_ack(self._parse(response))
        self._succeeded()  # the server answers properly again: clears a fault raised on GET
        self._log.info("publisher.resynced", acked_through=self._server_acked)

    async def _post(self, client: httpx.AsyncClient, batch: list[StoredEvent]) -> None:
        body = pushapi.encode_body(
            self._config.controller_id, self._config.table_id, [e.to_wire() for e in batch]
        )
        headers = pushapi.signed_headers(self._key, self._config.controller_id, self._clock(), body)
        url = self._config.base_url.rstrip("/") + pushapi.events_path(self._config.table_id)
        response = await self._exchange(client.post(url, content=body, headers=headers))
        if response.status_code == 200:
            before = self._server_acked
            self._accept_ack(self._parse(response))
            if (
                before is not None
                and self._server_acked is not None
                and self._server_acked <= before
            ):
                # a 200 that stored nothing would otherwise make us resend at full speed
                raise _RetryableError(f"200 without progress (acked_through {self._server_acked})")
            self._succeeded()
        elif response.status_code == 409:
            acked = self._parse(response)
            self._log.warning("publisher.gap", sent_from=batch[0].seq, server_acked_through=acked)
            before = self._server_acked
            self._accept_ack(acked)
            if acked == before:
                # 409 naming the very point we sent from: the server contradicts itself
                raise _RetryableError(f"409 without a usable acked_through ({acked})")
        else:
            self._http_failure(response)

    async def _exchange(self, request: Any) -> httpx.Response:
        try:
            return await request
        except httpx.TimeoutException:
            raise _RetryableError("timeout") from None
        except httpx.HTTPError as exc:
            raise _RetryableError(f"{type(exc).__name__}: {exc}") from None
        except (ssl.SSLError, OSError) as exc:
            raise _RetryableError(f"{type(exc).__name__}: {exc}") from None

    def _parse(self, response: httpx.Response) -> int:
        try:
            return pushapi.parse_acked_through(response.content)
        except ValueError as exc:
            raise _RetryableError(f"HTTP {response.status_code} with a bad body: {exc}") from None

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
        raise _RetryableError(f"HTTP {status}")

    def _accept_ack(self, acked: int) -> None:
        """Take the server's acked_through as the new position (it may go down: the server
        lost data and we resend; it may never pass our last seq)."""
        last_seq = self._outbox.last_seq()
        if acked > last_seq:
            self._raise_fault(
                "server_ahead",
                f"server acknowledges through seq {acked} but the journal's last seq is "
                f"{last_seq}: another controller or a replaced journal",
            )
            raise _RetryableError(f"server acked_through {acked} beyond last seq {last_seq}")
        if self._server_acked is not None and acked < self._server_acked:
            self._log.warning("publisher.server_went_back", was=self._server_acked, now=acked)
        self._server_acked = acked
        self._last_ack_at = self._clock()
        self._persist_ack()
        if self._on_acked is not None:
            self._on_acked(acked)

    def _persist_ack(self) -> None:
        """Store the server's position; a journal fault only delays this (we keep it here)."""
        if self._server_acked is None or self._server_acked == self._persisted_ack:
            return
        try:
            self._outbox.mark_acked(self._server_acked)
        except JournalError as exc:
            self._note_error(f"cannot store acked_through: {exc}")
            return
        self._persisted_ack = self._server_acked

    def _succeeded(self) -> None:
        self._failures = 0
        self._next_attempt_at = None
        if self._fault is not None:
            self._log.info("publisher.fault_cleared", code=self._fault.code)
            self._fault = None
            if self._on_fault is not None:
                self._on_fault(None)

    def _raise_fault(self, code: str, text: str) -> None:
        if self._fault is not None and self._fault.code == code:
            return
        self._fault = PushFault(code=code, text=text, since=self._clock())
        self._log.error("publisher.fault", code=code, text=text)
        if self._on_fault is not None:
            self._on_fault(self._fault)

    def _note_error(self, text: str) -> None:
        self._last_error = text
        self._last_error_at = self._clock()

    async def _back_off(self, reason: str) -> None:
        self._failures += 1
        self._note_error(reason)
        delay = backoff_delay(
            self._failures, self._rand(), self._config.backoff_min_s, self._config.backoff_max_s
        )
        self._state = "backoff"
        self._next_attempt_at = self._clock() + delay
        self._log.warning(
            "publisher.retry", reason=reason, failures=self._failures, delay_s=round(delay, 3)
        )
        # new events do not cut the wait short: a busy table must not hammer a sick server
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), delay)
        self._next_attempt_at = None

    async def _idle(self) -> None:
        stop = asyncio.ensure_future(self._stopping.wait())
        wake = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({stop, wake}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            wake.cancel()

    def _client(self) -> httpx.AsyncClient:
        config = self._config
        context = tls_context(config)
        return httpx.AsyncClient(
            verify=context if context is not None else True,
            timeout=httpx.Timeout(config.timeout_s),
            follow_redirects=False,
            trust_env=False,  # a proxy from the environment must not see the table's traffic
        )


class TlsConfigError(ValueError):
    """A CA file, client certificate or key that cannot be used; the message names it."""


def tls_context(config: PushConfig) -> ssl.SSLContext | None:
    """The TLS context for an https:// server (None for http://); TlsConfigError names the
    file at fault, so the daemon can refuse to start instead of failing at every retry."""
    if not config.base_url.startswith("https://"):
        return None
    try:
        context = ssl.create_default_context(cafile=str(config.ca_file) if config.ca_file else None)
    except (OSError, ssl.SSLError) as error:
        raise TlsConfigError(f"ca_file {config.ca_file}: {error}") from None
    if config.client_cert is not None:
        key = str(config.client_key) if config.client_key else None
        try:
            context.load_cert_chain(str(config.client_cert), key)
        except (OSError, ssl.SSLError) as error:
            raise TlsConfigError(
                f"client_cert {config.client_cert} / client_key {config.client_key}: {error}"
            ) from None
    return context


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
