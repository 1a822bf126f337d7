"""What the vendor ASCII adapters share: their readings, fault codes, statistics and inputs.

The vendor protocols (`beetek`, `linecode`) are sans-I/O like the reference link: feed bytes to
`receive_data(data)` and get readings back, call `poll(now)` for the stale-text timer, and
`bytes_to_send()` is always empty (the protocols are one-way). `translate(reading, now)` turns a
reading into the typed inputs every other device produces. Neither protocol acknowledges
anything, so a card lost on the wire cannot be detected here: docs/drivers.md says what that
means for the operator.

Policy on bad text (docs/drivers.md "Garbled text"): anything that could have been a card or an
alarm (it has message syntax `[ ] < >` or a vendor word, or for linecode any letter or digit) is
reported as a `DeviceFault` with code `GARBLED` and the text; the rest (line noise: blanks,
NULs, stray symbols) is only counted in `AdapterStats.noise_bytes`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol

from shoe_controller.cards import Card
from shoe_controller.inputs import CardDrawn, DeviceConnected, DeviceFault, Input

DEFAULT_BAUD = 9600  # both vendor protocols, as seen on shoes in the field
STALE_AFTER = 1.0  # seconds a partial message may wait for its end before it is reported

# Faults the host itself raises use 0xF000 and up (docs/drivers.md "Fault codes"), away from
# the vendors' own codes (0x8000 and up, PROTOCOL.md).
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


class AsciiAdapter(Protocol):
    """The shape both adapters share (and the transports' runner drives)."""

    stats: AdapterStats

    def receive_data(self, data: bytes) -> list[Reading]: ...

    def bytes_to_send(self) -> bytes: ...

    def poll(self, now: float) -> list[Reading]: ...

    def translate(self, reading: Reading, now: float) -> list[Input]: ...

    def connected(self, now: float) -> list[Input]: ...

    def connection_lost(self) -> None: ...


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


def connected_input(now: float, device: str, kind: str, vendor: str, model: str) -> DeviceConnected:
    """ASCII shoes announce nothing: the port opening is the connection (docs/drivers.md)."""
    return DeviceConnected(at=now, device=device, kind=kind, vendor=vendor, model=model)
