"""The journal's read side: counters, the outbox, shoes and rounds, replay steps, the check.

`JournalReader` holds the connection and asks it questions; `Journal` (journal.py) is a
JournalReader that also writes, so every query is a method of the one class users import.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from shoe_controller.store.chain import (
    EVENT_CHAIN_COLUMNS,
    INPUT_CHAIN_COLUMNS,
    ChainReport,
    event_record,
    in_chain_order,
    input_record,
    walk,
)
from shoe_controller.store.errors import JournalCorrupt
from shoe_controller.store.records import (
    EVENT_COLUMNS,
    ReplayStep,
    RoundInfo,
    ShoeInfo,
    StoredEvent,
    stored_event,
)
from shoe_controller.store.transactions import query, transaction

COMMAND_WINDOW = 20_000  # inputs searched for a command sent again (hours of dealing)


class JournalReader:
    """Queries on the journal file at `path`; each one sees a single consistent snapshot."""

    def __init__(
        self, connection: sqlite3.Connection, path: Path, controller_id: str, *, read_only: bool
    ) -> None:
        self._conn = connection
        self.path = path
        self.controller_id = controller_id
        self.read_only = read_only
        self._chain_report: ChainReport | None = None

    # ------------------------------------------------------------------ counters

    def last_seq(self) -> int:
        return int(self._one("SELECT last_seq FROM journal"))

    def acked_through(self) -> int:
        return int(self._one("SELECT acked_through FROM journal"))

    def backlog(self) -> int:
        """Events stored but not yet acknowledged by the table server."""
        return int(self._one("SELECT last_seq - acked_through FROM journal"))

    def last_input(self) -> int:
        """Highest input number assigned (inputs are numbered 1, 2, 3 ... like seqs)."""
        return int(self._one("SELECT last_input FROM journal"))

    def boot(self) -> int:
        return int(self._one("SELECT boot FROM journal"))

    def first_seq(self) -> int | None:
        """Lowest seq still held (earlier ones were pruned), None if no event is held."""
        return self._one("SELECT min(seq) FROM events")

    # ------------------------------------------------------------------ events, shoes, links

    def events_after(self, seq: int, limit: int = 200) -> list[StoredEvent]:
        """Up to `limit` events with seq > `seq`, in seq order (the outbox read)."""
        rows = self._query(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
            (seq, limit),
        )
        return [self._event(row) for row in rows]

    def current_shoe(self) -> int | None:
        """The shoe of the latest shoe-bearing input (open, or ended with no successor)."""
        return self._one("SELECT shoe FROM shoes ORDER BY first_input DESC LIMIT 1")

    def shoes(self) -> list[ShoeInfo]:
        rows = self._query(
            "SELECT shoe, first_input, last_input, ended_at FROM shoes ORDER BY first_input"
        )
        return [ShoeInfo(*row) for row in rows]

    def rounds(self, shoe: int) -> list[RoundInfo]:
        rows = self._query(
            "SELECT shoe, round, min(seq), max(seq), count(*), min(at), max(at) FROM events"
            " WHERE shoe = ? AND round IS NOT NULL GROUP BY round ORDER BY round",
            (shoe,),
        )
        return [RoundInfo(*row) for row in rows]

    def round_events(self, shoe: int, round: int) -> list[StoredEvent]:
        rows = self._query(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE shoe = ? AND round = ? ORDER BY seq",
            (shoe, round),
        )
        return [self._event(row) for row in rows]

    def round_last_input(self, shoe: int, round: int) -> int | None:
        """The last input that caused an event of the round (None: no such round held)."""
        return self._one(
            "SELECT max(input_no) FROM events WHERE shoe = ? AND round = ?", (shoe, round)
        )

    def first_input_since(self, recorded_at: float) -> int | None:
        """The first input recorded at or after `recorded_at` (journal clock), if any."""
        return self._one("SELECT min(input_no) FROM inputs WHERE recorded_at >= ?", (recorded_at,))

    def link_state(self, device: str) -> dict[str, Any] | None:
        encoded = self._one("SELECT state FROM links WHERE device = ?", (device,))
        return None if encoded is None else json.loads(encoded)

    def link_states(self) -> dict[str, dict[str, Any]]:
        return {
            device: json.loads(state)
            for device, state in self._query("SELECT device, state FROM links ORDER BY device")
        }

    # ------------------------------------------------------------------ replay

    def command_outcome(self, key: str, window: int = COMMAND_WINDOW) -> list[StoredEvent] | None:
        """The events of the supervisor command stored with idempotency `key` among the last
        `window` inputs, or None if none was (docs/control.md "The same command twice"); a
        command without a key is never one sent again."""
        if not key:
            return None
        with self._read() as conn:
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
                return [self._event(row) for row in events]
        return None

    def replay_start(self) -> int:
        """The input number replay starts from: the first input of the oldest shoe not ended
        (a batch shuffler prepares the next shoe while this one is still dealt), else of the
        latest shoe, else the oldest input held (when no shoe was ever recorded)."""
        start = self._one("SELECT min(first_input) FROM shoes WHERE ended_at IS NULL")
        if start is None:
            start = self._one("SELECT first_input FROM shoes ORDER BY first_input DESC LIMIT 1")
        if start is None:
            start = self._one("SELECT min(input_no) FROM inputs")
        return (
            int(start) if start is not None else self._one_int("SELECT last_input + 1 FROM journal")
        )

    def replay_steps(self, from_input: int | None = None) -> list[ReplayStep]:
        """The inputs from `from_input` (default: replay_start()) on, each with its events.

        By default only inputs of the shoes that began at or after the replay start: the
        inputs of an earlier shoe recorded after the next shoe's first input (its last rounds,
        dealt while a batch shuffler prepared the next shoe) belong to a shoe that is over.
        """
        with self._read() as conn:
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
                    event = self._event(row)
                    events.setdefault(event.input_no, []).append(event)
        return [
            ReplayStep(input_no, shoe, json.loads(body), tuple(events.get(input_no, ())))
            for input_no, shoe, body, _ in inputs
        ]

    # ------------------------------------------------------------------ integrity

    def check(self) -> list[str]:
        """Integrity problems found (empty list: sound): pages, seq continuity, counters.

        Damage that stops SQLite from reading the file at all is a problem found too, not an
        exception: whoever asks gets the answer "damaged", never a journal reported sound.
        """
        try:
            return self._check()
        except JournalCorrupt as exc:
            return [f"sqlite: {exc}"]

    def _check(self) -> list[str]:
        problems: list[str] = []
        with self._read() as conn:
            pages = [row[0] for row in conn.execute("PRAGMA quick_check")]
            if pages != ["ok"]:
                problems.extend(f"sqlite: {line}" for line in pages)
                return problems
            last_seq, last_input, acked = conn.execute(
                "SELECT last_seq, last_input, acked_through FROM journal"
            ).fetchone()
            low, high, count = conn.execute(
                "SELECT min(seq), max(seq), count(*) FROM events"
            ).fetchone()
            if count and high - low + 1 != count:
                problems.append(f"seq gap: {count} events held between {low} and {high}")
            if count and high != last_seq:
                problems.append(f"last seq stored {high} but counter says {last_seq}")
            if acked > last_seq:
                problems.append(f"acked_through {acked} beyond last seq {last_seq}")
            top_input = conn.execute("SELECT max(input_no) FROM inputs").fetchone()[0]
            if top_input is not None and top_input != last_input:
                problems.append(f"last input stored {top_input} but counter says {last_input}")
            torn = conn.execute(
                "SELECT i.input_no FROM inputs i WHERE i.event_count != (SELECT count(*)"
                " FROM events e WHERE e.seq >= i.first_seq"
                " AND e.seq < i.first_seq + i.event_count AND e.input_no = i.input_no) LIMIT 5"
            ).fetchall()
            problems.extend(f"input {row[0]} lacks some of its events" for row in torn)
        return problems

    # ------------------------------------------------------------------ the hash chain

    @property
    def chain_report(self) -> ChainReport | None:
        """What the last walk of the chain found (None: not walked yet by this object)."""
        return self._chain_report

    def verify_chain(self) -> ChainReport:
        """Walk the whole chain (store/chain.py) from the anchor to the head, in one snapshot.

        Never repairs anything: a broken chain stays broken in the file, and this report
        (also kept as `chain_report`) names its first bad record. Damage SQLite cannot read
        past is a broken chain too, never an intact one.
        """
        try:
            with self._read() as conn:
                anchor, head = conn.execute(
                    "SELECT chain_anchor, chain_head FROM journal"
                ).fetchone()
                inputs = conn.execute(f"SELECT {INPUT_CHAIN_COLUMNS} FROM inputs ORDER BY input_no")
                events = conn.execute(f"SELECT {EVENT_CHAIN_COLUMNS} FROM events ORDER BY seq")
                records = in_chain_order(map(input_record, inputs), map(event_record, events))
                report = walk(records, anchor, head)
        except JournalCorrupt as exc:
            report = ChainReport(False, 0, "", "", "the file", f"sqlite: {exc}")
        self._chain_report = report
        return report

    def chain_status(self) -> dict[str, Any] | None:
        """The last walk's report as JSON (the status answer's `journal_chain`), or None."""
        report = self._chain_report
        return None if report is None else report.to_json()

    def chain_state(self) -> dict[str, Any]:
        """The chain's fixed points: anchor, head, where live linking began, the migration."""
        anchor, head, chained_from, migrated_at = self._query(
            "SELECT chain_anchor, chain_head, chained_from, migrated_at FROM journal"
        )[0]
        return {
            "anchor": anchor,
            "head": head,
            "chained_from": chained_from,
            "migrated_at": migrated_at,
        }

    def chain_rows(
        self, from_input: int, to_input: int
    ) -> tuple[str, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The inputs `from_input`..`to_input` and their events as stored (INPUT_CHAIN_COLUMNS,
        EVENT_CHAIN_COLUMNS), with the link the first of them follows: the record stored just
        before (the last event of the input before, or that input), else the journal's anchor.
        One snapshot, for `shoe-controller export`."""
        with self._read() as conn:
            inputs = conn.execute(
                f"SELECT {INPUT_CHAIN_COLUMNS} FROM inputs WHERE input_no BETWEEN ? AND ?"
                " ORDER BY input_no",
                (from_input, to_input),
            ).fetchall()
            spans = [(row[5], row[5] + row[6] - 1) for row in inputs if row[5] is not None]
            events = []
            if spans:  # by seq, the primary key: the events table has no input_no index
                events = conn.execute(
                    f"SELECT {EVENT_CHAIN_COLUMNS} FROM events WHERE seq BETWEEN ? AND ?"
                    " ORDER BY seq",
                    (min(low for low, _ in spans), max(high for _, high in spans)),
                ).fetchall()
            before = conn.execute(
                "SELECT chain, first_seq, event_count FROM inputs WHERE input_no < ?"
                " ORDER BY input_no DESC LIMIT 1",
                (from_input,),
            ).fetchone()
            if before is None:
                previous = conn.execute("SELECT chain_anchor FROM journal").fetchone()[0]
            elif before[2]:  # its last event is the record stored just before
                last = conn.execute(
                    "SELECT chain FROM events WHERE seq = ?", (before[1] + before[2] - 1,)
                ).fetchone()
                previous = last[0] if last is not None else ""
            else:
                previous = before[0]
        return previous, inputs, events

    # ------------------------------------------------------------------ internals

    def _event(self, row: tuple[Any, ...]) -> StoredEvent:
        return stored_event(self.controller_id, row)

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self._query(sql, params)
        return rows[0][0] if rows else None

    def _one_int(self, sql: str) -> int:
        return int(self._one(sql))

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return query(self._conn, self.path, sql, params)

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read transaction: several SELECTs see one snapshot."""
        return transaction(self._conn, self.path, "BEGIN")
