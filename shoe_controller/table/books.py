"""Pure bookkeeping of a shoe and its rounds: draws, burns, positions, composition, factory order.

Nothing here knows the lifecycle or emits events: the procedures decide what happens, these
classes only remember it. Everything is plain data so that a snapshot compares equal when the
same inputs were applied (the recovery contract, docs/table.md).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction

from shoe_controller.game.rules import InsuranceOffer, Position, next_position, positions_of
from shoe_controller.table.edge_watch import EdgeWatch
from shoe_controller.table.shuffle_record import ShuffleRecord
from shoe_controller.vocab.cards import Card, burn_value


@dataclass(slots=True)
class Draw:
    """One card out of the shoe, as the table knows it."""

    seq: int  # the table's own count of cards out of this shoe, 1-based
    card: Card | None  # None: not identified (missed by the scanner, unreadable, foreign)
    counter: int | None = None  # the device's counter, when it sent one
    at: float | None = None  # when it was read (the input's time); None: entered by hand
    uid: str | None = None
    face_up: bool = False  # R4
    low_confidence: bool = False
    multi: bool = False  # R10.2
    burn: bool = False  # the shoe said it was burned
    foreign: bool = False
    duplicate: bool = False
    missed: bool = False  # the scanner never saw it (R10.5)
    double_read: bool = False  # maybe the card before it read again (no counter to tell)
    confirmed: bool = False  # a supervisor confirmed or entered it: no more screening
    revealed: bool = True  # False while the squeeze embargo keeps its identity inside (R15)

    @property
    def label(self) -> str:
        """How texts name the card without saying what it is (R15)."""
        return f"card #{self.seq}"

    def public(self) -> str | None:
        """The card as events may show it: None while unknown or under the squeeze embargo."""
        return str(self.card) if self.revealed and self.card is not None else None

    def describe(self) -> str:
        """A text naming the card, its identity only when public."""
        shown = self.public()
        return f"{shown} ({self.label})" if shown else self.label


@dataclass(frozen=True, slots=True)
class CutMarker:
    """The cut card, kept in the queue behind cards drawn before it (R3.1)."""

    after: int  # cards out of the shoe before it, by the table's own count (R2.1)


class HoldKind(StrEnum):
    """What a hold waits for, and so which supervisor actions end it."""

    PLAIN = "plain"  # a situation to check: `resume` (or void, change_shoe)
    CARD = "card"  # the card at the queue's head is doubtful: `confirm` or `discard`
    PLACEHOLDER = "placeholder"  # a card out of the shoe with no identity: `missed`/`confirm`
    REVEAL = "reveal"  # a squeezed card read with low confidence: `confirm` once open (R15)
    EARLY = "early"  # a round's first card came while bets were open: `void` or `accept` (R17)


# The supervisor actions that end a hold of each kind: every hold has a way out (docs/table.md
# "Holds and their ways out"). `change_shoe` ends any of them with the shoe.
WAYS_OUT: dict[HoldKind, tuple[str, ...]] = {
    HoldKind.PLAIN: ("resume", "change_shoe"),
    HoldKind.CARD: ("confirm", "discard", "change_shoe"),
    HoldKind.PLACEHOLDER: ("missed", "confirm", "discard", "change_shoe"),
    HoldKind.REVEAL: ("confirm", "change_shoe"),
    HoldKind.EARLY: ("void", "accept", "change_shoe"),
}


@dataclass(slots=True)
class Hold:
    """Why dealing is stopped until a supervisor acts."""

    code: str
    text: str
    since: str
    kind: HoldKind = HoldKind.PLAIN
    security: bool = False
    fault: tuple[str, int] | None = None  # (device, code) of the fault behind it
    fault_active: bool = False  # resume is refused while the fault is active

    @property
    def ways_out(self) -> tuple[str, ...]:
        return WAYS_OUT[self.kind]

    def waiting_for(self) -> str | None:
        """What must happen before `resume` is accepted, when something must."""
        if self.fault is None or not self.fault_active:
            return None
        device, code = self.fault
        return f"{device} to clear fault {code:#06x} (FAULT_CLEARED)"

    def view(self) -> dict[str, object]:
        return {
            "code": self.code,
            "text": self.text,
            "since": self.since,
            "kind": self.kind,
            "actions": list(self.ways_out),
            "waiting_for": self.waiting_for(),
        }


@dataclass(slots=True)
class Offer:
    """An insurance offer of the round and what became of it (R16)."""

    offer: InsuranceOffer
    status: str = "open"  # "open", "closed", "voided"


@dataclass(slots=True)
class RoundBook:
    """The cards and insurance of the round in progress."""

    number: int
    trial: bool
    big_small_open: bool
    draws: list[Draw] = field(default_factory=list)  # placed, in dealing order (R7)
    offers: list[Offer] = field(default_factory=list)
    stages_offered: list[int] = field(default_factory=list)
    insurance_void: bool = False  # R16.9 (and corrections): no more offers this round
    announced: dict[str, tuple[int, Card | None]] = field(default_factory=dict)
    # The round's clock (a table with `betting` set): when its bets closed (None: they had
    # not when its first card came) and the table server's own name for it.
    bets_closed_at: str | None = None
    server_round: str | None = None

    def cards(self) -> list[Card]:
        return [draw.card for draw in self.draws if draw.card is not None]

    def next_position(self) -> Position | None:
        return next_position(self.cards())

    def positions(self) -> list[Position]:
        return positions_of(self.cards())

    def complete(self) -> bool:
        return len(self.draws) >= 4 and self.next_position() is None

    def hidden(self) -> list[Draw]:
        return [draw for draw in self.draws if not draw.revealed]

    def open_offers(self) -> list[Offer]:
        return [offer for offer in self.offers if offer.status == "open"]


def cards_taken(cards: Sequence[Card]) -> int:
    """How many of these cards (in the order drawn) the round takes before it is complete.

    The rest came after the round was complete and are extra cards (R10.3).
    """
    for count in range(4, len(cards) + 1):
        if next_position(cards[:count]) is None:
            return count
    return len(cards)


@dataclass(slots=True)
class BurnBook:
    """A burn in progress: the shoe's (R2.2) or a round's (R8, R10.3)."""

    kind: str  # "first_card_value", "decks" or "round"
    target: int | None  # cards to burn in all; None until the first card shows (R2.2 b)
    cards: list[Draw] = field(default_factory=list)

    def add(self, draw: Draw) -> None:
        if self.kind == "first_card_value" and not self.cards:
            # R2.2 (b): the first card, face up, then as many as its value; tens burn 10.
            self.target = 1 + burn_value(draw.card) if draw.card is not None else None
        self.cards.append(draw)

    @property
    def needs_first_card(self) -> bool:
        """True while the next card decides how many cards this burn takes."""
        return self.kind == "first_card_value" and not self.cards

    @property
    def remaining(self) -> int | None:
        return None if self.target is None else max(self.target - len(self.cards), 0)

    @property
    def done(self) -> bool:
        return self.target is not None and len(self.cards) >= self.target

    def first_card(self) -> str | None:
        if self.kind == "first_card_value" and self.cards and self.cards[0].card is not None:
            return str(self.cards[0].card)
        return None


@dataclass(slots=True)
class FactoryRun:
    """Watches for cards in new-deck order: same suit, ranks one apart in one direction.

    A run of `factory_order_run` such cards means the shoe may not have been shuffled
    (security hold). Unknown cards break a run.
    """

    length: int = 0
    last: Card | None = None
    step: int = 0

    def feed(self, card: Card | None) -> int:
        """Take the next card out of the shoe; returns the length of the run it ends."""
        previous = self.last
        self.last = card
        if card is None:
            self.length, self.step = 0, 0
            return 0
        if previous is not None and previous.suit is card.suit:
            step = card.rank - previous.rank
            if step in (1, -1) and self.step in (0, step):
                self.length += 1
                self.step = step
                return self.length
        self.length, self.step = 1, 0
        return 1


@dataclass(slots=True)
class BetsBook:
    """Betting on the shoe's next round, as the dealer's button or the table server last
    said (table/betting.py): about which round, closed or not, since when, the server's name
    for it, and every signed message's nonce taken in this shoe (one sent again is refused)."""

    round: int | None = None
    closed: bool = False
    opened_at: str | None = None
    closed_at: str | None = None
    server_round: str | None = None
    nonces: set[str] = field(default_factory=set)


