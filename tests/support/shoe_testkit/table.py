"""Helpers for the table's tests: a table with a clock, short ways to feed it, PUSH_API fields."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import Card, full_deck, parse_card
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import (
    Button,
    ButtonPressed,
    CardDrawn,
    Input,
    ShoeState,
    ShoeStateChanged,
    SupervisorCommand,
)

# docs/spec-push-api.md "Event types": the exact data fields of every event type.
PUSH_API_FIELDS: dict[str, set[str]] = {
    "controller.started": {"version", "boot", "recovered"},
    "device.connected": {"device", "kind", "vendor", "model", "serial", "firmware"},
    "device.lost": {"device", "kind", "vendor", "model", "serial", "firmware"},
    "device.fault": {"device", "code", "severity", "text"},
    "device.fault_cleared": {"device", "code", "severity", "text"},
    "shoe.shuffled": {"decks", "total", "ok", "problems"},
    "shoe.cut": {"cards_behind_cut"},
    "shoe.burned": {"first_card", "count", "cards"},
    "shoe.cut_card": {"after_card"},
    "shoe.ended": {"rounds", "cards_dealt", "reason"},
    "round.started": {"trial", "big_small_open"},
    "card.dealt": {"position", "card", "face_up"},
    "card.revealed": {"position", "card"},
    "card.extra": {"card"},
    "insurance.offered": {"side", "stage", "odds", "banker_total", "player_total"},
    "insurance.closed": {"side", "stage", "reason"},
    "insurance.voided": {"side", "stage", "reason"},
    "round.result": {
        "player",
        "banker",
        "player_total",
        "banker_total",
        "winner",
        "natural",
        "player_pair",
        "banker_pair",
        "perfect_pair",
        "any_pair",
        "cards",
        "big",
        "lucky6",
        "banker_six",
        "margin",
    },
    "round.voided": {"reason", "cards"},
    "procedure.alert": {"code", "text", "needs_supervisor"},
    "supervisor.action": {"action", "by", "reason", "details"},
    "security.alert": {"code", "details"},
}

SHOE_END_REASONS = {"cut_card", "supervisor", "misdeal", "security"}


class ClockedTable:
    """A table and a clock; every call returns the events of the inputs it applied."""

    def __init__(self, config: TableConfig | None = None, last_shoe: int = 0) -> None:
        self.table = Table(config or TableConfig(), last_shoe=last_shoe)
        self.clock = 1_800_000_000.0
        self.inputs: list[tuple[int, Input]] = []  # (shoe_of, input), as the journal keeps them

    def at(self) -> float:
        self.clock += 1.0
        return self.clock

    def apply(self, item: Input) -> list[Event]:
        """The input's events, and those of what the table asks to record with it (a shoe's
        end for the next shoe, on a clocked table), as the controller records them."""
        queue, events = [item], []
        while queue:
            item = queue.pop(0)
            self.inputs.append((self.table.shoe_of(item), item))
            events += self.table.apply(item)
            queue[:0] = self.table.take_carried()
        return events

    def load(self) -> list[Event]:
        return self.apply(ShoeStateChanged(self.at(), "scanner", ShoeState.LOADED))

    def card(self, name: str | None, **flags: Any) -> list[Event]:
        card = parse_card(name) if name else None
        return self.apply(CardDrawn(self.at(), "scanner", card, **flags))

    def deal(self, names: str) -> list[Event]:
        events: list[Event] = []
        for name in names.split():
            events += self.card(name)
        return events

    def reveal(self) -> list[Event]:
        return self.apply(ButtonPressed(self.at(), "scanner", Button.REVEAL))

    def sup(self, action: str, by: str = "sup7", reason: str = "test", **args: Any) -> list[Event]:
        return self.apply(SupervisorCommand(self.at(), action, by, reason, args))

    def open_shoe(self, burn: str = "AS 4C") -> None:
        """Load and burn (first card A: one more card)."""
        self.load()
        self.deal(burn)


def types_of(events: list[Event]) -> list[str]:
    return [str(event.type) for event in events]


def only(events: list[Event], kind: EventType) -> list[Event]:
    return [event for event in events if event.type == kind]


def shuffled_shoe(decks: int, seed: int) -> list[Card]:
    cards = list(full_deck()) * decks
    random.Random(seed).shuffle(cards)
    return cards


def factory_order_false_alarms(run: int, decks: int, cards_out: int) -> float:
    """Expected number of runs of `run` cards in new-deck order in a well shuffled shoe.

    Counts windows of `run` consecutive cards among the first `cards_out` that form such a
    run; each of the 4 suits has 14 - run ascending and as many descending sequences, and a
    given sequence of distinct cards comes out with probability prod(decks / (N - j)).
    """
    total = 52 * decks
    windows = max(cards_out - run + 1, 0)
    sequences = 4 * (14 - run) * 2
    chance = Fraction(1)
    for j in range(run):
        chance *= Fraction(decks, total - j)
    return float(windows * sequences * chance)
