"""Whether the journal file is sound: the integrity check and the hash chain (store/chain.py).

Never repairs anything: a damaged file or a broken chain is reported, naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from shoe_controller.store.chain import (
    EVENT_CHAIN_COLUMNS,
    INPUT_CHAIN_COLUMNS,
    ChainReport,
    InputEnd,
    event_record,
    in_chain_order,
    input_ends,
    input_record,
    walk,
)
from shoe_controller.store.connection import JournalConnection
from shoe_controller.store.errors import JournalCorrupt
from shoe_controller.store.records import EVENT_COLUMNS, StoredEvent
from shoe_controller.vocab.events import EventType


class JournalIntegrity:
    """The check of the file and the walk of its chain (`journal.integrity`)."""

    def __init__(self, connection: JournalConnection) -> None:
        self._connection = connection
        self._chain_report: ChainReport | None = None

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
        with self._connection.read() as conn:
            pages = [row[0] for row in conn.execute("PRAGMA quick_check")]
            if pages != ["ok"]:
                problems.extend(f"sqlite: {line}" for line in pages)
                return problems
            last_seq, last_input = conn.execute(
                "SELECT last_seq, last_input FROM journal"
            ).fetchone()
            low, high, count = conn.execute(
                "SELECT min(seq), max(seq), count(*) FROM events"
            ).fetchone()
            if count and high - low + 1 != count:
                problems.append(f"seq gap: {count} events held between {low} and {high}")
            if count and high != last_seq:
                problems.append(f"last seq stored {high} but counter says {last_seq}")
            for sink, sink_last, delivered in conn.execute(
                "SELECT name, last_seq, delivered_through FROM sinks"
            ):
                if delivered > sink_last:
                    problems.append(
                        f"sink {sink}: delivered through {delivered},"
                        f" beyond its last seq {sink_last}"
                    )
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
            with self._connection.read() as conn:
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

    def input_ends(self, wanted: Container[int]) -> dict[int, InputEnd]:
        """Where the chain stands after each input `wanted` (chain.input_ends: the links as
        stored, from the anchor on), in one snapshot, read as the walk reads it: for
        `verify --journal --checkpoints`."""
        with self._connection.read() as conn:
            (anchor,) = conn.execute("SELECT chain_anchor FROM journal").fetchone()
            inputs = conn.execute(f"SELECT {INPUT_CHAIN_COLUMNS} FROM inputs ORDER BY input_no")
            events = conn.execute(f"SELECT {EVENT_CHAIN_COLUMNS} FROM events ORDER BY seq")
            records = in_chain_order(map(input_record, inputs), map(event_record, events))
            return input_ends(records, anchor, wanted)

    def checkpoints(self) -> list[StoredEvent]:
        """The journal's own `journal.checkpoint` events, in seq order (docs/journal.md
        "Checkpoints"): one scan of the events."""
        rows = self._connection.query(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE type = ? ORDER BY seq",
            (str(EventType.JOURNAL_CHECKPOINT),),
        )
        return [self._connection.event(row) for row in rows]

    def note_chain(self, report: ChainReport) -> None:
        """Keep what another walk of the chain found (prune's, of the records it would
        delete), as if this object had walked it."""
        self._chain_report = report

    def chain_status(self) -> dict[str, Any] | None:
        """The last walk's report as JSON (the status answer's `journal_chain`), or None."""
        report = self._chain_report
        return None if report is None else report.to_json()

    def chain_state(self) -> dict[str, Any]:
        """The chain's fixed points: anchor, head, where live linking began, the migration."""
        anchor, head, chained_from, migrated_at = self._connection.query(
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
        with self._connection.read() as conn:
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
