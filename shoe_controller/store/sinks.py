"""The journal's side of each delivery sink: its events in its own order, its mark, its latest.

`Journal` holds one as `journal.sinks`; the numbering itself (which sink takes an event, the
`sink_events` rows) is sink_numbering.py's. This process is the journal's one writer, so each
sink's last seq is kept here once read, marks are noted here and stored with the next commit
(`Journal.record`), and each sink's latest events are kept as committed: a sink that keeps up
takes them from here, with no read of the file (the card's way to the table server).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from shoe_controller.store.connection import JournalConnection
from shoe_controller.store.errors import RecordInvalid
from shoe_controller.store.records import EVENT_COLUMNS, OutboxEvent, StoredEvent
from shoe_controller.store.sink_numbering import (
    Numbering,
    SinkMark,
    SinkRoutes,
    ensure_sinks,
    marks,
)

RECENT_PER_SINK = 256  # a sink's latest events kept in memory (a batch is at most 200)


class JournalSinks:
    """Each sink the journal numbers events for: read any journal, marked on the writer."""

    def __init__(
        self, connection: JournalConnection, routes: SinkRoutes, clock: Callable[[], float]
    ) -> None:
        self._connection = connection
        self._routes = dict(routes)
        self._clock = clock
        # Each sink's last seq; read by the first write (a damaged file must still open, for
        # its check to say so).
        self._numbering: Numbering | None = None
        self._recent = {sink: deque[OutboxEvent](maxlen=RECENT_PER_SINK) for sink in self._routes}
        self._pending_marks: dict[str, int] = {}  # marks noted, stored with the next commit

    # ------------------------------------------------------------------ reading

    def marks(self) -> dict[str, SinkMark]:
        """Every sink stored, by name: its last seq and what it has confirmed, with the marks
        noted and not yet stored."""
        stored = self._stored_marks()
        for sink, through in self._pending_marks.items():
            last = stored[sink].last_seq if sink in stored else self._known_last_seq(sink) or 0
            stored[sink] = SinkMark(sink, last, through)
        return stored

    def last_seq(self, sink: str) -> int:
        """The last seq `sink` was given (0 for a sink this journal does not know)."""
        return self._known_last_seq(sink) or 0

    def events_after(self, sink: str, seq: int, limit: int = 200) -> list[OutboxEvent]:
        """Up to `limit` of `sink`'s events after its seq `seq`, in its seq order."""
        columns = ", ".join(f"e.{name.strip()}" for name in EVENT_COLUMNS.split(","))
        rows = self._connection.query(
            f"SELECT s.seq, {columns} FROM sink_events s JOIN events e ON e.seq = s.event_seq"
            " WHERE s.sink = ? AND s.seq > ? ORDER BY s.seq LIMIT ?",
            (sink, seq, limit),
        )
        return [OutboxEvent(row[0], self._connection.event(row[1:])) for row in rows]

    def recent_events(self, sink: str, seq: int, limit: int) -> list[OutboxEvent] | None:
        """Up to `limit` of `sink`'s events after its seq `seq` from those this process
        committed last (the same as events_after would read), or None when they do not
        reach back that far: then read them."""
        recent = self._recent.get(sink)
        if not recent or not recent[0].seq <= seq + 1 <= recent[-1].seq + 1:
            return None
        start = seq + 1 - recent[0].seq
        return list(itertools.islice(recent, start, start + limit))

    # ------------------------------------------------------------------ marks

    def mark_delivered(self, sink: str, through: int) -> None:
        """Note that `sink` confirmed its events through its seq `through` (it may go
        down: a table server that lost data is sent them again).

        Kept in memory (marks() shows it at once) and stored with the next commit, a
        card's or a heartbeat's (one row more, on a page that commit writes anyway), or by
        store_marks(): a batch's confirmation costs no transaction of its own, so none can
        be in the way when a card comes. Not synced on its own either: losing
        the last mark to a crash or a power cut only resends events the sink stores once
        anyway (the table server by seq, a broker's consumer by message_id)."""
        self._connection.require_writable()
        if not isinstance(through, int) or isinstance(through, bool):
            raise RecordInvalid(f"delivered_through must be an int, not {through!r}")
        last = self._known_last_seq(sink)
        if last is None:
            raise RecordInvalid(f"no sink named {sink!r} in this journal")
        if not 0 <= through <= last:
            raise RecordInvalid(
                f"sink {sink}: delivered_through {through} outside 0..{last} (its last seq stored)"
            )
        self._pending_marks[sink] = through

    def store_marks(self) -> None:
        """Store the marks noted since the last commit, in a transaction of their own."""
        if not self._pending_marks:
            return
        with self._connection.write(durable=False) as conn:
            numbering = self.numbering(conn)
            stored = self.write_marks(conn)
        self._numbering = numbering
        self.marks_written(stored)

    # ------------------------------------------------------------------ for Journal's commits

    def numbering(self, conn: sqlite3.Connection) -> Numbering:
        """The routed sinks' numbering; the first write of this object makes their rows and
        reads their last seqs inside its transaction, and keeps them once it committed."""
        if self._numbering is None:
            ensure_sinks(conn, self._routes, float(self._clock()))
            last = {sink: mark.last_seq for sink, mark in marks(conn).items()}
            return Numbering(self._routes, last)
        return self._numbering

    def write_marks(self, conn: sqlite3.Connection) -> dict[str, int]:
        """Write the noted marks inside the caller's transaction; what was written, to
        forget once committed (marks_written). (A sink with no row yet has given nothing:
        its mark is 0, as its row will start.)"""
        marks_now = dict(self._pending_marks)
        conn.executemany(
            "UPDATE sinks SET delivered_through = ? WHERE name = ?",
            [(through, sink) for sink, through in marks_now.items()],
        )
        return marks_now

    def marks_written(self, written: Mapping[str, int]) -> None:
        for sink, through in written.items():
            if self._pending_marks.get(sink) == through:
                del self._pending_marks[sink]

    def committed(
        self,
        numbering: Numbering,
        last: dict[str, int],
        rows: Sequence[tuple[str, int, int]],
        stored: Sequence[StoredEvent],
    ) -> None:
        """A commit gave the sinks `rows` (sink, its seq, journal seq) of the events
        `stored`, and `last` as their last seqs: kept, and the events among the latest."""
        numbering.last = last
        self._numbering = numbering
        if rows:
            by_seq = {event.seq: event for event in stored}
            for sink, seq, event_seq in rows:
                self._recent[sink].append(OutboxEvent(seq, by_seq[event_seq]))

    def forget_recent(self) -> None:
        """Events were pruned: what is no longer in the file is no longer handed out (a
        consumer that lost its data learns from the read that the journal cannot give it
        back)."""
        for recent in self._recent.values():
            recent.clear()

    # ------------------------------------------------------------------ internals

    def _stored_marks(self) -> dict[str, SinkMark]:
        with self._connection.read() as conn:
            return marks(conn)

    def _known_last_seq(self, sink: str) -> int | None:
        """The last seq `sink` was given, 0 for a routed sink with no row yet, None for a
        sink this journal does not know."""
        if self._numbering is not None and sink in self._numbering.last:
            return self._numbering.last[sink]
        mark = self._stored_marks().get(sink)
        if mark is not None:
            return mark.last_seq
        return 0 if sink in self._routes else None
