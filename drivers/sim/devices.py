"""Simulated SLP devices (sans-I/O): a dealing shoe, a batch shuffler, a shuffler-dealer machine.

Kept whole though over 500 lines: it is one class hierarchy, and the shuffler-dealer is the
shoe plus the shuffle unit, overriding the shoe's dealing internals, so the parts are not
read (or changed) apart.

Each device owns a ``DeviceLink`` and behaves like the hardware PROTOCOL.md describes: HELLO
on connect, HEARTBEAT every second while idle, answers to STATUS_REQUEST, INDICATE and
SHUFFLE, and after a link-down a new session (same boot_id) after ``relink_after`` seconds,
its unacknowledged frame kept. Like the link, a device never reads a clock: the runner
(``drivers.sim.pty.SimRunner`` or the virtual USB backend) calls ``tick(now)``, feeds
``receive_bytes(data, now)`` and writes ``output(now)``.

Line faults (``out_faults`` towards the host, ``in_faults`` from it) spoil the byte stream on
request; ``reboot`` starts a new boot_id. Cards can be scripted exactly (``load(cards=...)``)
with flags and counter gaps, or dealt from a seeded shuffled shoe.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from drivers.sim.uids import deck_serials, uid_for
from drivers.sim.wire import LineFaults
from drivers.wire.link import DeviceLink, LinkConfig
from drivers.wire.messages import (
    Button,
    ButtonId,
    Card,
    CardFlags,
    CutCard,
    DeviceKind,
    Fault,
    FaultCleared,
    Heartbeat,
    Hello,
    Indicate,
    Message,
    Severity,
    Shoe,
    ShoeState,
    Shuffle,
    ShuffleDone,
    ShuffleResult,
    ShuffleStarted,
    StatusRequest,
)

CARDS_PER_DECK = 52
DEFAULT_CARDS_BEHIND_CUT = 14  # the controller wants at least 12 (DESIGN.md, R3.1)


@dataclass(frozen=True, slots=True)
class SimCard:
    """One card to deal: rank/suit (the RFID shoe looks up its tag) or an explicit tag UID.

    ``deck`` picks which deck's tag an RFID shoe sends (None: the first deck whose copy of
    this card is still unused in the shoe). ``flags`` go on its CARD frame; ``skip`` counter
    values are left out before it (a missed scan, R10.5).
    """

    rank: int | None = None
    suit: int | None = None
    uid: bytes | None = None
    deck: int | None = None
    flags: CardFlags = CardFlags.NONE
    skip: int = 0

    def __post_init__(self) -> None:
        if self.uid is None and (self.rank is None or self.suit is None):
            raise ValueError("a simulated card needs rank and suit, or a uid")
        if self.skip < 0:
            raise ValueError("skip cannot be negative")

    @classmethod
    def parse(cls, item: Any) -> SimCard:
        """From ``(rank, suit)``, a dict with the field names (uid as hex), or a ``SimCard``."""
        if isinstance(item, SimCard):
            return item
        if isinstance(item, dict):
            uid = item.get("uid")
            flags = item.get("flags", 0)
            if isinstance(flags, list | tuple):
                flags = sum(CardFlags[name.upper()] for name in flags)
            return cls(
                rank=item.get("rank"),
                suit=item.get("suit"),
                uid=bytes.fromhex(uid) if isinstance(uid, str) else uid,
                deck=item.get("deck"),
                flags=CardFlags(int(flags)),
                skip=int(item.get("skip", 0)),
            )
        if isinstance(item, bytes):
            return cls(uid=item)
        rank, suit = item
        return cls(rank=int(rank), suit=int(suit))


@dataclass(slots=True)
class SimConfig:
    """How a simulated device behaves; every field has a sensible default."""

    kind: DeviceKind = DeviceKind.OPTICAL_SHOE
    decks: int = 8
    pace: float = 0.5  # seconds between cards while dealing
    seed: int = 0
    cut_after: int | None = None  # cut card after this many cards (None: decks*52-14; 0: none)
    autoload: bool = True  # load a shoe (or shuffle, kind 4) when the device starts
    autodeal: bool = True  # deal at the pace; False: only what ``deal(n)`` asks
    reload_after: float | None = None  # after SHOE empty, load a new shoe this much later
    heartbeat: float = 1.0
    relink_after: float = 1.0  # after a link-down, HELLO again this much later
    shuffle_time: float = 1.0  # seconds between SHUFFLE_STARTED and SHUFFLE_DONE
    vendor: str = "shoe-controller"
    model: str = "sim"
    serial: str | None = None  # None: SIM<seed>
    firmware: str = "1.0"
    deck_prefix: str | None = None  # RFID deck serials <prefix>-01..; None: the serial
    link: LinkConfig = field(default_factory=LinkConfig)

    @property
    def serial_number(self) -> str:
        return self.serial if self.serial is not None else f"SIM{self.seed:04d}"

    @property
    def deck_serials(self) -> list[str]:
        return deck_serials(self.deck_prefix or self.serial_number, self.decks)


class SimDevice:
    """What every simulated SLP device does: sessions, heartbeats, status, faults, lights."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.boot_id = self.rng.getrandbits(32)
        self.boots = 1
        self.link = DeviceLink(config.link)
        self.out_faults = LineFaults(random.Random(config.seed + 1))
        self.in_faults = LineFaults(random.Random(config.seed + 2))
        self.now = 0.0
        self.booted_at: float | None = None
        self.connected = False
        self.indication: Indicate | None = None
        self.commands: deque[Message] = deque(maxlen=1000)  # host messages received
        self.sent: deque[Message] = deque(maxlen=100_000)  # messages handed to the link
        self.active_faults: dict[int, Fault] = {}
        self._last_send = 0.0
        self._link_down_at: float | None = None
        self._started = False

    # -- identity and sessions -----------------------------------------------------------

    def hello(self) -> Hello:
        config = self.config
        return Hello(
            config.kind,
            self.boot_id,
            config.vendor,
            config.model,
            config.serial_number,
            config.firmware,
        )

    def connect(self, now: float) -> None:
        """The port is (again) connected: HELLO first, then whatever is still unacknowledged."""
        self.now = now
        if self.booted_at is None:
            self.booted_at = now
        self.connected = True
        self._last_send = now
        self.link.start_session(self.hello())
        if not self._started:
            self._started = True
            self.on_start()

    def disconnect(self) -> None:
        """The port went away (unplug): bytes in transit are lost, the link state is kept."""
        self.connected = False
        self.link.connection_lost()

    def reboot(self, now: float) -> None:
        """Power cycle: a new boot_id and a new HELLO; queued frames survive (kept in flash)."""
        self.boot_id = self.rng.getrandbits(32)
        self.boots += 1
        self.booted_at = now
        self.now = now
        self.link.start_session(self.hello())

    # -- the runner's interface -------------------------------------------------------------

    def receive_bytes(self, data: bytes, now: float) -> None:
        self.now = now
        for delivery in self.link.receive_data(self.in_faults.apply(data, now)):
            self.commands.append(delivery.message)
            self.on_command(delivery.message)

    def tick(self, now: float) -> None:
        self.now = now
        link = self.link
        link.poll(now)
        if not link.is_up:
            if self._link_down_at is None:
                self._link_down_at = now
            elif now - self._link_down_at >= self.config.relink_after:
                self._link_down_at = None
                link.start_session(self.hello())
        else:
            self._link_down_at = None
        self.behave(now)
        if self.connected and link.pending == 0 and now - self._last_send >= self.config.heartbeat:
            self.send(Heartbeat(self.uptime_ms(now)))

    def output(self, now: float) -> bytes:
        """Bytes for the port, after line faults."""
        return self.out_faults.apply(self.link.bytes_to_send(), now)

    def next_wakeup(self, now: float) -> float:
        """When ``tick`` next has something to do (the runner may sleep until then)."""
        times = []
        if self.connected and self.link.pending == 0:
            # as in tick(): no heartbeat while a frame waits for its ACK; an overdue
            # heartbeat time must not wake the runner at once, over and over (a busy loop)
            times.append(self._last_send + self.config.heartbeat)
        timer = self.link.next_timer()
        if timer is not None:
            times.append(timer)
        if self._link_down_at is not None:
            times.append(self._link_down_at + self.config.relink_after)
        behaviour = self.next_behaviour()
        if behaviour is not None:
            times.append(behaviour)
        return max(now, min(times)) if times else now + self.config.heartbeat

    # -- what subclasses do ---------------------------------------------------------------

    def on_start(self) -> None:
        """First connection after power-up."""

    def behave(self, now: float) -> None:
        """Timed behaviour (dealing, shuffling)."""

    def next_behaviour(self) -> float | None:
        return None

    def shoe_state(self) -> ShoeState:
        return ShoeState.REMOVED

    def on_command(self, message: Message) -> None:
        if isinstance(message, Indicate):
            self.indication = message
        elif isinstance(message, StatusRequest):
            self.send(Shoe(self.shoe_state()))
            for fault in self.active_faults.values():
                self.send(fault)
        elif isinstance(message, Shuffle):
            self.on_shuffle(message.decks)

    def on_shuffle(self, decks: int) -> None:
        """SHUFFLE from the host; only shufflers act on it."""

    # -- requests common to every device ----------------------------------------------------

    def send(self, message: Message) -> None:
        self.sent.append(message)
        self._last_send = self.now
        self.link.send(message)

    def press(self, button: ButtonId) -> None:
        self.send(Button(ButtonId(button)))

    def raise_fault(self, code: int, severity: Severity = Severity.ERROR, text: str = "") -> None:
        fault = Fault(code, Severity(severity), text)
        self.active_faults[code] = fault
        self.send(fault)

    def clear_fault(self, code: int) -> None:
        if self.active_faults.pop(code, None) is not None:
            self.send(FaultCleared(code))

    def uptime_ms(self, now: float) -> int:
        booted_at = now if self.booted_at is None else self.booted_at
        return int((now - booted_at) * 1000) & 0xFFFFFFFF

    def status(self) -> dict[str, Any]:
        return {
            "kind": int(self.config.kind),
            "boot_id": self.boot_id,
            "boots": self.boots,
            "connected": self.connected,
            "link_up": self.link.is_up,
            "pending": self.link.pending,
            "state": int(self.shoe_state()),
            "indication": None
            if self.indication is None
            else [int(self.indication.pattern), self.indication.arg],
            "faults": sorted(self.active_faults),
            "link": self.link.stats.as_dict(),
        }


