"""The Beetek ASCII adapter: messages, chunking, noise, garbled text, bounds, and a real pty."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shoe_testkit.device_kit import feed, feed_in_random_chunks, read_pty

from drivers.adapters import GARBLED, AlarmRead, CardRead, GarbledRead, Reading
from drivers.adapters.beetek import (
    ALARM_BASE,
    MAX_PENDING,
    WARNING_BASE,
    BeetekAdapter,
    encode_alarm,
    encode_card,
    encode_unreadable,
    encode_warning,
)
from drivers.sim import ascii as sim
from shoe_controller.vocab.cards import Card, full_deck, parse_card
from shoe_controller.vocab.inputs import CardDrawn, DeviceConnected, DeviceFault

cards = st.sampled_from(full_deck())
safe_noise = st.binary(max_size=12).map(
    lambda raw: bytes(sim.NOISE_ALPHABET[b % len(sim.NOISE_ALPHABET)] for b in raw)
)


def decode(data: bytes, *, step: int = 0) -> tuple[list[Reading], BeetekAdapter]:
    adapter = BeetekAdapter()
    return feed(adapter, data, step=step), adapter


@pytest.mark.parametrize(
    ("text", "card", "burn"),
    [
        (b" [Game]<Card:4S> ", "4S", False),
        (b" [Game]<Card:10H> ", "TH", False),
        (b" [Game]<Card:TD> ", "TD", False),
        (b" [Game]<Card:AC> ", "AC", False),
        (b" [Game]<Card:KH> ", "KH", False),
        (b"[Game]  <Card:QS>", "QS", False),
        (b" [Manual Burn Cards]<Card:9D> ", "9D", True),
    ],
)
def test_card_messages(text: bytes, card: str, burn: bool) -> None:
    [reading], _ = decode(text)
    assert reading == CardRead(parse_card(card), burn, text.decode().strip())


def test_unreadable_card_is_still_a_card() -> None:
    """R10.5: a card that passed unread is reported as a card without identity."""
    adapter = BeetekAdapter(device="shoe")
    [reading] = adapter.receive_data(b" [Game]<Game> ")
    assert reading == CardRead(None, False, "[Game]<Game>")
    assert adapter.translate(reading, 5.0) == [
        CardDrawn(at=5.0, device="shoe", card=None, burn=False)
    ]
    [burned] = adapter.receive_data(encode_unreadable(burn=True))
    assert burned.card is None
    assert burned.burn


@pytest.mark.parametrize(
    ("text", "code", "severity"),
    [
        (b" [Game]<Alarm:E3 Card Not Read> ", 0x0002, 2),  # docs/spec-protocol.md read failure
        (b" [GameAlarm]<Alarm:E3 Card Not Read> ", 0x0002, 2),
        (b" [GameAlarm]<Alarm:E7 Shoe Jam> ", ALARM_BASE + 7, 2),
        (b" [GameAlarm]<Alarm:E12> ", ALARM_BASE + 12, 2),
        (b" [GameAlarm]<Alarm:Cover Open> ", 0x81FF, 2),
        (b"<Alarm:E1 Low Battery>", ALARM_BASE + 1, 2),
        (b"<W0x01>", WARNING_BASE + 1, 1),
        (b"<W0xFF>", WARNING_BASE + 0xFF, 1),
        (b"[Game]<W0x0a>", WARNING_BASE + 10, 1),
    ],
)
def test_alarms_and_warnings_map_to_fault_codes(text: bytes, code: int, severity: int) -> None:
    adapter = BeetekAdapter()
    [reading] = adapter.receive_data(text)
    assert isinstance(reading, AlarmRead)
    [fault] = adapter.translate(reading, 1.0)
    assert fault == DeviceFault(
        at=1.0, device="scanner", code=code, severity=severity, text=reading.text
    )
    body = text.decode().split("<")[1].rstrip("> ").removeprefix("Alarm:")
    assert body in fault.text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (b" [Gaxe]<Card:5D> ", "[Gaxe]<Card:5D>"),  # card under an unknown tag
        (b" <Card:5D> ", "<Card:5D>"),  # card without a tag: burn or not?
        (b" [Game]Card:6S> ", "[Game]Card:6S>"),  # lost its '<'
        (b" [Game]<Card:ZZ> ", "[Game]<Card:ZZ>"),
        (b" [Game]<Card:1H> ", "[Game]<Card:1H>"),
        (b" [Game]<Hello> ", "[Game]<Hello>"),
        (b" [GameAlarm]<Game> ", "[GameAlarm]<Game>"),
        (b"<W0x100>", "<W0x100>"),
        (b" [Game] ", "[Game]"),  # a tag whose message was lost
        (b" Card:7H ", "Card:7H"),
    ],
)
def test_garbled_text_that_could_be_a_card_is_reported(text: bytes, shown: str) -> None:
    adapter = BeetekAdapter()
    readings = adapter.receive_data(text + encode_card(parse_card("2C")))
    assert readings[-1] == CardRead(parse_card("2C"), False, "[Game]<Card:2C>")
    [garbled] = readings[:-1]
    assert isinstance(garbled, GarbledRead)
    assert garbled.text == shown
    [fault] = adapter.translate(garbled, 3.0)
    assert fault.code == GARBLED
    assert fault.severity == 2
    assert shown in fault.text
    assert adapter.stats.garbled == 1
    assert adapter.stats.last_garbled.endswith(shown)


def test_a_message_cut_short_by_the_next_one() -> None:
    readings, _ = decode(b" [Game]<Card:4 [Game]<Card:5S> ")
    assert readings == [
        GarbledRead("[Game]<Card:4 ", "message cut short"),
        CardRead(parse_card("5S"), False, "[Game]<Card:5S>"),
    ]


def test_harmless_noise_is_counted_not_reported() -> None:
    data = b"\x00\x00~~#" + encode_card(parse_card("AS")) + b"12%*\r\n" + encode_warning(2)
    readings, adapter = decode(data)
    assert [type(r) for r in readings] == [CardRead, AlarmRead]
    assert adapter.stats.noise_bytes == len("~~#") + len("12%*")
    assert adapter.stats.garbled == 0


def test_byte_by_byte_gives_the_same_readings() -> None:
    data = b"".join(
        [
            encode_card(parse_card("4S")),
            b"~~",
            encode_card(parse_card("TH"), burn=True, ten="10"),
            encode_unreadable(),
            encode_alarm("E3 Card Not Read", tag="Game"),
            encode_warning(1),
            b" [Gaxe]<Card:5D> ",
            encode_card(parse_card("JC"), ten="T"),
        ]
    )
    whole, _ = decode(data)
    single, _ = decode(data, step=1)
    assert single == whole
    assert len(whole) == 7


def test_stale_partial_message_is_reported_after_the_timeout() -> None:
    adapter = BeetekAdapter(stale_after=1.0)
    assert adapter.receive_data(b" [Game]<Card:4") == []
    assert adapter.poll(10.0) == []
    assert adapter.poll(10.9) == []
    assert adapter.receive_data(b"S") == []  # still coming: the timer starts again
    assert adapter.poll(11.0) == []
    assert adapter.poll(11.5) == []
    [stale] = adapter.poll(12.0)
    assert stale == GarbledRead("[Game]<Card:4S", "message never ended")
    assert adapter.buffered == 0
    assert adapter.poll(20.0) == []
    assert adapter.receive_data(b">") == [GarbledRead(">", "not a message")]


def test_the_buffer_stays_bounded() -> None:
    adapter = BeetekAdapter()
    for _ in range(200):
        adapter.receive_data(b"x" * 997)
        assert adapter.buffered <= MAX_PENDING
    readings = adapter.receive_data(b" " + encode_card(parse_card("8H")))
    assert readings[-1].card == parse_card("8H")
    for _ in range(50):
        adapter.receive_data(b"[Game]<" + b"C" * 300)
        assert adapter.buffered <= MAX_PENDING
    assert adapter.stats.garbled >= 50


def test_connected_and_one_way() -> None:
    adapter = BeetekAdapter(device="shoe", kind="rfid")
    assert adapter.connected(1.0) == [
        DeviceConnected(at=1.0, device="shoe", kind="rfid", vendor="Beetek", model="ASCII")
    ]
    adapter.receive_data(encode_card(parse_card("AS")))
    assert adapter.bytes_to_send() == b""


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400), st.integers(1, 64), st.floats(0, 100))
def test_random_bytes_never_raise(data: bytes, step: int, now: float) -> None:
    adapter = BeetekAdapter()
    for start in range(0, len(data), step):
        for reading in adapter.receive_data(data[start : start + step]):
            assert adapter.translate(reading, now)
        assert adapter.buffered <= MAX_PENDING
    adapter.poll(now)
    for reading in adapter.poll(now + 2):
        assert isinstance(reading, GarbledRead)
    assert adapter.buffered == 0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(safe_noise, cards, st.booleans(), st.sampled_from(["10", "T"]))),
    st.randoms(use_true_random=False),
)
def test_cards_in_noise_and_any_chunking_arrive_exactly(
    steps: list[tuple[bytes, Card, bool, str]], rng: random.Random
) -> None:
    data = b"".join(
        noise + encode_card(card, burn=burn, ten=ten) for noise, card, burn, ten in steps
    )
    adapter = BeetekAdapter()
    readings = feed_in_random_chunks(adapter, data, rng, largest=40)
    assert [(r.card, r.burn) for r in readings] == [(card, burn) for _, card, burn, _ in steps]
    assert adapter.stats.garbled == 0


def test_a_shoe_over_a_real_pty_from_another_process() -> None:
    """The simulator deals a shuffled deck in chunks with noise; every card arrives in order."""
    items = sim.parse_items("burn:AS,burn:TD") + [
        sim.Item("card", card) for card in sim.shuffled_shoe(1, seed=11)
    ]
    items += sim.parse_items("unread,alarm:E3 Card Not Read,warn:1,raw: [Game]<Card:XX> ")
    args = ",".join(_item_text(item) for item in items)
    with sim.spawn(
        "--protocol", "beetek", "--cards", args, "--pace", "0", "--seed", "5",
        "--chunk-max", "7", "--chunk-gap", "0.0005", "--noise", "0.4", "--ten", "mixed",
    ) as running:  # fmt: skip
        adapter = BeetekAdapter()
        readings = read_pty(running.path, adapter, len(items))
    cards_read = [r for r in readings if isinstance(r, CardRead)]
    assert [(r.card, r.burn) for r in cards_read[:2]] == [
        (parse_card("AS"), True),
        (parse_card("TD"), True),
    ]
    assert [r.card for r in cards_read[2:54]] == [item.card for item in items[2:54]]
    assert cards_read[54].card is None
    assert [type(r) for r in readings[55:]] == [AlarmRead, AlarmRead, GarbledRead]
    assert readings[-1].text == "[Game]<Card:XX>"
    assert adapter.stats.bytes_in > 52 * 15
    assert adapter.stats.noise_bytes > 0


def _item_text(item: sim.Item) -> str:
    if item.kind == "card":
        return str(item.card)
    if item.kind == "burn":
        return f"burn:{item.card}"
    if item.kind == "unread":
        return "unread"
    return f"{item.kind}:{item.text}"


def test_a_lost_connection_reports_the_message_in_progress() -> None:
    """The next connection's text is not glued to a message cut off by the unplug."""
    adapter = BeetekAdapter()
    assert adapter.receive_data(b" [Game]<Card:4") == []
    adapter.connection_lost()
    assert adapter.buffered == 0
    readings = adapter.receive_data(encode_card(parse_card("5S")))
    assert readings == [
        GarbledRead("[Game]<Card:4", "connection lost mid-message"),
        CardRead(parse_card("5S"), False, "[Game]<Card:5S>"),
    ]
    adapter.receive_data(b"[Game]<Card:6")
    adapter.connection_lost()
    assert adapter.poll(0.0) == [GarbledRead("[Game]<Card:6", "connection lost mid-message")]
    assert adapter.poll(9.0) == []
    assert adapter.stats.garbled == 2
