"""Each delivery sink's backlog in the journal: its own numbering, its events, its mark.

A sink (the table server, a message broker ...) sees only the events its filter takes, and
docs/spec-push-api.md wants its `seq` gap-free: so each sink numbers its events 1, 2, 3 ...
itself (docs/journal.md "Sinks"). The numbers are given in the same transaction that stores
the events (no second writer competes with the card's commit for the write lock), stored as
`sink_events` rows, and never change: a filter changed later numbers only the events stored
after it. A sink's mark is the seq its consumer confirmed it holds through (`sinks` rows).

`Journal` holds one `Backlogs` as `journal.sinks`. This process is the journal's one writer,
so each sink's last seq is kept here once read, and each sink's latest events are kept as
committed: a sink that keeps up takes them from here, with no read of the file (the card's
way to the table server). A mark takes one path: noted (`mark_delivered`), then written by
`write` inside the next transaction, the journal's next commit or `store_marks`'s own.
"""

from __future__ import annotations

import dataclasses
import itertools
import sqlite3
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

from shoe_controller.store.connection import JournalConnection
from shoe_controller.store.errors import RecordInvalid
from shoe_controller.store.records import EVENT_COLUMNS, BacklogEvent, StoredEvent

RECENT_PER_SINK = 256  # a sink's latest events kept in memory (a batch is at most 200)

# A sink's name -> whether it takes an event of this type. Passed in by whoever opens the
# journal for writing (the daemon, from the configured sinks): the store knows no filters.
SinkRoutes = Mapping[str, Callable[[str], bool]]


@dataclasses.dataclass(frozen=True, slots=True)
class SinkMark:
    """Where one sink stands: its last seq given and the seq it has confirmed through."""

    sink: str
    last_seq: int
    delivered_through: int

    @property
    def backlog(self) -> int:
        return max(0, self.last_seq - self.delivered_through)


class Numbering:
    """The sinks' last seqs, kept by the journal's one writer, and the rows a commit adds."""

    def __init__(self, routes: SinkRoutes, last: Mapping[str, int]) -> None:
        self._routes = dict(routes)
        self.last = {sink: last.get(sink, 0) for sink in self._routes}

    def rows(
        self, events: Iterable[tuple[int, str]]
    ) -> tuple[list[tuple[str, int, int]], dict[str, int]]:
        """The `sink_events` rows for (journal seq, type) pairs, and the sinks' last seqs
        after them; `last` is left as it is until the caller's transaction committed."""
        last = dict(self.last)
        rows = []
        for seq, type_ in events:
            for sink, takes in self._routes.items():
                if takes(type_):
                    last[sink] += 1
                    rows.append((sink, last[sink], seq))
        return rows, last


@dataclasses.dataclass(frozen=True, slots=True)
class BacklogWrite:
    """What `Backlogs.write` put in a transaction, for `Backlogs.committed` once it is in."""

    marks: Mapping[str, int]  # the marks written
    numbering: Numbering | None = None  # None: no events were numbered
    last: Mapping[str, int] = dataclasses.field(default_factory=dict)
    rows: Sequence[tuple[str, int, int]] = ()


