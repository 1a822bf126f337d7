"""The sans-I/O shoe link: framing, CRC, ARQ, sessions, ACK-after-store, lossy back-to-back runs.

Back-to-back runs put a DeviceLink and a HostLink on two simulated wires (simulated time,
seeded randomness) that lose frames, deliver one byte at a time, delay, flip bits and
double frames; the 416 cards of an 8-deck shoe must be stored once each, in order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.wire.framing import (
    CobsError,
    CrcError,
    FrameTooLongError,
    cobs_decode,
    cobs_encode,
    crc16_ccitt_false,
    decode_frame,
    encode_frame,
)
from drivers.wire.link import DeviceLink, HostLink, Role, next_seq
from drivers.wire.link_state import AckHandle, Delivery, LinkConfig, SessionState
from drivers.wire.messages import (
    Ack,
    Card,
    DeviceKind,
    Heartbeat,
    Hello,
    Indicate,
    IndicatePattern,
    MessageType,
    Shoe,
    ShoeState,
    StatusRequest,
)

HELLO = Hello(DeviceKind.OPTICAL_SHOE, 0x1234, "sim", "b2b", "SN1", "1")
SHOE_CARDS = 8 * 52


def crc_bitwise(data: bytes) -> int:
    """Reference CRC-16/CCITT-FALSE, one bit at a time, straight from its definition."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def card(counter: int) -> Card:
    return Card(counter, rank=(counter - 1) % 13 + 1, suit=(counter - 1) % 4)


def frames_of(data: bytes) -> list[bytes]:
    return [part for part in data.split(b"\x00") if part]


# --- framing ---------------------------------------------------------------------------


def test_crc_check_value() -> None:
    assert crc16_ccitt_false(b"123456789") == 0x29B1


@given(st.binary(max_size=300))
def test_crc_matches_the_bitwise_definition(data: bytes) -> None:
    assert crc16_ccitt_false(data) == crc_bitwise(data)


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        (b"\x00", b"\x01\x01"),
        (b"\x00\x00", b"\x01\x01\x01"),
        (b"\x11\x22\x00\x33", b"\x03\x11\x22\x02\x33"),
        (b"\x11\x22\x33\x44", b"\x05\x11\x22\x33\x44"),
        (b"\x11\x00\x00\x00", b"\x02\x11\x01\x01\x01"),
        (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255))),
        (bytes(range(1, 256)), b"\xff" + bytes(range(1, 255)) + b"\x02\xff"),
        (bytes(range(0, 255)), b"\x01\xff" + bytes(range(1, 255))),
    ],
)
def test_cobs_known_vectors(raw: bytes, encoded: bytes) -> None:
    assert cobs_encode(raw) == encoded
    assert cobs_decode(encoded) == raw


@given(st.binary(max_size=1000))
def test_cobs_round_trip_has_no_zero(data: bytes) -> None:
    encoded = cobs_encode(data)
    assert 0 not in encoded
    assert cobs_decode(encoded) == data


@pytest.mark.parametrize("bad", [b"\x05\x11\x22", b"\x03\x11\x00\x01", b"\x00"])
def test_cobs_decode_rejects_bad_blocks(bad: bytes) -> None:
    with pytest.raises(CobsError):
        cobs_decode(bad)


def test_ack_frame_bytes() -> None:
    body = bytes([1, 0, MessageType.ACK, 5])
    crc = crc_bitwise(body)
    expected = cobs_encode(body + bytes([crc >> 8, crc & 0xFF])) + b"\x00"  # CRC big-endian
    assert encode_frame(0, MessageType.ACK, b"\x05") == expected
    frame = decode_frame(expected[:-1])
    assert (frame.version, frame.seq, frame.message_type, frame.payload) == (1, 0, 6, b"\x05")


def test_decode_frame_rejects_a_flipped_bit() -> None:
    encoded = bytearray(encode_frame(3, MessageType.CARD, card(1).encode_payload())[:-1])
    encoded[4] ^= 0x10
    with pytest.raises((CrcError, CobsError)):
        decode_frame(bytes(encoded))


def test_encoded_frames_are_limited_to_255_bytes() -> None:
    with pytest.raises(FrameTooLongError):
        encode_frame(1, MessageType.HELLO, bytes(range(1, 251)))
    link = DeviceLink()
    with pytest.raises(FrameTooLongError):
        link.send(Hello(DeviceKind.RFID_SHOE, 1, "v" * 100, "m" * 100, "s" * 60, ""))
    assert link.pending == 0  # nothing half-queued


def test_seq_wraps_from_255_to_1() -> None:
    assert next_seq(254) == 255
    assert next_seq(255) == 1
    assert 0 not in {next_seq(s) for s in range(256)}


# --- one exchange at a time --------------------------------------------------------------


def pair(config: LinkConfig | None = None) -> tuple[DeviceLink, HostLink]:
    return DeviceLink(config), HostLink(config)


def deliver(source: DeviceLink | HostLink, target: DeviceLink | HostLink) -> list[Delivery]:
    return target.receive_data(source.bytes_to_send())


def in_session() -> tuple[DeviceLink, HostLink]:
    """A device and a host after HELLO was delivered, stored and ACKed."""
    device, host = pair()
    device.start_session(HELLO)
    for delivery in deliver(device, host):
        host.ack(delivery.handle)
    deliver(host, device)
    return device, host


