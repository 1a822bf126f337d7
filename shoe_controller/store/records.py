"""What the journal gives back: stored events, replay steps, rounds, shoes, prune results."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from shoe_controller.store.chain import ChainReport
from shoe_controller.store.errors import RecordInvalid, ReplayMismatch
from shoe_controller.store.rows import event_row

# The columns `stored_event()` reads, in its order.
EVENT_COLUMNS = "seq, type, at, shoe, round, data, input_no"


@dataclasses.dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored, with its seq; `to_wire()` gives the docs/spec-push-api.md form."""

    seq: int
    id: str
    type: str
    at: str
    shoe: int | None
    round: int | None
    data: dict[str, Any]
    input_no: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "id": self.id,
            "type": self.type,
            "at": self.at,
            "shoe": self.shoe,
            "round": self.round,
            "data": self.data,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class BacklogEvent:
    """An event as one sink sees it: numbered by that sink's own `seq` (store/backlogs.py),
    its id the journal's, so that the same event has the same id at every sink."""

    seq: int
    event: StoredEvent

    def to_wire(self) -> dict[str, Any]:
        return {**self.event.to_wire(), "seq": self.seq}


@dataclasses.dataclass(frozen=True, slots=True)
class ReplayStep:
    """One stored input and the events it caused, for recovery by replay."""

    input_no: int
    shoe: int | None
    input: dict[str, Any]
    events: tuple[StoredEvent, ...]

    def mismatch(self, replayed: Sequence[Any]) -> str | None:
        """How `replayed` (events from table.apply) differs from the stored events, or None."""
        try:
            fresh = [event_row(event) for event in replayed]
        except RecordInvalid as exc:
            return f"input {self.input_no}: replayed event is invalid: {exc}"
        if len(fresh) != len(self.events):
            return (
                f"input {self.input_no}: replay gave {len(fresh)} events, "
                f"journal holds {len(self.events)}"
            )
        for stored, (type_, at, shoe, round_, data) in zip(self.events, fresh, strict=True):
            got = (type_, at, shoe, round_, json.loads(data))
            want = (stored.type, stored.at, stored.shoe, stored.round, stored.data)
            if got != want:
                return f"input {self.input_no}: seq {stored.seq} ({stored.type}): " + (
                    _difference(want, got)
                )
        return None

    def check(self, replayed: Sequence[Any]) -> None:
        """Raise ReplayMismatch unless `replayed` equals the stored events."""
        problem = self.mismatch(replayed)
        if problem is not None:
            raise ReplayMismatch(problem)


def _difference(stored: tuple[Any, ...], replayed: tuple[Any, ...]) -> str:
    """What differs between a stored event and its replay, in the journal's JSON forms."""

    def shown(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)

    for name, was, now in zip(("type", "time", "shoe", "round"), stored, replayed, strict=False):
        if was != now:
            return f"the {name} stored is {shown(was)}, the replay gives {shown(now)}"
    was_data, now_data = stored[4], replayed[4]
    keys = sorted(set(was_data) | set(now_data))
    return "its data differs: " + "; ".join(
        f"{key} stored {shown(was_data.get(key))}, replayed {shown(now_data.get(key))}"
        for key in keys
        if was_data.get(key) != now_data.get(key)
    )


@dataclasses.dataclass(frozen=True, slots=True)
class RoundInfo:
    """A round of a shoe as the journal holds it (for `shoectl rounds`)."""

    shoe: int
    round: int
    first_seq: int
    last_seq: int
    events: int
    first_at: str
    last_at: str


@dataclasses.dataclass(frozen=True, slots=True)
class ShoeInfo:
    shoe: int
    first_input: int
    last_input: int
    ended_at: float | None  # journal clock (unix s) when shoe.ended was stored


@dataclasses.dataclass(frozen=True, slots=True)
class PruneResult:
    shoes: tuple[int, ...]
    inputs: int
    events: int
    chain: ChainReport | None = None  # the pruned records' chain, walked before deleting them


def stored_event(controller_id: str, row: Sequence[Any]) -> StoredEvent:
    """The StoredEvent of an events row (EVENT_COLUMNS order); its id is "{controller_id}:{seq}"."""
    seq, type_, at, shoe, round_, data, input_no = row
    return StoredEvent(
        seq, f"{controller_id}:{seq}", type_, at, shoe, round_, json.loads(data), input_no
    )
