"""The journal's hash chain: each stored input and event carries SHA-256 over the one before.

Pure: no SQLite, no clock. The journal (journal.py) links each row as it stores it, the
reader (queries.py) and `shoe-controller verify` walk the links again. docs/journal.md
"The hash chain" is the specification a second implementation is written from:

    chain(record) = hex(SHA-256(UTF-8(chain(previous record) + canonical(record))))

`canonical` is the compact JSON array (separators "," and ":", no ASCII escaping) of

    ["input", input_no, shoe, type, body, recorded_at, first_seq, event_count]
    ["event", seq, input_no, type, at, shoe, round, data]

with `body` and `data` the stored JSON texts (strings inside the array) and `recorded_at` a
float. The records follow each other as they were stored: an input, then its events in seq
order, then the next input. The first record of a new journal follows `GENESIS`; after
pruning, the first record held follows the journal's `chain_anchor` (the link of the last
record pruned).

An edit of a record breaks its own link; a deleted record breaks the link of the record
after it; a reorder breaks both. The journal row's `chain_head` (the link of the last record)
catches records cut off the end.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Container, Iterable, Iterator, Sequence
from typing import Any

GENESIS = "0" * 64  # what the first record of a new journal follows
INPUT, EVENT = "input", "event"


# One encoder made once: json.dumps with options builds a new one per call (a third of the cost).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _canonical(fields: list[Any]) -> str:
    return _ENCODE(fields)


def input_canonical(row: Sequence[Any]) -> str:
    """The canonical text of an input: `row` is (input_no, shoe, type, body, recorded_at,
    first_seq, event_count), as stored."""
    input_no, shoe, type_, body, recorded_at, first_seq, event_count = row
    return _canonical(
        [INPUT, input_no, shoe, type_, body, float(recorded_at), first_seq, event_count]
    )


def event_canonical(row: Sequence[Any]) -> str:
    """The canonical text of an event: `row` is (seq, input_no, type, at, shoe, round, data),
    as stored."""
    return _canonical([EVENT, *row])


def link(previous: str, canonical: str) -> str:
    """The link of a record whose canonical text is `canonical`, following `previous`."""
    return hashlib.sha256((previous + canonical).encode("utf-8")).hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class ChainRecord:
    """One stored record as the chain sees it: what it is, its text, the link it carries."""

    kind: str  # INPUT or EVENT
    number: int  # input_no or seq
    input_no: int
    canonical: str
    stored: str | None  # the link stored with it (None: none was)
    seqs: range = range(0)  # an input's events: the seqs it owns

    @property
    def name(self) -> str:
        """How a person finds it: `input 12` or `event seq 40 (input 12)`."""
        if self.kind == INPUT:
            return f"input {self.number}"
        return f"event seq {self.number} (input {self.input_no})"


def input_record(row: tuple[Any, ...]) -> ChainRecord:
    """A ChainRecord of an inputs row (INPUT_CHAIN_COLUMNS order)."""
    *fields, stored = row
    input_no, first_seq, event_count = fields[0], fields[5], fields[6]
    seqs = range(first_seq, first_seq + event_count) if first_seq is not None else range(0)
    return ChainRecord(INPUT, input_no, input_no, input_canonical(fields), stored, seqs)


def event_record(row: tuple[Any, ...]) -> ChainRecord:
    """A ChainRecord of an events row (EVENT_CHAIN_COLUMNS order)."""
    *fields, stored = row
    return ChainRecord(EVENT, fields[0], fields[1], event_canonical(fields), stored)


# The columns input_record() and event_record() read, in their order.
INPUT_CHAIN_COLUMNS = "input_no, shoe, type, body, recorded_at, first_seq, event_count, chain"
EVENT_CHAIN_COLUMNS = "seq, input_no, type, at, shoe, round, data, chain"


def in_chain_order(
    inputs: Iterable[ChainRecord], events: Iterable[ChainRecord]
) -> Iterator[ChainRecord]:
    """Inputs (by input_no) and events (by seq) merged as they were stored: each input, then
    the seqs it owns. Events are placed by their seq, not by the input they name, so a moved
    event is met where it does not belong; one no input owns comes where its seq falls."""
    pending = iter(events)
    event = next(pending, None)
    for item in inputs:
        if item.seqs:
            while event is not None and event.number < item.seqs.start:
                yield event
                event = next(pending, None)
        yield item
        while event is not None and event.number in item.seqs:
            yield event
            event = next(pending, None)
    while event is not None:
        yield event
        event = next(pending, None)


@dataclasses.dataclass(frozen=True, slots=True)
class ChainPoint:
    """Where the chain stands after a whole input: the last input stored, the last event seq
    stored (0: none yet), and the link of the last record, which the next record follows.

    Inputs and events are numbered from 1 and never reused, each one record of the chain, so
    `records` is every record the journal has stored since it began (pruned ones too)."""

    input_no: int
    seq: int
    head: str

    @property
    def records(self) -> int:
        return self.input_no + self.seq


@dataclasses.dataclass(frozen=True, slots=True)
class ChainReport:
    """What walking the chain found: intact, or the first record that breaks it and why."""

    intact: bool
    records: int  # records walked (up to and including the first bad one)
    anchor: str  # what the first record followed
    head: str  # the link of the last good record walked
    first_bad: str | None = None  # `input 12`, `event seq 40 (input 12)`, `the end`
    problem: str | None = None  # one sentence for a person

    def to_json(self) -> dict[str, Any]:
        return {
            "intact": self.intact,
            "records": self.records,
            "first_bad": self.first_bad,
            "problem": self.problem,
            "anchor": self.anchor,
            "head": self.head,
        }


def walk(
    records: Iterable[ChainRecord], anchor: str, expected_head: str | None = None
) -> ChainReport:
    """Check every record's link from `anchor` on; stop at the first that does not follow.

    `expected_head`, when given, is what the last record's link must be (the journal row's
    `chain_head`, an export's last link): a chain that ends early lost its last records.
    The report names the first bad record and says what most likely happened to it.
    """
    previous = anchor
    count = 0
    seen = _Seen()
    for record in records:
        count += 1
        if record.stored != link(previous, record.canonical):
            problem = seen.why(record, anchor)
            return ChainReport(False, count, anchor, previous, record.name, problem)
        previous = record.stored
        seen.add(record)
    unfinished = seen.unfinished()
    if unfinished is not None:
        name, missing = unfinished
        problem = f"{missing} missing at the end of the chain: removed"
        return ChainReport(False, count, anchor, previous, name, problem)
    if expected_head is not None and previous != expected_head:
        after = f"after {seen.last.name}" if seen.last is not None else "at its start"
        return ChainReport(
            False,
            count,
            anchor,
            previous,
            "the end",
            f"the chain stops {after}, but its head says more records followed: the last"
            " record(s) were removed, or the head was changed",
        )
    return ChainReport(True, count, anchor, previous)


class _Seen:
    """The good records walked so far, as far as the story of a broken link needs them."""

    def __init__(self) -> None:
        self.last: ChainRecord | None = None
        self.owner: ChainRecord | None = None  # the last input walked
        self.last_seq: int | None = None

    def add(self, record: ChainRecord) -> None:
        self.last = record
        if record.kind == INPUT:
            self.owner = record
        else:
            self.last_seq = record.number

    def _next_due(self) -> int | None:
        """The next seq the last input walked still owns, None once all of them came."""
        owner = self.owner
        if owner is None:
            return None
        walked = self.last_seq if self.last_seq in owner.seqs else None
        due = owner.seqs.start if walked is None else walked + 1
        return due if due < owner.seqs.stop else None

    def unfinished(self) -> tuple[str, str] | None:
        """The last input's events that never came (name of the first, and all of them)."""
        due = self._next_due()
        if due is None or self.owner is None:
            return None
        name = f"event seq {due} (input {self.owner.number})"
        return name, _span("event seq", due, self.owner.seqs.stop - 1)

    def why(self, record: ChainRecord, anchor: str) -> str:
        """The likeliest story of `record`'s broken link, from the numbering around it."""
        if record.stored is None:
            return f"{record.name} carries no hash"
        last = self.last
        if last is None and record.kind == EVENT:
            return (
                f"input {record.input_no} missing before {record.name}, the first record held:"
                " removed, or moved elsewhere"
            )
        if last is None:
            where = "the start of the chain" if anchor == GENESIS else "the chain's anchor"
            return (
                f"{record.name} does not follow {where}: it was changed, or records before"
                " it were removed"
            )
        missing = self._missing_before(record)
        if missing:
            return f"{missing} missing before {record.name}: removed, or moved elsewhere"
        owner = self.owner
        owned = owner is not None and record.kind == EVENT and record.number in owner.seqs
        if owned and owner is not None and record.input_no != owner.number:
            return (
                f"{record.name} stands among the events of input {owner.number}: it was"
                " moved, or changed"
            )
        return f"{record.name} does not follow {last.name}: it was changed, or moved"

    def _missing_before(self, record: ChainRecord) -> str | None:
        """What the numbering says is missing between the good records and `record`."""
        owner, last = self.owner, self.last
        assert last is not None
        owned = owner is not None and record.kind == EVENT and record.number in owner.seqs
        due = self._next_due()
        if due is not None and owner is not None:  # the last input's own events all came?
            if owned and record.number > due:
                return _span("event seq", due, record.number - 1)
            if not owned:
                return _span("event seq", due, owner.seqs.stop - 1)
        if record.kind == INPUT and record.number > last.input_no + 1:
            return _span("input", last.input_no + 1, record.number - 1)
        if record.kind == EVENT and not owned:
            if record.input_no > last.input_no:
                return _span("input", last.input_no + 1, record.input_no)
            if self.last_seq is not None and record.number > self.last_seq + 1:
                return _span("event seq", self.last_seq + 1, record.number - 1)
        return None


