"""The procedures of a baccarat table: inputs in, events out, every dealing rule enforced.

`Table.apply(input)` is the whole game logic (DESIGN.md): deterministic, no I/O, no clock; an
input the table cannot accept yields one `procedure.alert` and changes nothing. The lifecycle
lives in the `transitions` machines of `lifecycle.py`, the bookkeeping in `dealing.py`, the
supervisor actions' arguments in `supervisor.py`. docs/table.md explains the procedures, the
recovery contract and the squeeze guarantees; docs/inputs.md the inputs and actions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from shoe_controller.game.rules import Position, insurance_offers, outcome, positions_of
from shoe_controller.table.actions import ACTIONS, CommandError, parse_args
from shoe_controller.table.books import (
    BurnBook,
    CutMarker,
    Draw,
    Hold,
    Offer,
    RoundBook,
    ShoeBook,
    cards_taken,
    to_plain,
)
from shoe_controller.table.lifecycle import (
    BLOCKED,
    BURNING,
    CHECKED,
    DEALING,
    HELD,
    INSURANCE,
    NO_SHOE,
    READY,
    REVEAL,
    SHUFFLING,
    UNCHECKED,
    MachineModel,
    build_lifecycle,
    build_preparation,
)
from shoe_controller.vocab.cards import Card
from shoe_controller.vocab.events import Event, EventType, iso_time
from shoe_controller.vocab.inputs import (
    Button,
    ButtonPressed,
    CardDrawn,
    CardsMissed,
    ControllerStarted,
    CutCardSeen,
    DeviceConnected,
    DeviceFault,
    DeviceFaultCleared,
    DeviceLost,
    Input,
    ShoeState,
    ShoeStateChanged,
    ShuffleDone,
    ShuffleStarted,
    SupervisorCommand,
)

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

# PROTOCOL.md FAULT codes the table acts on.
FAULT_TAMPER = 0x0004
FAULT_CARD_DROPPED = 0x0102  # R10.6
SHUFFLER_FAULTS = range(0x0100, 0x0200)

# INDICATE patterns (PROTOCOL.md).
INDICATE_OFF, INDICATE_READY, INDICATE_BURN, INDICATE_STOP = 0, 1, 2, 3
INDICATE_INSURANCE, INDICATE_DEAL, INDICATE_RESULT = 4, 5, 6
_POSITION_ARG = {position: index + 1 for index, position in enumerate(Position)}
_RESULT_ARG = {"player": 1, "banker": 2, "tie": 3}

# Every alert code the table emits, and what it means (docs/table.md "Alerts and holds").
# Codes marked "hold" stop dealing until the supervisor acts; security codes come as
# security.alert, the others as procedure.alert.
ALERT_CODES: Mapping[str, str] = MappingProxyType(
    {
        # holds: procedure.alert with needs_supervisor, the table stops (indicator stop)
        "missed_card": "hold: the shoe's counter jumped; enter the card (missed card=..) (R10.5)",
        "unreadable_card": "hold: a card passed unread; enter it (confirm card=..)",
        "low_confidence": "hold: an optical read is unsure; confirm it or give the card (confirm)",
        "cover_open": "hold: the shoe's cover opened during play; check, then resume",
        "device_fault": "hold: a device error during play; resume once it is cleared",
        "shoe_removed": "hold: the shoe was taken out during play; resume or change_shoe",
        "shoe_empty": "hold: the shoe ran empty before its last round; void or change_shoe",
        "deck_check_failed": "a deck check failed (R10.6); in shuffler-dealer mode a hold",
        "card_lost": "a card was dropped during a shuffle (R10.6); in shuffler-dealer mode a hold",
        "supervisor_hold": "hold: a supervisor stopped the table (hold); resume",
        "internal_error": "the controller failed on an input and refused it; call the technician",
        # security holds: security.alert
        "foreign_card": "security hold: an RFID card not in the deck registry; discard or confirm",
        "duplicate_card": "security hold: an RFID tag seen twice in the shoe; discard or confirm",
        "too_many_copies": "security hold: more copies of a card than the decks hold",
        "factory_order": "security hold: cards in new-deck order, the shoe may be unshuffled",
        "tamper": "security hold: a device reports tampering; resume once cleared",
        # information and refusals: procedure.alert
        "command_refused": "a supervisor command was refused; the text says why",
        "no_shoe": "a card or shoe report came with no shoe open; refused",
        "table_held": "refused while the table is held",
        "shoe_already_open": "a shoe was loaded while one is open; refused (change_shoe first)",
        "no_deck_check": "a shoe was loaded with no passing deck check (R2.4, R2.5); refused",
        "deck_blocked": "a shoe was loaded with failed or lost cards (R10.6); refused",
        "shuffle_unfinished": "a shoe was loaded before the shuffler's deck check; refused",
        "reshuffle_needed": "a deck check passed for cards blocked before the shuffle (R10.6)",
        "card_during_hold": "a card was drawn during a hold; it waits and is placed after",
        "card_before_reveal": "a card was drawn before the squeeze reveal; it waits (R15)",
        "multi_draw": "cards were pulled together; says where each card goes (R10.2)",
        "face_up_card": "a card came out face up; it stands, insurance is void (R4, R16.9)",
        "burn_in_round": "the shoe burned a card during a round; it is part of no round",
        "extra_cards": "more extra cards than burns absorb: round cancelled, shoe ended (R10.4)",
        "cut_card_too_late": "fewer cards behind the cut card than required (R2.1)",
        "cut_card_repeated": "a second cut card in one shoe; refused",
        "no_cut_card": "a cut card in shuffler-dealer mode; refused (R2.5)",
        "cards_after_end": "cards drawn but not dealt when the shoe ended are out of play",
        "cards_rearranged": "after a missed card, where every card now lies (R10.5)",
        "nothing_to_reveal": "REVEAL with nothing to reveal or close; refused",
        "supervisor_called": "the dealer pressed CALL_SUPERVISOR",
        "device_lost": "a device disconnected while a shoe is in play",
        "invalid_input": "an input with impossible values; refused",
        "unknown_input": "an object that is no table input; refused",
        "bad_time": "an input without a valid time; refused",
    }
)

_DEVICE_IDENTITY = ("kind", "vendor", "model", "serial", "firmware")  # PUSH_API device.*
_EPOCH = iso_time(0)
_LATEST_TIME = 253402300799.0  # 9999-12-31T23:59:59Z, the last time iso_time can write
_UNSET: Any = object()


class _BugError(RuntimeError):
    """The table's own logic went wrong (never the input's fault)."""


@dataclass(frozen=True, slots=True)
class TableConfig:
    """How this table deals: the readings of RULES.md that differ between houses.

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