class Backlogs:
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
        self._recent = {sink: deque[BacklogEvent](maxlen=RECENT_PER_SINK) for sink in self._routes}
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

    def events_after(self, sink: str, seq: int, limit: int = 200) -> list[BacklogEvent]:
        """Up to `limit` of `sink`'s events after its seq `seq`, in its seq order."""
        columns = ", ".join(f"e.{name.strip()}" for name in EVENT_COLUMNS.split(","))
        rows = self._connection.query(
            f"SELECT s.seq, {columns} FROM sink_events s JOIN events e ON e.seq = s.event_seq"
            " WHERE s.sink = ? AND s.seq > ? ORDER BY s.seq LIMIT ?",
            (sink, seq, limit),
        )
        return [BacklogEvent(row[0], self._connection.event(row[1:])) for row in rows]

    def recent_events(self, sink: str, seq: int, limit: int) -> list[BacklogEvent] | None:
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
            written = self.write(conn, ())
        self.committed(written)

    # ------------------------------------------------------------------ in a transaction

    def write(
        self, conn: sqlite3.Connection, events: Iterable[tuple[int, str]] | None = None
    ) -> BacklogWrite:
        """Inside the caller's transaction: each sink's rows for the `events` stored ((journal
        seq, type) pairs; None: no numbering, as pruning) and the marks noted; hand what this
        returns to `committed` once the transaction is in. The first numbering of this object
        makes the routed sinks' rows and reads their last seqs."""
        numbering: Numbering | None = None
        rows: list[tuple[str, int, int]] = []
        last: dict[str, int] = {}
        if events is not None:
            numbering = self._numbering_in(conn)
            rows, last = numbering.rows(events)
            _store_rows(conn, rows, last)
        # A sink with no row yet has given nothing: its mark is 0, as its row will start.
        marks_now = dict(self._pending_marks)
        conn.executemany(
            "UPDATE sinks SET delivered_through = ? WHERE name = ?",
            [(through, sink) for sink, through in marks_now.items()],
        )
        return BacklogWrite(marks_now, numbering, last, rows)

    def committed(self, written: BacklogWrite, stored: Sequence[StoredEvent] = ()) -> None:
        """The transaction `written` was part of is in: the marks it wrote are forgotten, the
        sinks' last seqs kept and the events `stored` among their latest."""
        for sink, through in written.marks.items():
            if self._pending_marks.get(sink) == through:
                del self._pending_marks[sink]
        numbering = written.numbering
        if numbering is None:
            return
        numbering.last = dict(written.last)
        self._numbering = numbering
        if written.rows:
            by_seq = {event.seq: event for event in stored}
            for sink, seq, event_seq in written.rows:
                self._recent[sink].append(BacklogEvent(seq, by_seq[event_seq]))

    def forget_recent(self) -> None:
        """Events were pruned: what is no longer in the file is no longer handed out (a
        consumer that lost its data learns from the read that the journal cannot give it
        back)."""
        for recent in self._recent.values():
            recent.clear()

    # ------------------------------------------------------------------ internals

    def _numbering_in(self, conn: sqlite3.Connection) -> Numbering:
        if self._numbering is None:
            ensure_sinks(conn, self._routes, float(self._clock()))
            return Numbering(self._routes, {s: m.last_seq for s, m in marks(conn).items()})
        return self._numbering

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


# ---------------------------------------------------------------------- the rows (SQL)


def ensure_sinks(conn: sqlite3.Connection, sinks: Iterable[str], now: float) -> None:
    """A row for each configured sink; a new one starts with the next event stored."""
    conn.executemany(
        "INSERT INTO sinks (name, last_seq, delivered_through, added_at) VALUES (?, 0, 0, ?)"
        " ON CONFLICT (name) DO NOTHING",
        [(sink, now) for sink in sinks],
    )


def _store_rows(
    conn: sqlite3.Connection, rows: Sequence[tuple[str, int, int]], last: Mapping[str, int]
) -> None:
    if not rows:
        return
    conn.executemany("INSERT INTO sink_events (sink, seq, event_seq) VALUES (?, ?, ?)", rows)
    touched = {sink for sink, _, _ in rows}
    conn.executemany(
        "UPDATE sinks SET last_seq = ? WHERE name = ?", [(last[sink], sink) for sink in touched]
    )


def marks(conn: sqlite3.Connection) -> dict[str, SinkMark]:
    return {
        name: SinkMark(name, last_seq, delivered)
        for name, last_seq, delivered in conn.execute(
            "SELECT name, last_seq, delivered_through FROM sinks ORDER BY name"
        )
    }


def first_needed_input(
    conn: sqlite3.Connection, sinks: Iterable[str]
) -> Iterable[tuple[str, int | None]]:
    """For each sink, the input number of the first event it has not confirmed (retention
    keeps it and everything after it), None when it has everything."""
    for sink in sinks:
        row = conn.execute(
            "SELECT e.input_no FROM sinks k JOIN sink_events s ON s.sink = k.name"
            " AND s.seq > k.delivered_through JOIN events e ON e.seq = s.event_seq"
            " WHERE k.name = ? ORDER BY s.seq LIMIT 1",
            (sink,),
        ).fetchone()
        yield sink, None if row is None else row[0]


def forget_before(conn: sqlite3.Connection, first_kept_seq: int) -> None:
    """Drop the numbering of pruned events. A sink's seqs grow with the journal's, so its
    rows below the first kept event are a prefix of its primary key: found by walking it
    from the start (as many steps as rows dropped), with no index on event_seq to keep up."""
    for (sink,) in conn.execute("SELECT name FROM sinks").fetchall():
        kept = conn.execute(
            "SELECT seq FROM sink_events WHERE sink = ? AND event_seq >= ? ORDER BY seq LIMIT 1",
            (sink, first_kept_seq),
        ).fetchone()
        if kept is None:
            conn.execute("DELETE FROM sink_events WHERE sink = ?", (sink,))
        else:
            conn.execute("DELETE FROM sink_events WHERE sink = ? AND seq < ?", (sink, kept[0]))