def _span(what: str, low: int, high: int) -> str:
    plural = "inputs" if what == "input" else "event seqs"
    return f"{what} {low}" if low == high else f"{plural} {low}-{high}"


@dataclasses.dataclass(frozen=True, slots=True)
class InputEnd:
    """The chain as a stretch of records stands after one whole input (the input and its
    events): what a checkpoint taken then signed. `seq` is None where the stretch does not
    tell (no event stored yet within it); `name` the record whose link `head` is (None: the
    link the stretch follows, before its first record)."""

    input_no: int
    seq: int | None
    head: str
    name: str | None


def input_ends(
    records: Iterable[ChainRecord], follows: str, wanted: Container[int] | None = None
) -> dict[int, InputEnd]:
    """Where the chain stands after each whole input of `records` (in chain order, links as
    stored), and before the first: the link they follow, under the input number before it;
    only those `wanted`, when given (a whole journal's inputs are many). A checkpoint names
    the input it was taken after (store/checkpoint.py), and is compared with the head found
    here."""
    ends: dict[int, InputEnd] = {}
    if wanted is None:
        wanted = _EVERY
    current: int | None = None
    seq: int | None = None
    head, name = follows, None
    for record in records:
        if record.kind == INPUT:
            if current is None:  # the first input: what came before it, as far as it tells
                if record.number - 1 in wanted:
                    before = record.seqs.start - 1 if record.seqs else None
                    ends[record.number - 1] = InputEnd(record.number - 1, before, follows, None)
            elif current in wanted:
                ends[current] = InputEnd(current, seq, head, name)
            if record.seqs:
                seq = record.seqs.start - 1
            current = record.number
        else:
            seq = record.number
        head, name = record.stored or "", record.name
    if current is not None and current in wanted:
        ends[current] = InputEnd(current, seq, head, name)
    return ends


class _Every:
    """Every input number."""

    def __contains__(self, _number: object) -> bool:
        return True


_EVERY = _Every()
