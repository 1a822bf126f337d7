"""The messages a host sends (docs/spec-protocol.md "Messages, host to device"), in the table's
order.

ACK and NAK are the link's own (sent with seq 0, by both sides); INDICATE, STATUS_REQUEST and
SHUFFLE are the host's commands. One frozen dataclass per row, as device_messages.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from drivers.wire.fields import MessageError, MessageType, check_int, decode_enum
from drivers.wire.message_base import Message
from shoe_controller.vocab.protocol import IndicatePattern


@dataclass(frozen=True, slots=True)
class Ack(Message):
    """0x06 ACK (link level, sent with seq 0, never acknowledged)."""

    acked_seq: int

    TYPE: ClassVar[MessageType] = MessageType.ACK
    FROM_DEVICE: ClassVar[bool] = False  # both sides send it

    def encode_payload(self) -> bytes:
        check_int("acked_seq", self.acked_seq, 8)
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
        check_int("pattern", self.pattern, 8)
        check_int("arg", self.arg, 8)
        return bytes((self.pattern, self.arg))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Indicate:
        if len(payload) != 2:
            raise MessageError(f"INDICATE payload must be 2 bytes, got {len(payload)}")
        return cls(decode_enum(IndicatePattern, "indicate pattern", payload[0]), payload[1])


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
        check_int("decks", self.decks, 8)
        return bytes((self.decks,))

    @classmethod
    def decode_payload(cls, payload: bytes) -> Shuffle:
        if len(payload) != 1:
            raise MessageError(f"SHUFFLE payload must be 1 byte, got {len(payload)}")
        return cls(payload[0])
