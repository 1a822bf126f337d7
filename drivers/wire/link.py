"""Sans-I/O reliable shoe link (docs/spec-protocol.md v1): sequence numbers, ACK/NAK, resends,
sessions.

The link is pure state: feed it the bytes that arrived (``receive_data``), take the bytes it
wants written (``bytes_to_send``), hand it messages to send (``send``) and the time now and
then (``poll(now)``). It never reads a clock, opens a port or starts a thread, so it can be
tested back to back and fuzzed without hardware (in the manner of h11 or bellows' ash.py).
The bytes are cut into frames and frames built by ``drivers.wire.framing`` (COBS, CRC-16); what
the link and its application hand each other (its configuration and counters, a delivery and
its ACK handle, the session to store) is ``drivers.wire.link_state``.

Roles. ``HostLink`` is the controller's side: it acknowledges a device's reliable frame only
when the application says the message is stored (``ack(delivery.handle)``), so a card is
ACKed once it is on disk; until then a retransmission of that frame is neither delivered
again nor ACKed. ``DeviceLink`` is the device's side (simulators, firmware test benches): it
ACKs at once and starts sessions with HELLO (``start_session``).

Sessions. A HELLO with a new boot_id starts a new session: the receiver forgets the peer's
last accepted seq. A HELLO with the current boot_id is a retransmission or a reconnect: ACK
it, nothing else. The host exports its view of the session (``session_state()``) so the
journal stores it in the same transaction as the data; a restarted host restores it
(``restore_session``) and still recognises the device's retransmission as a duplicate.

Timing. Frames written between two ``poll`` calls are stamped with the time of the next poll;
a frame not ACKed ``resend_after`` seconds later is resent, at most ``max_resends`` times, then
the link is down and the frame is kept for the next session (a HELLO from the peer, a new
``start_session`` on the device side, or a reopened transport: ``connection_made``).

Errors never escape ``receive_data``: bad COBS or CRC is answered with NAK and counted;
a frame with a good CRC but a payload that breaks the tables is ACKed (the protocol says so,
and the peer would otherwise resend it forever), counted as malformed and kept in
``recent_errors`` for post-mortems.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from drivers.wire.fields import is_reliable
from drivers.wire.framing import (
    FRAME_VERSION,
    CobsError,
    FrameDecoder,
    FrameError,
    FrameTooLongError,
    RawFrame,
    encode_frame,
)
from drivers.wire.link_state import AckHandle, Delivery, LinkConfig, LinkStats, SessionState
from drivers.wire.messages import (
    Hello,
    Message,
    MessageError,
    MessageType,
    decode_message,
)

_ACK = MessageType.ACK
_NAK = MessageType.NAK


# --- sequence numbers and the link's own frames ------------------------------------------


def next_seq(seq: int) -> int:
    """1, 2 … 255, then 1 again: 0 is reserved for ACK and NAK."""
    return seq % 255 + 1


_ACK_FRAMES = tuple(encode_frame(0, _ACK, bytes((seq,))) for seq in range(256))
_NAK_FRAME = encode_frame(0, _NAK, b"")


# --- the link's own state ----------------------------------------------------------------


class Role(Enum):
    HOST = "host"
    DEVICE = "device"


@dataclass(slots=True)
class _Outgoing:
    message_type: int
    payload: bytes
    seq: int = 0  # 0 until first transmitted
    frame: bytes = b""
    sent_at: float | None = None
    resends: int = 0


@dataclass(slots=True)
class _PeerSession:
    boot_id: int | None = None
    last_seq: int = 0
    awaiting: dict[int, None] = field(default_factory=dict)  # delivered, not yet acked


# --- the link ------------------------------------------------------------------------


class Link:
    """One end of a shoe link. Use ``HostLink`` or ``DeviceLink``."""

    def __init__(self, role: Role, config: LinkConfig | None = None, *, auto_ack: bool) -> None:
        self.role = role
        self.config = config or LinkConfig()
        self.auto_ack = auto_ack
        self.stats = LinkStats()
        self.recent: deque[tuple[str, bytes]] = deque(maxlen=self.config.history)
        self.recent_errors: deque[tuple[str, bytes]] = deque(maxlen=self.config.history)
        self._peer = _PeerSession()
        self._frames = FrameDecoder()
        self._tx = bytearray()
        self._queue: deque[_Outgoing] = deque()
        self._inflight: _Outgoing | None = None
        self._seq = 0
        self._up = True
        self._now: float | None = None

    # -- properties --------------------------------------------------------------------

    @property
    def is_up(self) -> bool:
        """False after ``max_resends`` resends went unanswered, until the next session."""
        return self._up

    @property
    def pending(self) -> int:
        """Reliable frames not yet acknowledged (in flight plus queued)."""
        return len(self._queue) + (self._inflight is not None)

    @property
    def frames_received(self) -> int:
        """Good frames received so far (the transport's silence watchdog reads it)."""
        return self.stats.frames_in

    # -- application side ----------------------------------------------------------------

    def send(self, message: Message) -> None:
        """Queue a reliable message; frames go out one at a time (stop-and-wait).

        Raises ``ValueError`` (``MessageError`` or ``FrameTooLongError``) at once if the
        message cannot be encoded, so a bad message never blocks the queue.
        """
        message_type = message.TYPE
        if not is_reliable(message_type):
            raise ValueError("ACK and NAK are sent by the link itself")
        payload = message.encode_payload()
        encode_frame(1, message_type, payload)  # size check now, not when its turn comes
        self._queue.append(_Outgoing(message_type, payload))
        self._pump()

    def bytes_to_send(self) -> bytes:
        """Everything the link wants written, in order; empties the buffer."""
        if not self._tx:
            return b""
        data = bytes(self._tx)
        self._tx.clear()
        self.stats.bytes_out += len(data)
        return data

    def poll(self, now: float) -> None:
        """Run the resend timer. Call it regularly (every few tens of ms) with a monotonic time."""
        self._now = now
        frame = self._inflight
        if frame is None or not self._up:
            return
        if frame.sent_at is None:
            frame.sent_at = now
        elif now - frame.sent_at >= self.config.resend_after:
            self._resend(frame, now)

    def next_timer(self) -> float | None:
        """When ``poll`` has work to do next (None: nothing timed is pending)."""
        frame = self._inflight
        if frame is None or not self._up:
            return None
        if frame.sent_at is None:  # written since the last poll: stamp it at once
            return self._now if self._now is not None else 0.0
        return frame.sent_at + self.config.resend_after

    def ack(self, handle: AckHandle) -> bool:
        """Acknowledge a delivered frame now that the application has stored it.

        Returns False (and sends nothing) for a handle of an earlier session.
        """
        peer = self._peer
        if handle.boot_id != peer.boot_id:
            return False
        if handle.seq in peer.awaiting:
            del peer.awaiting[handle.seq]
            peer.last_seq = handle.seq
        elif handle.seq != peer.last_seq:
            return False
        self._emit_ack(handle.seq)
        return True

    def release(self, handle: AckHandle) -> None:
        """The application could not store a delivered frame: forget it without an ACK, so
        the peer's retransmission is delivered again (and stored, once storage works)."""
        if handle.boot_id == self._peer.boot_id:
            self._peer.awaiting.pop(handle.seq, None)

    def session_state(self) -> SessionState:
        """The peer's session as accepted so far (boot_id, last accepted seq)."""
        return SessionState(self._peer.boot_id, self._peer.last_seq)

    def restore_session(self, state: SessionState) -> None:
        """Take up a session stored by an earlier run (host restart)."""
        self._peer = _PeerSession(state.boot_id, state.last_seq)

    # -- transport side ------------------------------------------------------------------

    def connection_made(self) -> None:
        """A (re)opened transport: a frame kept after link-down goes out again."""
        self._frames.reset()
        self._restart_inflight()

    def connection_lost(self) -> None:
        """The transport went away: drop the partial frame being received and unsent bytes.

        The frame in flight is kept and resent on ``connection_made`` (or by the timer).
        """
        self._frames.reset()
        self._tx.clear()

    def receive_data(self, data: bytes) -> list[Delivery]:
        """Feed received bytes; returns the messages they completed. Never raises on bad input."""
        self.stats.bytes_in += len(data)
        deliveries: list[Delivery] = []
        for encoded, frame in self._frames.feed(data):
            if isinstance(frame, FrameError):
                self._frame_error(frame, encoded)
            else:
                self._receive_frame(frame, encoded, deliveries)
        return deliveries

    # -- internals: receiving --------------------------------------------------------------

    def _receive_frame(self, frame: RawFrame, encoded: bytes, deliveries: list[Delivery]) -> None:
        stats = self.stats
        if frame.version != FRAME_VERSION:
            stats.bad_version += 1
            self._note_error(f"frame version {frame.version}, expected 1", encoded)
            return
        stats.frames_in += 1
        if self.config.history:
            self.recent.append(("in", encoded))
        message_type = frame.message_type
        if message_type == _ACK:
            self._receive_ack(frame, encoded)
        elif message_type == _NAK:
            stats.naks_in += 1
            inflight = self._inflight
            if inflight is not None and self._up:
                # Resent at once; not counted against max_resends and the timer runs on, so
                # a NAK storm on a noisy line neither fakes a link-down nor hides a dead peer.
                stats.retransmits += 1
                self._tx += inflight.frame
        elif frame.seq == 0:
            stats.malformed += 1
            self._note_error(f"reliable frame type 0x{message_type:02x} with seq 0", encoded)
        else:
            self._receive_reliable(frame, encoded, deliveries)

    def _receive_ack(self, frame: RawFrame, encoded: bytes) -> None:
        self.stats.acks_in += 1
        if len(frame.payload) != 1:
            self.stats.malformed += 1
            self._note_error(f"ACK payload of {len(frame.payload)} bytes", encoded)
            return
        inflight = self._inflight
        if inflight is not None and frame.payload[0] == inflight.seq:
            self._inflight = None
            self._up = True
            self._pump()

    def _receive_reliable(
        self, frame: RawFrame, encoded: bytes, deliveries: list[Delivery]
    ) -> None:
        seq = frame.seq
        peer = self._peer
        try:
            message = decode_message(frame.message_type, frame.payload)
        except MessageError as exc:
            # Good CRC: the peer gets its ACK (or would resend forever); the frame is kept
            # in recent_errors and counted.
            self.stats.malformed += 1
            self._note_error(f"malformed: {exc}", encoded)
            if seq not in peer.awaiting:
                peer.last_seq = seq
                self._emit_ack(seq)
            return
        is_hello = isinstance(message, Hello)
        if is_hello and message.boot_id != peer.boot_id:
            self._peer = peer = _PeerSession(message.boot_id)  # new session: forget last seq
            self.stats.sessions += 1
            self._restart_inflight()
        elif seq in peer.awaiting:
            self.stats.duplicates += 1  # not stored yet: no ACK, not delivered twice
            return
        elif is_hello:
            self.stats.hello_repeats += 1
            self._emit_ack(seq)  # retransmission or reconnect: ACK it, nothing else
            self._restart_inflight()
            return
        elif seq == peer.last_seq:
            self.stats.duplicates += 1
            self._emit_ack(seq)
            return
        handle = AckHandle(peer.boot_id, seq)
        if self.auto_ack:
            peer.last_seq = seq
            self._emit_ack(seq)
        else:
            peer.awaiting[seq] = None
            if len(peer.awaiting) > self.config.max_awaiting:
                del peer.awaiting[next(iter(peer.awaiting))]
        self.stats.delivered += 1
        deliveries.append(Delivery(message, handle))

    def _frame_error(self, error: FrameError, encoded: bytes) -> None:
        """A frame that cannot be taken apart: counted by what broke, kept, and NAKed."""
        stats = self.stats
        if isinstance(error, FrameTooLongError):
            stats.oversize += 1
        elif isinstance(error, CobsError):
            stats.cobs_errors += 1
        else:
            stats.crc_errors += 1
        self._note_error(str(error), encoded)
        self._tx += _NAK_FRAME
        stats.naks_out += 1

    def _note_error(self, text: str, encoded: bytes) -> None:
        self.stats.last_error = text
        if self.config.history:
            self.recent_errors.append((text, encoded))

    def _emit_ack(self, seq: int) -> None:
        self._tx += _ACK_FRAMES[seq]
        self.stats.acks_out += 1

    # -- internals: sending -----------------------------------------------------------

    def _pump(self) -> None:
        """Put the next queued frame in flight if none is."""
        if self._inflight is not None or not self._queue or not self._up:
            return
        frame = self._queue.popleft()
        if not frame.seq:
            self._seq = next_seq(self._seq)
            frame.seq = self._seq
            frame.frame = encode_frame(frame.seq, frame.message_type, frame.payload)
            self.stats.frames_out += 1
        else:
            self.stats.retransmits += 1  # kept from an earlier session, resent identical
        frame.sent_at = None
        frame.resends = 0
        self._inflight = frame
        self._tx += frame.frame
        if self.config.history:
            self.recent.append(("out", frame.frame))

    def _resend(self, frame: _Outgoing, now: float | None) -> None:
        if frame.resends >= self.config.max_resends:
            if self._up:
                self._up = False
                self.stats.link_downs += 1
                self.stats.last_error = (
                    f"no ACK for seq {frame.seq} after {frame.resends} resends: link down"
                )
            return
        frame.resends += 1
        frame.sent_at = now
        self.stats.retransmits += 1
        self._tx += frame.frame

    def _restart_inflight(self) -> None:
        """A new chance for the frame in flight (new session, peer back): resend it now."""
        self._up = True
        frame = self._inflight
        if frame is None:
            self._pump()
            return
        frame.resends = 0
        frame.sent_at = None
        self.stats.retransmits += 1
        self._tx += frame.frame


class HostLink(Link):
    """The controller's end: deliveries wait for ``ack(handle)`` (ACK once stored)."""

    def __init__(self, config: LinkConfig | None = None) -> None:
        super().__init__(Role.HOST, config, auto_ack=False)


class DeviceLink(Link):
    """A device's end: ACKs at once and opens sessions with HELLO."""

    def __init__(self, config: LinkConfig | None = None) -> None:
        super().__init__(Role.DEVICE, config, auto_ack=True)
        self._own_boot_id: int | None = None

    def start_session(self, hello: Hello) -> None:
        """Send HELLO first (power-up, reconnect, or after link-down), then any kept frames.

        A new boot_id (reboot) also forgets the host's last accepted seq; the same boot_id
        (reconnect) keeps it, so a host command resent across the reconnect is not applied
        twice.
        """
        if hello.boot_id != self._own_boot_id:
            self._own_boot_id = hello.boot_id
            self._peer = _PeerSession()
        self._frames.reset()
        inflight = self._inflight
        if inflight is not None:
            self._inflight = None
            if inflight.message_type != MessageType.HELLO:
                self._queue.appendleft(inflight)  # keeps its seq: resent identical after HELLO
        self._queue = deque(f for f in self._queue if f.message_type != MessageType.HELLO)
        self._queue.appendleft(_Outgoing(MessageType.HELLO, hello.encode_payload()))
        self._up = True
        self._pump()
