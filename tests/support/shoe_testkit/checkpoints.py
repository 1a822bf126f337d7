"""A checkpointed journal, its copies at the table server, and the rewrite they catch.

`CheckpointedTable` deals shoes through the real parts, in-process: `Controller`, a journal
with the table server's sink, and the daemon's own `service.checkpoints.Checkpoints` taking
the start-up, shoe-end and periodic checkpoints (a fake timer: 5 s an input). Its
`copies()` are the checkpoint events as the sink sends them (`BacklogEvent.to_wire()`): the CP
file. `rewrite_card` is the insider of docs/journal.md "Checkpoints": root on the table PC,
with the key, who changes one card in the journal file and recomputes every link after it and
the head, and signs the journal's own checkpoints after it again, so that the file chains and
agrees with itself.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from shoe_controller.delivery.routing import EventFilter
from shoe_controller.service.checkpoints import Checkpoints
from shoe_controller.store.chain import (
    EVENT_CHAIN_COLUMNS,
    INPUT_CHAIN_COLUMNS,
    ChainPoint,
    event_canonical,
    event_record,
    in_chain_order,
    input_canonical,
    input_record,
    link,
)
from shoe_controller.store.checkpoint import Checkpoint, Signer
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal, StoredEvent
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import Input
from shoe_testkit.perfect_dealer import START_TIME, deal_shoe

CONTROLLER = "tbl-07-shoe"
SINK = "server"
RECORDED_AT = 1_900_000_000.0  # the journal's clock
EVERY_S = 300.0
STEP_S = 5.0  # the timer between two inputs: a periodic checkpoint every 60 inputs
CHECKPOINT = str(EventType.JOURNAL_CHECKPOINT)


def shoe_inputs(config: TableConfig, seeds: Sequence[int], cut_after: int = 250) -> list[Input]:
    """Whole shoes dealt by the perfect dealer, one per seed, an hour apart."""
    cards = [
        Card(rank, suit) for _ in range(config.decks) for rank in range(1, 14) for suit in Suit
    ]
    inputs: list[Input] = []
    for index, seed in enumerate(seeds):
        random.Random(seed).shuffle(cards)
        shoe = deal_shoe(cards, config, cut_after=cut_after, start=START_TIME + 3600 * index)
        inputs += shoe.inputs
    return inputs


class CheckpointedTable:
    """A journal dealt through the controller with the daemon's checkpoints (module doc)."""

    def __init__(
        self,
        path: Path,
        signer: Signer,
        inputs: Sequence[Input],
        config: TableConfig | None = None,
        *,
        controller_id: str = CONTROLLER,
    ) -> None:
        self.path = path
        self.config = config or TableConfig(decks=6)
        self._now = RECORDED_AT
        self._minutes = 0.0
        self.journal = Journal.open(
            path, controller_id, clock=self._clock, routes={SINK: EventFilter()}
        )
        self.checkpoints: Checkpoints | None = None
        self.controller = Controller(self.config, self.journal, on_stored=self._stored)
        self.checkpoints = Checkpoints(
            signer, self.controller, self.controller.submit_many, controller_id=controller_id,
            every_s=EVERY_S, clock=self._clock, monotonic=lambda: self._minutes,
        )  # fmt: skip
        self.controller.start("test", self._clock())
        self.checkpoints.tick()  # the upkeep's first round: the start-up checkpoint
        for item in inputs:
            self.controller.submit(item)
            self._minutes += STEP_S
            self.checkpoints.tick()

    def _clock(self) -> float:
        self._now += 0.5
        return self._now

    def _stored(self, events: list[StoredEvent]) -> None:
        if self.checkpoints is not None:
            self.checkpoints.on_stored(events)

    def copies(self) -> list[dict[str, Any]]:
        """The checkpoint events as the table server's sink sends them: a CP file's lines."""
        return [
            item.to_wire()
            for item in self.journal.sinks.events_after(SINK, 0, limit=1_000_000)
            if item.event.type == CHECKPOINT
        ]

    def close(self) -> None:
        self.journal.close()


