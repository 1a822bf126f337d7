"""`events --follow`: every follower's subscription, the events of each commit handed to all of
them (one journal read for all followers: none), and each follower's stream written to its
connection, from the journal only when it fell behind (docs/control.md `events`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.service.control.requests import (
    EVENTS_LIMIT_MAX,
    ControlError,
    event_types,
    optional_int,
    type_matches,
)
from shoe_controller.service.control.scan import READ_CHUNK, last_matching
from shoe_controller.service.control.surveillance import is_surveillance
from shoe_controller.service.control.wire import encode, error_answer, send
from shoe_controller.service.peers import Peer
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import StoredEvent

FOLLOWER_QUEUE_MAX = 1000  # events a follower may fall behind before it reads the journal
LINES_KEPT = 1024  # the latest events' follower lines kept, encoded once for every follower


@dataclass(eq=False, slots=True)
class Subscription:
    """A follower of the event stream: the events stored since it last wrote, handed over
    by `publish` (one journal read for all followers: none), and a wake-up when there are
    some. `behind` is the seq it must catch up from in the journal when it fell too far
    behind."""

    types: tuple[str, ...] = ()
    pending: deque[StoredEvent] = field(default_factory=deque)
    behind: int | None = None
    hide_surveillance: bool = False  # a follower outside the surveillance group
    _waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        """Resume the follower if it waits (new events, or its client left)."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait(self) -> None:
        """Until the next wake(): a future of its own, not a task, as a follower waits
        after every commit (this work follows each card's ACK)."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None


class Followers:
    """Every `events --follow` connection of the control socket."""

    def __init__(self, controller: Controller, hidden_from: Callable[[Peer], bool]) -> None:
        """`hidden_from(peer)`: whether the surveillance events are kept from that peer."""
        self._controller = controller
        self._hidden_from = hidden_from
        self._subscriptions: set[Subscription] = set()
        self._event_lines: dict[int, bytes] = {}  # the latest events' lines, by seq

    def __len__(self) -> int:
        return len(self._subscriptions)

    def publish(self, stored: Sequence[StoredEvent]) -> None:
        """New events are in the journal: each follower gets them without reading it."""
        for subscription in self._subscriptions:
            if subscription.behind is None:
                subscription.pending.extend(
                    e for e in stored if type_matches(e.type, subscription.types)
                )
                if len(subscription.pending) > FOLLOWER_QUEUE_MAX:  # a slow reader
                    subscription.behind = subscription.pending[0].seq - 1
                    subscription.pending.clear()
            subscription.wake()

    def subscribe(self, types: tuple[str, ...] = ()) -> Subscription:
        subscription = Subscription(types)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    async def follow(
        self,
        request: Mapping[str, Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: Peer,
    ) -> None:
        """Stream matching events until the client closes: first the last `limit` (or those
        after `after`), then each as it is stored. New events come from the commit itself
        (`publish`, one hand-over for every follower), the journal only for the catch-up,
        so nothing is lost or repeated however slow the client."""
        journal = self._controller.journal.reads
        try:
            types = event_types(request)
            limit = optional_int(request, "limit", low=0, high=EVENTS_LIMIT_MAX)
            after = optional_int(request, "after", low=0)
        except ControlError as error:
            await send(writer, error_answer(error.code, error.text, "events"))
            return
        subscription = self.subscribe(types)
        subscription.hide_surveillance = self._hidden_from(peer)  # docs/surveillance.md
        closed = asyncio.ensure_future(_until_eof(reader))
        closed.add_done_callback(lambda _: subscription.wake())
        try:
            last = journal.last_seq()
            backlog = []
            if after is not None:
                subscription.behind = after  # everything after it comes from the journal
            elif limit:
                backlog = last_matching(journal, limit, types)
            await send(
                writer,
                {"ok": True, "cmd": "events", "result": {"following": True, "from_seq": last}},
            )
            for event in backlog:
                if _shown(event, subscription):
                    await send(writer, {"event": event.to_wire()})
            while not closed.done():
                if subscription.behind is not None:
                    last = await self._catch_up(subscription, writer)
                    continue
                while subscription.pending:
                    event = subscription.pending.popleft()
                    if event.seq > last:
                        last = event.seq
                        if _shown(event, subscription):
                            writer.write(self._event_line(event))
                await writer.drain()
                if subscription.pending or subscription.behind is not None:
                    continue
                await subscription.wait()
        finally:
            self.unsubscribe(subscription)
            closed.cancel()

    def _event_line(self, event: StoredEvent) -> bytes:
        """An event's line as every follower gets it, encoded once for all of them."""
        line = self._event_lines.get(event.seq)
        if line is None:
            line = self._event_lines[event.seq] = encode({"event": event.to_wire()})
            if len(self._event_lines) > LINES_KEPT:
                del self._event_lines[next(iter(self._event_lines))]  # the oldest
        return line

    async def _catch_up(self, subscription: Subscription, writer: asyncio.StreamWriter) -> int:
        """One batch from the journal for a follower behind; it follows live again once it
        reached the events `publish` hands over. Returns the last seq written."""
        last = subscription.behind or 0
        batch = self._controller.journal.reads.events_after(last, READ_CHUNK)
        if batch:
            last = batch[-1].seq
        # Decided before any await: what is stored from now on, `publish` hands over.
        pending = subscription.pending
        while pending and pending[0].seq <= last:
            pending.popleft()  # written from the journal below
        if len(batch) < READ_CHUNK:
            subscription.behind = None
        else:
            subscription.behind = last
            pending.clear()
        for event in batch:
            if type_matches(event.type, subscription.types) and _shown(event, subscription):
                writer.write(self._event_line(event))
        await writer.drain()
        await asyncio.sleep(0)  # a long catch-up must not keep the devices waiting
        return last


def _shown(event: Any, subscription: Subscription) -> bool:
    """Whether a follower sees this event: not a surveillance one outside its group."""
    return not (subscription.hide_surveillance and is_surveillance(event.type))


async def _until_eof(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError, ValueError):
        while await reader.read(4096):
            pass  # a follower has nothing more to say; anything it sends is ignored