def _whole(name: str, value: object, low: int, high: int, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(
            f"{name} must be a whole number from {low} to {high} ({meaning}), got {value!r}"
        )


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def _flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")


def _iso_or_none(at: object) -> str | None:
    if isinstance(at, bool) or not isinstance(at, int | float):
        return None
    if not math.isfinite(at) or not 0 <= at <= _LATEST_TIME:
        return None
    return iso_time(at)


class Table:
    """One table's procedures: `apply` inputs, read `view()`, `indicator` and `shoe`."""

    def __init__(self, config: TableConfig, last_shoe: int = 0) -> None:
        if not isinstance(config, TableConfig):
            raise TypeError(f"config must be a TableConfig, got {type(config).__name__}")
        if isinstance(last_shoe, bool) or not isinstance(last_shoe, int) or last_shoe < 0:
            raise ValueError(f"last_shoe must be a whole number >= 0, got {last_shoe!r}")
        self.config = config
        self._life = MachineModel()
        self._life_machine = build_lifecycle(self._life)
        self._prep = MachineModel()
        self._prep_machine = build_preparation(self._prep)
        self._book = ShoeBook(number=last_shoe + 1)
        # Device status is not part of a shoe's state: devices report it again on reconnect.
        self._devices: dict[str, dict[str, Any]] = {}
        self._faults: dict[tuple[str, int], dict[str, Any]] = {}
        # Accepted inputs of the open shoe and after, with their shoe, exactly as the journal
        # keeps them for recovery: replayed to undo an input the table's own logic fails on.
        self._recorded: list[tuple[int, Input]] = []
        self._events: list[Event] = []
        self._at = _EPOCH
        self._refused = False
        self._handlers: dict[type, Callable[[Any], None]] = {
            CardDrawn: self._on_card,
            CardsMissed: self._on_missed,
            CutCardSeen: self._on_cut,
            ShoeStateChanged: self._on_shoe_state,
            ButtonPressed: self._on_button,
            ShuffleStarted: self._on_shuffle_started,
            ShuffleDone: self._on_shuffle_done,
            DeviceFault: self._on_fault,
            DeviceFaultCleared: self._on_fault_cleared,
            DeviceConnected: self._on_connected,
            DeviceLost: self._on_lost,
            ControllerStarted: self._on_started,
            SupervisorCommand: self._on_supervisor,
        }

    # ------------------------------------------------------------------ public surface

    @property
    def shoe(self) -> int:
        """The shoe inputs now belong to: the open shoe, or the next one when none is open."""
        return self._book.number

    def shoe_of(self, item: Input) -> int:
        """The shoe this input belongs to, asked before applying it.

        Equal to `shoe`, except a shuffler's report (shuffle started or done, card dropped
        during the shuffle) while a shoe is open in manual or batch mode: that shuffle
        prepares the next shoe's cards, so it belongs to the next shoe.
        """
        preparing = isinstance(item, ShuffleStarted | ShuffleDone) or (
            isinstance(item, DeviceFault) and item.code == FAULT_CARD_DROPPED
        )
        if preparing and self._book.open and self.config.mode != SHUFFLER_DEALER:
            return self._book.number + 1
        return self._book.number

    @property
    def state(self) -> str:
        """The lifecycle state: no_shoe, burning, ready, dealing, insurance, reveal, held."""
        return self._life.state

    def apply(self, item: Input) -> list[Event]:
        """The events this input causes; never raises (docs/table.md)."""
        start_shoe = self._book.number
        self._events = []
        self._refused = False
        at = _iso_or_none(getattr(item, "at", None))
        self._at = at or _EPOCH
        try:
            belongs = self.shoe_of(item)
            handler = self._handlers.get(type(item))
            if handler is None:
                self._refuse("unknown_input", f"not a table input: {type(item).__name__}")
            elif at is None:
                self._refuse(
                    "bad_time",
                    f"{item.TYPE} input without a valid time "
                    f"(at={getattr(item, 'at', None)!r}): refused",
                )
            else:
                handler(item)
        except Exception as error:  # a bug of the table, never the input's: undo and report
            return self._refuse_after_bug(item, error, start_shoe)
        if not self._refused:
            self._recorded.append((belongs, item))
            if self._book.number != start_shoe:  # the shoe ended: keep the next one's inputs
                number = self._book.number
                self._recorded = [entry for entry in self._recorded if entry[0] >= number]
        return self._events

    @property
    def indicator(self) -> tuple[int, int]:
        """The INDICATE (pattern, arg) the shoe should show now (PROTOCOL.md)."""
        state, book = self._life.state, self._book
        if state == HELD:
            return (INDICATE_STOP, 0)
        if state == NO_SHOE:
            return (INDICATE_OFF, 0)
        if state == BURNING and book.burn is not None:
            remaining = book.burn.remaining
            return (INDICATE_BURN, 1 if remaining is None else min(remaining, 255))
        if state == INSURANCE:
            return (INDICATE_INSURANCE, 0)
        if state == REVEAL:
            return (INDICATE_STOP, 0)
        if state == DEALING and book.round is not None:
            position = book.round.next_position()
            if position is not None:
                return (INDICATE_DEAL, _POSITION_ARG[position])
        if book.last_winner is not None:
            return (INDICATE_RESULT, _RESULT_ARG[book.last_winner])
        return (INDICATE_READY, 0)

    def view(self) -> dict[str, Any]:
        """JSON-able status for `shoectl status`; never an unrevealed card's identity (R15)."""
        book, config = self._book, self.config
        burn = book.burn
        current = book.round
        round_view = None
        next_position: str | None = None
        if current is not None:
            cards = {
                position.value: draw.public() or "hidden"
                for position, draw in zip(current.positions(), current.draws, strict=True)
            }
            due = self._public_next_position(current)
            next_position = due.value if due is not None else None
            round_view = {
                "number": current.number,
                "trial": current.trial,
                "big_small_open": current.big_small_open,
                "cards": cards,
                "next_position": next_position,
                "insurance_void": current.insurance_void,
            }
        elif (book.resume_to if self.state == HELD else self.state) == READY:
            next_position = Position.P1.value
        return {
            "state": self.state,
            "resumes_to": book.resume_to if self.state == HELD else None,
            "mode": config.mode,
            "squeeze": config.squeeze,
            "shoe": book.number,
            "shoe_open": book.open,
            "deck_check": self._prep.state,
            "cards_dealt": book.drawn,
            "cards_left": None
            if self._continuous or not book.open
            else config.cards_in_shoe - book.drawn,
            "cut_card_seen": book.cut_after is not None,
            "cut_card_after": book.cut_after,
            "last_round": book.last_round,
            "burn": {
                "in_progress": burn is not None,
                "kind": burn.kind if burn is not None else None,
                "burned": len(burn.cards) if burn is not None else 0,
                "to_burn": burn.remaining if burn is not None else 0,
                "first_card": burn.first_card() if burn is not None else None,
            },
            "cards_burned": book.burned,
            "rounds_started": book.rounds_started,
            "real_rounds": book.real_rounds,
            "trial_rounds": {
                "dealt": book.trial_dealt,
                "pending": book.trial_pending,
                "max": config.max_trial_rounds,
            },
            "round": round_view,
            "next_position": next_position,
            "insurance": [offer.offer.event_data() for offer in current.open_offers()]
            if current is not None
            else [],
            "holds": [hold.view() for hold in book.holds],
            "queued_cards": sum(isinstance(item, Draw) for item in book.queue),
            "faults": [dict(fault) for fault in self._faults.values()],
            "devices": {name: dict(record) for name, record in self._devices.items()},
            "indicator": list(self.indicator),
            "last_result": book.last_winner,
            "road": [dict(entry) for entry in book.road],
        }

    def snapshot(self) -> dict[str, Any]:
        """The whole state of the shoe (devices excluded), as plain data.

        Equal for two tables that applied the same inputs of the shoe: the recovery check.
        """
        return {
            "lifecycle": self._life.state,
            "preparation": self._prep.state,
            "book": to_plain(self._book),
        }

    # ------------------------------------------------------------------ plumbing

    @property
    def _state(self) -> str:
        return self._life.state

    def _go(self, trigger: str, **kwargs: Any) -> None:
        """Fire a lifecycle trigger the procedures already validated; a refusal is a bug."""
        if not self._life.trigger(trigger, **kwargs):
            raise _BugError(f"lifecycle refused {trigger} in state {self._life.state}")

    def _prep_go(self, trigger: str) -> None:
        if not self._prep.trigger(trigger):
            raise _BugError(f"preparation refused {trigger} in state {self._prep.state}")

    def _emit(
        self,
        kind: EventType,
        data: dict[str, Any],
        *,
        round_number: int | None = _UNSET,
        shoe: int | None = None,
    ) -> None:
        number = self._book.number if shoe is None else shoe
        if round_number is _UNSET:
            current = self._book.round
            # An event of the next shoe (its shuffle) has no round of this one.
            round_number = current.number if current and number == self._book.number else None
        self._events.append(Event(kind, self._at, number, round_number, data))

    def _alert(
        self, code: str, text: str, needs_supervisor: bool, *, shoe: int | None = None
    ) -> None:
        data = {"code": code, "text": text, "needs_supervisor": needs_supervisor}
        self._emit(EventType.PROCEDURE_ALERT, data, shoe=shoe)

    def _refuse(self, code: str, text: str, needs_supervisor: bool = False) -> None:
        """Refuse the input: one alert, nothing changed (so nothing may have been emitted)."""
        if self._events:
            raise _BugError(f"refusing ({code}) after events were emitted")
        self._refused = True
        self._alert(code, text, needs_supervisor)

    def _refuse_after_bug(self, item: Input, error: Exception, start_shoe: int) -> list[Event]:
        kind = getattr(item, "TYPE", type(item).__name__)
        try:
            self._rebuild(start_shoe)
            outcome_text = "it was refused and the table is as it was before it"
        except Exception:  # the rebuild failed too: stop the table for a person to look
            outcome_text = "the table could not rebuild its state and is held"
            self._book.holds.append(Hold("internal_error", "internal error", self._at))
            if self._life.state != HELD:
                self._book.resume_to = self._life.state
                self._life.trigger("hold")
        self._events = []
        self._refused = True
        self._alert(
            "internal_error",
            f"the controller failed on a {kind} input ({type(error).__name__}); {outcome_text};"
            " call the technician with the journal",
            True,
        )
        return self._events

    def _rebuild(self, shoe: int) -> None:
        """Put the table back as the inputs accepted so far left it (recovery contract)."""
        fresh = Table(self.config, last_shoe=shoe - 1)
        for _, item in self._recorded:
            fresh.apply(item)
        self._life, self._life_machine = fresh._life, fresh._life_machine
        self._prep, self._prep_machine = fresh._prep, fresh._prep_machine
        self._book = fresh._book
        self._recorded = fresh._recorded

    @property
    def _continuous(self) -> bool:
        return self.config.mode == SHUFFLER_DEALER

    def _embargoed(self, draw: Draw) -> bool:
        """R15: a squeezed card stays secret until the reveal; a face-up card is public."""
        return self.config.squeeze and not draw.face_up and not self._continuous

    def _held_text(self) -> str:
        codes = ", ".join(hold.code for hold in self._book.holds)
        return f"the table is held ({codes}): the supervisor resolves the hold first"

    def _has_hold(self, code: str, fault: tuple[str, int] | None = None) -> bool:
        return any(
            hold.code == code and (fault is None or hold.fault == fault)
            for hold in self._book.holds
        )

    # ------------------------------------------------------------------ holds

    def _hold(
        self,
        code: str,
        text: str,
        *,
        kind: str = "plain",
        security: bool = False,
        details: dict[str, Any] | None = None,
        fault: tuple[str, int] | None = None,
    ) -> None:
        book = self._book
        if self._state != HELD:
            book.resume_to = self._state
            self._go("hold")
        book.holds.append(Hold(code, text, self._at, kind, security, fault, fault is not None))
        if security:
            self._emit(EventType.SECURITY_ALERT, {"code": code, "details": details or {}})
        else:
            self._alert(code, text, True)

    def _lift_machine_hold(self) -> None:
        """Let the lifecycle step beneath the holds (void, change shoe, squeeze corrections)."""
        if self._state == HELD:
            self._go("resume", to=self._book.resume_to)

    def _settle(self) -> None:
        """After a change: stay held while holds remain, else go on dealing and drain the queue."""
        book = self._book
        if book.holds:
            if self._state != HELD:
                book.resume_to = self._state
                self._go("hold")
            return
        if self._state == HELD:
            self._go("resume", to=book.resume_to)
        self._continue()
        self._pump()

    def _release(self, holds: list[Hold]) -> None:
        for hold in holds:
            self._book.holds.remove(hold)
        self._settle()

    # ------------------------------------------------------------------ cards

    def _admit(self, draws: list[Draw], factory_run: int = 0) -> None:
        """Queue cards in the order they left the shoe, then deal what can be dealt."""
        book = self._book
        held_before = bool(book.holds)
        book.queue.extend(draws)
        if factory_run == self.config.factory_order_run:
            self._hold(
                "factory_order",
                f"{factory_run} cards in a row in new-deck order up to {draws[-1].label}: the"
                " shoe may not have been shuffled; supervisor: check the shoe (change_shoe)"
                " or resume",
                security=True,
                details={"run": factory_run, "seq": draws[-1].seq},
            )
        for draw in draws:
            what = "was not scanned" if draw.missed else "was drawn"
            if held_before:
                self._alert(
                    "card_during_hold",
                    f"{draw.label} {what} while the table is held: it is placed after the hold",
                    False,
                )
            elif self._state == REVEAL:
                # R15: placing it now would tell by its position what the hidden cards total.
                self._alert(
                    "card_before_reveal",
                    f"{draw.label} {what} before the squeezed cards were revealed: it is placed"
                    " after the reveal",
                    False,
                )
        self._pump()

    def _pump(self) -> None:
        """Deal queued cards in order until a card needs a decision or the table is held."""
        while True:
            book = self._book
            if not book.queue or book.holds or not book.open or self._state == REVEAL:
                return
            head = book.queue[0]
            if isinstance(head, CutMarker):
                book.queue.popleft()
                book.cut_pending = False
                self._cut_card(head.counter)
                continue
            if self._screen(head):
                return
            book.queue.popleft()
            self._process(head)

    def _slot_hint(self) -> str:
        """Where the next card goes, in words (for texts about the queue's head)."""
        book = self._book
        state = book.resume_to if self._state == HELD else self._state
        if state == BURNING:
            return "the burn"
        if book.round is not None:
            if self._third_cards_secret(book.round):
                return "the round's next position (told after the reveal, R15)"
            position = book.round.next_position()
            return position.value if position is not None else "after the round (an extra card)"
        return f"P1 of round {book.rounds_started + 1}"

    def _third_cards_secret(self, current: RoundBook) -> bool:
        """R15: after four cards, what is due next (P3, B3 or nothing) tells the hidden totals."""
        return len(current.draws) >= 4 and bool(current.hidden())

    def _public_next_position(self, current: RoundBook) -> Position | None:
        return None if self._third_cards_secret(current) else current.next_position()

    def _screen(self, draw: Draw) -> bool:
        """Hold the table if this card needs a decision before it is dealt; True if held."""
        if draw.confirmed:
            return False
        book, config = self._book, self.config
        state = self._state
        if draw.foreign:
            self._hold(
                "foreign_card",
                f"{draw.label} is not a card of this shoe's decks (RFID {draw.uid or '?'}):"
                " supervisor: discard it, confirm card=.. or change_shoe",
                kind="card",
                security=True,
                details={"seq": draw.seq, "uid": draw.uid, "counter": draw.counter},
            )
            return True
        if draw.card is None:
            burn_identity_unneeded = (
                state == BURNING and book.burn is not None and not book.burn.needs_first_card
            ) or (draw.burn and state != BURNING)
            if burn_identity_unneeded:
                return False  # an unseen burn card: only its count matters (R2.2, R8)
            if draw.missed:
                text = (
                    f"{draw.label} was not scanned (the shoe's counter jumped): it belongs to"
                    f" {self._slot_hint()}; supervisor: enter it with missed card=.. (R10.5)"
                )
                self._hold("missed_card", text, kind="placeholder")
            else:
                text = (
                    f"{draw.label} could not be read: it belongs to {self._slot_hint()};"
                    " supervisor: enter it with confirm card=.."
                )
                self._hold("unreadable_card", text, kind="placeholder")
            return True
        hidden = self._embargoed(draw) and state != BURNING
        shown = None if hidden else str(draw.card)
        if (draw.uid is not None and draw.uid in book.uids) or (
            draw.duplicate and not self._continuous
        ):
            self._hold(
                "duplicate_card",
                f"{draw.label} carries an RFID tag already seen in this shoe: supervisor:"
                " discard it, confirm it, or change_shoe",
                kind="card",
                security=True,
                # A tag names its card to whoever holds the registry: not before the reveal.
                details={"seq": draw.seq, "uid": None if hidden else draw.uid, "card": shown},
            )
            return True
        if not self._continuous and book.copies[draw.card] >= config.decks:
            # The count narrows a hidden card down to those already seen `decks` times (R15).
            copies = None if hidden else book.copies[draw.card] + 1
            self._hold(
                "too_many_copies",
                f"{draw.label} would be {f'copy {copies}' if copies else 'one copy too many'}"
                f" of a card in a {config.decks}-deck shoe: supervisor: discard it, confirm it,"
                " or change_shoe",
                kind="card",
                security=True,
                details={"seq": draw.seq, "card": shown, "copies": copies, "decks": config.decks},
            )
            return True
        if draw.low_confidence:
            if self._embargoed(draw) and state != BURNING:
                return False  # R15: confirmed after the reveal, when the card is public
            self._hold(
                "low_confidence",
                f"{draw.card} ({draw.label}, for {self._slot_hint()}) was read with low"
                " confidence: supervisor: confirm, or confirm card=.. with the right card",
                kind="card",
            )
            return True
        return False

    def _process(self, draw: Draw) -> None:
        """Deal one screened card: burn, extra card, or the position that is due."""
        book = self._book
        if draw.card is not None and not self._continuous:
            book.copies[draw.card] += 1
        if draw.uid is not None:
            book.uids.add(draw.uid)
        state = self._state
        if state == BURNING:
            self._burn(draw)
            book.last_draw_closed_round = None
            return
        if draw.burn:
            self._burn_on_shoe_word(draw)
            book.last_draw_closed_round = None
            return
        if state == READY and draw.multi and book.last_draw_closed_round is not None:
            # Pulled together with the round's last card: not part of any round (R10.2, R10.3).
            self._extra(draw, book.last_draw_closed_round)
            return
        if state == READY:
            self._open_round()
        elif state == INSURANCE:
            self._forfeit_windows()  # R16.8
        current = self._book.round
        if current is None:
            raise _BugError(f"no round to place {draw.label} in (state {state})")
        self._place(draw)
        # A squeezed round is complete before its result (which waits for the reveal): a card
        # pulled together with its last card is still an extra card (R10.2, R10.3).
        closed = book.round is not current or current.complete()
        book.last_draw_closed_round = current.number if closed else None

    def _burn(self, draw: Draw) -> None:
        book = self._book
        burn = book.burn
        if burn is None:
            raise _BugError("burning without a burn")
        burn.add(draw)
        book.burned += 1
        if burn.done:
            book.burn = None
            book.last_winner = None  # the burn moved the table on from the last result
            self._emit_burned(burn)
            self._go("burn_done")

    def _emit_burned(self, burn: BurnBook) -> None:
        data = {
            "first_card": burn.first_card(),
            "count": len(burn.cards),
            "cards": [draw.public() for draw in burn.cards],
        }
        self._emit(EventType.SHOE_BURNED, data, round_number=None)

    def _burn_on_shoe_word(self, draw: Draw) -> None:
        """The shoe reported the card as burned (its burn mode): it is part of no round."""
        book = self._book
        book.burned += 1
        if book.round is not None:
            self._alert(
                "burn_in_round",
                f"the shoe burned {draw.label} during round {book.round.number}: it is not"
                " part of the round",
                True,
            )
        self._emit_burned(BurnBook(kind="round", target=1, cards=[draw]))

    def _open_round(self) -> None:
        book, config = self._book, self.config
        book.rounds_started += 1
        trial = book.trial_pending > 0  # R2.3
        if trial:
            book.trial_pending -= 1
            book.trial_dealt += 1
        else:
            book.real_rounds += 1
        big_small_open = not trial and (
            self._continuous or book.real_rounds <= config.big_small_last_round
        )  # R14.1; a shuffler-dealer has no shoe to run down
        book.round = RoundBook(
            number=book.rounds_started, trial=trial, big_small_open=big_small_open
        )
        book.last_winner = None
        self._go("open_round")
        self._emit(EventType.ROUND_STARTED, {"trial": trial, "big_small_open": big_small_open})

    def _announce(self, position: Position, draw: Draw) -> None:
        current = self._book.round
        if current is None:
            raise _BugError("announcing a card outside a round")
        # R15: in squeeze mode a card's identity only ever comes with card.revealed.
        card = None if self._embargoed(draw) else draw.public()
        data = {"position": position.value, "card": card, "face_up": draw.face_up}
        self._emit(EventType.CARD_DEALT, data)
        current.announced[position.value] = (draw.seq, draw.card)
        if draw.revealed and self._embargoed(draw):  # announced again after it was opened
            self._emit(
                EventType.CARD_REVEALED, {"position": position.value, "card": str(draw.card)}
            )

    def _place(self, draw: Draw) -> None:
        """Put the card on the position that is due (R7, R9) and go on."""
        current = self._book.round
        if current is None:
            raise _BugError("placing a card outside a round")
        position = current.next_position()
        if position is None:
            raise _BugError(f"round {current.number} is complete, {draw.label} has no position")
        current.draws.append(draw)
        draw.revealed = not self._embargoed(draw)
        self._announce(position, draw)
        if draw.face_up and not self._continuous:
            self._alert(
                "face_up_card",
                f"{draw.describe()} came out of the shoe face up at {position.value} (R4): the"
                " card stands and the round goes on; insurance is void this round (R16.9)",
                False,
            )
            self._void_insurance("face_up_card")
        if draw.missed:
            self._void_insurance("missed_scan")  # R10.5, R16.9
        if draw.multi:
            self._alert(
                "multi_draw",
                f"cards pulled together (R10.2): {draw.describe()} goes to {position.value}",
                True,
            )
        self._continue()

    def _continue(self) -> None:
        """Bring the lifecycle in line with the round's cards: reveal, result or insurance."""
        current = self._book.round
        if current is None or self._state not in (DEALING, INSURANCE, REVEAL):
            return
        if self._state == INSURANCE:
            if current.open_offers():
                return  # the next card waits for the window (R16.8)
            self._go("close_insurance")
        if self._third_cards_secret(current):
            if self._state == DEALING:
                self._go("await_reveal")  # R15: nothing more until the cards are open
            return
        if self._state == REVEAL:
            self._go("revealed")
        if current.complete():
            self._finish_round()
            return
        offers = self._due_offers(current)
        if offers:
            for offer in offers:
                current.offers.append(Offer(offer))
                self._emit(EventType.INSURANCE_OFFERED, offer.event_data())
            self._go("offer_insurance")

    def _due_offers(self, current: RoundBook) -> list[Any]:
        """R16.1-R16.5: the insurance triggers of this stage; none in a trial or void round."""
        if not self.config.insurance or current.trial or current.insurance_void:
            return []
        count = len(current.draws)
        if count in current.stages_offered:
            return []
        current.stages_offered.append(count)
        return insurance_offers(current.cards())

    def _finish_round(self) -> None:
        book = self._book
        current = book.round
        if current is None:
            raise _BugError("finishing no round")
        result = outcome(current.cards())
        book.cards_in_rounds += len(current.draws)
        self._emit(EventType.ROUND_RESULT, result.result_data())
        if not current.trial:
            book.road.append(
                {
                    "round": current.number,
                    "winner": result.winner.value,
                    "player_pair": result.player_pair,
                    "banker_pair": result.banker_pair,
                    "natural": result.natural,
                }
            )
        book.last_winner = result.winner.value
        book.round = None
        self._go("finish_round")
        self._after_round(current)

    def _after_round(self, finished: RoundBook) -> None:
        """The shoe ends after its last round (R3.1); else the next round's burn (R8, R10.3)."""
        book = self._book
        if self._continuous:
            book.uids.clear()  # R2.5: the cards go back into the machine after every round
            book.discarded.extend(book.pending_burn)
            book.pending_burn = []
        if book.last_round is not None and finished.number >= book.last_round:
            self._end_shoe("cut_card")
            return
        cards, book.pending_burn = book.pending_burn, []
        if self._continuous:
            return
        target = max(self.config.burn_per_round, len(cards))
        if target == 0:
            return
        burn = BurnBook(kind="round", target=target, cards=cards)
        book.burned += len(cards)
        if burn.done:
            self._emit_burned(burn)
            return
        book.burn = burn
        self._go("start_burn")

    def _extra(self, draw: Draw, round_number: int) -> None:
        """R10.3: a card no position wanted becomes the next round's burn; R10.4 beyond that."""
        book = self._book
        # R15: a squeezed card taken out of the round before its reveal stays unnamed.
        self._emit(EventType.CARD_EXTRA, {"card": draw.public()}, round_number=round_number)
        count = book.extra_counts.get(round_number, 0) + 1
        book.extra_counts[round_number] = count
        capacity = max(1, self.config.burn_per_round)
        if count > capacity:
            self._alert(
                "extra_cards",
                f"{count} extra cards in round {round_number} and only {capacity} burn card(s)"
                " to absorb them (R10.4): the round is cancelled and the shoe is changed",
                True,
            )
            if book.round is not None:
                self._void_round("extra_cards", then_continue=False)
            self._end_shoe("misdeal")
            return
        if book.round is not None and book.round.number == round_number:
            book.pending_burn.append(draw)
        elif self._continuous:
            book.discarded.append(draw)  # R2.5: back into the machine
        else:
            book.burned += 1  # the round is over: burned at once for the next round
            self._emit_burned(BurnBook(kind="round", target=1, cards=[draw]))

    def _relayout(self, draws: list[Draw], reason: str) -> bool:
        """Lay the round's cards out again in dealing order (R10.1, R10.5); False if the shoe
        ended because of the extra cards this left (R10.4)."""
        book = self._book
        current = book.round
        if current is None:
            raise _BugError("relayout outside a round")
        cards = [draw.card for draw in draws if draw.card is not None]
        if len(cards) != len(draws):
            raise _BugError("relayout with unknown cards")
        taken = cards_taken(cards)
        current.draws = draws[:taken]
        positions = positions_of(cards[:taken])
        for position, draw in zip(positions, current.draws, strict=True):
            if current.announced.get(position.value) != (draw.seq, draw.card):
                self._announce(position, draw)
        for name in [name for name in current.announced if name not in positions]:
            del current.announced[name]
        self._void_insurance(reason)
        for draw in draws[taken:]:
            self._extra(draw, current.number)
            if self._book is not book:
                return False
        return True

    # ------------------------------------------------------------------ insurance (R16)

    def _void_insurance(self, reason: str) -> None:
        """R16.9: every offer of the round is void and no more are made this round."""
        current = self._book.round
        if current is None:
            return
        current.insurance_void = True
        for offer in current.offers:
            if offer.status != "voided":
                offer.status = "voided"
                self._emit(EventType.INSURANCE_VOIDED, self._offer_data(offer, reason))

    def _forfeit_windows(self) -> None:
        """R16.8: a card dealt into an open window voids (forfeits) that insurance."""
        current = self._book.round
        if current is None:
            return
        for offer in current.open_offers():
            offer.status = "voided"
            self._emit(EventType.INSURANCE_VOIDED, self._offer_data(offer, "dealt_into_window"))

    def _close_windows(self, reason: str) -> None:
        current = self._book.round
        if current is None:
            return
        for offer in current.open_offers():
            offer.status = "closed"
            self._emit(EventType.INSURANCE_CLOSED, self._offer_data(offer, reason))

    @staticmethod
    def _offer_data(offer: Offer, reason: str) -> dict[str, Any]:
        return {"side": offer.offer.side.value, "stage": offer.offer.stage, "reason": reason}

    # ------------------------------------------------------------------ squeeze (R15)

    def _reveal(self) -> None:
        """The dealer opened the squeezed cards: publish them, or hold for doubtful reads."""
        current = self._book.round
        if current is None:
            raise _BugError("reveal outside a round")
        pending: list[tuple[Position, Draw]] = []
        for position, draw in zip(current.positions(), current.draws, strict=True):
            if draw.revealed:
                continue
            if draw.low_confidence and not draw.confirmed:
                pending.append((position, draw))
                continue
            draw.revealed = True
            self._emit(
                EventType.CARD_REVEALED, {"position": position.value, "card": str(draw.card)}
            )
        if pending:
            named = ", ".join(f"{position.value} {draw.card}" for position, draw in pending)
            self._hold(
                "low_confidence",
                f"squeezed card(s) read with low confidence: {named}; supervisor: confirm, or"
                " confirm card=.. with the right card (R15)",
                kind="reveal",
            )

    # ------------------------------------------------------------------ rounds and shoes

    def _void_round(
        self, reason: str, *, then_continue: bool = True, with_cards: list[Draw] | None = None
    ) -> None:
        book = self._book
        current = book.round
        if current is None:
            raise _BugError("voiding no round")
        for offer in current.open_offers():
            offer.status = "voided"
            self._emit(EventType.INSURANCE_VOIDED, self._offer_data(offer, "round_voided"))
        # R15: queued cards were never placed; in a squeezed round they would have been hidden.
        queued = [None if self._embargoed(draw) else draw.public() for draw in with_cards or []]
        cards = [*(draw.public() for draw in current.draws), *queued]
        book.cards_in_rounds += len(cards)
        self._emit(EventType.ROUND_VOIDED, {"reason": reason, "cards": cards})
        book.round = None
        book.last_winner = None
        book.last_draw_closed_round = None
        self._go("void_round")
        if then_continue:
            self._after_round(current)
        elif self._continuous:
            book.uids.clear()

    def _void_with_queue(self, reason: str) -> None:
        """Void the round with the cards held or drawn during a hold (R10.1)."""
        book = self._book
        self._lift_machine_hold()
        discarded: list[Draw] = []
        for item in list(book.queue):
            if isinstance(item, CutMarker):
                self._cut_card(item.counter)  # it came out during this round (R3.1)
            else:
                discarded.append(item)
        book.queue.clear()
        book.cut_pending = False
        book.holds[:] = [hold for hold in book.holds if hold.kind == "plain"]
        self._void_round(reason, with_cards=discarded)
        self._settle()

    def _cut_card(self, counter: int | None) -> None:
        """R3.1 and R2.1: the cut card came out; the last round is decided now."""
        book, config = self._book, self.config
        after = counter if counter is not None else book.drawn
        book.cut_after = after
        behind = config.cards_in_shoe - after
        # The round in progress is the one still waiting for cards; a squeezed round whose
        # cards are all out (waiting for the reveal) is behind the cut card already.
        dealing = book.round is not None and not book.round.complete()
        current = book.round.number if dealing and book.round else book.rounds_started + 1
        book.last_round = current if config.cut_card == FINISH_CURRENT else current + 1
        if config.mode == MANUAL and behind >= config.min_cards_behind_cut:
            self._emit(EventType.SHOE_CUT, {"cards_behind_cut": behind})
        self._emit(EventType.SHOE_CUT_CARD, {"after_card": after})
        if behind < config.min_cards_behind_cut:
            self._alert(
                "cut_card_too_late",
                f"only {behind} cards lay behind the cut card; at least"
                f" {config.min_cards_behind_cut} are required (R2.1)",
                True,
            )

    def _open_shoe(self) -> None:
        book, config = self._book, self.config
        book.open = True
        self._prep_go("shoe_opened")  # never blocked here: _cannot_open refused that
        if config.mode == MANUAL:
            # R2.1: the dealer shuffled and cut by hand; there is no deck check to report.
            self._emit(
                EventType.SHOE_SHUFFLED,
                {
                    "decks": config.decks,
                    "total": config.cards_in_shoe,
                    "ok": True,
                    "problems": [],
                },
                round_number=None,
            )
        if self._continuous:
            self._go("load_continuous")  # R2.5: no cut, no burn
            return
        target = config.decks if config.burn == BURN_DECKS else None
        book.burn = BurnBook(kind=config.burn, target=target)
        self._go("load")

    def _end_shoe(self, reason: str) -> None:
        book = self._book
        if book.round is not None:
            raise _BugError("ending a shoe with a round in progress")
        leftovers = [item for item in book.queue if isinstance(item, Draw)]
        if leftovers:
            self._alert(
                "cards_after_end",
                f"{len(leftovers)} card(s) drawn but not dealt when shoe {book.number} ended are"
                " out of play",
                True,
            )
        self._emit(
            EventType.SHOE_ENDED,
            {
                "rounds": book.rounds_started,
                "cards_dealt": book.drawn,
                "reason": reason,
            },
            round_number=None,
        )
        self._go("end_shoe")
        self._book = ShoeBook(number=book.number + 1)
        if self._continuous and self._prep.state != UNCHECKED:
            self._prep_go("forget")  # the next set of cards needs the machine's own check

    def _cannot_open(self, *, by_supervisor: bool) -> tuple[str, str] | None:
        """Why a shoe may not start now (R2.4, R10.6), or None."""
        prep = self._prep.state
        if prep == BLOCKED:
            return (
                "deck_blocked",
                "the deck check of these cards failed or a card was lost"
                " in the shuffle (R10.6): new cards and a passing deck check are needed",
            )
        if prep == SHUFFLING and self.config.mode != MANUAL:
            return ("shuffle_unfinished", "the shuffler has not finished its deck check")
        if self.config.mode != MANUAL and prep != CHECKED and not by_supervisor:
            return (
                "no_deck_check",
                "no passing deck check from the shuffler for this shoe"
                " (R2.4, R2.5): shuffle the cards, or supervisor start_shoe",
            )
        return None

    # ------------------------------------------------------------------ input handlers

    def _on_card(self, item: CardDrawn) -> None:
        book = self._book
        if not book.open:
            self._refuse(
                "no_shoe",
                "a card was drawn but no shoe is open: load the shoe (or"
                " supervisor start_shoe) before dealing",
                True,
            )
            return
        draw = Draw(
            seq=book.drawn + 1,
            card=item.card,
            counter=item.counter,
            uid=item.uid,
            face_up=item.face_up,
            low_confidence=item.low_confidence,
            multi=item.multi,
            burn=item.burn,
            foreign=item.foreign,
            duplicate=item.duplicate,
        )
        book.drawn += 1
        run = book.factory.feed(None if item.foreign else item.card)
        self._admit([draw], factory_run=run)

    def _on_missed(self, item: CardsMissed) -> None:
        book = self._book
        if not book.open:
            self._refuse("no_shoe", "the shoe reported missed cards but no shoe is open", True)
            return
        if not 1 <= item.count <= self.config.cards_in_shoe:
            self._refuse(
                "invalid_input",
                f"cards_missed count must be 1 to {self.config.cards_in_shoe}, got {item.count}",
                True,
            )
            return
        draws = []
        for index in range(item.count):
            counter = None if item.after_counter is None else item.after_counter + index + 1
            draws.append(Draw(seq=book.drawn + 1, card=None, counter=counter, missed=True))
            book.drawn += 1
            book.factory.feed(None)
        self._admit(draws)

    def _on_cut(self, item: CutCardSeen) -> None:
        book = self._book
        if not book.open:
            self._refuse("no_shoe", "the cut card came out but no shoe is open", True)
        elif self._continuous:
            self._refuse("no_cut_card", "a shuffler-dealer machine has no cut card (R2.5)", True)
        elif book.cut_after is not None or book.cut_pending:
            self._refuse("cut_card_repeated", "the cut card already came out in this shoe", True)
        elif item.counter is not None and not 0 <= item.counter <= self.config.cards_in_shoe:
            self._refuse(
                "invalid_input",
                f"the cut card came out after card {item.counter}, but the shoe holds"
                f" {self.config.cards_in_shoe} cards: a device fault; supervisor: check the shoe",
                True,
            )
        elif book.queue:
            book.queue.append(CutMarker(item.counter))  # behind the cards drawn before it
            book.cut_pending = True
        else:
            self._cut_card(item.counter)

    def _on_shoe_state(self, item: ShoeStateChanged) -> None:
        book = self._book
        state = item.state
        if state == ShoeState.LOADED:
            if book.open:
                if self._has_hold("shoe_removed") or self._has_hold("shoe_empty"):
                    return  # back in; the supervisor resumes (or changes the shoe)
                self._refuse(
                    "shoe_already_open",
                    f"a shoe was loaded while shoe {book.number}"
                    " is open: supervisor change_shoe to start a new shoe",
                    True,
                )
            elif book.holds:
                self._refuse("table_held", self._held_text(), True)
            else:
                problem = self._cannot_open(by_supervisor=False)
                if problem is not None:
                    self._refuse(problem[0], problem[1], True)
                else:
                    self._open_shoe()
        elif state in (ShoeState.REMOVED, ShoeState.EMPTY):
            code = "shoe_removed" if state == ShoeState.REMOVED else "shoe_empty"
            if book.open and not self._has_hold(code):
                self._hold(
                    code,
                    f"the shoe is {'removed' if code == 'shoe_removed' else 'empty'}"
                    f" while shoe {book.number} is open: supervisor: resume once it is"
                    " back, or change_shoe",
                )
        elif state == ShoeState.COVER_OPEN and book.open and not self._has_hold("cover_open"):
            self._hold(
                "cover_open",
                "the shoe's cover opened while the shoe is in play:"
                " supervisor: check the cards, then resume",
            )

    def _on_button(self, item: ButtonPressed) -> None:
        book = self._book
        if item.button == Button.CALL_SUPERVISOR:
            self._alert(
                "supervisor_called", f"the dealer calls the supervisor ({item.device})", True
            )
            return
        if self._state == HELD:
            self._refuse("table_held", self._held_text())
            return
        current = book.round
        if self.config.squeeze and current is not None and current.hidden():
            self._reveal()
            self._settle()
        elif self._state == INSURANCE:
            self._close_windows("dealer")
            self._settle()
        else:
            self._refuse(
                "nothing_to_reveal",
                "REVEAL pressed with no squeezed card to reveal and no insurance window to close",
            )

    def _on_shuffle_started(self, item: ShuffleStarted) -> None:
        self._prep_go("shuffle_started")

    def _on_shuffle_done(self, item: ShuffleDone) -> None:
        config, book = self.config, self._book
        shoe = self.shoe_of(item)
        problems = [str(problem) for problem in item.problems]
        if item.decks != config.decks:
            problems.append(f"{item.decks} decks shuffled, {config.decks} configured")
        if item.total != config.cards_in_shoe:
            problems.append(f"{item.total} cards counted, {config.cards_in_shoe} expected")
        ok = item.ok and item.decks == config.decks and item.total == config.cards_in_shoe
        self._emit(
            EventType.SHOE_SHUFFLED,
            {
                "decks": item.decks,
                "total": item.total,
                "ok": ok,
                "problems": problems,
            },
            round_number=None,
            shoe=shoe,
        )
        if not ok:
            self._prep_go("check_failed")
            text = (
                f"deck check failed ({'; '.join(problems) or 'no detail'}): the shoe cannot"
                " start until new cards pass a deck check (R10.6)"
            )
            if self._continuous and book.open:
                if not self._has_hold("deck_check_failed"):
                    self._hold("deck_check_failed", text)
            else:
                self._alert("deck_check_failed", text, True, shoe=shoe)
            return
        if self._prep.state == BLOCKED:
            self._alert(
                "reshuffle_needed",
                "this deck check passed, but the cards were blocked"
                " before this shuffle began (R10.6): shuffle the new cards again",
                True,
                shoe=shoe,
            )
            return
        self._prep_go("check_passed")
        if self._continuous and not book.open and not book.holds:
            self._open_shoe()  # R2.5: the machine deals from its own check

    def _on_fault(self, item: DeviceFault) -> None:
        book = self._book
        key = (item.device, item.code)
        record = {
            "device": item.device,
            "code": item.code,
            "severity": item.severity,
            "text": item.text,
        }
        # Events come from the input alone (a replay must give the same ones): a fault the
        # device reports again (after a status request) is reported again.
        self._faults[key] = record
        self._emit(EventType.DEVICE_FAULT, dict(record), shoe=self.shoe_of(item))
        if item.code == FAULT_TAMPER:
            if not self._has_hold("tamper", key):
                self._hold(
                    "tamper",
                    f"{item.device} reports tampering: {item.text}",
                    security=True,
                    fault=key,
                    details={"device": item.device, "fault": item.code, "text": item.text},
                )
        elif item.code == FAULT_CARD_DROPPED:
            text = (
                f"a card was lost during the shuffle ({item.device}): new cards, a full"
                " reshuffle and a passing deck check are needed (R10.6)"
            )
            if self._continuous and book.open:
                if not self._has_hold("card_lost", key):
                    self._hold("card_lost", text, fault=key)
            elif self._prep.state != BLOCKED:
                self._alert("card_lost", text, True, shoe=self.shoe_of(item))
            self._prep_go("check_failed")
        elif item.code in SHUFFLER_FAULTS:
            return  # the shuffler's own deck check decides about its cards
        elif item.severity >= 2 and book.open and not self._has_hold("device_fault", key):
            self._hold(
                "device_fault",
                f"{item.device} fault {item.code:#06x}: {item.text}"
                " while the shoe is in play: supervisor: resume once it is cleared",
                fault=key,
            )

    def _on_fault_cleared(self, item: DeviceFaultCleared) -> None:
        key = (item.device, item.code)
        self._faults.pop(key, None)
        # FAULT_CLEARED carries only the code: no severity or text to report (a replay must
        # give the same event, whatever the device status before the shoe).
        data = {"device": item.device, "code": item.code, "severity": None, "text": ""}
        self._emit(EventType.DEVICE_FAULT_CLEARED, data)
        for hold in self._book.holds:
            if hold.fault == key:
                hold.fault_active = False

    def _on_connected(self, item: DeviceConnected) -> None:
        record = {
            "kind": item.kind,
            "vendor": item.vendor,
            "model": item.model,
            "serial": item.serial,
            "firmware": item.firmware,
        }
        self._devices[item.device] = {**record, "connected": True}
        self._emit(EventType.DEVICE_CONNECTED, {"device": item.device, **record})

    def _on_lost(self, item: DeviceLost) -> None:
        if item.device in self._devices:
            self._devices[item.device]["connected"] = False
        # DEVICE_LOST carries no identity, and the events may depend on the input alone (a
        # replay must give the same event): PUSH_API's identity fields stay empty.
        data = {"device": item.device, **dict.fromkeys(_DEVICE_IDENTITY, "")}
        self._emit(EventType.DEVICE_LOST, data)
        if self._book.open:
            self._alert(
                "device_lost",
                f"{item.device} is lost while shoe {self._book.number}"
                " is in play: stop dealing until it is back; cards drawn meanwhile"
                " come back as missed cards (R10.5)",
                True,
            )

    def _on_started(self, item: ControllerStarted) -> None:
        self._devices.clear()  # the devices report themselves again after a restart
        self._faults.clear()
        self._emit(
            EventType.CONTROLLER_STARTED,
            {"version": item.version, "boot": item.boot, "recovered": item.recovered},
        )

    # ------------------------------------------------------------------ supervisor actions

    def _on_supervisor(self, command: SupervisorCommand) -> None:
        action = ACTIONS.get(command.action) if isinstance(command.action, str) else None
        if action is None:
            self._refuse(
                "command_refused",
                f"unknown action {command.action!r}; the actions are: {', '.join(ACTIONS)}",
            )
            return
        if not isinstance(command.by, str) or not command.by.strip():
            self._refuse(
                "command_refused",
                f"{action.name} refused: who acts? `by` (the supervisor's id) is required",
            )
            return
        if not isinstance(command.reason, str) or not command.reason.strip():
            self._refuse("command_refused", f"{action.name} refused: a reason is required")
            return
        try:
            args = parse_args(action, command.args)
        except CommandError as error:
            self._refuse("command_refused", f"{action.name} refused: {error}")
            return
        refusal = getattr(self, f"_check_{action.name}")(args)
        if refusal:
            self._refuse("command_refused", f"{action.name} refused: {refusal}")
            return
        getattr(self, f"_do_{action.name}")(command, args)

    def _acknowledge(self, command: SupervisorCommand, details: dict[str, Any]) -> None:
        self._emit(
            EventType.SUPERVISOR_ACTION,
            {
                "action": command.action,
                "by": command.by,
                "reason": command.reason,
                "details": {**details, "os_user": command.os_user} if command.os_user else details,
            },
        )

    def _pending_decision(self) -> tuple[Hold, Draw] | None:
        """The hold that waits for a card decision and the card it is about."""
        book = self._book
        for hold in book.holds:
            if hold.kind in ("card", "placeholder") and book.queue:
                head = book.queue[0]
                if isinstance(head, Draw):
                    return hold, head
            if hold.kind == "reveal" and book.round is not None:
                for draw in book.round.draws:
                    if not draw.revealed:
                        return hold, draw
        return None

    def _public_card(self, card: Card | None, draw: Draw | None = None) -> str | None:
        """A card for supervisor.action details: hidden while the squeeze embargo holds."""
        if card is None:
            return None
        if self.config.squeeze and not self._continuous and (draw is None or not draw.revealed):
            return None
        return str(card)

    def _check_start_shoe(self, args: dict[str, Any]) -> str | None:
        if self._book.open:
            return f"shoe {self._book.number} is open; change_shoe ends it"
        if self._book.holds:
            return self._held_text()
        problem = self._cannot_open(by_supervisor=True)
        return problem[1] if problem else None

    def _do_start_shoe(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        self._acknowledge(command, {"shoe": self._book.number})
        self._open_shoe()

    def _check_trial(self, args: dict[str, Any]) -> str | None:
        book, limit = self._book, self.config.max_trial_rounds
        if book.real_rounds > 0:
            return (
                f"trial rounds come only before the shoe's first real round (R2.3);"
                f" {book.real_rounds} real round(s) started"
            )
        if book.trial_dealt + book.trial_pending + args["rounds"] > limit:
            return (
                f"at most {limit} trial round(s) per shoe (R2.3): {book.trial_dealt} dealt,"
                f" {book.trial_pending} requested, {args['rounds']} more asked"
            )
        return None

    def _do_trial(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        book = self._book
        book.trial_pending += args["rounds"]
        self._acknowledge(
            command,
            {"rounds": args["rounds"], "pending": book.trial_pending, "dealt": book.trial_dealt},
        )

    def _check_end_trial(self, args: dict[str, Any]) -> str | None:
        book = self._book
        if (book.round is None or not book.round.trial) and book.trial_pending == 0:
            return "no trial round is in progress or requested"
        return None

    def _do_end_trial(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        book = self._book
        in_progress = book.round is not None and book.round.trial
        self._acknowledge(
            command,
            {
                "cancelled": book.trial_pending,
                "round": book.round.number if in_progress and book.round else None,
            },
        )
        book.trial_pending = 0
        if in_progress:
            self._void_with_queue("trial_ended")

    def _check_confirm(self, args: dict[str, Any]) -> str | None:
        pending = self._pending_decision()
        if pending is None:
            return "no card waits for a decision"
        _, draw = pending
        if args["card"] is None and (draw.card is None or draw.foreign):
            return f"{draw.label} has no identity: enter it with confirm card=.."
        return None

    def _do_confirm(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        pending = self._pending_decision()
        if pending is None:
            raise _BugError("confirm without a pending decision")
        hold, draw = pending
        card: Card | None = args["card"]
        if hold.kind != "reveal":
            if card is not None:
                draw.card = card
            draw.confirmed = True
            self._acknowledge(
                command, {"seq": draw.seq, "hold": hold.code, "card": self._head_card_shown(draw)}
            )
            self._release([hold])
            return
        self._confirm_revealed(command, hold, draw, card)

    def _head_card_shown(self, draw: Draw) -> str | None:
        """The queue head's card for supervisor.action details: hidden if it goes to a
        squeezed position (R15); burn cards are not squeezed."""
        state = self._book.resume_to if self._state == HELD else self._state
        if draw.card is None or (self._embargoed(draw) and state != BURNING):
            return None
        return str(draw.card)

    def _confirm_revealed(
        self, command: SupervisorCommand, hold: Hold, draw: Draw, card: Card | None
    ) -> None:
        """R15: a squeezed card read with low confidence, confirmed once it is open."""
        book = self._book
        current = book.round
        if current is None:
            raise _BugError("reveal confirmation outside a round")
        changed = card is not None and card != draw.card
        if changed and card is not None:
            if draw.card is not None and book.copies[draw.card] > 0:
                book.copies[draw.card] -= 1
            book.copies[card] += 1
            draw.card = card
        draw.confirmed = True
        draw.revealed = True
        self._acknowledge(command, {"seq": draw.seq, "hold": hold.code, "card": str(draw.card)})
        self._lift_machine_hold()
        position = self._position_of(draw)
        if changed:
            current.announced.pop(position or "", None)
            if not self._relayout(list(current.draws), "card_corrected"):
                return
        elif position is not None:
            self._emit(EventType.CARD_REVEALED, {"position": position, "card": str(draw.card)})
        if not any(d.low_confidence and not d.confirmed and not d.revealed for d in current.draws):
            book.holds.remove(hold)
        self._settle()

    def _position_of(self, draw: Draw) -> str | None:
        current = self._book.round
        if current is None:
            return None
        for position, placed in zip(current.positions(), current.draws, strict=True):
            if placed is draw:
                return position.value
        return None

    def _check_discard(self, args: dict[str, Any]) -> str | None:
        pending = self._pending_decision()
        if pending is None or pending[0].kind == "reveal":
            return "no held card to discard (a dealt card is corrected, or its round voided)"
        return None

    def _do_discard(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        pending = self._pending_decision()
        if pending is None:
            raise _BugError("discard without a pending card")
        hold, draw = pending
        self._book.queue.popleft()
        self._book.discarded.append(draw)
        self._acknowledge(command, {"seq": draw.seq, "hold": hold.code})
        self._release([hold])

    def _check_correct(self, args: dict[str, Any]) -> str | None:
        book = self._book
        if book.holds:
            return self._held_text()
        if book.round is None:
            return "no round is in progress"
        positions = [position.value for position in book.round.positions()]
        if args["position"].value not in positions:
            return f"round {book.round.number} has no card at {args['position'].value}"
        draw = book.round.draws[positions.index(args["position"].value)]
        if draw.revealed and draw.card == args["card"]:
            return f"{args['position'].value} already holds {args['card']}"
        return None

    def _do_correct(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        book = self._book
        current = book.round
        if current is None:
            raise _BugError("correct outside a round")
        position: Position = args["position"]
        card: Card = args["card"]
        index = [p.value for p in current.positions()].index(position.value)
        draw = current.draws[index]
        was = draw.card
        self._acknowledge(
            command,
            {
                "position": position.value,
                "card": self._public_card(card, draw),
                "was": self._public_card(was, draw),
            },
        )
        if was is not None and book.copies[was] > 0:
            book.copies[was] -= 1
        book.copies[card] += 1
        draw.card = card
        draw.confirmed = True
        current.announced.pop(position.value, None)  # announced again, even under the squeeze
        if self._relayout(list(current.draws), "card_corrected"):
            self._settle()

    def _insertion_index(self, card: Card, position: Position) -> int | None:
        current = self._book.round
        if current is None:
            return None
        cards = current.cards()
        for index in range(len(cards) + 1):
            trial = [*cards[:index], card, *cards[index:]]
            taken = cards_taken(trial)
            if index < taken and positions_of(trial[:taken])[index] == position:
                return index
        return None

    def _check_missed(self, args: dict[str, Any]) -> str | None:
        book = self._book
        pending = self._pending_decision()
        if pending is not None and pending[0].kind == "placeholder":
            return None
        if book.holds:
            return self._held_text()
        if book.round is None or not book.round.draws:
            return "no round is in progress to put the missed card in"
        if args["position"] is None:
            return "the shoe reported no gap: say where the card belonged with position=.."
        if book.round.hidden():
            return "reveal the squeezed cards first: where the cards go would tell them (R15)"
        if self._insertion_index(args["card"], args["position"]) is None:
            return (
                f"no place among round {book.round.number}'s cards makes that card"
                f" {args['position'].value}"
            )
        return None

    def _do_missed(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        book = self._book
        pending = self._pending_decision()
        card: Card = args["card"]
        if pending is not None and pending[0].kind == "placeholder":
            hold, draw = pending
            draw.card = card
            draw.confirmed = True
            self._acknowledge(
                command, {"seq": draw.seq, "card": self._head_card_shown(draw), "position": None}
            )
            self._release([hold])
            return
        current = book.round
        if current is None:
            raise _BugError("missed card outside a round")
        position: Position = args["position"]
        index = self._insertion_index(card, position)
        if index is None:
            raise _BugError("missed card without a place")
        draw = Draw(seq=book.drawn + 1, card=card, missed=True, confirmed=True)
        draw.revealed = not self._embargoed(draw)
        book.drawn += 1
        book.copies[card] += 1
        self._acknowledge(
            command,
            {"seq": draw.seq, "card": self._public_card(card, draw), "position": position.value},
        )
        draws = [*current.draws[:index], draw, *current.draws[index:]]
        if not self._relayout(draws, "missed_scan"):  # R10.5 voids insurance (R16.9)
            return
        placed = ", ".join(
            f"{p.value} {d.public() or d.label}"
            for p, d in zip(current.positions(), current.draws, strict=True)
        )
        self._alert(
            "cards_rearranged",
            f"after the missed card the cards lie in dealing order (R10.5): {placed}",
            True,
        )
        self._settle()

    def _check_extra(self, args: dict[str, Any]) -> str | None:
        book = self._book
        if book.holds:
            return self._held_text()
        if book.round is None or not book.round.draws:
            return "no card of a round in progress to take out"
        return None

    def _do_extra(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        current = self._book.round
        if current is None:
            raise _BugError("extra outside a round")
        draw = current.draws[-1]
        self._acknowledge(command, {"seq": draw.seq, "card": self._public_card(draw.card, draw)})
        if self._relayout(current.draws[:-1], "card_corrected"):
            self._extra(draw, current.number)
            self._settle()

    def _check_void(self, args: dict[str, Any]) -> str | None:
        book = self._book
        if book.round is None:
            return "no round is in progress to void"
        ends_shoe = (book.last_round is not None and book.round.number >= book.last_round) or (
            book.cut_pending and self.config.cut_card == FINISH_CURRENT
        )
        lingering = [hold.code for hold in book.holds if hold.kind == "plain"]
        if ends_shoe and lingering:
            # The holds would go with the shoe, and the next shoe would open over them.
            return (
                f"voiding the shoe's last round ends the shoe while {', '.join(lingering)}"
                " holds the table: resume first, or change_shoe"
            )
        return None

    def _do_void(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        current = self._book.round
        self._acknowledge(command, {"round": current.number if current else None})
        self._void_with_queue("supervisor")

    def _check_change_shoe(self, args: dict[str, Any]) -> str | None:
        return None if self._book.open else "no shoe is open"

    def _do_change_shoe(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        book = self._book
        self._acknowledge(command, {"shoe": book.number, "misdeal": args["misdeal"]})
        self._lift_machine_hold()
        if book.round is not None:
            queued = [item for item in book.queue if isinstance(item, Draw)]
            book.queue.clear()
            self._void_round("shoe_changed", then_continue=False, with_cards=queued)
        if any(hold.security for hold in book.holds):
            reason = "security"  # PUSH_API.md: the shoe ended over a foreign/duplicate card...
        else:
            reason = "misdeal" if args["misdeal"] else "supervisor"
        self._end_shoe(reason)

    def _check_resume(self, args: dict[str, Any]) -> str | None:
        holds = self._book.holds
        plain = [hold for hold in holds if hold.kind == "plain"]
        if not plain:
            waiting = ", ".join(hold.code for hold in holds)
            return (
                "nothing to resume"
                if not waiting
                else f"the hold ({waiting}) waits for a card decision: confirm or discard"
            )
        active = [hold for hold in plain if hold.fault_active]
        if active:
            hold = active[0]
            device, code = hold.fault or ("?", 0)
            return f"{device} fault {code:#06x} behind the {hold.code} hold is still active"
        return None

    def _do_resume(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        plain = [hold for hold in self._book.holds if hold.kind == "plain"]
        self._acknowledge(command, {"released": [hold.code for hold in plain]})
        self._release(plain)

    def _check_hold(self, args: dict[str, Any]) -> str | None:
        return (
            "the supervisor already holds the table" if self._has_hold("supervisor_hold") else None
        )

    def _do_hold(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        self._acknowledge(command, {})
        self._hold("supervisor_hold", f"held by {command.by}: {command.reason}")

    def _check_reveal(self, args: dict[str, Any]) -> str | None:
        if self._book.holds:
            return self._held_text()
        current = self._book.round
        if not self.config.squeeze or current is None or not current.hidden():
            return "no squeezed card waits for the reveal"
        return None

    def _do_reveal(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        self._acknowledge(command, {})
        self._reveal()
        self._settle()

    def _check_close_insurance(self, args: dict[str, Any]) -> str | None:
        if self._state != INSURANCE:
            return "no insurance window is open"
        return None

    def _do_close_insurance(self, command: SupervisorCommand, args: dict[str, Any]) -> None:
        current = self._book.round
        windows = (
            [f"{o.offer.side.value}/{o.offer.stage}" for o in current.open_offers()]
            if current
            else []
        )
        self._acknowledge(command, {"windows": windows})
        self._close_windows("supervisor")
        self._settle()
