"""Shoe link messages: exact payload bytes per docs/spec-protocol.md, round trips, malformed
payloads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shoe_testkit.device_kit import encode_message

from drivers.wire.fields import is_reliable
from drivers.wire.messages import (
    MESSAGE_CLASSES,
    Ack,
    Button,
    ButtonId,
    Card,
    CardEncoding,
    CardFlags,
    CutCard,
    DeviceKind,
    Fault,
    FaultCleared,
    Heartbeat,
    Hello,
    Indicate,
    IndicatePattern,
    Message,
    MessageError,
    MessageType,
    Nak,
    Severity,
    Shoe,
    ShoeState,
    Shuffle,
    ShuffleDone,
    ShuffleResult,
    ShuffleStarted,
    StatusRequest,
    UnknownMessageTypeError,
    decode_message,
)
from shoe_controller.vocab.protocol import FaultCode

COUNTS = tuple(range(52))

SAMPLES: list[Message] = [
    Hello(DeviceKind.RFID_SHOE, 0xDEADBEEF, "Acme", "RS-8", "SN 001", "2.1.0"),
    Hello(DeviceKind.SHUFFLER_DEALER, 0, "", "", "", ""),
    Heartbeat(123456),
    Card(1, CardFlags.NONE, 1, 0),
    Card(416, CardFlags.FACE_UP | CardFlags.MULTI, 13, 3),
    Card(7, CardFlags.LOW_CONFIDENCE, uid=bytes.fromhex("04A1B2C3D4E5F6")),
    Card(0xFFFFFFFF, uid=b"\x01\x02\x03\x04"),
    CutCard(402),
    Shoe(ShoeState.COVER_CLOSED),
    Button(ButtonId.CALL_SUPERVISOR),
    Button(ButtonId.NO_MORE_BETS),
    ShuffleStarted(9, 8),
    ShuffleDone(9, ShuffleResult.CARDS_MISSING, 8, sum(COUNTS), COUNTS),
    Fault(FaultCode.CARD_DROPPED_DURING_SHUFFLE, Severity.CRITICAL, "card fell ♠"),
    Fault(0x8123, Severity.WARNING, ""),
    FaultCleared(FaultCode.JAM),
    Ack(255),
    Nak(),
    Indicate(IndicatePattern.DEAL, 5),
    Indicate(IndicatePattern.BETS_OPEN, 0),
    StatusRequest(),
    Shuffle(8),
]


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: type(m).__name__)
def test_round_trip(message: Message) -> None:
    message_type, payload = encode_message(message)
    assert message_type == message.TYPE
    assert decode_message(message_type, payload) == message


def test_every_protocol_type_has_a_class() -> None:
    assert set(MESSAGE_CLASSES) == set(MessageType)
    assert {type(m) for m in SAMPLES} == set(MESSAGE_CLASSES.values())


def test_card_rank_suit_bytes_follow_the_table() -> None:
    # counter u32 LE, flags u8, encoding 1, rank u8, suit u8
    payload = Card(0x01020304, CardFlags.FACE_UP | CardFlags.MULTI, 12, 2).encode_payload()
    assert payload == bytes([0x04, 0x03, 0x02, 0x01, 0x05, 0x01, 12, 2])


def test_card_uid_bytes_follow_the_table() -> None:
    card = Card(5, uid=bytes.fromhex("AABBCCDD"))
    assert card.encoding is CardEncoding.UID
    assert card.encode_payload() == bytes([5, 0, 0, 0, 0, 2, 4, 0xAA, 0xBB, 0xCC, 0xDD])


def test_hello_bytes_follow_the_table() -> None:
    payload = Hello(DeviceKind.OPTICAL_SHOE, 0x11223344, "V", "", "é", "1").encode_payload()
    assert payload == bytes([1, 2, 0x44, 0x33, 0x22, 0x11, 1, ord("V"), 0, 2, 0xC3, 0xA9, 1, 0x31])


def test_shuffle_done_layout_and_index() -> None:
    counts = [8] * 52
    counts[ShuffleDone.index(13, 3)] = 7  # K♣ is the last slot
    payload = ShuffleDone(0x0A0B0C0D, ShuffleResult.OK, 8, 415, tuple(counts)).encode_payload()
    assert payload[:8] == bytes([0x0D, 0x0C, 0x0B, 0x0A, 0, 8, 415 & 0xFF, 415 >> 8])
    assert len(payload) == 60
    assert payload[-1] == 7
    assert ShuffleDone.index(1, 0) == 0


def test_fault_code_little_endian_and_vendor_codes_stay_ints() -> None:
    fault = Fault(0x0103, Severity.ERROR, "door")
    assert fault.encode_payload() == bytes([0x03, 0x01, 2, 4]) + b"door"
    decoded = decode_message(MessageType.FAULT, Fault(0x8001, Severity.WARNING).encode_payload())
    assert decoded == Fault(0x8001, Severity.WARNING)
    assert not isinstance(decoded.code, FaultCode)  # type: ignore[attr-defined]
    cleared = decode_message(MessageType.FAULT_CLEARED, b"\x01\x01")
    assert cleared == FaultCleared(FaultCode.SHUFFLER_JAM)


def test_only_ack_and_nak_are_unreliable() -> None:
    assert not is_reliable(MessageType.ACK)
    assert not is_reliable(MessageType.NAK)
    assert all(is_reliable(t) for t in MessageType if t not in (MessageType.ACK, MessageType.NAK))


@pytest.mark.parametrize(
    ("message_type", "payload", "fragment"),
    [
        (MessageType.CARD, bytes([1, 0, 0, 0, 0, 1, 1]), "too short"),
        (MessageType.CARD, bytes([1, 0, 0, 0, 0, 1, 1, 0, 9]), "8 bytes"),
        (MessageType.CARD, bytes([1, 0, 0, 0, 0, 1, 14, 0]), "rank"),
        (MessageType.CARD, bytes([1, 0, 0, 0, 0, 1, 1, 4]), "suit"),
        (MessageType.CARD, bytes([1, 0, 0, 0, 0, 3, 1, 0]), "encoding"),
        (MessageType.CARD, bytes([1, 0, 0, 0, 0, 2, 5, 1, 2, 3, 4]), "uid_len"),
        (MessageType.CARD, bytes([1, 0, 0, 0, 0, 2, 3, 1, 2, 3]), "4-10"),
        (MessageType.CARD, bytes([1, 0, 0, 0, 0, 2, 11]) + bytes(range(1, 12)), "4-10"),
        (MessageType.SHOE, bytes([5]), "shoe state"),
        (MessageType.SHOE, b"", "1 byte"),
        (MessageType.BUTTON, bytes([0]), "button"),
        (MessageType.HELLO, bytes([2, 1, 0, 0, 0, 0, 0, 0, 0, 0]), "protocol 2"),
        (MessageType.HELLO, bytes([1, 9, 0, 0, 0, 0, 0, 0, 0, 0]), "device kind"),
        (MessageType.HELLO, bytes([1, 1, 0, 0, 0, 0, 5, 65]), "too short"),
        (MessageType.HELLO, bytes([1, 1, 0, 0, 0, 0, 1, 0xFF, 0, 0, 0]), "UTF-8"),
        (MessageType.HELLO, bytes([1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 7]), "trailing"),
        (MessageType.HEARTBEAT, bytes(3), "4 bytes"),
        (MessageType.SHUFFLE_DONE, bytes(59), "60 bytes"),
        (MessageType.SHUFFLE_DONE, bytes([0, 0, 0, 0, 9]) + bytes(55), "shuffle result"),
        (MessageType.FAULT, bytes([1, 0, 4, 0]), "severity"),
        (MessageType.INDICATE, bytes([8, 0]), "indicate pattern"),
        (MessageType.BUTTON, bytes([4]), "button"),
        (MessageType.NAK, b"\x00", "empty"),
        (MessageType.STATUS_REQUEST, b"\x00", "empty"),
    ],
)
def test_malformed_payloads_raise_message_error(
    message_type: int, payload: bytes, fragment: str
) -> None:
    with pytest.raises(MessageError, match=fragment):
        decode_message(message_type, payload)


def test_unknown_type_is_its_own_error() -> None:
    with pytest.raises(UnknownMessageTypeError):
        decode_message(0x7F, b"")
    assert issubclass(UnknownMessageTypeError, MessageError)


def test_values_that_do_not_fit_are_refused_when_encoding() -> None:
    with pytest.raises(MessageError):
        Heartbeat(1 << 32).encode_payload()
    with pytest.raises(MessageError, match="255"):
        Hello(DeviceKind.RFID_SHOE, 1, vendor="x" * 256).encode_payload()
    with pytest.raises(MessageError):
        Card(1)
    with pytest.raises(MessageError):
        Card(1, rank=1, suit=0, uid=b"1234")
    with pytest.raises(MessageError):
        ShuffleDone(1, ShuffleResult.OK, 8, 0, (8,) * 51)


@given(st.integers(0, 255), st.binary(max_size=80))
def test_decoding_random_payloads_only_ever_raises_message_error(
    message_type: int, payload: bytes
) -> None:
    try:
        message = decode_message(message_type, payload)
    except MessageError:
        return
    # whatever decodes is canonical: it encodes back to the very same bytes
    assert encode_message(message) == (message_type, payload)


@given(
    st.integers(0, 0xFFFFFFFF),
    st.sampled_from(list(CardFlags)),
    st.one_of(
        st.tuples(st.integers(1, 13), st.integers(0, 3)),
        st.binary(min_size=4, max_size=10),
    ),
)
def test_card_round_trip_property(counter: int, flags: CardFlags, identity: object) -> None:
    if isinstance(identity, bytes):
        card = Card(counter, flags, uid=identity)
    else:
        rank, suit = identity  # type: ignore[misc]
        card = Card(counter, flags, rank, suit)
    assert decode_message(*encode_message(card)) == card


def test_card_with_undefined_flag_bits_keeps_the_card() -> None:
    # Bit 3 is not defined by docs/spec-protocol.md: the card must survive, its known flags too.
    card = decode_message(MessageType.CARD, bytes([7, 0, 0, 0, 0b1001, 1, 12, 1]))
    assert card.counter == 7
    assert card.flags == CardFlags.FACE_UP
    assert (card.rank, card.suit) == (12, 1)
