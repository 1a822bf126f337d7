"""A shoe's events read back from the journal: what the scoreboard redraws from after a
restart, and what `shoectl road` is answered from.

The journal is read through its reader (`journal.reads`, a JournalReader) in chunks of seq
(`events_after`); each read is bounded, because the daemon's loop is the one the cards wait
on. A shoe's dealing lies between the end of the shoe before it and its own `shoe.ended` (a
batch shuffler's `shoe.shuffled` for the next shoe may come while it is dealt, and is not
needed here).
"""

from __future__ import annotations

from typing import Any

from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.events import EventType

CHUNK = 500
# A shoe of 8 decks is about 1500 events (cards, rounds, alerts); two shoes and their
# alerts fit well within this, and reading it takes some tens of ms once.
MAX_SCAN = 20_000


def recent_events(journal: Any, max_scan: int = MAX_SCAN) -> list[StoredEvent]:
    """The journal's latest events back to the start of the shoe before the latest one, in
    seq order: enough for a Board fed with them to show what it showed live."""
    first = journal.first_seq()
    if first is None:
        return []
    end = journal.last_seq()
    floor = max(first - 1, end - max_scan)
    found: list[StoredEvent] = []
    newest_shoe: int | None = None
    while end > floor:
        start = max(floor, end - CHUNK)
        batch = journal.events_after(start, end - start)
        found = batch + found
        end = start
        shoes = [event.shoe for event in batch if event.shoe is not None]
        if shoes:
            newest_shoe = max(newest_shoe or 0, *shoes)
            if newest_shoe is not None and min(shoes) < newest_shoe - 1:
                break
    return found


def shoe_events(journal: Any, shoe: int, max_scan: int = MAX_SCAN) -> list[StoredEvent]:
    """Every event of `shoe` the journal holds that its board needs, in seq order."""
    rounds = journal.rounds(shoe)
    last = journal.last_seq()
    if rounds:
        low, high = rounds[0].first_seq, rounds[-1].last_seq
    else:  # no round yet (a burn, or a shoe just opened): look back from the newest event
        low = high = last + 1
    before = _back_to_shoe_start(journal, shoe, low, max_scan)
    middle = _read(journal, low - 1, high, max_scan) if rounds else []
    after = _forward_to_shoe_end(journal, shoe, high, max_scan) if rounds else []
    return [event for event in (*before, *middle, *after) if event.shoe == shoe]


def _read(journal: Any, after: int, through: int, limit: int) -> list[StoredEvent]:
    """Events with `after` < seq <= `through`, at most `limit`."""
    events: list[StoredEvent] = []
    while after < through and len(events) < limit:
        batch = journal.events_after(after, min(CHUNK, through - after, limit - len(events)))
        if not batch:
            break
        events += batch
        after = batch[-1].seq
    return events


def _back_to_shoe_start(journal: Any, shoe: int, before: int, limit: int) -> list[StoredEvent]:
    """The events before seq `before` back to the end of an earlier shoe."""
    first = journal.first_seq()
    if first is None:
        return []
    end, floor = before - 1, max(first - 1, before - 1 - limit)
    found: list[StoredEvent] = []
    while end > floor:
        start = max(floor, end - CHUNK)
        batch = journal.events_after(start, end - start)
        earlier = [index for index, event in enumerate(batch) if _earlier(event, shoe)]
        if earlier:
            return batch[earlier[-1] + 1 :] + found
        found = batch + found
        end = start
    return found


def _earlier(event: StoredEvent, shoe: int) -> bool:
    return event.shoe is not None and event.shoe < shoe


def _forward_to_shoe_end(journal: Any, shoe: int, after: int, limit: int) -> list[StoredEvent]:
    """The events after seq `after` up to the shoe's `shoe.ended` or the next shoe's dealing."""
    found: list[StoredEvent] = []
    while len(found) < limit:
        batch = journal.events_after(after, CHUNK)
        if not batch:
            break
        for event in batch:
            if event.shoe is not None and event.shoe > shoe:
                if event.type != EventType.SHOE_SHUFFLED:
                    return found
                continue
            found.append(event)
            if event.shoe == shoe and event.type == EventType.SHOE_ENDED:
                return found
        after = batch[-1].seq
    return found
