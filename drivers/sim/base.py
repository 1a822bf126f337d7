"""What every simulated SLP device is (sans-I/O): its link, HELLO, heartbeats, faults, commands.

What a device does besides talking is a part it holds, its `Mechanism`: shoe.py's
`DealingShoe` (a dealing shoe), shufflers.py's `BatchShuffle` and `ShufflingDealer` (a batch
shuffler, a shuffler-dealer machine); the devices there (`ShoeSim`, `ShufflerSim`,
`ShufflerDealerSim`) are a `SimDevice` with their mechanism, and `devices.make_device` picks
one for a configuration.

Each device owns a ``DeviceLink`` and behaves like the hardware docs/spec-protocol.md describes:
HELLO
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
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from drivers.sim.line_faults import LineFaults
from drivers.sim.uids import deck_serials
from drivers.wire.link import DeviceLink
from drivers.wire.link_state import LinkConfig
from drivers.wire.messages import (
    Button,
    ButtonId,
    CardFlags,
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
    StatusRequest,
)

CARDS_PER_DECK = 52
# the controller wants at least 12 (docs/architecture.md "What the devices report", R3.1)
DEFAULT_CARDS_BEHIND_CUT = 14


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


class DeviceVoice(Protocol):
    """What a device's mechanism speaks through: the device's time now and its link."""

    now: float

    def send(self, message: Message) -> None: ...


class Mechanism(Protocol):
    """What a device does besides talking (dealing, shuffling): the part a `SimDevice` holds."""

    def start(self) -> None:
        """First connection after power-up."""
        ...

    def behave(self, now: float) -> None:
        """Timed behaviour (dealing, shuffling)."""
        ...

    def next_behaviour(self) -> float | None:
        """When `behave` has something to do next (None: nothing timed)."""
        ...

    def shoe_state(self) -> ShoeState:
        """What SHOE answers a STATUS_REQUEST with."""
        ...

    def shuffle(self, decks: int) -> None:
        """SHUFFLE from the host; only shufflers act on it."""
        ...

    def status(self) -> dict[str, Any]:
        """What the control's `status` adds about the mechanism."""
        ...


def uptime_ms(booted_at: float | None, now: float) -> int:
    """HEARTBEAT's uptime: milliseconds since power-up, as a u32."""
    start = now if booted_at is None else booted_at
    return int((now - start) * 1000) & 0xFFFFFFFF


class SimDevice:
    """What every simulated SLP device does: sessions, heartbeats, status, faults, lights.

    What it does besides (dealing, shuffling) is its `mechanism`'s."""

    def __init__(self, config: SimConfig, mechanism: Mechanism) -> None:
        self.config = config
        self.mechanism = mechanism
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
            self.mechanism.start()

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
        """Bytes from the host: its commands (INDICATE, STATUS_REQUEST, SHUFFLE) are answered."""
        self.now = now
        for delivery in self.link.receive_data(self.in_faults.apply(data, now)):
            message = delivery.message
            self.commands.append(message)
            if isinstance(message, Indicate):
                self.indication = message
            elif isinstance(message, StatusRequest):
                self.send(Shoe(self.mechanism.shoe_state()))
                for fault in self.active_faults.values():
                    self.send(fault)
            elif isinstance(message, Shuffle):
                self.mechanism.shuffle(message.decks)

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
        self.mechanism.behave(now)
        if self.connected and link.pending == 0 and now - self._last_send >= self.config.heartbeat:
            self.send(Heartbeat(uptime_ms(self.booted_at, now)))

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
        behaviour = self.mechanism.next_behaviour()
        if behaviour is not None:
            times.append(behaviour)
        return max(now, min(times)) if times else now + self.config.heartbeat

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

    def status(self) -> dict[str, Any]:
        status = {
            "kind": int(self.config.kind),
            "boot_id": self.boot_id,
            "boots": self.boots,
            "connected": self.connected,
            "link_up": self.link.is_up,
            "pending": self.link.pending,
            "state": int(self.mechanism.shoe_state()),
            "indication": None
            if self.indication is None
            else [int(self.indication.pattern), self.indication.arg],
            "faults": sorted(self.active_faults),
            "link": self.link.stats.as_dict(),
        }
        status.update(self.mechanism.status())
        return status
