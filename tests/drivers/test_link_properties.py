"""The link never raises: arbitrary bytes, and well-formed frames of any type, seq and length.

`receive_data`'s contract (drivers/wire/link.py) is never to raise on what arrives, and to
answer every frame the way docs/spec-protocol.md says: a frame that cannot be taken apart is counted
and NAKed, a good frame is counted in `frames_in` and (if reliable) ACKed or held for the
application, a frame of another version is dropped. These properties hold the link to it
for bytes no test thought of, including bodies too short to carry a header (a 2-byte body
`FF FF` is the CRC of nothing: it must be refused, not read past its end).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.wire.framing import (
    FRAME_VERSION,
    MAX_ENCODED_FRAME,
    MIN_BODY,
    cobs_encode,
    crc16_ccitt_false,
    decode_frame,
    encode_frame,
)
from drivers.wire.link import DeviceLink, HostLink, Link
from drivers.wire.messages import DeviceKind, Hello, MessageType

HELLO = Hello(DeviceKind.RFID_SHOE, 0xBEEF, "sim", "prop", "SN9", "1")
LINK_FRAMES = (MessageType.ACK, MessageType.NAK)


def with_crc(body: bytes) -> bytes:
    """A frame on the wire for any body, its CRC good: COBS(body crc) 0x00."""
    return cobs_encode(body + crc16_ccitt_false(body).to_bytes(2, "big")) + b"\x00"


def answers(link: Link) -> list[tuple[int, bytes]]:
    """The link's own frames it wants written (type, payload); each must decode."""
    frames = []
    for part in link.bytes_to_send().split(b"\x00")[:-1]:
        frame = decode_frame(part)
        assert frame.version == FRAME_VERSION
        frames.append((frame.message_type, frame.payload))
    return frames


def links() -> list[Link]:
    device = DeviceLink()
    device.start_session(HELLO)  # a device with a frame in flight: NAKs make it resend
    device.bytes_to_send()
    return [HostLink(), device]


# Well-formed frames: any version, seq and type byte, any payload that fits in a frame.
frames = st.builds(
    lambda version, seq, kind, payload: (version, seq, kind, payload),
    st.sampled_from([FRAME_VERSION, FRAME_VERSION, FRAME_VERSION, 0, 2, 255]),
    st.integers(0, 255),
    st.one_of(st.sampled_from(list(MessageType)), st.integers(0, 255)),
    st.binary(max_size=250),
)


def encoded(version: int, seq: int, kind: int, payload: bytes) -> bytes | None:
    wire = with_crc(bytes((version, seq, kind)) + payload)
    return wire if len(wire) - 1 <= MAX_ENCODED_FRAME else None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=10))
def test_arbitrary_bytes_never_raise_and_every_bad_frame_is_naked(chunks: list[bytes]) -> None:
    for link in links():
        naks = 0
        for chunk in chunks:
            for delivery in link.receive_data(chunk):
                link.ack(delivery.handle)
            naks += sum(kind == MessageType.NAK for kind, _ in answers(link))
        stats = link.stats
        assert stats.bytes_in == sum(map(len, chunks))
        assert stats.naks_out == naks == stats.crc_errors + stats.cobs_errors + stats.oversize
        link.poll(0.0)
        link.poll(1.0)


@settings(max_examples=300, deadline=None)
@given(st.lists(frames, min_size=1, max_size=12), st.integers(1, 64))
def test_well_formed_frames_of_any_length_never_raise_and_are_counted(
    sent: list[tuple[int, int, int, bytes]], chunk: int
) -> None:
    wire = [encoded(*frame) for frame in sent]
    kept = [frame for frame, part in zip(sent, wire, strict=True) if part is not None]
    stream = b"".join(part for part in wire if part is not None)
    ours = [
        (seq, kind, payload) for version, seq, kind, payload in kept if version == FRAME_VERSION
    ]
    acks = [payload for _, kind, payload in ours if kind == MessageType.ACK]
    naks = sum(kind == MessageType.NAK for _, kind, _ in ours)
    for link in links():
        delivered = []
        for position in range(0, len(stream), chunk):
            for delivery in link.receive_data(stream[position : position + chunk]):
                delivered.append(delivery)
                link.ack(delivery.handle)
        stats = link.stats
        assert stats.bytes_in == len(stream)
        assert stats.frames_in == link.frames_received == len(ours)
        assert stats.bad_version == len(kept) - len(ours)
        assert stats.crc_errors == stats.cobs_errors == stats.oversize == stats.naks_out == 0
        assert (stats.acks_in, stats.naks_in) == (len(acks), naks)
        assert stats.delivered == len(delivered)
        # Every reliable frame is malformed, delivered, a duplicate or a repeated HELLO.
        bad_acks = sum(len(payload) != 1 for payload in acks)
        assert len(ours) - len(acks) - naks == (
            stats.malformed - bad_acks + stats.delivered + stats.duplicates + stats.hello_repeats
        )
        for kind, _payload in answers(link):
            assert kind in LINK_FRAMES or kind == MessageType.HELLO  # a NAK resends the HELLO


@pytest.mark.parametrize("size", range(MIN_BODY))
def test_a_body_too_short_for_a_header_and_crc_is_refused(size: int) -> None:
    # The CRC of the body's first size-2 bytes is good (for size 2: FF FF, the CRC of
    # nothing), yet there is no version, seq and type to read: a CRC error, NAKed.
    header = bytes([FRAME_VERSION, 1, MessageType.HEARTBEAT])
    wire = with_crc(header[: size - 2]) if size >= 2 else cobs_encode(bytes(size)) + b"\x00"
    for link in links():
        assert link.receive_data(wire) == []
        assert (link.stats.crc_errors, link.stats.frames_in, link.stats.naks_out) == (1, 0, 1)
        assert "too short" in (link.stats.last_error or "")
        assert (MessageType.NAK, b"") in answers(link)


def test_the_shortest_frame_is_a_header_and_a_crc() -> None:
    # Five bytes: version, seq, type and the CRC; a reliable type with no payload is a
    # frame (counted, ACKed as malformed: a HELLO needs a payload), never an error.
    host = HostLink()
    assert host.receive_data(with_crc(bytes([FRAME_VERSION, 4, MessageType.HELLO]))) == []
    assert (host.stats.frames_in, host.stats.crc_errors, host.stats.malformed) == (1, 0, 1)
    assert answers(host) == [(MessageType.ACK, b"\x04")]


@given(st.binary(min_size=0, max_size=2))
def test_two_bytes_ff_ff_and_other_tiny_bodies_never_raise(body: bytes) -> None:
    for link in links():
        assert link.receive_data(with_crc(body)) == []
        assert link.stats.frames_in == 0


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=250))
def test_a_frame_of_any_payload_length_round_trips(payload: bytes) -> None:
    try:
        wire = encode_frame(9, MessageType.HEARTBEAT, payload)
    except ValueError:
        assert len(with_crc(bytes((1, 9, MessageType.HEARTBEAT)) + payload)) - 1 > MAX_ENCODED_FRAME
        return
    frame = decode_frame(wire[:-1])
    assert (frame.version, frame.seq, frame.message_type, frame.payload) == (
        FRAME_VERSION,
        9,
        MessageType.HEARTBEAT,
        payload,
    )
