"""The line-code adapter: codes, line ends, bad lines, bounds, fuzzing and a real pty."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shoe_testkit.device_kit import feed, feed_in_random_chunks, read_pty

from drivers.adapters import GARBLED, CardRead, GarbledRead, Reading
from drivers.adapters.linecode import MAX_LINE, LineCodeAdapter, encode_card
from drivers.sim import ascii as sim
from shoe_controller.vocab.cards import Card, full_deck, parse_card
from shoe_controller.vocab.inputs import CardDrawn, DeviceConnected, DeviceFault

cards = st.sampled_from(full_deck())
terminators = st.sampled_from([b"\r\n", b"\r", b"\n", b"\n\n", b"\r\n\r\n"])


def decode(data: bytes, *, step: int = 0) -> tuple[list[Reading], LineCodeAdapter]:
    adapter = LineCodeAdapter()
    return feed(adapter, data, step=step), adapter


@pytest.mark.parametrize(
    ("line", "card"),
    [
        (b"A01", "AS"),
        (b"A13", "KS"),
        (b"H12", "QH"),
        (b"C10", "TC"),
        (b"D11", "JD"),
        (b"h05", "5H"),
        (b" D07 ", "7D"),
        (b"\x00C02\x00", "2C"),
    ],
)
def test_codes_name_cards(line: bytes, card: str) -> None:
    adapter = LineCodeAdapter(device="shoe")
    [reading] = adapter.receive_data(line + b"\r\n")
    assert reading.card == parse_card(card)
    assert adapter.translate(reading, 2.0) == [
        CardDrawn(at=2.0, device="shoe", card=parse_card(card))
    ]


def test_encode_is_the_inverse_of_decode() -> None:
    data = b"".join(encode_card(card) for card in full_deck())
    readings, _ = decode(data)
    assert [r.card for r in readings] == list(full_deck())
    assert encode_card(parse_card("QH")) == b"H12\r\n"
    assert encode_card(parse_card("AS"), b"\r") == b"A01\r"


def test_cr_lf_in_any_mix_and_split_anywhere() -> None:
    data = b"A01\r\nH02\rC03\nD04\r\n\r\n\nA05\r"
    whole, _ = decode(data)
    assert [str(r.card) for r in whole] == ["AS", "2H", "3C", "4D", "5S"]
    for step in range(1, 8):
        assert decode(data, step=step)[0] == whole


@pytest.mark.parametrize("line", [b"A00", b"A14", b"X05", b"A1", b"A011", b"QH", b"12", b"Z"])
def test_bad_lines_are_reported(line: bytes) -> None:
    adapter = LineCodeAdapter()
    garbled, card = adapter.receive_data(line + b"\r\nH01\r\n")
    assert garbled == GarbledRead(line.decode(), "not a line code")
    assert card.card == parse_card("AH")
    [fault] = adapter.translate(garbled, 1.0)
    assert isinstance(fault, DeviceFault)
    assert fault.code == GARBLED
    assert line.decode() in fault.text
    assert adapter.stats.garbled == 1


def test_lines_of_pure_noise_are_counted() -> None:
    readings, adapter = decode(b"\x00\r\n~#\r\n\xff\xfe\r\n   \r\nA01\r\n")
    assert [type(r) for r in readings] == [CardRead]
    assert adapter.stats.noise_bytes == 4
    assert adapter.stats.garbled == 0


def test_an_overlong_line_is_reported_once_and_bounded() -> None:
    adapter = LineCodeAdapter()
    readings = []
    for _ in range(100):
        readings += adapter.receive_data(b"A" * 50)
        assert adapter.buffered <= MAX_LINE
    readings += adapter.receive_data(b"\r\nD13\r\n")
    assert [type(r) for r in readings] == [GarbledRead, CardRead]
    assert readings[0].reason == "line too long"
    assert readings[1].card == parse_card("KD")


def test_a_line_that_never_ends_is_reported_not_guessed() -> None:
    adapter = LineCodeAdapter(stale_after=0.5)
    assert adapter.receive_data(b"H12") == []
    assert adapter.poll(1.0) == []
    assert adapter.poll(1.4) == []
    [stale] = adapter.poll(1.5)
    assert stale == GarbledRead("H12", "line never ended")
    assert adapter.buffered == 0
    assert adapter.receive_data(b"\r\n") == []


def test_connected_and_one_way() -> None:
    adapter = LineCodeAdapter(kind="optical")
    [connected] = adapter.connected(3.0)
    assert connected == DeviceConnected(
        at=3.0, device="scanner", kind="optical", vendor="line-code", model="ASCII"
    )
    adapter.receive_data(b"A01\r\n")
    assert adapter.bytes_to_send() == b""


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 32), st.floats(0, 100))
def test_random_bytes_never_raise(data: bytes, step: int, now: float) -> None:
    adapter = LineCodeAdapter()
    for start in range(0, len(data), step):
        for reading in adapter.receive_data(data[start : start + step]):
            assert adapter.translate(reading, now)
        assert adapter.buffered <= MAX_LINE
    adapter.poll(now)
    adapter.poll(now + 2)
    assert adapter.buffered == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(cards, terminators)), st.randoms(use_true_random=False))
def test_any_chunking_delivers_every_card(
    steps: list[tuple[Card, bytes]], rng: random.Random
) -> None:
    data = b"".join(encode_card(card, end) for card, end in steps)
    adapter = LineCodeAdapter()
    readings = feed_in_random_chunks(adapter, data, rng, largest=9)
    assert [r.card for r in readings] == [card for card, _ in steps]


def test_a_shoe_over_a_real_pty_from_another_process() -> None:
    """Two shuffled decks, mixed line ends, chunked writes: every card in order."""
    expected = sim.shuffled_shoe(2, seed=23)
    with sim.spawn(
        "--protocol", "linecode", "--decks", "2", "--seed", "23", "--pace", "0",
        "--chunk-max", "2", "--chunk-gap", "0.0002", "--end", "mixed", "--noise", "0.3",
    ) as running:  # fmt: skip
        adapter = LineCodeAdapter()
        readings = read_pty(running.path, adapter, len(expected))
    assert [r.card for r in readings] == expected
    assert adapter.stats.garbled == 0


def test_a_lost_connection_reports_the_line_in_progress() -> None:
    """`H1` cut off by an unplug must not swallow the next connection's `A01`."""
    adapter = LineCodeAdapter()
    assert adapter.receive_data(b"H1") == []
    adapter.connection_lost()
    assert adapter.receive_data(b"A01\r\n") == [
        GarbledRead("H1", "connection lost mid-line"),
        CardRead(parse_card("AS"), False, "A01"),
    ]
    adapter.connection_lost()  # nothing in progress: nothing to report
    assert adapter.poll(1.0) == []
