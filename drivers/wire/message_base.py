"""The base of every shoe link message: its type byte, its direction, its payload both ways."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from drivers.wire.fields import MessageType


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
