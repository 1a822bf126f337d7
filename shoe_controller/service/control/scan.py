"""The journal's events that match a request's type filter, read in chunks and never more of
them than one request may hold the daemon's loop for (docs/control.md "Limits").

`journal` is the journal's reader (`Journal.reads`, store/queries.py)."""

from __future__ import annotations

from typing import Any

from shoe_controller.service.control.requests import type_matches
from shoe_controller.store.journal import StoredEvent

READ_CHUNK = 500
# Events one request may read: the socket shares the daemon's loop with the devices, so no
# request may hold it long (reading 5000 events took about 70 ms on the development PC).
MAX_SCAN = 5000


def matching_after(
    journal: Any, seq: int, types: tuple[str, ...], limit: int, scan: int = MAX_SCAN
) -> list[StoredEvent]:
    """Up to `limit` events after `seq` whose type matches `types` (all when empty),
    looking at no more than `scan` events: the loop is the daemon's, cards wait."""
    found: list[StoredEvent] = []
    scanned = 0
    while len(found) < limit and scanned < scan:
        batch = journal.events_after(seq, min(READ_CHUNK, scan - scanned))
        if not batch:
            break
        scanned += len(batch)
        found += [event for event in batch if type_matches(event.type, types)]
        seq = batch[-1].seq
    return found[:limit]


def last_matching(
    journal: Any, count: int, types: tuple[str, ...], scan: int = MAX_SCAN
) -> list[StoredEvent]:
    """The last `count` matching events among the last `scan` stored, oldest first."""
    first = journal.first_seq()
    if first is None or count <= 0:
        return []
    found: list[StoredEvent] = []
    end = journal.last_seq()
    floor = max(first - 1, end - scan)
    while len(found) < count and end > floor:
        start = max(floor, end - READ_CHUNK)
        batch = journal.events_after(start, end - start)
        found = [event for event in batch if type_matches(event.type, types)] + found
        end = start
    return found[-count:]