def test_host_acks_only_once_the_application_stored_the_message() -> None:
    device, host = pair()
    device.start_session(HELLO)
    (hello,) = deliver(device, host)
    assert host.bytes_to_send() == b""  # not stored yet: no ACK
    assert host.ack(hello.handle)
    deliver(host, device)
    device.send(card(1))
    (first,) = deliver(device, host)
    assert first.message == card(1)
    assert host.bytes_to_send() == b""
    # the device times out and resends: the host neither delivers it again nor ACKs it
    device.poll(0.0)
    device.poll(0.25)
    assert deliver(device, host) == []
    assert host.stats.duplicates == 1
    assert host.bytes_to_send() == b""
    assert host.session_state() == SessionState(HELLO.boot_id, hello.handle.seq)
    assert first.handle.session_after == SessionState(HELLO.boot_id, first.handle.seq)
    host.ack(first.handle)
    assert host.session_state() == first.handle.session_after
    deliver(host, device)
    assert device.pending == 0


def test_a_released_delivery_comes_again_with_the_resend() -> None:
    # The journal could not store the card (disk full): the host releases it unACKed, and
    # the device's retransmission is delivered again instead of being taken as a duplicate.
    device, host = in_session()
    device.send(card(1))
    (first,) = deliver(device, host)
    host.release(first.handle)
    assert host.bytes_to_send() == b""  # no ACK: the device keeps the card
    device.poll(0.0)
    device.poll(0.25)
    (again,) = deliver(device, host)
    assert again.message == card(1)
    assert host.ack(again.handle)
    deliver(host, device)
    assert device.pending == 0


def test_duplicate_of_last_accepted_is_acked_again_not_delivered() -> None:
    device, host = in_session()
    device.send(card(1))
    frame = device.bytes_to_send()
    (delivery,) = host.receive_data(frame)
    host.ack(delivery.handle)
    ack_bytes = host.bytes_to_send()
    assert host.receive_data(frame) == []  # the ACK was lost, the device resent
    assert host.bytes_to_send() == ack_bytes  # ACKed again
    assert host.stats.duplicates == 1


def test_hello_with_new_boot_id_starts_a_new_session_and_same_boot_id_is_acked_only() -> None:
    device, host = pair()
    device.start_session(HELLO)
    (hello,) = deliver(device, host)
    host.ack(hello.handle)
    deliver(host, device)
    # reconnect without reboot: HELLO with the same boot_id is ACKed, not delivered
    device.start_session(HELLO)
    assert deliver(device, host) == []
    assert host.stats.hello_repeats == 1
    assert frames_of(host.bytes_to_send())  # the ACK
    # reboot: a new boot_id is a new session, delivered, and seqs start over for the host
    rebooted = DeviceLink()
    rebooted.start_session(Hello(DeviceKind.OPTICAL_SHOE, 0x9999))
    (new_hello,) = deliver(rebooted, host)
    assert new_hello.message.boot_id == 0x9999  # type: ignore[attr-defined]
    assert host.session_state() == SessionState(0x9999, 0)
    assert host.stats.sessions == 2
    host.ack(new_hello.handle)
    assert not host.ack(hello.handle)  # a handle of the old session sends nothing


def test_restarted_host_with_restored_session_recognises_the_retransmission() -> None:
    device, host = in_session()
    device.send(card(1))
    (stored,) = deliver(device, host)
    journal = stored.handle.session_after.to_dict()  # stored with the card, then the host dies
    host.ack(stored.handle)
    host.bytes_to_send()  # the ACK never reaches the device
    restarted = HostLink()
    restarted.restore_session(SessionState.from_dict(journal))
    device.poll(0.0)
    device.poll(0.25)  # the device resends its pending frame
    assert deliver(device, restarted) == []
    assert restarted.stats.duplicates == 1
    deliver(restarted, device)  # ACK
    assert device.pending == 0
    device.send(card(2))
    (second,) = deliver(device, restarted)
    assert second.message == card(2)


def test_restarted_host_without_session_delivers_again() -> None:
    """The contrast case: without the stored session the retransmission looks new."""
    device, host = in_session()
    device.send(card(1))
    deliver(device, host)
    device.poll(0.0)
    device.poll(0.25)
    assert [d.message for d in deliver(device, HostLink())] == [card(1)]


def test_session_state_from_dict_validates() -> None:
    assert SessionState.from_dict({"boot_id": None, "last_seq": 0}) == SessionState()
    with pytest.raises(ValueError, match="last_seq"):
        SessionState.from_dict({"boot_id": 1, "last_seq": 256})
    with pytest.raises(ValueError, match="boot_id"):
        SessionState.from_dict({"boot_id": -1, "last_seq": 1})


def test_resends_ten_times_then_link_down_and_frame_kept_for_next_session() -> None:
    device = DeviceLink(LinkConfig(resend_after=0.2, max_resends=10))
    device.start_session(HELLO)
    device.send(card(1))
    hello_frame = device.bytes_to_send()
    sent = []
    now = 0.0
    device.poll(now)
    for _ in range(40):
        now += 0.1
        device.poll(now)
        sent.extend(frames_of(device.bytes_to_send()))
    assert len(sent) == 10
    assert set(sent) == set(frames_of(hello_frame))  # the identical frame each time
    assert not device.is_up
    assert device.stats.link_downs == 1
    assert device.pending == 2  # HELLO and the card are kept
    device.start_session(HELLO)
    host = HostLink()
    (hello,) = deliver(device, host)
    host.ack(hello.handle)
    (kept,) = deliver(host, device) or deliver(device, host)
    assert kept.message == card(1)


