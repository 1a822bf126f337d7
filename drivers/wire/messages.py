"""Typed messages of the shoe link protocol (PROTOCOL.md v1) and their exact payload encoding.

Kept whole though over 500 lines: one frozen dataclass per PROTOCOL.md message, in the
spec's order, so the module and the spec's tables are read side by side.

Every message is a frozen dataclass. ``message.encode_payload()`` gives the payload bytes
and ``decode_message(message_type, payload)`` turns them back into a message; a payload
that does not match the tables exactly raises ``MessageError`` (the link counts and drops
such frames, it never raises them to its caller). Integers are little-endian; a string is
``len u8`` followed by that many UTF-8 bytes. Messages know nothing of baccarat: rank and
suit are plain protocol integers (rank 1-13, suit 0-3).
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import ClassVar, TypeVar

from shoe_controller.vocab.protocol import FaultCode, IndicatePattern, Severity

PROTOCOL_VERSION = 1
SHUFFLE_COUNTS = 52
UID_MIN_LEN = 4
UID_MAX_LEN = 10


class MessageError(ValueError):
    """A payload that does not follow PROTOCOL.md (wrong length, unknown value, bad UTF-8)."""


class UnknownMessageTypeError(MessageError):
    """A frame type that PROTOCOL.md v1 does not define."""


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
_CARD_FLAGS = tuple(CardFlags(value) for value in range(KNOWN_CARD_FLAGS + 1))


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


class ShuffleResult(IntEnum):
    """SHUFFLE_DONE ``result``."""

    OK = 0
    CARDS_MISSING = 1
    EXTRA_CARDS = 2
    UNKNOWN_CARD = 3
    DAMAGED_CARD = 4


# --- encoding helpers -----------------------------------------------------------------


def _check_int(name: str, value: int, bits: int) -> None:
    if not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise MessageError(f"{name}={value!r} does not fit u{bits}")


_E = TypeVar("_E", bound=IntEnum)


def _enum(enum_type: type[_E], name: str, value: int) -> _E:
    try:
        return enum_type(value)
    except ValueError:
        raise MessageError(f"unknown {name} {value}") from None


def _encode_string(name: str, text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 255:
        raise MessageError(f"{name} is {len(raw)} bytes of UTF-8, at most 255 fit")
    return bytes((len(raw),)) + raw


class _Reader:
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


# --- messages --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Message(ABC):
    """Base of every protocol message."""

    TYPE: ClassVar[MessageType]
    FROM_DEVICE: ClassVar[bool]

    @property
    def message_type(self) -> MessageType:
        return self.TYPE

    @abstractmethod
    def encode_payload(self) -> bytes: ...

    @classmethod
    @abstractmethod
    def decode_payload(cls, payload: bytes) -> Message: ...


@dataclass(frozen=True, slots=True)
class Hello(Message):
    """0x01 HELLO: first frame after power-up or reconnect; starts a session."""

    kind: DeviceKind
    boot_id: int
    vendor: str = ""
    model: str = ""
    serial: str = ""
    firmware: str = ""
    proto: int = PROTOCOL_VERSION

    TYPE: ClassVar[MessageType] = MessageType.HELLO
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        _check_int("proto", self.proto, 8)
        _check_int("kind", self.kind, 8)
        _check_int("boot_id", self.boot_id, 32)
        return (
            struct.pack("<BBI", self.proto, self.kind, self.boot_id)
            + _encode_string("vendor", self.vendor)
            + _encode_string("model", self.model)
            + _encode_string("serial", self.serial)
            + _encode_string("firmware", self.firmware)
        )

    @classmethod
    def decode_payload(cls, payload: bytes) -> Hello:
        reader = _Reader("HELLO", payload)
        proto = reader.u8()
        if proto != PROTOCOL_VERSION:
            raise MessageError(f"HELLO announces protocol {proto}, this host speaks 1")
        kind = _enum(DeviceKind, "device kind", reader.u8())
        boot_id = reader.u32()
        vendor = reader.string("vendor")
        model = reader.string("model")
        serial = reader.string("serial")
        firmware = reader.string("firmware")
        reader.end()
        return cls(kind, boot_id, vendor, model, serial, firmware, proto)


@dataclass(frozen=True, slots=True)
class Heartbeat(Message):
    """0x02 HEARTBEAT: sent every second while the device is idle."""

    uptime_ms: int

    TYPE: ClassVar[MessageType] = MessageType.HEARTBEAT
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        _check_int("uptime_ms", self.uptime_ms, 32)
        return self.uptime_ms.to_bytes(4, "little")

    @classmethod
    def decode_payload(cls, payload: bytes) -> Heartbeat:
        if len(payload) != 4:
            raise MessageError(f"HEARTBEAT payload must be 4 bytes, got {len(payload)}")
        return cls(int.from_bytes(payload, "little"))


_CARD_HEAD = struct.Struct("<IBB")


@dataclass(frozen=True, slots=True)
class Card(Message):
    """0x10 CARD: one card left the device; identity as rank/suit (optical) or UID (RFID).

    Exactly one of (``rank`` and ``suit``) or ``uid`` is set; ``encoding`` follows from it.
    """

    counter: int
    flags: CardFlags = CardFlags.NONE
    rank: int | None = None
    suit: int | None = None
    uid: bytes | None = None

    TYPE: ClassVar[MessageType] = MessageType.CARD
    FROM_DEVICE: ClassVar[bool] = True

    def __post_init__(self) -> None:
        flags = int(self.flags)
        if not 0 <= self.counter <= 0xFFFFFFFF:
            raise MessageError(f"counter={self.counter!r} does not fit u32")
        if not 0 <= flags <= KNOWN_CARD_FLAGS:
            raise MessageError(f"CARD flags 0x{flags:02x} has undefined bits")
        if self.uid is not None:
            if self.rank is not None or self.suit is not None:
                raise MessageError("CARD carries either rank/suit or a uid, not both")
            if not UID_MIN_LEN <= len(self.uid) <= UID_MAX_LEN:
                raise MessageError(f"CARD uid length {len(self.uid)} is outside 4-10")
        elif self.rank is None or self.suit is None:
            raise MessageError("CARD needs rank and suit, or a uid")
        elif not 1 <= self.rank <= 13:
            raise MessageError(f"CARD rank {self.rank} is outside 1-13")
        elif not 0 <= self.suit <= 3:
            raise MessageError(f"CARD suit {self.suit} is outside 0-3")

    @property
    def encoding(self) -> CardEncoding:
        return CardEncoding.RANK_SUIT if self.uid is None else CardEncoding.UID

    def encode_payload(self) -> bytes:
        if self.uid is None:
            return _CARD_HEAD.pack(self.counter, self.flags, 1) + bytes((self.rank, self.suit))
        return _CARD_HEAD.pack(self.counter, self.flags, 2) + bytes((len(self.uid),)) + self.uid

    @classmethod
    def decode_payload(cls, payload: bytes) -> Card:
        size = len(payload)
        if size < 8:
            raise MessageError(f"CARD payload too short: {size} bytes")
        counter, flags, encoding = _CARD_HEAD.unpack_from(payload)
        # Bits this version does not define are dropped, not the card: a rejected CARD is
        # still ACKed (its CRC was good), so rejecting it would lose the card for good.
        flags &= KNOWN_CARD_FLAGS
        if encoding == 1:  # CardEncoding.RANK_SUIT (int compare: this is the hot path)
            if size != 8:
                raise MessageError(f"CARD rank/suit payload must be 8 bytes, got {size}")
            return cls(counter, _CARD_FLAGS[flags], payload[6], payload[7])
        if encoding == CardEncoding.UID:
            uid_len = payload[6]
            if size != 7 + uid_len:
                raise MessageError(f"CARD uid_len {uid_len} does not match payload of {size}")
            return cls(counter, _CARD_FLAGS[flags], uid=bytes(payload[7:]))
        raise MessageError(f"unknown CARD encoding {encoding}")


@dataclass(frozen=True, slots=True)
class CutCard(Message):
    """0x11 CUT_CARD: the cut card passed; ``counter`` of the last card before it."""

    counter: int

    TYPE: ClassVar[MessageType] = MessageType.CUT_CARD
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        _check_int("counter", self.counter, 32)
        return self.counter.to_bytes(4, "little")

    @classmethod
    def decode_payload(cls, payload: bytes) -> CutCard:
        if len(payload) != 4:
            raise MessageError(f"CUT_CARD payload must be 4 bytes, got {len(payload)}")
        return cls(int.from_bytes(payload, "little"))


@dataclass(frozen=True, slots=True)
class Shoe(Message):
    """0x12 SHOE: shoe state changed (or answer to STATUS_REQUEST)."""

    state: ShoeState

    TYPE: ClassVar[MessageType] = MessageType.SHOE
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        _check_int("state", self.state, 8)
        return bytes((self.state,))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Shoe:
        if len(payload) != 1:
            raise MessageError(f"SHOE payload must be 1 byte, got {len(payload)}")
        return cls(_enum(ShoeState, "shoe state", payload[0]))


@dataclass(frozen=True, slots=True)
class Button(Message):
    """0x13 BUTTON: a button on the device was pressed."""

    button: ButtonId

    TYPE: ClassVar[MessageType] = MessageType.BUTTON
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        _check_int("button", self.button, 8)
        return bytes((self.button,))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Button:
        if len(payload) != 1:
            raise MessageError(f"BUTTON payload must be 1 byte, got {len(payload)}")
        return cls(_enum(ButtonId, "button", payload[0]))


@dataclass(frozen=True, slots=True)
class ShuffleStarted(Message):
    """0x20 SHUFFLE_STARTED."""

    shuffle_id: int
    decks: int

    TYPE: ClassVar[MessageType] = MessageType.SHUFFLE_STARTED
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        _check_int("shuffle_id", self.shuffle_id, 32)
        _check_int("decks", self.decks, 8)
        return struct.pack("<IB", self.shuffle_id, self.decks)

    @classmethod
    def decode_payload(cls, payload: bytes) -> ShuffleStarted:
        if len(payload) != 5:
            raise MessageError(f"SHUFFLE_STARTED payload must be 5 bytes, got {len(payload)}")
        return cls(*struct.unpack("<IB", payload))


_SHUFFLE_DONE = struct.Struct("<IBBH52B")


@dataclass(frozen=True, slots=True)
class ShuffleDone(Message):
    """0x21 SHUFFLE_DONE: the deck check; ``counts[(rank-1)*4 + suit]`` cards of each kind."""

    shuffle_id: int
    result: ShuffleResult
    decks: int
    total: int
    counts: tuple[int, ...] = field(default=(0,) * SHUFFLE_COUNTS)

    TYPE: ClassVar[MessageType] = MessageType.SHUFFLE_DONE
    FROM_DEVICE: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if len(self.counts) != SHUFFLE_COUNTS:
            raise MessageError(f"SHUFFLE_DONE needs 52 counts, got {len(self.counts)}")

    def encode_payload(self) -> bytes:
        _check_int("shuffle_id", self.shuffle_id, 32)
        _check_int("result", self.result, 8)
        _check_int("decks", self.decks, 8)
        _check_int("total", self.total, 16)
        for count in self.counts:
            _check_int("count", count, 8)
        return _SHUFFLE_DONE.pack(
            self.shuffle_id, self.result, self.decks, self.total, *self.counts
        )

    @classmethod
    def decode_payload(cls, payload: bytes) -> ShuffleDone:
        if len(payload) != _SHUFFLE_DONE.size:
            raise MessageError(
                f"SHUFFLE_DONE payload must be {_SHUFFLE_DONE.size} bytes, got {len(payload)}"
            )
        shuffle_id, result, decks, total, *counts = _SHUFFLE_DONE.unpack(payload)
        return cls(
            shuffle_id,
            _enum(ShuffleResult, "shuffle result", result),
            decks,
            total,
            tuple(counts),
        )

    @staticmethod
    def index(rank: int, suit: int) -> int:
        """Position of (rank, suit) in ``counts``."""
        return (rank - 1) * 4 + suit


@dataclass(frozen=True, slots=True)
class Fault(Message):
    """0x30 FAULT: ``code`` is a ``FaultCode`` when the protocol defines it, else a plain int."""

    code: int
    severity: Severity
    text: str = ""

    TYPE: ClassVar[MessageType] = MessageType.FAULT
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        _check_int("code", self.code, 16)
        _check_int("severity", self.severity, 8)
        return struct.pack("<HB", self.code, self.severity) + _encode_string("text", self.text)

    @classmethod
    def decode_payload(cls, payload: bytes) -> Fault:
        reader = _Reader("FAULT", payload)
        code = fault_code(reader.u16())
        severity = _enum(Severity, "severity", reader.u8())
        text = reader.string("text")
        reader.end()
        return cls(code, severity, text)


@dataclass(frozen=True, slots=True)
class FaultCleared(Message):
    """0x31 FAULT_CLEARED."""

    code: int

    TYPE: ClassVar[MessageType] = MessageType.FAULT_CLEARED
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        _check_int("code", self.code, 16)
        return self.code.to_bytes(2, "little")

    @classmethod
    def decode_payload(cls, payload: bytes) -> FaultCleared:
        if len(payload) != 2:
            raise MessageError(f"FAULT_CLEARED payload must be 2 bytes, got {len(payload)}")
        return cls(fault_code(int.from_bytes(payload, "little")))


@dataclass(frozen=True, slots=True)
class Ack(Message):
    """0x06 ACK (link level, sent with seq 0, never acknowledged)."""

    acked_seq: int

    TYPE: ClassVar[MessageType] = MessageType.ACK
    FROM_DEVICE: ClassVar[bool] = False  # both sides send it

    def encode_payload(self) -> bytes:
        _check_int("acked_seq", self.acked_seq, 8)
        return bytes((self.acked_seq,))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Ack:
        if len(payload) != 1:
            raise MessageError(f"ACK payload must be 1 byte, got {len(payload)}")
        return cls(payload[0])


@dataclass(frozen=True, slots=True)
class Nak(Message):
    """0x15 NAK (link level, sent with seq 0 after a bad CRC or bad COBS)."""

    TYPE: ClassVar[MessageType] = MessageType.NAK
    FROM_DEVICE: ClassVar[bool] = False  # both sides send it

    def encode_payload(self) -> bytes:
        return b""

    @classmethod
    def decode_payload(cls, payload: bytes) -> Nak:
        if payload:
            raise MessageError(f"NAK payload must be empty, got {len(payload)} bytes")
        return cls()


@dataclass(frozen=True, slots=True)
class Indicate(Message):
    """0x40 INDICATE: what the shoe's lights or display show."""

    pattern: IndicatePattern
    arg: int = 0

    TYPE: ClassVar[MessageType] = MessageType.INDICATE
    FROM_DEVICE: ClassVar[bool] = False

    def encode_payload(self) -> bytes:
        _check_int("pattern", self.pattern, 8)
        _check_int("arg", self.arg, 8)
        return bytes((self.pattern, self.arg))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Indicate:
        if len(payload) != 2:
            raise MessageError(f"INDICATE payload must be 2 bytes, got {len(payload)}")
        return cls(_enum(IndicatePattern, "indicate pattern", payload[0]), payload[1])


