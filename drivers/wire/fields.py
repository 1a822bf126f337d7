"""docs/spec-protocol.md's field values (message types, device kinds, card flags, shoe states ...)
and
how a payload is read and written: little-endian integers, `len u8` strings, and a
`MessageError` for every value outside the tables.

The messages themselves are messages.py's; fault codes, severities and INDICATE patterns,
which the table acts on too, are shoe_controller.vocab.protocol's.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import TypeVar

from shoe_controller.vocab.protocol import FaultCode

PROTOCOL_VERSION = 1
SHUFFLE_COUNTS = 52
UID_MIN_LEN = 4
UID_MAX_LEN = 10


class MessageError(ValueError):
    """A payload that does not follow docs/spec-protocol.md (wrong length, unknown value, bad
    UTF-8)."""


class UnknownMessageTypeError(MessageError):
    """A frame type that docs/spec-protocol.md v1 does not define."""


class MessageType(IntEnum):
    """Frame type byte."""

    HELLO = 0x01
    HEARTBEAT = 0x02
    ACK = 0x06
    NAK = 0x15
    CARD = 0x10
    CUT_CARD = 0x11
    SHOE = 0x12
    BUTTON = 0x13
    SHUFFLE_STARTED = 0x20
    SHUFFLE_DONE = 0x21
    FAULT = 0x30
    FAULT_CLEARED = 0x31
    INDICATE = 0x40
    STATUS_REQUEST = 0x41
    SHUFFLE = 0x42


class DeviceKind(IntEnum):
    """HELLO ``kind``."""

    RFID_SHOE = 1
    OPTICAL_SHOE = 2
    BATCH_SHUFFLER = 3
    SHUFFLER_DEALER = 4  # cards leave it face up; CARD like a shoe, never CUT_CARD


class CardFlags(IntFlag):
    """CARD ``flags`` bits."""

    NONE = 0
    FACE_UP = 0x01  # left the shoe face up (R4)
    LOW_CONFIDENCE = 0x02  # optical read unsure
    MULTI = 0x04  # more than one card sensed in the same draw (R10.2)


KNOWN_CARD_FLAGS = int(CardFlags.FACE_UP | CardFlags.LOW_CONFIDENCE | CardFlags.MULTI)


class CardEncoding(IntEnum):
    """CARD ``encoding``: how the card identity follows."""

    RANK_SUIT = 1
    UID = 2


class ShoeState(IntEnum):
    """SHOE ``state``."""

    REMOVED = 0
    LOADED = 1
    EMPTY = 2
    COVER_OPEN = 3
    COVER_CLOSED = 4


class ButtonId(IntEnum):
    """BUTTON ``button``."""

    REVEAL = 1  # dealer confirms the cards are open
    CALL_SUPERVISOR = 2
    NO_MORE_BETS = 3  # the dealer closes betting for the next round


class ShuffleResult(IntEnum):
    """SHUFFLE_DONE ``result``."""

    OK = 0
    CARDS_MISSING = 1
    EXTRA_CARDS = 2
    UNKNOWN_CARD = 3
    DAMAGED_CARD = 4


UNRELIABLE_TYPES = frozenset({MessageType.ACK, MessageType.NAK})


def fault_code(code: int) -> int:
    """``FaultCode`` member for a protocol-defined code, the int itself otherwise."""
    try:
        return FaultCode(code)
    except ValueError:
        return code


def is_reliable(message_type: int) -> bool:
    """Every frame except ACK and NAK is reliable (numbered and acknowledged)."""
    return message_type not in UNRELIABLE_TYPES


# --- reading and writing payloads -----------------------------------------------------


def check_int(name: str, value: int, bits: int) -> None:
    if not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise MessageError(f"{name}={value!r} does not fit u{bits}")


_E = TypeVar("_E", bound=IntEnum)


def decode_enum(enum_type: type[_E], name: str, value: int) -> _E:
    try:
        return enum_type(value)
    except ValueError:
        raise MessageError(f"unknown {name} {value}") from None


def encode_string(name: str, text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 255:
        raise MessageError(f"{name} is {len(raw)} bytes of UTF-8, at most 255 fit")
    return bytes((len(raw),)) + raw


class PayloadReader:
    """Reads a payload front to back; every shortfall is a ``MessageError``."""

    __slots__ = ("name", "payload", "pos")

    def __init__(self, name: str, payload: bytes) -> None:
        self.name = name
        self.payload = payload
        self.pos = 0

    def take(self, count: int) -> bytes:
        end = self.pos + count
        if end > len(self.payload):
            raise MessageError(
                f"{self.name} payload too short: needs {end} bytes, has {len(self.payload)}"
            )
        chunk = self.payload[self.pos : end]
        self.pos = end
        return chunk

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self.take(2), "little")

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "little")

    def string(self, field_name: str) -> str:
        raw = self.take(self.u8())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MessageError(f"{self.name} {field_name} is not UTF-8: {exc}") from None

    def end(self) -> None:
        if self.pos != len(self.payload):
            raise MessageError(
                f"{self.name} payload has {len(self.payload) - self.pos} trailing bytes"
            )