def test_nak_triggers_an_immediate_resend() -> None:
    device, host = pair()
    device.start_session(HELLO)
    frame = device.bytes_to_send()
    body = bytearray(cobs_decode(frame[:-1]))
    body[-1] ^= 0x01  # a CRC that does not match
    assert host.receive_data(cobs_encode(bytes(body)) + b"\x00") == []
    assert host.stats.crc_errors == 1
    nak = host.bytes_to_send()
    assert nak == encode_frame(0, MessageType.NAK, b"")
    device.receive_data(nak)
    assert device.bytes_to_send() == frame  # resent at once, no timer needed
    assert device.stats.naks_in == 1
    # bad COBS (a block running past the delimiter) is NAKed as well
    assert host.receive_data(b"\x09\x01\x02\x00") == []
    assert host.stats.cobs_errors == 1
    assert host.bytes_to_send() == nak


def test_malformed_payload_with_good_crc_is_acked_counted_and_kept() -> None:
    host = HostLink()
    bad = encode_frame(7, MessageType.CARD, bytes([1, 0, 0, 0, 0, 1, 14, 0]))  # rank 14
    assert host.receive_data(bad) == []
    assert host.stats.malformed == 1
    assert "rank" in (host.stats.last_error or "")
    assert host.bytes_to_send() == encode_frame(0, MessageType.ACK, b"\x07")
    assert host.recent_errors[-1][1] == bad[:-1]


def test_unknown_type_with_good_crc_is_acked_not_delivered() -> None:
    host = HostLink()
    assert host.receive_data(encode_frame(9, 0x7E, b"future")) == []
    assert host.stats.malformed == 1
    assert host.bytes_to_send() == encode_frame(0, MessageType.ACK, b"\x09")


def test_wrong_version_is_dropped_without_answer() -> None:
    body = bytes([2, 5, MessageType.HEARTBEAT, 0, 0, 0, 0])
    frame = cobs_encode(body + crc16_ccitt_false(body).to_bytes(2, "big")) + b"\x00"
    host = HostLink()
    assert host.receive_data(frame) == []
    assert host.stats.bad_version == 1
    assert host.bytes_to_send() == b""


def test_oversize_garbage_is_discarded_up_to_the_next_delimiter() -> None:
    device, host = pair()
    device.start_session(HELLO)
    garbage = bytes(random.Random(1).randrange(1, 256) for _ in range(600))
    deliveries = host.receive_data(garbage) + host.receive_data(b"\x00" + device.bytes_to_send())
    assert [d.message for d in deliveries] == [HELLO]
    assert host.stats.oversize == 1


def test_ack_and_nak_cannot_be_sent_by_the_application() -> None:
    with pytest.raises(ValueError, match=r"^ACK and NAK are sent by the link itself$"):
        HostLink().send(Ack(1))


def test_host_commands_reach_the_device_and_are_acked_at_once() -> None:
    device, host = in_session()
    host.send(Indicate(IndicatePattern.BURN, 3))
    (command,) = deliver(host, device)
    assert command.message == Indicate(IndicatePattern.BURN, 3)
    deliver(device, host)  # the device's ACK, sent without being asked
    assert host.pending == 0


def test_only_the_first_frame_of_a_restarted_host_can_be_taken_for_a_duplicate() -> None:
    # The device cannot see the host restart: a new host numbers from 1 again, and seq 1 is
    # what the device accepted last. That first frame is dropped (ACKed, not delivered);
    # the next ones arrive. Hence DeviceRunner's INDICATE before its STATUS_REQUEST.
    device, host = in_session()
    host.send(Indicate(IndicatePattern.READY, 0))
    deliver(host, device)
    deliver(device, host)
    restarted = HostLink()
    restarted.restore_session(host.session_state())
    delivered = []
    for message in (
        Indicate(IndicatePattern.READY, 0),
        StatusRequest(),
        Indicate(IndicatePattern.READY, 0),
    ):
        restarted.send(message)
        delivered += [d.message for d in deliver(restarted, device)]
        deliver(device, restarted)
    assert delivered == [StatusRequest(), Indicate(IndicatePattern.READY, 0)]
    assert restarted.pending == 0


def test_seq_numbers_wrap_over_a_long_session() -> None:
    device, host = pair()
    device.start_session(HELLO)
    seqs = []
    for counter in range(1, 600):
        for delivery in deliver(device, host):
            seqs.append(delivery.handle.seq)
            host.ack(delivery.handle)
        deliver(host, device)
        device.send(card(counter))
    assert 0 not in seqs
    assert seqs[:3] == [1, 2, 3]
    assert seqs[254:257] == [255, 1, 2]


# --- fuzzing -----------------------------------------------------------------------------


@settings(max_examples=300)
@given(st.lists(st.binary(max_size=300), max_size=8))
def test_random_bytes_never_raise(chunks: list[bytes]) -> None:
    host, device = HostLink(), DeviceLink()
    for chunk in chunks:
        for delivery in host.receive_data(chunk):
            host.ack(delivery.handle)
        device.receive_data(chunk)
    host.poll(1.0)
    device.poll(1.0)


@settings(max_examples=200)
@given(st.data())
def test_valid_stream_cut_and_spoiled_anywhere_never_raises(data: st.DataObject) -> None:
    device = DeviceLink()
    device.start_session(HELLO)
    stream = bytearray(device.bytes_to_send())
    for counter in range(1, 6):
        stream += encode_frame(counter + 1, MessageType.CARD, card(counter).encode_payload())
    for _ in range(data.draw(st.integers(0, 6))):
        position = data.draw(st.integers(0, len(stream) - 1))
        stream[position] = data.draw(st.integers(0, 255))
    host = HostLink()
    position = 0
    while position < len(stream):
        size = data.draw(st.integers(1, 40))
        for delivery in host.receive_data(bytes(stream[position : position + size])):
            host.ack(delivery.handle)
        position += size


