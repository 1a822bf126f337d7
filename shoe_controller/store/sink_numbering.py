"""Each delivery sink's own numbering of the events it takes (docs/journal.md "Sinks").

A sink (the table server, a message broker ...) sees only the events its filter takes, and
docs/spec-push-api.md wants its `seq` gap-free: so each sink numbers its events 1, 2, 3 ... itself.
The numbers are given in the same transaction that stores the events (no second writer
competes with the card's commit for the write lock), stored as `sink_events` rows, and never
change: a filter changed later numbers only the events stored after it.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence

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


def ensure_sinks(conn: sqlite3.Connection, sinks: Iterable[str], now: float) -> None:
    """A row for each configured sink; a new one starts with the next event stored."""
    conn.executemany(
        "INSERT INTO sinks (name, last_seq, delivered_through, added_at) VALUES (?, 0, 0, ?)"
        " ON CONFLICT (name) DO NOTHING",
        [(sink, now) for sink in sinks],
    )


def store_rows(
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