class ShoeSim(SimDevice):
    """A card-reading shoe (RFID kind 1 or optical kind 2); base of the shuffler-dealer."""

    def __init__(self, config: SimConfig) -> None:
        super().__init__(config)
        self.state = ShoeState.REMOVED
        self.cards: deque[SimCard] = deque()
        self.counter = 0
        self.dealt: list[Card] = []  # CARD messages of the current shoe
        self.shoes = 0
        self.paused = False
        self.cut_after: int | None = None
        self._physical = 0  # cards out of the current shoe (the counter may jump)
        self._budget = 0  # cards still to deal when not autodealing
        self._next_deal = 0.0
        self._empty_at: float | None = None
        self._next_flags = CardFlags.NONE
        self._next_skip = 0

    # -- requests -------------------------------------------------------------------------

    def load(self, cards: Iterable[Any] | None = None, cut_after: int | None = None) -> None:
        """Load a shoe: ``cards`` exactly in this order, or a seeded shuffled shoe.

        ``cut_after``: the cut card comes out after that many cards (0: no cut card). By
        default a shuffled shoe has it ``decks*52-14`` cards in and a scripted one has none.
        """
        self.shoes += 1
        if cards is None:
            sequence = self._shuffled_shoe()
            default_cut = self.config.cut_after
            if default_cut is None:
                default_cut = len(sequence) - DEFAULT_CARDS_BEHIND_CUT
        else:
            sequence = self._assign_decks([SimCard.parse(item) for item in cards])
            default_cut = 0
        self.cards = deque(sequence)
        self.cut_after = default_cut if cut_after is None else cut_after
        self.counter = 0
        self._physical = 0
        self.dealt = []
        self._empty_at = None
        self.state = ShoeState.LOADED
        self._next_deal = self.now + self.config.pace
        self.send(Shoe(ShoeState.LOADED))

    def remove(self) -> None:
        self.cards.clear()
        self.state = ShoeState.REMOVED
        self.send(Shoe(ShoeState.REMOVED))

    def cover(self, is_open: bool) -> None:
        self.send(Shoe(ShoeState.COVER_OPEN if is_open else ShoeState.COVER_CLOSED))

    def deal(self, count: int = 1) -> None:
        """Deal ``count`` more cards at the pace (when ``autodeal`` is off or paused)."""
        if self._budget == 0:
            self._next_deal = max(self._next_deal, self.now)
        self._budget += count

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        self._next_deal = max(self._next_deal, self.now)

    def flag_next(self, flags: CardFlags) -> None:
        """Put these flags on the next CARD (FACE_UP, LOW_CONFIDENCE, MULTI)."""
        self._next_flags |= CardFlags(flags)

    def skip_next(self, count: int = 1) -> None:
        """Leave ``count`` counter values out before the next CARD (a missed card, R10.5)."""
        self._next_skip += count

    # -- behaviour ------------------------------------------------------------------------

    def on_start(self) -> None:
        if self.config.autoload:
            self.load()

    def shoe_state(self) -> ShoeState:
        return self.state

    def _may_deal(self) -> bool:
        if self.state != ShoeState.LOADED or not self.cards:
            return False
        if self._budget:
            return True
        return self.config.autodeal and not self.paused

    def next_behaviour(self) -> float | None:
        if self._may_deal():
            return self._next_deal
        if self._empty_at is not None and self.config.reload_after is not None:
            return self._empty_at + self.config.reload_after
        return None

    def behave(self, now: float) -> None:
        dealt_now = 0
        while self._may_deal() and now >= self._next_deal and dealt_now < 1000:
            self._deal_one()
            dealt_now += 1
            self._next_deal += self.config.pace
        if self._may_deal() and self._next_deal < now - 1.0:
            self._next_deal = now  # after a long stall, do not burst through the backlog
        reload_after = self.config.reload_after
        if (
            self._empty_at is not None
            and reload_after is not None
            and now >= self._empty_at + reload_after
        ):
            self.load()

    def _deal_one(self) -> None:
        card = self.cards.popleft()
        if self._budget:
            self._budget -= 1
        self._physical += 1
        self.counter += 1 + card.skip + self._next_skip
        flags = card.flags | self._next_flags | self._implicit_flags()
        self._next_flags = CardFlags.NONE
        self._next_skip = 0
        message = self._card_message(card, flags)
        self.dealt.append(message)
        self.send(message)
        if self.cut_after and self._physical == self.cut_after and self._uses_cut_card():
            self.send(CutCard(self.counter))
        if not self.cards:
            self.on_exhausted()

    def on_exhausted(self) -> None:
        self.state = ShoeState.EMPTY
        self._empty_at = self.now
        self.send(Shoe(ShoeState.EMPTY))

    def _implicit_flags(self) -> CardFlags:
        return CardFlags.NONE

    def _uses_cut_card(self) -> bool:
        return True

    def _card_message(self, card: SimCard, flags: CardFlags) -> Card:
        if card.uid is not None:
            return Card(self.counter, flags, uid=card.uid)
        if card.rank is None or card.suit is None:  # SimCard rejects this; for the types
            raise ValueError(f"{card} has neither rank/suit nor uid")
        if self.config.kind == DeviceKind.RFID_SHOE:
            serials = self.config.deck_serials
            serial = serials[(card.deck or 0) % len(serials)]
            return Card(self.counter, flags, uid=uid_for(serial, card.rank, card.suit))
        return Card(self.counter, flags, card.rank, card.suit)

    def _shuffled_shoe(self) -> list[SimCard]:
        cards = [
            SimCard(rank, suit, deck=deck)
            for deck in range(self.config.decks)
            for rank in range(1, 14)
            for suit in range(4)
        ]
        random.Random(f"{self.config.seed}:{self.shoes}").shuffle(cards)
        return cards

    def _assign_decks(self, cards: Sequence[SimCard]) -> list[SimCard]:
        """Give repeated (rank, suit) of a script distinct decks, so RFID tags differ."""
        used: Counter[tuple[int | None, int | None]] = Counter()
        result = []
        for card in cards:
            if card.uid is None and card.deck is None:
                key = (card.rank, card.suit)
                card = SimCard(card.rank, card.suit, None, used[key], card.flags, card.skip)  # noqa: PLW2901
                used[key] += 1
            result.append(card)
        return result

    def status(self) -> dict[str, Any]:
        status = super().status()
        status.update(
            counter=self.counter,
            cards_left=len(self.cards),
            dealt=len(self.dealt),
            shoes=self.shoes,
            paused=self.paused,
        )
        return status