# --- framing at its limits ------------------------------------------------------------------


def full_size_frame() -> tuple[bytes, bytes]:
    """A HEARTBEAT-typed frame whose COBS form is exactly 255 bytes, the most allowed: a body
    of 254 bytes without a zero (header, 249 payload bytes, a CRC without a zero byte)."""
    for last in range(1, 256):
        payload = bytes([0x55] * 248 + [last])
        body = bytes([1, 9, MessageType.HEARTBEAT]) + payload
        if 0 not in crc16_ccitt_false(body).to_bytes(2, "big"):
            return payload, encode_frame(9, MessageType.HEARTBEAT, payload)
    raise AssertionError("no CRC without a zero byte")  # pragma: no cover


def test_cobs_a_full_block_followed_by_a_zero_keeps_the_zero() -> None:
    # 254 non-zero bytes fill a block (code 0xFF: no zero after it), so the zero that
    # follows needs a block of its own (0x01) before the next data.
    raw = bytes(range(1, 255)) + b"\x00\x01"
    encoded = b"\xff" + bytes(range(1, 255)) + b"\x01\x02\x01"
    assert cobs_encode(raw) == encoded
    assert cobs_decode(encoded) == raw


def test_cobs_errors_say_where() -> None:
    with pytest.raises(CobsError, match=r"^zero byte inside a COBS frame at 2$"):
        cobs_decode(b"\x03\x11\x00\x01\x00")
    with pytest.raises(CobsError, match=r"^COBS block at 0 runs 2 bytes past the end$"):
        cobs_decode(b"\x05\x11\x22")


def test_decode_frame_refuses_a_zero_inside() -> None:
    with pytest.raises(CobsError, match=r"^zero byte inside a COBS frame at 2$"):
        decode_frame(b"\x02\x11\x00")


def test_a_frame_of_exactly_255_encoded_bytes_is_allowed_and_one_more_is_not() -> None:
    payload, frame = full_size_frame()
    assert len(frame) == 255 + 1  # and its delimiter
    decoded = decode_frame(frame[:-1])
    assert (decoded.seq, decoded.message_type, decoded.payload) == (
        9,
        MessageType.HEARTBEAT,
        payload,
    )
    with pytest.raises(FrameTooLongError, match=r"^encoded frame is 257 bytes, at most 255"):
        encode_frame(9, MessageType.HEARTBEAT, payload + b"\x55")
    with pytest.raises(FrameTooLongError, match=r"^encoded frame is 256 bytes, at most 255"):
        decode_frame(frame[:-1] + b"\x01")


def test_short_bodies_and_bad_crcs_are_told_apart() -> None:
    with pytest.raises(CrcError, match=r"^frame body of 2 bytes is too short to carry a CRC$"):
        decode_frame(cobs_encode(b"\xff\xff"))  # FF FF is the CRC of nothing
    good = encode_frame(1, MessageType.HEARTBEAT, b"\x00\x00\x00\x00")[:-1]
    body = bytearray(cobs_decode(good))
    body[-1] ^= 0x40
    with pytest.raises(CrcError, match=r"^CRC mismatch$"):
        decode_frame(cobs_encode(bytes(body)))


def test_a_full_size_frame_in_pieces_is_not_taken_for_an_oversize_one() -> None:
    _, frame = full_size_frame()
    host = HostLink()
    host.receive_data(frame[:-1])  # 255 bytes and no delimiter yet: still a frame
    host.receive_data(b"\x00")
    assert (host.stats.frames_in, host.stats.oversize) == (1, 0)
    host.receive_data(b"\x00" + frame[:-1])  # after a delimiter, in the same piece
    host.receive_data(b"\x00")
    assert (host.stats.frames_in, host.stats.oversize) == (2, 0)


def test_after_an_oversize_frame_the_next_frame_is_good_again() -> None:
    device, host = pair()
    device.start_session(HELLO)
    hello = device.bytes_to_send()
    host.receive_data(bytes(300 * [0x42]))  # no delimiter: discarded as it comes
    host.receive_data(b"\x00")
    assert host.stats.oversize == 1
    assert host.stats.last_error == "frame longer than 255 bytes"
    assert [d.message for d in host.receive_data(hello)] == [HELLO]
    # The tail of a piece that grows past 255 bytes is discarded too, up to its delimiter.
    host.receive_data(hello + bytes(300 * [0x42]))
    host.receive_data(b"\x00" + hello)
    assert (host.stats.oversize, host.stats.frames_in) == (2, 3)


# --- the counters and rings the watchdog and the diagnostics read ---------------------------


def test_frames_acks_and_bytes_are_counted() -> None:
    device, host = in_session()  # HELLO one way, its ACK the other
    for counter in (1, 2):
        device.send(card(counter))
        (delivery,) = deliver(device, host)
        assert host.ack(delivery.handle)
        deliver(host, device)
    assert (device.stats.frames_out, device.stats.acks_in, device.stats.frames_in) == (3, 3, 3)
    assert (host.stats.frames_in, host.stats.delivered, host.stats.acks_out) == (3, 3, 3)
    assert host.frames_received == 3
    ack_size = len(encode_frame(0, MessageType.ACK, b"\x01"))
    assert host.stats.bytes_out == device.stats.bytes_in == 3 * ack_size
    assert device.stats.bytes_out == host.stats.bytes_in
    snapshot = host.stats.as_dict()
    assert snapshot["delivered"] == 3
    assert snapshot["last_error"] is None
    assert set(snapshot) >= {"frames_in", "acks_out", "naks_out", "retransmits", "link_downs"}


