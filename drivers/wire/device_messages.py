"""The messages a device sends (docs/spec-protocol.md "Messages, device to host"), in the table's
order.

One frozen dataclass per row, so the module and the spec's table are read side by side; each
encodes its payload exactly (``encode_payload``) and decodes it (``decode_payload``), raising
``MessageError`` for a payload that does not match the table.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import ClassVar

from drivers.wire.fields import (
    KNOWN_CARD_FLAGS,
    PROTOCOL_VERSION,
    SHUFFLE_COUNTS,
    UID_MAX_LEN,
    UID_MIN_LEN,
    ButtonId,
    CardEncoding,
    CardFlags,
    DeviceKind,
    MessageError,
    MessageType,
    PayloadReader,
    ShoeState,
    ShuffleResult,
    check_int,
    decode_enum,
    encode_string,
    fault_code,
)
from drivers.wire.message_base import Message
from shoe_controller.vocab.protocol import Severity

_CARD_FLAGS = tuple(CardFlags(value) for value in range(KNOWN_CARD_FLAGS + 1))


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
        check_int("proto", self.proto, 8)
        check_int("kind", self.kind, 8)
        check_int("boot_id", self.boot_id, 32)
        return (
            struct.pack("<BBI", self.proto, self.kind, self.boot_id)
            + encode_string("vendor", self.vendor)
            + encode_string("model", self.model)
            + encode_string("serial", self.serial)
            + encode_string("firmware", self.firmware)
        )

    @classmethod
    def decode_payload(cls, payload: bytes) -> Hello:
        reader = PayloadReader("HELLO", payload)
        proto = reader.u8()
        if proto != PROTOCOL_VERSION:
            raise MessageError(f"HELLO announces protocol {proto}, this host speaks 1")
        kind = decode_enum(DeviceKind, "device kind", reader.u8())
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
        check_int("uptime_ms", self.uptime_ms, 32)
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
        check_int("counter", self.counter, 32)
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
        check_int("state", self.state, 8)
        return bytes((self.state,))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Shoe:
        if len(payload) != 1:
            raise MessageError(f"SHOE payload must be 1 byte, got {len(payload)}")
        return cls(decode_enum(ShoeState, "shoe state", payload[0]))


@dataclass(frozen=True, slots=True)
class Button(Message):
    """0x13 BUTTON: a button on the device was pressed."""

    button: ButtonId

    TYPE: ClassVar[MessageType] = MessageType.BUTTON
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        check_int("button", self.button, 8)
        return bytes((self.button,))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Button:
        if len(payload) != 1:
            raise MessageError(f"BUTTON payload must be 1 byte, got {len(payload)}")
        return cls(decode_enum(ButtonId, "button", payload[0]))


@dataclass(frozen=True, slots=True)
class ShuffleStarted(Message):
    """0x20 SHUFFLE_STARTED."""

    shuffle_id: int
    decks: int

    TYPE: ClassVar[MessageType] = MessageType.SHUFFLE_STARTED
    FROM_DEVICE: ClassVar[bool] = True

    def encode_payload(self) -> bytes:
        check_int("shuffle_id", self.shuffle_id, 32)
        check_int("decks", self.decks, 8)
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
        check_int("shuffle_id", self.shuffle_id, 32)
        check_int("result", self.result, 8)
        check_int("decks", self.decks, 8)
        check_int("total", self.total, 16)
        for count in self.counts:
            check_int("count", count, 8)
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
            decode_enum(ShuffleResult, "shuffle result", result),
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
        check_int("code", self.code, 16)
        check_int("severity", self.severity, 8)
        return struct.pack("<HB", self.code, self.severity) + encode_string("text", self.text)

    @classmethod
    def decode_payload(cls, payload: bytes) -> Fault:
        reader = PayloadReader("FAULT", payload)
        code = fault_code(reader.u16())
        severity = decode_enum(Severity, "severity", reader.u8())
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
        check_int("code", self.code, 16)
        return self.code.to_bytes(2, "little")

    @classmethod
    def decode_payload(cls, payload: bytes) -> FaultCleared:
        if len(payload) != 2:
            raise MessageError(f"FAULT_CLEARED payload must be 2 bytes, got {len(payload)}")
        return cls(fault_code(int.from_bytes(payload, "little")))