@dataclass(slots=True)
class ShoeBook:
    """Everything the table remembers about one shoe: rebuilt from the shoe's inputs alone."""

    number: int
    open: bool = False
    drawn: int = 0  # cards out of the shoe: burned, dealt, extra, missed, discarded
    copies: Counter[Card] = field(default_factory=Counter)
    uids: set[str] = field(default_factory=set)
    untagged: list[Draw] = field(default_factory=list)  # tags not yet published (card_tags)
    factory: FactoryRun = field(default_factory=FactoryRun)
    burn: BurnBook | None = None
    burned: int = 0
    pending_burn: list[Draw] = field(default_factory=list)  # extras: the next round's burn
    rounds_started: int = 0
    real_rounds: int = 0
    trial_dealt: int = 0
    trial_pending: int = 0
    round: RoundBook | None = None
    finished: RoundBook | None = None  # the last round with a result, until the next starts
    extra_counts: dict[int, int] = field(default_factory=dict)  # round -> extras (R10.4)
    last_draw_closed_round: int | None = None  # round completed by the last card processed
    last_winner: str | None = None  # shown on the indicator until the next card
    cut_after: int | None = None
    # The device's last card counter the table accepted (None: no counter known yet) and
    # the last card read: what the table checks the next card against (device_counters.py).
    counter: int | None = None
    last_read: Draw | None = None
    cut_pending: bool = False  # a cut card waits in the queue
    last_round: int | None = None  # R3.1
    road: list[dict[str, object]] = field(default_factory=list)
    cards_in_rounds: int = 0  # cards of rounds that finished or were voided
    discarded: list[Draw] = field(default_factory=list)  # out of play, part of no round
    queue: deque[Draw | CutMarker] = field(default_factory=deque)
    holds: list[Hold] = field(default_factory=list)
    command_keys: set[str] = field(default_factory=set)  # supervisor commands carried out
    surveillance: EdgeWatch = field(default_factory=EdgeWatch)  # the edge reports
    shuffle: ShuffleRecord = field(default_factory=ShuffleRecord)  # docs/shuffle.md
    bets: BetsBook = field(default_factory=BetsBook)  # the next round's betting
    # The shoe's clock (table/shoe_times.py): event times, None until known.
    previous_end: str | None = None  # the shoe before ended (its downtime began)
    opened_at: str | None = None
    first_round_at: str | None = None


def to_plain(value: object) -> object:
    """Plain, comparable data for a snapshot: dataclasses as dicts, cards as text."""
    if isinstance(value, Card):
        return str(value)
    if isinstance(value, Fraction):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        return {name: to_plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {str(to_plain(key)): to_plain(item) for key, item in value.items()}
    if isinstance(value, set | frozenset):
        return sorted(str(to_plain(item)) for item in value)
    if isinstance(value, list | tuple | deque):
        return [to_plain(item) for item in value]
    return value