@dataclass(slots=True)
class DeckCheck:
    """What the next SHUFFLE_DONE reports (the default: every card ``decks`` times, OK)."""

    result: ShuffleResult | None = None  # None: derived from missing/extra
    missing: list[tuple[int, int]] = field(default_factory=list)
    extra: list[tuple[int, int]] = field(default_factory=list)


class ShuffleUnit:
    """The shuffling mechanism shared by the batch shuffler and the shuffler-dealer."""

    def __init__(self, shuffle_time: float) -> None:
        self.shuffle_time = shuffle_time
        self.shuffle_id = 0
        self.decks = 0
        self.next_check = DeckCheck()
        self.checks: list[ShuffleDone] = []
        self.done_at: float | None = None

    def start(self, decks: int, now: float) -> ShuffleStarted:
        self.shuffle_id = (self.shuffle_id + 1) & 0xFFFFFFFF
        self.decks = decks
        self.done_at = now + self.shuffle_time
        return ShuffleStarted(self.shuffle_id, decks)

    def finish_if_due(self, now: float) -> ShuffleDone | None:
        if self.done_at is None or now < self.done_at:
            return None
        self.done_at = None
        check, self.next_check = self.next_check, DeckCheck()
        counts = [self.decks] * CARDS_PER_DECK
        for rank, suit in check.missing:
            counts[ShuffleDone.index(rank, suit)] -= 1
        for rank, suit in check.extra:
            counts[ShuffleDone.index(rank, suit)] += 1
        result = check.result
        if result is None:
            if check.missing:
                result = ShuffleResult.CARDS_MISSING
            elif check.extra:
                result = ShuffleResult.EXTRA_CARDS
            else:
                result = ShuffleResult.OK
        counts = [min(max(count, 0), 255) for count in counts]
        done = ShuffleDone(self.shuffle_id, result, self.decks, sum(counts), tuple(counts))
        self.checks.append(done)
        return done