def test_naks_out_and_what_broke_are_counted_and_kept() -> None:
    host = HostLink(LinkConfig(history=8))
    good = encode_frame(2, MessageType.HEARTBEAT, b"\x00\x00\x00\x00")
    body = bytearray(cobs_decode(good[:-1]))
    body[-1] ^= 0x01
    bad_crc = cobs_encode(bytes(body))
    bad_cobs = b"\x09\x01\x02"
    for _ in range(2):
        host.receive_data(bad_crc + b"\x00" + bad_cobs + b"\x00")
        host.receive_data(bytes(300 * [7]) + b"\x00")
    stats = host.stats
    assert (stats.crc_errors, stats.cobs_errors, stats.oversize, stats.naks_out) == (2, 2, 2, 6)
    assert host.bytes_to_send() == encode_frame(0, MessageType.NAK, b"") * 6
    assert stats.frames_in == 0
    assert list(host.recent_errors)[:2] == [
        ("CRC mismatch", bad_crc),
        ("COBS block at 0 runs 6 bytes past the end", bad_cobs),
    ]
    assert stats.last_error == "encoded frame is 300 bytes, at most 255 allowed"


def test_naks_in_resend_the_frame_in_flight_each_time() -> None:
    device = DeviceLink()
    device.start_session(HELLO)
    hello = device.bytes_to_send()
    nak = encode_frame(0, MessageType.NAK, b"")
    device.receive_data(nak + nak)
    assert device.bytes_to_send() == hello + hello
    assert (device.stats.naks_in, device.stats.retransmits, device.stats.frames_in) == (2, 2, 2)


def test_bad_versions_seq_zero_and_bad_acks_are_counted_with_what_was_received() -> None:
    host = HostLink()
    body = bytes([2, 5, MessageType.HEARTBEAT, 0, 0, 0, 0])
    other_version = cobs_encode(body + crc16_ccitt_false(body).to_bytes(2, "big"))
    seq_zero = encode_frame(0, MessageType.CARD, card(1).encode_payload())
    long_ack = encode_frame(0, MessageType.ACK, b"\x01\x02")
    for _ in range(2):
        assert host.receive_data(other_version + b"\x00" + seq_zero + long_ack) == []
    stats = host.stats
    assert (stats.bad_version, stats.malformed, stats.acks_in, stats.frames_in) == (2, 4, 2, 4)
    assert host.bytes_to_send() == b""  # none of them is answered
    assert list(host.recent_errors)[:3] == [
        ("frame version 2, expected 1", other_version),
        ("reliable frame type 0x10 with seq 0", seq_zero[:-1]),
        ("ACK payload of 2 bytes", long_ack[:-1]),
    ]


def test_a_malformed_frame_is_acked_once_and_its_resend_acked_again() -> None:
    host = HostLink()
    bad = encode_frame(7, MessageType.CARD, bytes([1, 0, 0, 0, 0, 1, 14, 0]))  # rank 14
    host.receive_data(bad)
    host.receive_data(bad)  # the ACK was lost: the device resends it
    assert host.session_state().last_seq == 7
    assert host.bytes_to_send() == encode_frame(0, MessageType.ACK, b"\x07") * 2
    assert (host.stats.malformed, host.stats.duplicates) == (2, 0)
    # a malformed frame whose seq still awaits the application's store is not ACKed
    device, host = in_session()
    device.send(card(1))
    (delivery,) = deliver(device, host)
    host.receive_data(encode_frame(delivery.handle.seq, MessageType.CARD, b"\x01"))
    assert host.bytes_to_send() == b""
    assert host.ack(delivery.handle)


def test_the_recent_ring_keeps_frames_both_ways_up_to_its_size() -> None:
    device, host = pair(LinkConfig(history=2))
    device.start_session(HELLO)
    hello = device.bytes_to_send()
    host.receive_data(hello)
    assert list(device.recent) == [("out", hello)]
    assert list(host.recent) == [("in", hello[:-1])]
    device.receive_data(encode_frame(0, MessageType.ACK, b"\x01"))
    device.send(card(1))
    assert [way for way, _ in device.recent] == ["in", "out"]  # the oldest fell out
    for _ in range(3):
        host.receive_data(b"\x09\x00")
    assert len(host.recent_errors) == 2
    quiet = HostLink(LinkConfig(history=0))
    quiet.receive_data(hello + b"\x09\x00")
    assert (list(quiet.recent), list(quiet.recent_errors)) == ([], [])
    assert quiet.stats.last_error is not None  # the counters and last_error still work


def test_duplicates_and_hello_repeats_are_counted() -> None:
    device, host = in_session()
    hello = encode_frame(1, MessageType.HELLO, HELLO.encode_payload())
    host.receive_data(hello + hello)
    assert host.stats.hello_repeats == 2
    device.send(card(1))
    frame = device.bytes_to_send()
    (delivery,) = host.receive_data(frame)
    host.receive_data(frame + frame)  # not stored yet: neither delivered nor ACKed
    assert host.stats.duplicates == 2
    host.ack(delivery.handle)
    host.receive_data(frame)  # stored: ACKed again
    assert (host.stats.duplicates, host.stats.delivered) == (3, 2)


