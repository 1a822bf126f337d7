"""One sink's backlog: its events in its own seq order, and its mark, as a sink reads them.

`Backlog` is what a sink (sink.py) needs of it; `SinkBacklog` gives it from the journal.

A sink that keeps up takes the events the journal committed last from its memory, with no
read (a card's way to the table server). Older ones are read on a connection and a
thread of the backlog's own: a read of 200 events and their JSON is a millisecond or two, and
on the loop it would be a millisecond the next card's ACK waits. A confirmation is noted in
the journal's memory and written by the next commit (a card's, or the link's heartbeat's),
or after MARKS_STORED_WITHIN_S when none came: no transaction of its own per batch, and on
the journal's connection (a second writer would make the card's commit wait for its lock).
Each sink's numbering and mark in the journal are store/backlogs.py's: the one path a mark
takes is `Sink` -> `SinkBacklog.mark_delivered` -> `Backlogs.mark_delivered` (noted) ->
`Backlogs.write` in the next transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from shoe_controller.store.journal import BacklogEvent, Journal, JournalError

MARKS_STORED_WITHIN_S = 0.5  # a confirmation no commit took along is stored after this


class Backlog(Protocol):
    """One sink's backlog as the sink sees it."""

    def last_seq(self) -> int: ...
    def delivered_through(self) -> int: ...
    async def events_after(self, seq: int, limit: int) -> list[BacklogEvent]: ...
    def mark_delivered(self, through: int) -> None: ...
    def close(self) -> None: ...


class SinkBacklog:
    """The `Backlog` of the sink named `sink`, in the journal."""

    def __init__(self, journal: Journal, sink: str) -> None:
        self._journal = journal
        self.sink = sink
        # One thread: the reader's connection is made and used on it alone (sqlite3's rule).
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"backlog-{sink}")
        self._reader: Journal | None = None
        self._storing: asyncio.TimerHandle | None = None

    def last_seq(self) -> int:
        return self._journal.sinks.last_seq(self.sink)

    def delivered_through(self) -> int:
        mark = self._journal.sinks.marks().get(self.sink)
        return 0 if mark is None else mark.delivered_through

    async def events_after(self, seq: int, limit: int) -> list[BacklogEvent]:
        recent = self._journal.sinks.recent_events(self.sink, seq, limit)
        if recent is not None:
            return recent
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._read, seq, limit)

    def mark_delivered(self, through: int) -> None:
        self._journal.sinks.mark_delivered(self.sink, through)
        if self._storing is None:
            loop = asyncio.get_running_loop()
            self._storing = loop.call_later(MARKS_STORED_WITHIN_S, self._store_marks)

    def close(self) -> None:
        """Store what was confirmed, close the reader's connection and end its thread (the
        sink stopped)."""
        if self._storing is not None:
            self._storing.cancel()
            self._store_marks()
        self._thread.submit(self._close_reader).result()
        self._thread.shutdown()

    def _read(self, seq: int, limit: int) -> list[BacklogEvent]:
        if self._reader is None:
            self._reader = Journal.open(
                self._journal.path, self._journal.controller_id, read_only=True, quick_check=False
            )
            # It reads each event once, in order: SQLite's default 2 MB page cache a
            # connection would be resident memory for nothing (256 KB holds a batch).
            self._reader.limit_cache(256)
        return self._reader.sinks.events_after(self.sink, seq, limit)

    def _store_marks(self) -> None:
        self._storing = None
        with contextlib.suppress(JournalError):  # kept: the next commit stores them
            self._journal.sinks.store_marks()

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
