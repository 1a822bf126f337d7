"""Typed messages of the shoe link protocol (docs/spec-protocol.md v1): all of them, by their type
byte.

The messages are two modules read side by side with docs/spec-protocol.md's two tables:
device_messages.py (device to host) and host_messages.py (host to device), one frozen dataclass
per message on the base `Message` (message_base.py); the field values and the payload reader
are fields.py's. This module is the one import for them all, with their field types.

``message.encode_payload()`` gives the payload bytes and ``decode_message(message_type,
payload)`` turns them back into a message; a payload that does not match the tables exactly
raises ``MessageError`` (the link counts and drops such frames, it never raises them to its
caller). Integers are little-endian; a string is ``len u8`` followed by that many UTF-8 bytes.
Messages know nothing of baccarat: rank and suit are plain protocol integers (rank 1-13, suit
0-3).
"""

from __future__ import annotations

import struct

from drivers.wire.device_messages import (
    Button,
    Card,
    CutCard,
    Fault,
    FaultCleared,
    Heartbeat,
    Hello,
    Shoe,
    ShuffleDone,
    ShuffleStarted,
)
from drivers.wire.fields import (
    KNOWN_CARD_FLAGS,
    ButtonId,
    CardEncoding,
    CardFlags,
    DeviceKind,
    MessageError,
    MessageType,
    ShoeState,
    ShuffleResult,
    UnknownMessageTypeError,
)
from drivers.wire.host_messages import Ack, Indicate, Nak, Shuffle, StatusRequest
from drivers.wire.message_base import Message
from shoe_controller.vocab.protocol import IndicatePattern, Severity

__all__ = [
    "KNOWN_CARD_FLAGS",
    "MESSAGE_CLASSES",
    "Ack",
    "Button",
    "ButtonId",
    "Card",
    "CardEncoding",
    "CardFlags",
    "CutCard",
    "DeviceKind",
    "Fault",
    "FaultCleared",
    "Heartbeat",
    "Hello",
    "Indicate",
    "IndicatePattern",
    "Message",
    "MessageError",
    "MessageType",
    "Nak",
    "Severity",
    "Shoe",
    "ShoeState",
    "Shuffle",
    "ShuffleDone",
    "ShuffleResult",
    "ShuffleStarted",
    "StatusRequest",
    "UnknownMessageTypeError",
    "decode_message",
]

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