def test_the_roles_and_their_configuration() -> None:
    config = LinkConfig(resend_after=1.5, max_resends=3, history=4, max_awaiting=2)
    host, device = HostLink(config), DeviceLink(config)
    assert (host.role, host.auto_ack, host.config) == (Role.HOST, False, config)
    assert (device.role, device.auto_ack, device.config) == (Role.DEVICE, True, config)
    assert HostLink().config == LinkConfig()


# --- acknowledging, releasing and restoring -------------------------------------------------


def test_ack_of_a_stale_or_unknown_handle_sends_nothing() -> None:
    device, host = in_session()
    device.send(card(1))
    (first,) = deliver(device, host)
    assert host.ack(first.handle)
    assert host.ack(first.handle)  # the last accepted again: ACKed again (a lost ACK)
    assert host.bytes_to_send() == encode_frame(0, MessageType.ACK, bytes([first.handle.seq])) * 2
    stale = AckHandle(first.handle.boot_id, first.handle.seq - 1)
    assert not host.ack(stale)  # accepted before the last one: nothing to say
    assert not host.ack(AckHandle(first.handle.boot_id, 200))  # never delivered
    assert not host.ack(AckHandle(0x4321, first.handle.seq))  # another session
    assert host.bytes_to_send() == b""
    assert host.session_state() == first.handle.session_after


def test_release_of_an_unknown_handle_changes_nothing() -> None:
    device, host = in_session()
    device.send(card(1))
    (delivery,) = deliver(device, host)
    host.release(delivery.handle)
    host.release(delivery.handle)  # twice: no error
    host.release(AckHandle(0x4321, 1))  # another session: ignored
    assert not host.ack(delivery.handle)
    assert host.session_state().last_seq == 1  # the HELLO's, not the released card's


def test_too_many_unacked_deliveries_drop_the_oldest() -> None:
    device, host = pair(LinkConfig(max_awaiting=2))
    device.start_session(HELLO)
    handles = []
    for counter in range(1, 4):
        handles += [d.handle for d in deliver(device, host)]
        device.receive_data(encode_frame(0, MessageType.ACK, bytes([counter])))  # as if stored
        device.send(card(counter))
    assert len(handles) == 3
    assert not host.ack(handles[0])  # the oldest was dropped when the third came
    assert host.ack(handles[1])
    assert host.ack(handles[2])
    keep_two = HostLink(LinkConfig(max_awaiting=2))
    device = DeviceLink()
    device.start_session(HELLO)
    first = deliver(device, keep_two)
    device.receive_data(encode_frame(0, MessageType.ACK, b"\x01"))
    device.send(card(1))
    second = deliver(device, keep_two)
    assert keep_two.ack(first[0].handle)  # two awaiting is within max_awaiting=2
    assert keep_two.ack(second[0].handle)


def test_session_state_round_trips_and_its_bounds() -> None:
    state = SessionState(0xFFFFFFFF, 255)
    assert state.to_dict() == {"boot_id": 0xFFFFFFFF, "last_seq": 255}
    assert SessionState.from_dict(state.to_dict()) == state
    assert SessionState.from_dict({"boot_id": 0, "last_seq": 0}) == SessionState(0, 0)
    assert SessionState.from_dict({"boot_id": 7}) == SessionState(7, 0)  # no seq accepted yet
    assert SessionState.from_dict({"boot_id": "7", "last_seq": "3"}) == SessionState(7, 3)
    assert SessionState.from_dict({}) == SessionState()
    with pytest.raises(ValueError, match="boot_id"):
        SessionState.from_dict({"boot_id": 0x100000000})
    host = HostLink()
    host.restore_session(SessionState(0x1234, 9))
    assert host.session_state() == SessionState(0x1234, 9)


# --- timers ---------------------------------------------------------------------------------


def test_next_timer_says_when_poll_has_work() -> None:
    device = DeviceLink(LinkConfig(resend_after=0.5))
    assert device.next_timer() is None  # nothing in flight
    device.start_session(HELLO)
    assert device.next_timer() == 0.0  # written before any poll: stamp it at once
    device.poll(4.0)
    assert device.next_timer() == 4.5
    device.receive_data(encode_frame(0, MessageType.ACK, b"\x01"))
    assert device.next_timer() is None
    device.poll(6.0)
    device.send(card(1))
    assert device.next_timer() == 6.0  # written since the poll at 6.0: due at once
    device.poll(6.25)
    assert device.next_timer() == 6.75


def test_resends_come_every_resend_after_seconds_and_end_in_link_down() -> None:
    device = DeviceLink(LinkConfig(resend_after=0.5, max_resends=2))
    device.start_session(HELLO)
    hello = device.bytes_to_send()
    device.poll(0.0)
    device.poll(0.25)
    assert device.bytes_to_send() == b""
    device.poll(0.5)  # exactly resend_after later
    assert device.bytes_to_send() == hello
    device.poll(0.75)
    assert device.bytes_to_send() == b""
    device.poll(1.0)  # timed from the resend, not from the first send
    assert device.bytes_to_send() == hello
    assert device.next_timer() == 1.5
    device.poll(1.5)  # max_resends reached: the link is down
    assert device.is_up is False
    assert device.next_timer() is None
    assert device.stats.last_error == "no ACK for seq 1 after 2 resends: link down"
    assert (device.stats.retransmits, device.stats.link_downs) == (2, 1)
    device.poll(9.0)
    assert device.bytes_to_send() == b""
    assert device.stats.link_downs == 1  # counted once per link-down
    device.start_session(HELLO)  # the next session: its HELLO, a new budget of resends
    assert device.is_up is True
    device.poll(10.0)
    device.poll(10.5)
    device.poll(11.0)
    device.poll(11.5)
    assert device.stats.link_downs == 2
    assert device.stats.retransmits == 4


