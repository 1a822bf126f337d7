"""What the table PC promised, checked after whatever happened to it.

The shoe knows which cards the table PC promised to keep (`HostTable.promise`: all it dealt,
but the last one while that one is unacknowledged), and the journal numbers every event for
the table server: after a cut, a kill or an upgrade, the journal holds each promised card
once and in order, and the server each event once, in its seq order.
"""

from __future__ import annotations

import json
import time
from typing import Any

from shoe_testkit.tablepc.host_table import card_names
from shoe_testkit.tablepc.station import TableStation


def journal_cards(station: TableStation) -> list[dict[str, Any]]:
    """The card inputs the journal holds, in order, as (card, counter) bodies."""
    copy = station.journal_copy()
    bodies = [
        json.loads(row["body"]) for row in station.journal_inputs(copy) if row["type"] == "card"
    ]
    return [body for body in bodies if not body.get("duplicate")]


def assert_nothing_lost_or_doubled(station: TableStation) -> dict[str, int]:
    """Every card the shoe dealt and had ACKed is in the journal once, in order; the table
    server holds every event the journal has for it, each seq once. Returns the counts."""
    station.host.wait_acked()  # whatever was unacknowledged at a cut has been resent by now
    promise = station.host.promise()
    stored = journal_cards(station)
    dealt = card_names(promise.dealt)
    stored_names = [body["card"] for body in stored]
    assert stored_names == dealt, f"shoe dealt {len(dealt)}, journal holds {len(stored_names)}"
    # the table server: every event the journal numbered for it, once each, in order; a sink
    # that skips events (surveillance.* here) numbers those it takes 1, 2, 3 ... itself, and
    # an event's id keeps its journal seq (docs/delivery.md, "Each sink's numbering")
    for_server = [
        int(seq)
        for seq in station.sql(
            "SELECT event_seq FROM sink_events WHERE sink = 'server' ORDER BY seq"
        ).split()
    ]
    deadline = time.monotonic() + 300
    while True:
        received = station.host.received()
        if len(received) >= len(for_server):
            break
        assert time.monotonic() < deadline, (
            f"the table server has {len(received)} of {len(for_server)} events"
        )
        time.sleep(1.0)
    seqs = [event["seq"] for event in received]
    assert seqs == list(range(1, len(seqs) + 1)), "a seq missing or twice at the table server"
    sent = [int(str(event["id"]).rsplit(":", 1)[1]) for event in received]
    assert sent[: len(for_server)] == for_server, (
        "an event missing, twice or out of order at the table server"
    )
    journal_types = {  # read after: every event the server has is stored by now
        int(seq): kind
        for seq, kind in (
            line.split("|", 1) for line in station.sql("SELECT seq, type FROM events").splitlines()
        )
    }
    assert [journal_types.get(seq) for seq in sent] == [event["type"] for event in received]
    return {
        "cards_dealt": len(dealt),
        "cards_stored": len(stored_names),
        "events_received": len(seqs),
    }
