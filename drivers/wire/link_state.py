"""What the reliable link and its application hand each other: configuration, deliveries, state.

``LinkConfig`` (timers and limits), ``Delivery`` (a message that arrived and the ``AckHandle``
that acknowledges it), ``SessionState`` (the peer's session as accepted, stored with the data)
and ``LinkStats`` (the link's counters). The link itself is ``drivers.wire.link``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from drivers.wire.messages import Message


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """Timers and limits (docs/spec-protocol.md defaults)."""

    resend_after: float = 0.2  # seconds without ACK before the identical frame is resent
    max_resends: int = 10  # then the link is down and the frame kept for the next session
    history: int = 64  # recent frames kept for post-mortems (0: none)
    max_awaiting: int = 8  # deliveries the application has not acked yet, oldest dropped


@dataclass(frozen=True, slots=True)
class SessionState:
    """The receiver's view of the peer's session: boot_id (None before any HELLO) and the
    last accepted seq (0: none). The host stores it with the data it accepts."""

    boot_id: int | None = None
    last_seq: int = 0

    def to_dict(self) -> dict[str, int | None]:
        return {"boot_id": self.boot_id, "last_seq": self.last_seq}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionState:
        boot_id = data.get("boot_id")
        last_seq = int(data.get("last_seq", 0))
        if boot_id is not None and not 0 <= int(boot_id) <= 0xFFFFFFFF:
            raise ValueError(f"boot_id {boot_id!r} is not a u32")
        if not 0 <= last_seq <= 255:
            raise ValueError(f"last_seq {last_seq!r} is not a seq")
        return cls(None if boot_id is None else int(boot_id), last_seq)


class AckHandle(NamedTuple):
    """Identifies one delivered reliable frame; ``HostLink.ack(handle)`` acknowledges it."""

    boot_id: int | None
    seq: int

    @property
    def session_after(self) -> SessionState:
        """The session state once this frame is accepted: store it with the message."""
        return SessionState(self.boot_id, self.seq)


class Delivery(NamedTuple):
    """A message that arrived, and the handle that acknowledges it."""

    message: Message
    handle: AckHandle


@dataclass(slots=True)
class LinkStats:
    """Counters since the link was made (live object; ``as_dict`` for a snapshot)."""

    bytes_in: int = 0
    bytes_out: int = 0
    frames_in: int = 0  # frames with a good CRC and version
    frames_out: int = 0  # reliable frames sent for the first time
    delivered: int = 0
    acks_in: int = 0
    acks_out: int = 0
    naks_in: int = 0
    naks_out: int = 0
    crc_errors: int = 0
    cobs_errors: int = 0
    oversize: int = 0
    bad_version: int = 0
    malformed: int = 0
    retransmits: int = 0
    duplicates: int = 0
    hello_repeats: int = 0
    sessions: int = 0
    link_downs: int = 0
    last_error: str | None = None

    def as_dict(self) -> dict[str, int | str | None]:
        return asdict(self)