def test_a_new_session_resends_the_frame_in_flight_with_a_new_budget() -> None:
    # The host's command is in flight when the device reboots: the HELLO of the new session
    # brings it again at once, with max_resends afresh and its timer restarted.
    _, host = in_session()
    host.config = LinkConfig(resend_after=0.5, max_resends=2)
    host.send(Indicate(IndicatePattern.BURN, 2))
    command = host.bytes_to_send()
    host.poll(0.0)
    host.poll(0.5)
    assert host.bytes_to_send() == command  # one resend spent
    rebooted = DeviceLink()
    rebooted.start_session(Hello(DeviceKind.OPTICAL_SHOE, 0x9999))
    (hello,) = deliver(rebooted, host)
    assert host.bytes_to_send() == command  # resent at once for the new session
    assert host.stats.retransmits == 2
    host.ack(hello.handle)
    host.bytes_to_send()
    host.poll(0.75)  # the timer starts from this poll: no resend yet
    assert host.bytes_to_send() == b""
    for now in (1.25, 1.75):
        host.poll(now)
        assert host.bytes_to_send() == command
    assert host.is_up  # two resends in the new session: within the budget
    host.poll(2.25)
    assert host.is_up is False


def test_a_repeated_hello_is_acked_and_the_frame_in_flight_resent_after_it() -> None:
    device, host = in_session()
    host.send(Indicate(IndicatePattern.READY, 0))
    command = host.bytes_to_send()
    device.start_session(HELLO)  # reconnect without reboot
    assert deliver(device, host) == []
    ack = encode_frame(0, MessageType.ACK, b"\x02")  # the repeated HELLO's seq
    assert host.bytes_to_send() == ack + command  # the ACK is not lost behind the resend
    assert host.stats.retransmits == 1


# --- device sessions ----------------------------------------------------------------------


def test_a_device_reboot_forgets_the_hosts_last_seq_and_a_reconnect_keeps_it() -> None:
    device, host = in_session()
    host.send(Indicate(IndicatePattern.READY, 0))
    assert [d.message for d in deliver(host, device)] == [Indicate(IndicatePattern.READY, 0)]
    again = encode_frame(
        1, MessageType.INDICATE, Indicate(IndicatePattern.READY, 0).encode_payload()
    )
    device.start_session(HELLO)  # reconnect: the same boot_id
    device.bytes_to_send()
    assert device.receive_data(again) == []  # still a duplicate of seq 1
    device.start_session(HELLO)
    assert device.receive_data(again) == []
    device.start_session(Hello(DeviceKind.OPTICAL_SHOE, 0x2222))  # reboot: new boot_id
    assert [d.message for d in device.receive_data(again)] == [Indicate(IndicatePattern.READY, 0)]


def test_start_session_keeps_the_frame_in_flight_but_not_an_old_hello() -> None:
    device = DeviceLink()
    device.start_session(HELLO)
    device.bytes_to_send()  # HELLO seq 1 in flight, never ACKed
    device.start_session(HELLO)
    host = HostLink()
    (hello,) = deliver(device, host)
    host.ack(hello.handle)
    deliver(host, device)
    assert device.pending == 0  # the first HELLO was replaced, not kept
    device.send(card(1))
    card_frame = device.bytes_to_send()  # CARD seq 3 in flight
    device.poll(0.0)
    device.poll(0.25)
    assert device.bytes_to_send() == card_frame  # resent once by the timer
    device.start_session(HELLO)
    hello_again = device.bytes_to_send()
    assert decode_frame(hello_again[:-1]).message_type == MessageType.HELLO
    host.receive_data(hello_again)  # the same boot_id: ACKed, not delivered
    deliver(host, device)
    assert device.bytes_to_send() == card_frame  # the kept CARD, identical, seq and all
    assert device.stats.retransmits == 2  # the timer's resend and the kept frame's
    assert device.pending == 1


# --- back to back through impaired wires ---------------------------------------------------


@dataclass
class Impairments:
    lose_writes: float = 0.0  # share of writes (frames as the link flushes them) lost
    drop_bytes: float = 0.0  # share of single bytes lost
    flip_bytes: float = 0.0  # share of bytes with one bit flipped
    double_frames: float = 0.0  # share of frames delivered twice
    delay: float = 0.0
    jitter: float = 0.0
    chunk: int | None = None  # deliver in pieces of this size (1: byte at a time)