def write_lines(path: Path, records: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
    return path


def card_inputs(path: Path) -> Iterator[tuple[int, str]]:
    """(input_no, card) of every card input of a journal file that names its card."""
    conn = sqlite3.connect(path)
    try:
        for input_no, body in conn.execute(
            "SELECT input_no, body FROM inputs WHERE type = 'card' ORDER BY input_no"
        ):
            card = json.loads(body).get("card")
            if card:
                yield input_no, card
    finally:
        conn.close()


def rewrite_card(path: Path, input_no: int, card: str, signer: Signer | None) -> int:
    """Change the card of input `input_no` in the journal file at `path`, then link every
    record after it again and set the head; with `signer` (the table's key, as root has it),
    also sign the journal's own checkpoints after it again, for the new heads. The file then
    chains from its anchor to its head. Returns how many checkpoints were signed again."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        (body,) = conn.execute("SELECT body FROM inputs WHERE input_no = ?", (input_no,)).fetchone()
        changed = json.loads(body)
        changed["card"] = card
        conn.execute(
            "UPDATE inputs SET body = ? WHERE input_no = ?",
            (json.dumps(changed, separators=(",", ":")), input_no),
        )
        signed = _link_again(conn, signer)
        conn.execute("COMMIT")
        return signed
    finally:
        conn.close()


def _link_again(conn: sqlite3.Connection, signer: Signer | None) -> int:
    """Every record linked again from the anchor with the chain's own functions, as the
    journal links them; each checkpoint on the way signed again for where the chain now
    stands when `signer` is given (its input's body and its event's data)."""
    anchor, controller_id = conn.execute(
        "SELECT chain_anchor, controller_id FROM journal"
    ).fetchone()
    inputs = {
        row[0]: list(row) for row in conn.execute(f"SELECT {INPUT_CHAIN_COLUMNS} FROM inputs")
    }
    events = {
        row[0]: list(row) for row in conn.execute(f"SELECT {EVENT_CHAIN_COLUMNS} FROM events")
    }
    order = in_chain_order(
        map(input_record, (tuple(inputs[n]) for n in sorted(inputs))),
        map(event_record, (tuple(events[n]) for n in sorted(events))),
    )
    head, last_input, last_seq, signed = anchor, 0, 0, 0
    resigned: dict[int, str] = {}  # input_no: its checkpoint event's new data
    for record in order:
        if record.kind == "input":
            row = inputs[record.number]
            if signer is not None and row[2] == "journal_checkpoint":
                body = json.loads(row[3])
                point = ChainPoint(last_input, last_seq, head)
                new = signer.sign(controller_id, point, body["time"]).to_json()
                if new != {name: body[name] for name in new}:
                    body.update(new)
                    row[3] = json.dumps(body, separators=(",", ":"))
                    conn.execute("UPDATE inputs SET body = ? WHERE input_no = ?",
                                 (row[3], record.number))  # fmt: skip
                    resigned[record.number] = json.dumps(new, separators=(",", ":"))
                    signed += 1
            head = link(head, input_canonical(row[:7]))
            conn.execute("UPDATE inputs SET chain = ? WHERE input_no = ?", (head, record.number))
            last_input = record.number
        else:
            row = events[record.number]
            if row[1] in resigned:
                row[6] = resigned[row[1]]
                conn.execute("UPDATE events SET data = ? WHERE seq = ?", (row[6], record.number))
            head = link(head, event_canonical(row[:7]))
            conn.execute("UPDATE events SET chain = ? WHERE seq = ?", (head, record.number))
            last_seq = record.number
    conn.execute("UPDATE journal SET chain_head = ?", (head,))
    return signed


def checkpoint_of(record: dict[str, Any]) -> Checkpoint:
    return Checkpoint.from_json(record["data"])
