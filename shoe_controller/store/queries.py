"""The journal's questions: counters, events, shoes and rounds, links, replay steps.

`JournalReader` asks them over the journal's connection (connection.py); `Journal`
(journal.py) holds one as `journal.reads`, beside `journal.integrity` (integrity.py: the
check, the hash chain) and `journal.sinks` (backlogs.py: each sink's backlog and mark).
"""

from __future__ import annotations

import json
from typing import Any

from shoe_controller.store.connection import JournalConnection
from shoe_controller.store.records import (
    EVENT_COLUMNS,
    ReplayStep,
    RoundInfo,
    ShoeInfo,
    StoredEvent,
)

COMMAND_WINDOW = 20_000  # inputs searched for a command sent again (hours of dealing)


class JournalReader:
    """Queries on the journal file; each one sees a single consistent snapshot."""

    def __init__(self, connection: JournalConnection) -> None:
        self._connection = connection

    # ------------------------------------------------------------------ counters

    def last_seq(self) -> int:
        return int(self._connection.one("SELECT last_seq FROM journal"))

    def last_input(self) -> int:
        """Highest input number assigned (inputs are numbered 1, 2, 3 ... like seqs)."""
        return int(self._connection.one("SELECT last_input FROM journal"))

    def boot(self) -> int:
        return int(self._connection.one("SELECT boot FROM journal"))

    def first_seq(self) -> int | None:
        """Lowest seq still held (earlier ones were pruned), None if no event is held."""
        return self._connection.one("SELECT min(seq) FROM events")

    # ------------------------------------------------------------------ events, shoes, links

    def events_after(self, seq: int, limit: int = 200) -> list[StoredEvent]:
        """Up to `limit` events with seq > `seq`, in seq order (the outbox read)."""
        rows = self._connection.query(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
            (seq, limit),
        )
        return [self._connection.event(row) for row in rows]

    def current_shoe(self) -> int | None:
        """The shoe of the latest shoe-bearing input (open, or ended with no successor)."""
        return self._connection.one("SELECT shoe FROM shoes ORDER BY first_input DESC LIMIT 1")

    def shoes(self) -> list[ShoeInfo]:
        rows = self._connection.query(
            "SELECT shoe, first_input, last_input, ended_at FROM shoes ORDER BY first_input"
        )
        return [ShoeInfo(*row) for row in rows]

    def rounds(self, shoe: int) -> list[RoundInfo]:
        rows = self._connection.query(
            "SELECT shoe, round, min(seq), max(seq), count(*), min(at), max(at) FROM events"
            " WHERE shoe = ? AND round IS NOT NULL GROUP BY round ORDER BY round",
            (shoe,),
        )
        return [RoundInfo(*row) for row in rows]

    def round_events(self, shoe: int, round: int) -> list[StoredEvent]:
        rows = self._connection.query(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE shoe = ? AND round = ? ORDER BY seq",
            (shoe, round),
        )
        return [self._connection.event(row) for row in rows]

    def round_last_input(self, shoe: int, round: int) -> int | None:
        """The last input that caused an event of the round (None: no such round held)."""
        return self._connection.one(
            "SELECT max(input_no) FROM events WHERE shoe = ? AND round = ?", (shoe, round)
        )

    def first_input_since(self, recorded_at: float) -> int | None:
        """The first input recorded at or after `recorded_at` (journal clock), if any."""
        return self._connection.one(
            "SELECT min(input_no) FROM inputs WHERE recorded_at >= ?", (recorded_at,)
        )

    def link_state(self, device: str) -> dict[str, Any] | None:
        encoded = self._connection.one("SELECT state FROM links WHERE device = ?", (device,))
        return None if encoded is None else json.loads(encoded)

    def link_states(self) -> dict[str, dict[str, Any]]:
        return {
            device: json.loads(state)
            for device, state in self._connection.query(
                "SELECT device, state FROM links ORDER BY device"
            )
        }

    # ------------------------------------------------------------------ replay

    def settings_in_force(self, input_no: int) -> tuple[int, dict[str, Any]] | None:
        """The last table_settings input at or before `input_no` (its number and settings):
        the table settings in force then; None when the journal holds none that early (it
        was written before they were journaled, or they were pruned)."""
        rows = self._connection.query(
            "SELECT input_no, body FROM inputs WHERE input_no <= ? AND type = 'table_settings'"
            " ORDER BY input_no DESC LIMIT 1",
            (input_no,),
        )
        if not rows:
            return None
        number, body = rows[0]
        return int(number), dict(json.loads(body)["settings"])

    def command_outcome(self, key: str, window: int = COMMAND_WINDOW) -> list[StoredEvent] | None:
        """The events of the supervisor command stored with idempotency `key` among the last
        `window` inputs, or None if none was (docs/control.md "The same command twice"); a
        command without a key is never one sent again."""
        if not key:
            return None
        with self._connection.read() as conn:
            rows = conn.execute(
                "SELECT body, first_seq, event_count FROM inputs"
                " WHERE input_no > ? AND type = 'supervisor' ORDER BY input_no DESC",
                (max(0, self.last_input() - window),),
            ).fetchall()
            for body, first_seq, count in rows:
                if json.loads(body).get("key") != key:
                    continue
                if not count:
                    return []
                events = conn.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE seq >= ? AND seq < ? ORDER BY seq",
                    (first_seq, first_seq + count),
                ).fetchall()
                return [self._connection.event(row) for row in events]
        return None

    def replay_start(self) -> int:
        """The input number replay starts from: the first input of the oldest shoe not ended
        (a batch shuffler prepares the next shoe while this one is still dealt), else of the
        latest shoe, else the oldest input held (when no shoe was ever recorded)."""
        start = self._connection.one("SELECT min(first_input) FROM shoes WHERE ended_at IS NULL")
        if start is None:
            start = self._connection.one(
                "SELECT first_input FROM shoes ORDER BY first_input DESC LIMIT 1"
            )
        if start is None:
            start = self._connection.one("SELECT min(input_no) FROM inputs")
        return (
            int(start)
            if start is not None
            else self._connection.one_int("SELECT last_input + 1 FROM journal")
        )

    def replay_steps(self, from_input: int | None = None) -> list[ReplayStep]:
        """The inputs from `from_input` (default: replay_start()) on, each with its events.

        By default only inputs of the shoes that began at or after the replay start: the
        inputs of an earlier shoe recorded after the next shoe's first input (its last rounds,
        dealt while a batch shuffler prepared the next shoe) belong to a shoe that is over.
        """
        with self._connection.read() as conn:
            by_shoe = from_input is None
            start = self.replay_start() if from_input is None else from_input
            # Decides which stored inputs a replay gets, from storage facts only: each input's
            # `shoe` (the table's decision, stored as given) and when each shoe began
            # (`shoes.first_input`). From `start` on: an input with no shoe, or of a shoe that
            # began at or after `start`. A shoe that began before `start` is over (replay
            # starts at the oldest shoe not ended), so its inputs recorded later, its last
            # rounds dealt while the next shoe was prepared, rebuild nothing. Shoes are ordered
            # by their first input, as in replay_start and current_shoe, never by number.
            inputs = conn.execute(
                "SELECT input_no, shoe, body, first_seq FROM inputs WHERE input_no >= :start"
                " AND (NOT :by_shoe OR shoe IS NULL"
                " OR shoe IN (SELECT shoe FROM shoes WHERE first_input >= :start))"
                " ORDER BY input_no",
                {"start": start, "by_shoe": by_shoe},
            ).fetchall()
            first = next((row[3] for row in inputs if row[3] is not None), None)
            events: dict[int, list[StoredEvent]] = {}
            if first is not None:
                for row in conn.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE seq >= ? ORDER BY seq", (first,)
                ):
                    event = self._connection.event(row)
                    events.setdefault(event.input_no, []).append(event)
        return [
            ReplayStep(input_no, shoe, json.loads(body), tuple(events.get(input_no, ())))
            for input_no, shoe, body, _ in inputs
        ]
