"""What every delivery sink shares: the retry loop over its backlog, its faults and its status.

A sink is one asyncio task delivering one consumer's events (store/backlogs.py numbers
them) in seq order. It never drops or reorders an event: on any failure it keeps its place and
retries with exponential backoff and jitter, and a consumer that refuses us (a 4xx, bad
credentials) raises a fault for the pit boss. When everything is delivered it sleeps until
`notify()` (the daemon calls it after each commit): no polling while idle. The kinds (push.py,
amqp.py) say only how one batch reaches their consumer and what it confirmed: a `Confirmed`,
or a `RetryableError` (with a fault when a person must act). `Sink` alone takes it: the
position, the faults, the backoff. The backlog it reads and marks is sink_backlog.py's.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import random
import time
from collections.abc import Callable
from typing import Any, ClassVar

import structlog

from shoe_controller.delivery.sink_backlog import Backlog
from shoe_controller.store.journal import BacklogEvent, JournalError, SinkMark
from shoe_controller.vocab.backoff import backoff_delay


@dataclasses.dataclass(frozen=True)
class Backoff:
    """How long to wait after failures: doubling from `min_s` up to `max_s`, jittered."""

    min_s: float = 0.5
    max_s: float = 30.0

    def __post_init__(self) -> None:
        if not 0 < self.min_s <= self.max_s:
            raise ValueError("backoff needs 0 < backoff_min_s <= backoff_max_s")

    def delay(self, failures: int, rand: float) -> float:
        return backoff_delay(failures, rand, self.min_s, self.max_s)


@dataclasses.dataclass(frozen=True)
class SinkFault:
    """A fault the pit boss must see: the consumer refused us or contradicts the journal."""

    code: str  # "http_401", "server_ahead", "events_pruned", "amqp_access_refused", ...
    text: str
    since: float  # unix seconds

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SinkStatus:
    """A snapshot for `shoectl outbox` and the health model."""

    name: str
    kind: str
    target: str  # where it delivers, without credentials
    state: str  # "starting", "idle", "sending", "backoff", "stopped"
    delivered_through: int | None  # as last confirmed by the consumer (None: not yet known)
    last_seq: int  # this sink's last seq given
    backlog: int
    last_error: str | None
    last_error_at: float | None
    consecutive_failures: int
    last_delivered_at: float | None
    next_attempt_at: float | None
    fault: SinkFault | None
    # where a kind with several endpoints (a broker cluster's nodes) delivers: the one in use
    # and its failovers (delivery/amqp_nodes.py); None for the others
    endpoint: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class RetryableError(Exception):
    """This attempt failed; Sink backs off and tries again.

    `fault` (code, text): a person must act too (the consumer refused us, or contradicts the
    journal); Sink raises it as a SinkFault. `through`: what the consumer confirmed before
    the failure (a broker's confirms of part of a batch), taken all the same.
    """

    def __init__(
        self, reason: str, *, fault: tuple[str, str] | None = None, through: int | None = None
    ) -> None:
        super().__init__(reason)
        self.fault = fault
        self.through = through


@dataclasses.dataclass(frozen=True, slots=True)
class Confirmed:
    """What the consumer confirmed after a batch: a kind's answer to Sink, which takes it.

    The consumer holds this sink's events through `through`. That must have moved on, else
    Sink backs off with `stalled` as the reason (an answer that stored nothing would have us
    resend at full speed). `gap`: the consumer asks for its events after `through` again (a
    table server's 409): a move either way is progress, and not yet a success.
    """

    through: int
    stalled: str = "the consumer confirmed nothing new"
    gap: bool = False


class Wakeups:
    """What ends a sink's wait: new events (`notify`) or a stop, set from any thread."""

    def __init__(self) -> None:
        self.new_events = asyncio.Event()
        self.stopping = asyncio.Event()
        self.loop: asyncio.AbstractEventLoop | None = None  # the running sink's
        self._idle_waiter: asyncio.Future[None] | None = None  # resolved by _set

    def notify(self) -> None:
        self._set_soon(self.new_events)

    def stop(self) -> None:
        self._set_soon(self.stopping)

    def _set_soon(self, event: asyncio.Event) -> None:
        loop = self.loop
        if loop is None or _running_loop() is loop:
            self._set(event)
        else:
            loop.call_soon_threadsafe(self._set, event)

    def _set(self, event: asyncio.Event) -> None:
        event.set()
        if self._idle_waiter is not None and not self._idle_waiter.done():
            self._idle_waiter.set_result(None)

    async def idle(self) -> None:
        """Until notify() or stop(): a future of its own, not two tasks, as a sink that
        keeps up goes idle after every card (this follows each card's ACK)."""
        if self.new_events.is_set() or self.stopping.is_set():
            return
        self._idle_waiter = asyncio.get_running_loop().create_future()
        try:
            await self._idle_waiter
        finally:
            self._idle_waiter = None

    async def sleep(self, delay: float) -> None:
        """`delay` seconds, or until stop(); new events do not cut it short."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), delay)


class Sink(abc.ABC):
    """Delivers one backlog to one consumer. Run `run()` as a task; call `notify()`."""

    kind: ClassVar[str]
    resync_key: ClassVar[str]  # the log's name for where the consumer stands at resync

    def __init__(
        self,
        name: str,
        backlog: Backlog,
        *,
        backoff: Backoff,
        clock: Callable[[], float] = time.time,
        rand: Callable[[], float] = random.random,
        on_fault: Callable[[SinkFault | None], None] | None = None,
        on_delivered: Callable[[int], None] | None = None,
        logger: Any = None,
    ) -> None:
        """`on_fault(fault)` is called when a fault is raised and `on_fault(None)` when it
        clears; `on_delivered(n)` once the consumer confirmed through seq n. `clock` gives
        the status times (and what the kind signs), `rand` the jitter."""
        self.name = name
        self._backlog = backlog
        self._backoff = backoff
        self._clock = clock
        self._rand = rand
        self._on_fault = on_fault
        self._on_delivered = on_delivered
        self._log = (logger if logger is not None else structlog.get_logger("delivery")).bind(
            sink=name
        )
        self._wakeups = Wakeups()
        self._confirmed: int | None = None  # what the consumer has, as it last told us
        self._persisted: int | None = None  # what the journal holds of that
        self._state = "starting"
        self._failures = 0
        self._last_error: str | None = None
        self._last_error_at: float | None = None
        self._last_delivered_at: float | None = None
        self._next_attempt_at: float | None = None
        self._fault: SinkFault | None = None
        self._last_seq = 0
        self._stored_mark = 0

    @property
    @abc.abstractmethod
    def target(self) -> str:
        """Where the events go, fit for a log line (never a password)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.target!r})"

    # ------------------------------------------------------------------ control

    def notify(self) -> None:
        """New events are in the journal: wake up if idle. Safe from any thread."""
        self._wakeups.notify()

    def stop(self) -> None:
        """Ask `run()` to return after the exchange in flight (safe from any thread)."""
        self._wakeups.stop()

    @property
    def fault(self) -> SinkFault | None:
        return self._fault

    def status(self) -> SinkStatus:
        confirmed = self._confirmed
        try:
            self._last_seq = self._backlog.last_seq()
            if confirmed is None:
                self._stored_mark = self._backlog.delivered_through()
        except JournalError:
            pass  # show what was last known; the loop reports the journal fault
        mark = SinkMark(
            self.name, self._last_seq, self._stored_mark if confirmed is None else confirmed
        )
        return SinkStatus(
            name=self.name,
            kind=self.kind,
            target=self.target,
            state=self._state,
            delivered_through=confirmed,
            last_seq=self._last_seq,
            backlog=mark.backlog,
            last_error=self._last_error,
            last_error_at=self._last_error_at,
            consecutive_failures=self._failures,
            last_delivered_at=self._last_delivered_at,
            next_attempt_at=self._next_attempt_at,
            fault=self._fault,
            endpoint=self._endpoint(),
        )

    def _endpoint(self) -> dict[str, Any] | None:
        """The kind's endpoints for the status (a broker's nodes), when it has several."""
        return None

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        """Deliver until `stop()` or cancellation. Never raises for delivery failures."""
        self._wakeups.loop = asyncio.get_running_loop()
        try:
            while not self._wakeups.stopping.is_set():
                try:
                    delivered_all = await self._step()
                except RetryableError as exc:
                    if exc.fault is not None:
                        self._raise_fault(*exc.fault)
                    await self._back_off(str(exc))
                    continue
                except JournalError as exc:  # e.g. a damaged file: report, keep trying
                    self._raise_fault("journal", f"cannot read the journal: {exc}")
                    await self._back_off(f"journal: {exc}")
                    continue
                if delivered_all:
                    await self._wakeups.idle()
        finally:
            self._state = "stopped"
            with contextlib.suppress(Exception):
                await self._close()
            self._backlog.close()
            self._wakeups.loop = None

    async def _step(self) -> bool:
        """One exchange with the consumer, and what it confirmed taken; True when nothing is
        left to send."""
        if self._confirmed is None:
            self._accept(await self._resync())
            self._succeeded()  # it answers properly again: clears a fault raised on resync
            self._log.info("delivery.resynced", **{self.resync_key: self._confirmed})
            return False
        self._wakeups.new_events.clear()  # cleared before reading: a later commit wakes us
        self._persist()
        batch = await self._backlog.events_after(self._confirmed, self._batch_size())
        if not batch:
            self._state = "idle"
            return True
        if batch[0].seq != self._confirmed + 1:
            raise RetryableError(
                f"journal no longer holds seq {self._confirmed + 1}",
                fault=(
                    "events_pruned",
                    f"{self.name} needs seq {self._confirmed + 1} but the journal holds only "
                    f"from {batch[0].seq} (pruned); the consumer lost events",
                ),
            )
        self._state = "sending"
        before = self._confirmed
        try:
            confirmed = await self._send(batch)
        except RetryableError as failure:
            if failure.through is not None:
                self._accept(failure.through)
            raise
        self._accept(confirmed.through)
        moved = confirmed.through != before if confirmed.gap else confirmed.through > before
        if not moved:
            raise RetryableError(confirmed.stalled)
        if not confirmed.gap:
            self._succeeded()
        return False

    @abc.abstractmethod
    async def _resync(self) -> int:
        """Where the consumer stands, asked before sending anything: the seq through which it
        holds this sink's events; RetryableError when it could not be asked."""

    @abc.abstractmethod
    async def _send(self, batch: list[BacklogEvent]) -> Confirmed:
        """Deliver `batch` (seqs in order, the first one after the position) and say what
        the consumer confirmed; RetryableError when it could not."""

    @abc.abstractmethod
    def _batch_size(self) -> int: ...

    @abc.abstractmethod
    async def _close(self) -> None:
        """Release the connection, when the sink stops."""

    # ------------------------------------------------------------------ what was confirmed

    def _accept(self, confirmed: int) -> None:
        """Take the consumer's confirmed seq as the new position (it may go down: the
        consumer lost data and we resend; it may never pass our last seq)."""
        last_seq = self._backlog.last_seq()
        if confirmed > last_seq:
            raise RetryableError(
                f"confirmed through {confirmed} beyond last seq {last_seq}",
                fault=(
                    "server_ahead",
                    f"{self.name} confirms through seq {confirmed} but its last seq in the"
                    f" journal is {last_seq}: another controller or a replaced journal",
                ),
            )
        if self._confirmed is not None and confirmed < self._confirmed:
            self._log.warning("delivery.consumer_went_back", was=self._confirmed, now=confirmed)
        if self._confirmed is not None and confirmed > self._confirmed:
            self._last_delivered_at = self._clock()  # not on resync: nothing was delivered
        self._confirmed = confirmed
        self._persist()
        if self._on_delivered is not None:
            self._on_delivered(confirmed)

    def _persist(self) -> None:
        """Store the consumer's position; a journal fault only delays this (we keep it)."""
        if self._confirmed is None or self._confirmed == self._persisted:
            return
        try:
            self._backlog.mark_delivered(self._confirmed)
        except JournalError as exc:
            self._note_error(f"cannot store delivered_through: {exc}")
            return
        self._persisted = self._confirmed

    def _succeeded(self) -> None:
        self._failures = 0
        self._next_attempt_at = None
        if self._fault is not None:
            self._log.info("delivery.fault_cleared", code=self._fault.code)
            self._fault = None
            if self._on_fault is not None:
                self._on_fault(None)

    def _raise_fault(self, code: str, text: str) -> None:
        if self._fault is not None and self._fault.code == code:
            return
        self._fault = SinkFault(code=code, text=text, since=self._clock())
        self._log.error("delivery.fault", code=code, text=text)
        if self._on_fault is not None:
            self._on_fault(self._fault)

    def _note_error(self, text: str) -> None:
        self._last_error = text
        self._last_error_at = self._clock()

    async def _back_off(self, reason: str) -> None:
        self._failures += 1
        self._note_error(reason)
        delay = self._backoff.delay(self._failures, self._rand())
        self._state = "backoff"
        self._next_attempt_at = self._clock() + delay
        self._log.warning(
            "delivery.retry", reason=reason, failures=self._failures, delay_s=round(delay, 3)
        )
        # new events do not cut the wait short: a busy table must not hammer a sick consumer
        await self._wakeups.sleep(delay)
        self._next_attempt_at = None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