class _Shuffling:
    """What both shuffling devices answer about their `ShuffleUnit` (the control's `check`)."""

    unit: ShuffleUnit

    @property
    def shuffle_id(self) -> int:
        return self.unit.shuffle_id

    def set_next_check(
        self,
        result: ShuffleResult | None = None,
        missing: Iterable[tuple[int, int]] = (),
        extra: Iterable[tuple[int, int]] = (),
    ) -> None:
        """What the next SHUFFLE_DONE reports (missing/extra cards as (rank, suit))."""
        self.unit.next_check = DeckCheck(result, list(missing), list(extra))


class ShufflerSim(_Shuffling, SimDevice):
    """A batch shuffler (kind 3): SHUFFLE → SHUFFLE_STARTED, then SHUFFLE_DONE with the check."""

    def __init__(self, config: SimConfig) -> None:
        super().__init__(config)
        self.unit = ShuffleUnit(config.shuffle_time)
        self.ready = False

    def on_shuffle(self, decks: int) -> None:
        self.start_shuffle(decks)

    def start_shuffle(self, decks: int | None = None) -> None:
        self.ready = False
        self.send(self.unit.start(self.config.decks if decks is None else decks, self.now))

    def next_behaviour(self) -> float | None:
        return self.unit.done_at

    def behave(self, now: float) -> None:
        done = self.unit.finish_if_due(now)
        if done is not None:
            self.ready = True
            self.send(done)

    def shoe_state(self) -> ShoeState:
        return ShoeState.LOADED if self.ready else ShoeState.EMPTY

    def status(self) -> dict[str, Any]:
        status = super().status()
        status.update(shuffle_id=self.shuffle_id, ready=self.ready, shuffles=len(self.unit.checks))
        return status


