"""The events the table emits, as docs/spec-push-api.md names them, before the journal numbers
them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    """docs/spec-push-api.md "Event types", the controller's own surveillance events
    (docs/surveillance.md), which are for the surveillance room, not the pit, the round's
    clock of a table that waits for bets to close, and the journal's signed checkpoints."""

    CONTROLLER_STARTED = "controller.started"
    DEVICE_CONNECTED = "device.connected"
    DEVICE_LOST = "device.lost"
    DEVICE_FAULT = "device.fault"
    DEVICE_FAULT_CLEARED = "device.fault_cleared"
    SHOE_SHUFFLED = "shoe.shuffled"
    SHOE_CUT = "shoe.cut"
    SHOE_BURNED = "shoe.burned"
    SHOE_CUT_CARD = "shoe.cut_card"
    SHOE_ENDED = "shoe.ended"
    ROUND_STARTED = "round.started"
    CARD_DEALT = "card.dealt"
    CARD_REVEALED = "card.revealed"
    CARD_EXTRA = "card.extra"
    INSURANCE_OFFERED = "insurance.offered"
    INSURANCE_CLOSED = "insurance.closed"
    INSURANCE_VOIDED = "insurance.voided"
    ROUND_RESULT = "round.result"
    ROUND_VOIDED = "round.voided"
    PROCEDURE_ALERT = "procedure.alert"
    SUPERVISOR_ACTION = "supervisor.action"
    SECURITY_ALERT = "security.alert"
    # The round's clock (docs/table.md "Betting"), only with `[table] betting` set.
    BETS_OPENED = "bets.opened"
    BETS_CLOSED = "bets.closed"
    SHOE_DOWNTIME = "shoe.downtime"
    SURVEILLANCE_EDGE = "surveillance.edge"
    SURVEILLANCE_EDGE_CLEARED = "surveillance.edge_cleared"
    # Shuffle integrity (docs/shuffle.md): a slug of the previous shoe dealt again,
    # its end, and the shoe's report at its end.
    SURVEILLANCE_SLUG = "surveillance.slug"
    SURVEILLANCE_SLUG_ENDED = "surveillance.slug_ended"
    SURVEILLANCE_SHUFFLE_REPORT = "surveillance.shuffle_report"
    # The RFID tags of cards once public, for the shuffle watch's identity tests.
    SURVEILLANCE_CARD_TAGS = "surveillance.card_tags"
    # Where the journal's hash chain stood, signed with the table's key (
    # docs/journal.md "Checkpoints"): its copies at the sinks hold the journal to it.
    JOURNAL_CHECKPOINT = "journal.checkpoint"


# The family of the surveillance events: shown only to the surveillance group
# (docs/surveillance.md).
SURVEILLANCE_FAMILY = "surveillance"


def iso_time(at: float) -> str:
    """docs/spec-push-api.md's time form, UTC with microseconds: 2026-11-30T10:00:00.123456Z."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class Event:
    """One event as the table emits it; the journal gives it its `seq` and `id`."""

    type: EventType
    at: str
    shoe: int | None
    round: int | None
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": str(self.type),
            "at": self.at,
            "shoe": self.shoe,
            "round": self.round,
            "data": self.data,
        }
