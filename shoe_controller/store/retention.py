"""Retention: which whole shoes may leave the journal, and deleting them with their events.

The hash chain survives (docs/journal.md "Pruning and the chain"): the records to delete are
a prefix of the chain; they are walked from the journal's anchor first, and the link of the
last one becomes the new `chain_anchor`, which the first record kept follows. Records that do
not chain are not deleted: pruning must never wash a tampered record out of the journal.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from shoe_controller.store.backlogs import first_needed_input, forget_before
from shoe_controller.store.chain import (
    EVENT_CHAIN_COLUMNS,
    INPUT_CHAIN_COLUMNS,
    event_record,
    in_chain_order,
    input_record,
    walk,
)
from shoe_controller.store.records import PruneResult


def prune_before(conn: sqlite3.Connection, horizon: float, sinks: Collection[str]) -> PruneResult:
    """Delete the shoes ended before `horizon` (journal clock) that nothing still needs.

    Runs inside the caller's write transaction (Journal.prune): the current shoe, every
    event one of `sinks` has not confirmed and anything recorded after `horizon` are kept.
    """
    keep_from = _prune_boundary(conn, horizon, sinks)
    shoes = tuple(
        row[0]
        for row in conn.execute(
            "SELECT shoe FROM shoes WHERE last_input < ? ORDER BY shoe", (keep_from,)
        )
    )
    first_kept_seq = conn.execute(
        "SELECT min(first_seq) FROM inputs WHERE input_no >= ?", (keep_from,)
    ).fetchone()[0]
    if first_kept_seq is None:
        first_kept_seq = conn.execute("SELECT last_seq FROM journal").fetchone()[0] + 1
    anchor = conn.execute("SELECT chain_anchor FROM journal").fetchone()[0]
    inputs_gone = conn.execute(
        f"SELECT {INPUT_CHAIN_COLUMNS} FROM inputs WHERE input_no < ? ORDER BY input_no",
        (keep_from,),
    )
    events_gone = conn.execute(
        f"SELECT {EVENT_CHAIN_COLUMNS} FROM events WHERE seq < ? ORDER BY seq", (first_kept_seq,)
    )
    chain = walk(
        in_chain_order(map(input_record, inputs_gone), map(event_record, events_gone)), anchor
    )
    if not chain.intact:
        return PruneResult(shoes=(), inputs=0, events=0, chain=chain)
    if chain.records == 0:
        return PruneResult(shoes=(), inputs=0, events=0)
    conn.execute("UPDATE journal SET chain_anchor = ?", (chain.head,))
    events = conn.execute("DELETE FROM events WHERE seq < ?", (first_kept_seq,)).rowcount
    forget_before(conn, first_kept_seq)
    inputs = conn.execute("DELETE FROM inputs WHERE input_no < ?", (keep_from,)).rowcount
    conn.execute("DELETE FROM shoes WHERE last_input < ?", (keep_from,))
    return PruneResult(shoes=shoes, inputs=inputs, events=events, chain=chain)


def _prune_boundary(conn: sqlite3.Connection, horizon: float, sinks: Collection[str]) -> int:
    """The lowest input number that must be kept; everything below it may go."""
    (last_input,) = conn.execute("SELECT last_input FROM journal").fetchone()
    candidates = [last_input + 1]
    # the first event a sink has not confirmed
    candidates += [needed for _, needed in first_needed_input(conn, sinks) if needed is not None]
    current = conn.execute(
        "SELECT first_input FROM shoes ORDER BY first_input DESC LIMIT 1"
    ).fetchone()
    if current is not None:
        candidates.append(current[0])
    for sql, params in (
        # shoes still open or ended too recently
        (
            "SELECT min(first_input) FROM shoes WHERE ended_at IS NULL OR ended_at > ?",
            (horizon,),
        ),
        # anything recorded within the retention age
        ("SELECT min(input_no) FROM inputs WHERE recorded_at > ?", (horizon,)),
    ):
        row = conn.execute(sql, params).fetchone()
        if row is not None and row[0] is not None:
            candidates.append(row[0])
    keep_from = min(candidates)
    # never cut a shoe in two: move the boundary to the start of a shoe it falls inside
    inside = conn.execute(
        "SELECT min(first_input) FROM shoes WHERE first_input < ? AND last_input >= ?",
        (keep_from, keep_from),
    ).fetchone()[0]
    return keep_from if inside is None else min(keep_from, inside)
