"""The dispute file: a stretch of the journal's inputs and events, with their hash chain.

`export_records(journal, selection)` gives the JSON-able records of one contiguous stretch of
the chain, in stored order: a header (what was selected, the link the first record follows,
the shoes it touches, the table settings in force at its first input), every input and event
with its link, and a trailer (how many records, the last link). The settings that count are
the `table_settings` inputs inside the chain, the stretch's first input since 2026-12-02;
`verify` trusts the header's copy only for a journal written before they were journaled.
`shoe-controller export` writes them as JSON lines, `shoectl round N --export` asks the daemon
for them, `shoe-controller verify` checks them (docs/journal.md "Export and verify").

The stretch always starts where a replay can start, at the first input of a shoe, so that
replaying it gives the stored events: `--shoe N` is the whole shoe, `--round S:R` shoe S
from its start through round R, `--since TIME` from the start of the shoe in play at TIME
through the last record. Read-only: it works while the daemon writes, and on a copy.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any

from shoe_controller.store.chain import event_record, in_chain_order, input_record
from shoe_controller.store.errors import JournalError
from shoe_controller.store.journal import Journal
from shoe_controller.store.queries import JournalReader
from shoe_controller.store.schema import SCHEMA_VERSION
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.events import iso_time

FORMAT = "shoe-controller-export"
FORMAT_VERSION = 1


class ExportError(JournalError):
    """The selection names nothing the journal holds (the text says what it holds)."""


class NothingSinceError(ExportError):
    """Nothing was recorded at or after `since` (unix seconds)."""

    def __init__(self, since: float) -> None:
        super().__init__(f"nothing was recorded since {iso_time(since)}")
        self.since = since


@dataclasses.dataclass(frozen=True, slots=True)
class Selection:
    """Exactly one of: a whole shoe, a round of a shoe, everything since a time."""

    shoe: int | None = None
    round: tuple[int, int] | None = None  # (shoe, round)
    since: float | None = None  # unix seconds, the journal's clock (an input's recorded_at)

    def __post_init__(self) -> None:
        given = [name for name in ("shoe", "round", "since") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("a selection is exactly one of shoe, round, since")

    def to_json(self) -> dict[str, Any]:
        if self.shoe is not None:
            return {"shoe": self.shoe}
        if self.round is not None:
            return {"shoe": self.round[0], "round": self.round[1]}
        assert self.since is not None
        return {"since": iso_time(self.since)}


def input_span(reads: JournalReader, selection: Selection) -> tuple[int, int]:
    """The first and last input numbers of the stretch `selection` names; ExportError when
    the journal holds none of it."""
    shoes = {info.shoe: info for info in reads.shoes()}
    held = _held(shoes)
    if selection.shoe is not None or selection.round is not None:
        shoe = selection.round[0] if selection.round is not None else selection.shoe
        info = shoes.get(shoe)  # type: ignore[arg-type]
        if info is None:
            raise ExportError(f"shoe {shoe} is not in the journal ({held})")
        if selection.round is None:
            return info.first_input, info.last_input
        number = selection.round[1]
        last = reads.round_last_input(shoe, number)
        if last is None:
            raise ExportError(f"shoe {shoe} has no round {number} in the journal")
        return info.first_input, int(last)
    assert selection.since is not None
    first = reads.first_input_since(selection.since)
    if first is None:
        raise NothingSinceError(selection.since)
    # Back to the first input of the oldest shoe in play then: replay starts there.
    spanning = [
        info.first_input for info in shoes.values() if info.first_input <= first <= info.last_input
    ]
    return min([first, *spanning]), reads.last_input()


def export_records(
    journal: Journal,
    selection: Selection,
    *,
    procedures: TableConfig | None,
    now: float,
) -> Iterator[dict[str, Any]]:
    """The header, the records in stored order, the trailer (module docstring); the header's
    settings are the journal's in force at the first input, else `procedures` (the
    configuration's, for a journal written before they were journaled), else null."""
    first, last = input_span(journal.reads, selection)
    in_force = journal.reads.settings_in_force(first)
    settings = dataclasses.asdict(procedures) if procedures is not None else None
    previous, inputs, events = journal.integrity.chain_rows(first, last)
    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    for row in inputs:
        by_key["input", row[0]] = _input_json(row)
    for row in events:
        by_key["event", row[0]] = _event_json(journal.controller_id, row)
    shoes = [
        dataclasses.asdict(info)
        for info in journal.reads.shoes()
        if info.first_input <= last and info.last_input >= first
    ]
    yield {
        "record": "export",
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "controller_id": journal.controller_id,
        "schema_version": SCHEMA_VERSION,
        "exported_at": iso_time(now),
        "journal": str(journal.path),
        "selection": selection.to_json(),
        "inputs": [first, last],
        "follows": previous,
        "journal_chain": journal.integrity.chain_state(),
        "shoes": shoes,
        "procedures": in_force[1] if in_force is not None else settings,
    }
    count, head = 0, previous
    ordered = in_chain_order(map(input_record, inputs), map(event_record, events))
    for record in ordered:
        count += 1
        head = record.stored or ""
        yield by_key[record.kind, record.number]
    yield {"record": "end", "records": count, "head": head}


def _input_json(row: tuple[Any, ...]) -> dict[str, Any]:
    input_no, shoe, type_, body, recorded_at, first_seq, event_count, chain = row
    return {
        "record": "input",
        "input_no": input_no,
        "shoe": shoe,
        "type": type_,
        "recorded_at": float(recorded_at),
        "first_seq": first_seq,
        "event_count": event_count,
        "input": json.loads(body),
        "chain": chain,
    }


def _event_json(controller_id: str, row: tuple[Any, ...]) -> dict[str, Any]:
    seq, input_no, type_, at, shoe, round_, data, chain = row
    return {
        "record": "event",
        "seq": seq,
        "id": f"{controller_id}:{seq}",
        "input_no": input_no,
        "type": type_,
        "at": at,
        "shoe": shoe,
        "round": round_,
        "data": json.loads(data),
        "chain": chain,
    }


def _held(shoes: Mapping[int, Any]) -> str:
    if not shoes:
        return "it holds no shoe"
    numbers = sorted(shoes)
    shown = ", ".join(map(str, numbers[-10:]))
    return f"it holds shoe(s) {'..., ' if len(numbers) > 10 else ''}{shown}"
