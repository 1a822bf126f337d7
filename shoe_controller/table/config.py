"""How a table deals: the readings of docs/rules.md that differ between houses, checked on creation.

The daemon's TOML loader reads this one type (and nothing else of the table), so reading a
configuration never loads the procedures machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

MANUAL = "manual"
BATCH_SHUFFLER = "batch_shuffler"
SHUFFLER_DEALER = "shuffler_dealer"
MODES = (MANUAL, BATCH_SHUFFLER, SHUFFLER_DEALER)
BURN_FIRST_CARD_VALUE = "first_card_value"
BURN_DECKS = "decks"
BURN_METHODS = (BURN_FIRST_CARD_VALUE, BURN_DECKS)
FINISH_CURRENT = "finish_current"
ONE_MORE = "one_more"
CUT_CARD_RULES = (FINISH_CURRENT, ONE_MORE)
BETTING_NONE = "none"
BETTING_BUTTON = "button"
BETTING_SERVER = "server"
BETTING = (BETTING_NONE, BETTING_BUTTON, BETTING_SERVER)
EARLY_CARD_HOLD = "hold"
EARLY_CARD_VOID = "void"
EARLY_CARD_RULES = (EARLY_CARD_HOLD, EARLY_CARD_VOID)


@dataclass(frozen=True, slots=True)
class TableConfig:
    """How this table deals: the readings of docs/rules.md that differ between houses.

    Every field is checked when the config is made; a bad value raises ValueError naming the
    field and what it may be.
    """

    decks: int = 8  # R1: 6 to 12
    burn: str = BURN_FIRST_CARD_VALUE  # R2.2: "first_card_value" (b) or "decks" (a)
    burn_per_round: int = 0  # R8: cards burned before every round after the first
    cut_card: str = FINISH_CURRENT  # R3.1: "finish_current" or "one_more"
    squeeze: bool = False  # R15: dealt cards stay secret until the reveal
    mode: str = MANUAL  # "manual", "batch_shuffler" (R2.4) or "shuffler_dealer" (R2.5)
    min_cards_behind_cut: int = 12  # R2.1
    max_trial_rounds: int = 3  # R2.3
    big_small_last_round: int = 20  # R14.1
    insurance: bool = True  # R16
    factory_order_run: int = 6  # security: cards in new-deck order that stop the table
    # Shoes without counters: the same card again within this many seconds is held as a
    # possible double read (0 turns the check off); docs/table.md "Inputs the table checks".
    double_read_window: float = 0.25
    # Who closes betting for the next round (docs/table.md "Betting"): nobody ("none", the
    # table deals at once), the dealer's NO_MORE_BETS button, or the table server (inbound API).
    betting: str = BETTING_NONE
    # A card pulled while bets are open (R17, R10.1): held for the supervisor (void or
    # accept), or the round voided at once (the studio's rule: bets returned).
    early_card: str = EARLY_CARD_HOLD
    # The round's clock without betting: round and shoe events carry their times, downtime
    # between shoes is an event, dealers sign in and out (on by itself with `betting` set).
    clock: bool = False
    # RFID tags of the cards once public, to surveillance only (`surveillance.card_tags`), for
    # the shuffle watch's identity tests (docs/shuffle.md); off, like `clock`, so that a table
    # not configured for it gives the events it always gave.
    card_tags: bool = False

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError for the first field outside what it may be."""
        _whole("decks", self.decks, 6, 12, "R1: 6 to 12 decks")
        _choice("burn", self.burn, BURN_METHODS)
        _whole("burn_per_round", self.burn_per_round, 0, 10, "R8: cards burned per round")
        _choice("cut_card", self.cut_card, CUT_CARD_RULES)
        _flag("squeeze", self.squeeze)
        _choice("mode", self.mode, MODES)
        _whole("min_cards_behind_cut", self.min_cards_behind_cut, 12, 104, "R2.1: at least 12")
        _whole("max_trial_rounds", self.max_trial_rounds, 0, 3, "R2.3: at most three")
        _whole("big_small_last_round", self.big_small_last_round, 0, 1000, "R14.1")
        _flag("insurance", self.insurance)
        _whole("factory_order_run", self.factory_order_run, 4, 13, "cards in new-deck order")
        _seconds("double_read_window", self.double_read_window, 0.0, 5.0)
        _choice("betting", self.betting, BETTING)
        _choice("early_card", self.early_card, EARLY_CARD_RULES)
        _flag("clock", self.clock)
        _flag("card_tags", self.card_tags)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> TableConfig:
        """A config from a TOML table or JSON object; unknown keys are an error."""
        names = [spec.name for spec in fields(cls)]
        unknown = sorted(str(key) for key in values if key not in names)
        if unknown:
            raise ValueError(f"unknown table setting(s) {unknown}; known: {', '.join(names)}")
        return cls(**dict(values))

    @property
    def cards_in_shoe(self) -> int:
        return 52 * self.decks

    @property
    def betting_on(self) -> bool:
        """Whether rounds wait for their bets to close (docs/table.md "Betting")."""
        return self.betting != BETTING_NONE

    @property
    def clocked(self) -> bool:
        """Whether the table keeps the round's clock (times in round and shoe events, downtime,
        dealers): off by default, so that the events are docs/spec-push-api.md's exactly."""
        return self.clock or self.betting != BETTING_NONE


def _whole(name: str, value: object, low: int, high: int, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(
            f"{name} must be a whole number from {low} to {high} ({meaning}), got {value!r}"
        )


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def _seconds(name: str, value: object, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ValueError(f"{name} must be a number of seconds from {low} to {high}, got {value!r}")


def _flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