@dataclass(frozen=True, slots=True)
class StatusRequest(Message):
    """0x41 STATUS_REQUEST: the device answers SHOE, then FAULT for each active fault."""

    TYPE: ClassVar[MessageType] = MessageType.STATUS_REQUEST
    FROM_DEVICE: ClassVar[bool] = False

    def encode_payload(self) -> bytes:
        return b""

    @classmethod
    def decode_payload(cls, payload: bytes) -> StatusRequest:
        if payload:
            raise MessageError(f"STATUS_REQUEST payload must be empty, got {len(payload)} bytes")
        return cls()


@dataclass(frozen=True, slots=True)
class Shuffle(Message):
    """0x42 SHUFFLE: ask a shuffler to shuffle ``decks`` decks."""

    decks: int

    TYPE: ClassVar[MessageType] = MessageType.SHUFFLE
    FROM_DEVICE: ClassVar[bool] = False

    def encode_payload(self) -> bytes:
        _check_int("decks", self.decks, 8)
        return bytes((self.decks,))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Shuffle:
        if len(payload) != 1:
            raise MessageError(f"SHUFFLE payload must be 1 byte, got {len(payload)}")
        return cls(payload[0])


MESSAGE_CLASSES: dict[int, type[Message]] = {
    cls.TYPE: cls
    for cls in (
        Hello,
        Heartbeat,
        Card,
        CutCard,
        Shoe,
        Button,
        ShuffleStarted,
        ShuffleDone,
        Fault,
        FaultCleared,
        Ack,
        Nak,
        Indicate,
        StatusRequest,
        Shuffle,
    )
}

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


def decode_message(message_type: int, payload: bytes) -> Message:
    """Decode one payload of the given frame type; ``MessageError`` if it breaks the tables."""
    cls = MESSAGE_CLASSES.get(message_type)
    if cls is None:
        raise UnknownMessageTypeError(f"unknown message type 0x{message_type:02x}")
    try:
        return cls.decode_payload(bytes(payload))
    except MessageError:
        raise
    except (ValueError, struct.error) as exc:  # belt and braces: any decode slip is malformed
        raise MessageError(f"{cls.__name__} payload malformed: {exc}") from None


def encode_message(message: Message) -> tuple[int, bytes]:
    """``(type, payload)`` of a message."""
    return message.TYPE, message.encode_payload()