class ShufflerDealerSim(_Shuffling, ShoeSim):
    """A continuous shuffler-dealer (kind 4, R2.5): shuffles, then deals every card face up.

    No cut card, no SHOE frames. The counter restarts at 1 after each SHUFFLE_DONE; when its
    shuffled batch runs out it shuffles again (the cards of each round go back into it).
    """

    def __init__(self, config: SimConfig) -> None:
        super().__init__(config)
        self.unit = ShuffleUnit(config.shuffle_time)

    def on_start(self) -> None:
        if self.config.autoload:
            self.on_shuffle(self.config.decks)

    def on_shuffle(self, decks: int) -> None:
        self.state = ShoeState.EMPTY
        self.cards.clear()
        self.send(self.unit.start(decks, self.now))

    def load(self, cards: Iterable[Any] | None = None, cut_after: int | None = None) -> None:
        """A scripted batch (tests) is dealt like a shuffled one: no SHOE frame, no cut card."""
        self.shoes += 1
        sequence = (
            self._shuffled_shoe()
            if cards is None
            else self._assign_decks([SimCard.parse(item) for item in cards])
        )
        self.cards = deque(sequence)
        self.cut_after = 0
        self.counter = 0
        self._physical = 0
        self.dealt = []
        self.state = ShoeState.LOADED
        self._next_deal = self.now + self.config.pace

    def next_behaviour(self) -> float | None:
        times = [t for t in (super().next_behaviour(), self.unit.done_at) if t is not None]
        return min(times) if times else None

    def behave(self, now: float) -> None:
        done = self.unit.finish_if_due(now)
        if done is not None:
            self.send(done)
            if done.result == ShuffleResult.OK:
                self.load()
        super().behave(now)

    def on_exhausted(self) -> None:
        self.on_shuffle(self.config.decks)

    def _implicit_flags(self) -> CardFlags:
        return CardFlags.FACE_UP

    def _uses_cut_card(self) -> bool:
        return False

    def status(self) -> dict[str, Any]:
        status = super().status()
        status.update(shuffle_id=self.shuffle_id, shuffles=len(self.unit.checks))
        return status


def make_device(config: SimConfig) -> SimDevice:
    """The simulator for ``config.kind``."""
    if config.kind in (DeviceKind.RFID_SHOE, DeviceKind.OPTICAL_SHOE):
        return ShoeSim(config)
    if config.kind == DeviceKind.BATCH_SHUFFLER:
        return ShufflerSim(config)
    return ShufflerDealerSim(config)