class Wire:
    """One direction of a fake serial line with simulated time."""

    def __init__(self, rng: random.Random, impairments: Impairments) -> None:
        self.rng = rng
        self.imp = impairments
        self.queue: list[tuple[float, bytes]] = []
        self.last_due = 0.0

    def put(self, data: bytes, now: float) -> None:
        imp, rng = self.imp, self.rng
        if not data or (imp.lose_writes and rng.random() < imp.lose_writes):
            return
        if imp.double_frames:
            frames = data.split(b"\x00")[:-1]
            data = b"".join(
                frame + b"\x00" + (frame + b"\x00" if rng.random() < imp.double_frames else b"")
                for frame in frames
            )
        out = bytearray()
        for byte in data:
            if imp.drop_bytes and rng.random() < imp.drop_bytes:
                continue
            if imp.flip_bytes and rng.random() < imp.flip_bytes:
                out.append(byte ^ (1 << rng.randrange(8)))
            else:
                out.append(byte)
        due = max(self.last_due, now + imp.delay + rng.random() * imp.jitter)  # a line keeps order
        self.last_due = due
        self.queue.append((due, bytes(out)))

    def take(self, now: float) -> list[bytes]:
        pieces: list[bytes] = []
        while self.queue and self.queue[0][0] <= now:
            _, data = self.queue.pop(0)
            size = self.imp.chunk or len(data) or 1
            pieces.extend(data[i : i + size] for i in range(0, len(data), size))
        return pieces


@dataclass
class Run:
    stored: list[object]
    host: HostLink
    device: DeviceLink
    simulated_seconds: float


def run_shoe(
    impairments: Impairments,
    seed: int,
    *,
    cards: int = SHOE_CARDS,
    store_delay_steps: int = 0,
    restart_host_every: int = 0,
    limit: float = 20_000.0,
) -> Run:
    """Deal ``cards`` through impaired wires; the host stores then ACKs (optionally late)."""
    rng = random.Random(seed)
    up, down = Wire(rng, impairments), Wire(rng, impairments)
    device, host = DeviceLink(), HostLink()
    device.start_session(HELLO)
    device.send(Shoe(ShoeState.LOADED))
    for counter in range(1, cards + 1):
        device.send(card(counter))
    stored: list[object] = []
    journal = SessionState()
    to_ack: list[tuple[int, AckHandle]] = []
    now, step, down_since = 0.0, 0, None
    while sum(isinstance(m, Card) for m in stored) < cards and now < limit:
        step += 1
        now += 0.01
        if restart_host_every and step % restart_host_every == 0:
            host = HostLink()  # the host process dies; a new one reads the journal
            host.restore_session(journal)
            to_ack.clear()
        device.poll(now)
        host.poll(now)
        if not device.is_up:  # the device's own recovery: a new session after a pause
            down_since = down_since if down_since is not None else now
            if now - down_since >= 1.0:
                device.start_session(HELLO)
                down_since = None
        up.put(device.bytes_to_send(), now)
        for piece in up.take(now):
            for delivery in host.receive_data(piece):
                stored.append(delivery.message)  # one transaction: message and session
                journal = delivery.handle.session_after
                to_ack.append((step + store_delay_steps, delivery.handle))
        while to_ack and to_ack[0][0] <= step:
            host.ack(to_ack.pop(0)[1])
        down.put(host.bytes_to_send(), now)
        for piece in down.take(now):
            device.receive_data(piece)
    return Run(stored, host, device, now)


def card_counters(run: Run) -> list[int]:
    return [m.counter for m in run.stored if isinstance(m, Card)]


IMPAIRMENTS = {
    "clean": Impairments(),
    "byte_at_a_time": Impairments(chunk=1),
    "lose_20pc_of_writes_byte_at_a_time": Impairments(lose_writes=0.2, chunk=1),
    "drop_2pc_of_bytes": Impairments(drop_bytes=0.02),
    "flip_bits": Impairments(flip_bytes=0.01, chunk=7),
    "double_frames": Impairments(double_frames=0.3),
    "delay_and_jitter": Impairments(delay=0.05, jitter=0.15),
    "everything": Impairments(
        lose_writes=0.2,
        drop_bytes=0.01,
        flip_bytes=0.005,
        double_frames=0.2,
        delay=0.03,
        jitter=0.1,
        chunk=3,
    ),
}


@pytest.mark.parametrize("name", list(IMPAIRMENTS))
def test_an_eight_deck_shoe_arrives_once_each_in_order(name: str) -> None:
    run = run_shoe(IMPAIRMENTS[name], seed=sum(map(ord, name)))
    assert card_counters(run) == list(range(1, SHOE_CARDS + 1))
    assert run.stored[0] == HELLO
    assert run.stored.count(Shoe(ShoeState.LOADED)) == 1


def test_lossy_line_really_exercised_recovery() -> None:
    """Guard against a harness that silently stopped impairing anything."""
    run = run_shoe(IMPAIRMENTS["everything"], seed=7)
    assert card_counters(run) == list(range(1, SHOE_CARDS + 1))
    assert run.device.stats.retransmits > 100
    assert run.host.stats.duplicates > 10
    assert run.host.stats.crc_errors + run.host.stats.cobs_errors > 10


def test_slow_storage_never_causes_a_double_delivery() -> None:
    # the journal takes 35 steps (350 ms) to store: the device resends meanwhile
    run = run_shoe(Impairments(), seed=3, cards=60, store_delay_steps=35)
    assert card_counters(run) == list(range(1, 61))
    assert run.host.stats.duplicates > 0


def test_host_restarts_with_restored_session_lose_and_double_nothing() -> None:
    run = run_shoe(
        Impairments(lose_writes=0.2), seed=11, cards=120, store_delay_steps=3, restart_host_every=7
    )
    assert card_counters(run) == list(range(1, 121))


def test_heartbeats_flow_when_idle() -> None:
    device, host = pair()
    device.start_session(HELLO)
    device.send(Heartbeat(1000))
    received = []
    for _ in range(3):
        for delivery in deliver(device, host):
            received.append(delivery.message)
            host.ack(delivery.handle)
        deliver(host, device)
    assert received == [HELLO, Heartbeat(1000)]
