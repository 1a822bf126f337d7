"""What the vendor ASCII adapters share: readings, fault codes, statistics, the `TextAdapter` base.

The vendor protocols (`beetek`, `linecode`) are sans-I/O like the reference link: feed bytes to
`receive_data(data)` and get readings back, call `poll(now)` for the stale-text timer, and
`bytes_to_send()` is always empty (the protocols are one-way). `translate(reading, now)` turns a
reading into the typed inputs every other device produces. All of that is `TextAdapter`'s; a
protocol module only decodes text. Neither protocol acknowledges
anything, so a card lost on the wire cannot be detected here: docs/drivers.md says what that
means for the operator.

Policy on bad text (docs/drivers.md "Garbled text"): anything that could have been a card or an
alarm (it has message syntax `[ ] < >` or a vendor word, or for linecode any letter or digit) is
reported as a `DeviceFault` with code `GARBLED` and the text; the rest (line noise: blanks,
NULs, stray symbols) is only counted in `AdapterStats.noise_bytes`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import ClassVar

from shoe_controller.vocab.cards import Card
from shoe_controller.vocab.inputs import CardDrawn, DeviceConnected, DeviceFault, Input

DEFAULT_BAUD = 9600  # both vendor protocols, as seen on shoes in the field
STALE_AFTER = 1.0  # seconds a partial message may wait for its end before it is reported

# Faults the host itself raises use 0xF000 and up (docs/drivers.md "Fault codes"), away from
# the vendors' own codes (0x8000 and up, docs/spec-protocol.md).
GARBLED = 0xF001  # text that could have been a card or alarm and could not be decoded
SEVERITY_WARNING, SEVERITY_ERROR = 1, 2

_SHOWN = 80  # characters of garbled text quoted in a fault


@dataclass(frozen=True, slots=True)
class CardRead:
    """A card left the shoe; `card` is None when it passed but could not be read."""

    card: Card | None
    burn: bool
    raw: str


@dataclass(frozen=True, slots=True)
class AlarmRead:
    """A device alarm or warning, already mapped to a fault code (docs/drivers.md)."""

    code: int
    severity: int
    text: str
    raw: str


@dataclass(frozen=True, slots=True)
class GarbledRead:
    """Text that could have been a card or alarm but did not decode; never dropped silently."""

    text: str
    reason: str


Reading = CardRead | AlarmRead | GarbledRead


@dataclass(slots=True)
class AdapterStats:
    """Counters of one adapter, for the monitor and the diagnostic CLI."""

    bytes_in: int = 0
    messages: int = 0
    cards: int = 0
    unreadable: int = 0
    alarms: int = 0
    garbled: int = 0
    noise_bytes: int = 0
    last_garbled: str = ""

    def count(self, reading: Reading) -> None:
        self.messages += 1
        if isinstance(reading, CardRead):
            if reading.card is None:
                self.unreadable += 1
            else:
                self.cards += 1
        elif isinstance(reading, AlarmRead):
            self.alarms += 1
        else:
            self.garbled += 1
            self.last_garbled = f"{reading.reason}: {shown(reading.text)}"

    def as_dict(self) -> dict[str, int | str]:
        return asdict(self)


def shown(text: str) -> str:
    """Garbled text as quoted in faults and logs: printable, bounded."""
    quoted = text.encode("latin-1", "replace").decode("ascii", "backslashreplace")
    quoted = quoted.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    return quoted if len(quoted) <= _SHOWN else quoted[: _SHOWN - 3] + "..."


def reading_to_inputs(reading: Reading, now: float, device: str) -> list[Input]:
    """The typed inputs for one reading (R10.5: an unreadable card is still a card drawn)."""
    if isinstance(reading, CardRead):
        return [CardDrawn(at=now, device=device, card=reading.card, burn=reading.burn)]
    if isinstance(reading, AlarmRead):
        return [
            DeviceFault(
                at=now,
                device=device,
                code=reading.code,
                severity=reading.severity,
                text=reading.text,
            )
        ]
    return [
        DeviceFault(
            at=now,
            device=device,
            code=GARBLED,
            severity=SEVERITY_ERROR,
            text=f"garbled device text ({reading.reason}): '{shown(reading.text)}'",
        )
    ]


class TextAdapter(ABC):
    """What every vendor ASCII adapter does around its decoder: statistics, the stale-text
    timer, text cut off by a lost connection, and the typed inputs.

    A protocol module supplies `VENDOR` and the two reasons below, and the hooks `_decode`
    (new text in, readings out, keeping an unfinished message), `_give_up` (report the kept
    text as never ended), `_waiting` and `buffered`.
    """

    VENDOR: ClassVar[str]  # DeviceConnected.vendor
    MODEL: ClassVar[str] = "ASCII"
    NEVER_ENDED: ClassVar[str]  # GarbledRead.reason of text that waited `stale_after` seconds
    CUT_OFF: ClassVar[str]  # GarbledRead.reason of text in progress when the port went away

    def __init__(
        self, *, device: str = "scanner", kind: str = "optical", stale_after: float = STALE_AFTER
    ) -> None:
        self.device = device
        self.kind = kind
        self.stats = AdapterStats()
        self._stale_after = stale_after
        self._generation = 0  # bumps on every receive, to time a partial message
        self._pending_since: float | None = None
        self._pending_generation = -1
        self._queued: list[Reading] = []  # reported on a lost connection, not yet returned

    def receive_data(self, data: bytes) -> list[Reading]:
        """Decode what `data` completes; a message split across calls is kept until its end."""
        readings, self._queued = self._queued, []
        if data:
            self.stats.bytes_in += len(data)
            self._generation += 1
            readings += self._counted(self._decode(bytes(data).decode("latin-1")))
        return readings

    def bytes_to_send(self) -> bytes:
        return b""  # the protocols are one-way: nothing is ever acknowledged

    def poll(self, now: float) -> list[Reading]:
        """Report a partial message that has waited `stale_after` seconds for its end."""
        readings, self._queued = self._queued, []
        if not self._waiting():
            self._pending_since = None
        elif self._pending_since is None or self._pending_generation != self._generation:
            self._pending_since, self._pending_generation = now, self._generation
        elif now - self._pending_since >= self._stale_after:
            readings += self._flush(self.NEVER_ENDED)
        return readings

    def connection_lost(self) -> None:
        """The port went away: a message in progress can never end, so it is reported (by the
        next `receive_data` or `poll`) instead of being glued to the next connection's text."""
        self._queued += self._flush(self.CUT_OFF)

    def translate(self, reading: Reading, now: float) -> list[Input]:
        return reading_to_inputs(reading, now, self.device)

    def connected(self, now: float) -> list[Input]:
        """ASCII shoes announce nothing: the port opening is the connection (docs/drivers.md)."""
        return [
            DeviceConnected(
                at=now, device=self.device, kind=self.kind, vendor=self.VENDOR, model=self.MODEL
            )
        ]

    @property
    @abstractmethod
    def buffered(self) -> int:
        """Characters kept while waiting for the end of a message (bounded)."""

    @abstractmethod
    def _decode(self, text: str) -> list[Reading]:
        """Readings completed by newly received `text` (latin-1: one char per byte)."""

    @abstractmethod
    def _give_up(self, reason: str) -> list[Reading]:
        """Drop the text kept for an unfinished message, reporting it for `reason`."""

    def _waiting(self) -> bool:
        """Whether a message has begun and not ended (the stale timer runs meanwhile)."""
        return self.buffered > 0

    def _flush(self, reason: str) -> list[Reading]:
        self._pending_since = None
        return self._counted(self._give_up(reason))

    def _counted(self, readings: list[Reading]) -> list[Reading]:
        for reading in readings:
            self.stats.count(reading)
        return readings
