"""The scanner translator: reference-protocol messages to typed inputs (cards, gaps, security)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.translate.registry import DeckRegistry
from drivers.translate.scanner import UNEXPECTED_MESSAGE, ScannerTranslator
from drivers.translate.shuffler import ShufflerTranslator
from drivers.wire import messages as m
from drivers.wire.framing import encode_frame
from drivers.wire.link import DeviceLink, HostLink
from shoe_controller.vocab.cards import full_deck, parse_card
from shoe_controller.vocab.inputs import (
    Button,
    ButtonPressed,
    CardDrawn,
    CardsMissed,
    CutCardSeen,
    DeviceConnected,
    DeviceFault,
    DeviceFaultCleared,
    ShoeState,
    ShoeStateChanged,
    input_from_json,
    input_to_json,
)
from shoe_controller.vocab.protocol import FaultCode

SAMPLE = Path(__file__).resolve().parents[2] / "config" / "decks"


SAMPLE_REGISTRY = DeckRegistry.load(SAMPLE)


@pytest.fixture
def registry() -> DeckRegistry:
    return SAMPLE_REGISTRY


def uid_of(card_text: str, registry: DeckRegistry, deck: int = 0) -> bytes:
    path = sorted(SAMPLE.glob("*.csv"))[deck]
    target = parse_card(card_text)
    for line in path.read_text().splitlines():
        if line and not line.startswith(("#", "uid_hex")):
            uid = line.split(",")[0]
            found = registry.lookup(uid)
            if found is not None and found.card == target:
                return bytes.fromhex(uid)
    raise AssertionError(card_text)


def loaded(translator: ScannerTranslator) -> None:
    translator.translate(m.Shoe(m.ShoeState.LOADED), 0.0)


def optical(counter: int, card: str, flags: m.CardFlags = m.CardFlags.NONE) -> m.Card:
    parsed = parse_card(card)
    return m.Card(counter, flags, rank=parsed.rank, suit=parsed.suit.value)


def test_optical_card_carries_rank_suit_counter_and_time() -> None:
    translator = ScannerTranslator(kind="optical")
    loaded(translator)
    [drawn] = translator.translate(optical(1, "QH"), 12.5)
    assert drawn == CardDrawn(at=12.5, device="scanner", card=parse_card("QH"), counter=1)


@pytest.mark.parametrize(
    ("flags", "fields"),
    [
        (m.CardFlags.FACE_UP, {"face_up"}),  # R4
        (m.CardFlags.LOW_CONFIDENCE, {"low_confidence"}),
        (m.CardFlags.MULTI, {"multi"}),  # R10.2
        (m.CardFlags.FACE_UP | m.CardFlags.MULTI, {"face_up", "multi"}),
        (m.KNOWN_CARD_FLAGS, {"face_up", "low_confidence", "multi"}),
    ],
)
def test_card_flags_map_to_fields(flags: m.CardFlags, fields: set[str]) -> None:
    translator = ScannerTranslator()
    [drawn] = translator.translate(optical(7, "9C", flags), 1.0)
    for name in ("face_up", "low_confidence", "multi"):
        assert getattr(drawn, name) is (name in fields)


def test_rfid_uid_maps_through_the_registry(registry: DeckRegistry) -> None:
    translator = ScannerTranslator(registry=registry, kind="rfid")
    loaded(translator)
    uid = uid_of("7S", registry, deck=3)
    [drawn] = translator.translate(m.Card(1, uid=uid), 2.0)
    assert drawn.card == parse_card("7S")
    assert drawn.uid == uid.hex().upper()
    assert not drawn.foreign
    assert not drawn.duplicate


def test_unknown_uid_is_a_foreign_card(registry: DeckRegistry) -> None:
    translator = ScannerTranslator(registry=registry, kind="rfid")
    loaded(translator)
    [drawn] = translator.translate(m.Card(1, uid=b"\xde\xad\xbe\xef"), 2.0)
    assert drawn.card is None
    assert drawn.foreign
    assert drawn.uid == "DEADBEEF"
    assert not drawn.duplicate


def test_without_a_registry_every_uid_is_foreign() -> None:
    translator = ScannerTranslator(kind="rfid")
    [drawn] = translator.translate(m.Card(1, uid=bytes(range(1, 8))), 0.0)
    assert drawn.foreign
    assert drawn.card is None


def test_second_sighting_in_a_shoe_is_a_duplicate(registry: DeckRegistry) -> None:
    translator = ScannerTranslator(registry=registry, kind="rfid")
    loaded(translator)
    uid = uid_of("KD", registry)
    other = uid_of("KD", registry, deck=1)  # the same card of another deck is no duplicate
    first = translator.translate(m.Card(1, uid=uid), 1.0)[-1]
    second = translator.translate(m.Card(2, uid=other), 2.0)[-1]
    third = translator.translate(m.Card(3, uid=uid), 3.0)[-1]
    assert (first.duplicate, second.duplicate, third.duplicate) == (False, False, True)
    assert third.card == parse_card("KD")
    foreign = b"\x01\x02\x03\x04"
    translator.translate(m.Card(4, uid=foreign), 4.0)
    again = translator.translate(m.Card(5, uid=foreign), 5.0)[-1]
    assert again.foreign
    assert again.duplicate


def test_a_new_shoe_forgets_the_sightings(registry: DeckRegistry) -> None:
    translator = ScannerTranslator(registry=registry, kind="rfid")
    loaded(translator)
    uid = uid_of("2H", registry)
    translator.translate(m.Card(1, uid=uid), 1.0)
    loaded(translator)
    [drawn] = translator.translate(m.Card(1, uid=uid), 2.0)
    assert not drawn.duplicate
    assert translator.uids_seen == 1


def test_a_whole_shoe_of_eight_decks_has_no_duplicates(registry: DeckRegistry) -> None:
    translator = ScannerTranslator(registry=registry, kind="rfid")
    loaded(translator)
    counter = 0
    drawn = []
    for path in sorted(SAMPLE.glob("*.csv")):
        for line in path.read_text().splitlines():
            if line and not line.startswith(("#", "uid_hex")):
                counter += 1
                uid = bytes.fromhex(line.split(",")[0])
                drawn += translator.translate(m.Card(counter, uid=uid), float(counter))
    assert len(drawn) == 416
    assert all(isinstance(item, CardDrawn) for item in drawn)
    assert not any(item.duplicate or item.foreign for item in drawn)
    assert Counter(item.card for item in drawn) == Counter(list(full_deck()) * 8)


def test_counter_gap_reports_missed_cards_before_the_card() -> None:
    """R10.5: a jump in the device's counter means cards went unseen."""
    translator = ScannerTranslator()
    loaded(translator)
    translator.translate(optical(1, "AS"), 1.0)
    out = translator.translate(optical(4, "2S"), 2.0)
    assert out == [
        CardsMissed(at=2.0, device="scanner", count=2, after_counter=1),
        CardDrawn(at=2.0, device="scanner", card=parse_card("2S"), counter=4),
    ]
    assert translator.translate(optical(5, "3S"), 3.0)[0].counter == 5


def test_first_card_of_a_shoe_must_be_counter_one() -> None:
    translator = ScannerTranslator()
    loaded(translator)
    out = translator.translate(optical(3, "AS"), 1.0)
    assert out[0] == CardsMissed(at=1.0, device="scanner", count=2, after_counter=0)


def test_without_a_loaded_shoe_the_first_counter_is_taken_as_is() -> None:
    translator = ScannerTranslator()
    out = translator.translate(optical(40, "AS"), 1.0)
    assert [type(item) for item in out] == [CardDrawn]
    assert isinstance(translator.translate(optical(42, "AS"), 1.0)[0], CardsMissed)


def test_a_counter_not_above_the_last_is_passed_on_for_the_table_to_judge() -> None:
    translator = ScannerTranslator()
    loaded(translator)
    translator.translate(optical(1, "AS"), 1.0)
    translator.translate(optical(2, "AS"), 1.0)
    # No host fault (nothing would ever clear it): the card as it came, the table decides.
    (card,) = translator.translate(optical(1, "5D"), 2.0)
    assert card == CardDrawn(at=2.0, device="scanner", card=parse_card("5D"), counter=1)
    assert translator.last_counter == 2  # a lie does not become the count
    (again,) = translator.translate(optical(2, "5D"), 3.0)
    assert again.counter == 2
    missed, _ = translator.translate(optical(4, "5D"), 4.0)  # the gap from the true count
    assert missed == CardsMissed(at=4.0, device="scanner", count=1, after_counter=2)


def test_a_double_read_tag_is_not_flagged_as_a_duplicate(registry: DeckRegistry) -> None:
    translator = ScannerTranslator(registry=registry, kind="rfid")
    loaded(translator)
    uid = uid_of("KD", registry)
    (first,) = translator.translate(m.Card(1, uid=uid), 1.0)
    (reread,) = translator.translate(m.Card(1, uid=uid), 1.1)
    assert (first.duplicate, reread.duplicate) == (False, False)
    (later,) = translator.translate(m.Card(2, uid=uid), 2.0)
    assert later.duplicate  # a second sighting with its own counter is a second tag


def test_cut_card_after_unseen_cards_reports_them() -> None:
    translator = ScannerTranslator()
    loaded(translator)
    translator.translate(optical(1, "AS"), 1.0)
    assert translator.translate(m.CutCard(1), 2.0) == [
        CutCardSeen(at=2.0, device="scanner", counter=1)
    ]
    missed, cut = translator.translate(m.CutCard(3), 3.0)
    assert missed == CardsMissed(at=3.0, device="scanner", count=2, after_counter=1)
    assert cut == CutCardSeen(at=3.0, device="scanner", counter=3)
    assert translator.translate(optical(4, "AS"), 4.0)[0].counter == 4


def test_shoe_states_buttons_and_faults() -> None:
    translator = ScannerTranslator(device="shoe-7")
    for state in m.ShoeState:
        [changed] = translator.translate(m.Shoe(state), 1.0)
        assert changed == ShoeStateChanged(at=1.0, device="shoe-7", state=ShoeState[state.name])
    assert translator.translate(m.Button(m.ButtonId.REVEAL), 2.0) == [
        ButtonPressed(at=2.0, device="shoe-7", button=Button.REVEAL)
    ]
    assert translator.translate(m.Button(m.ButtonId.NO_MORE_BETS), 2.5) == [
        ButtonPressed(at=2.5, device="shoe-7", button=Button.NO_MORE_BETS)
    ]
    assert translator.translate(m.Button(m.ButtonId.CALL_SUPERVISOR), 2.0) == [
        ButtonPressed(at=2.0, device="shoe-7", button=Button.CALL_SUPERVISOR)
    ]
    fault = m.Fault(FaultCode.JAM, m.Severity.ERROR, "jam at the exit")
    assert translator.translate(fault, 3.0) == [
        DeviceFault(at=3.0, device="shoe-7", code=1, severity=2, text="jam at the exit")
    ]
    assert translator.translate(m.FaultCleared(0x8123), 4.0) == [
        DeviceFaultCleared(at=4.0, device="shoe-7", code=0x8123)
    ]
    assert translator.translate(m.Heartbeat(1000), 5.0) == []


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        (m.DeviceKind.RFID_SHOE, "rfid"),
        (m.DeviceKind.OPTICAL_SHOE, "optical"),
        (m.DeviceKind.BATCH_SHUFFLER, "shuffler"),
        (m.DeviceKind.SHUFFLER_DEALER, "shuffler_dealer"),
    ],
)
def test_hello_is_device_connected(kind: m.DeviceKind, name: str) -> None:
    translator = ScannerTranslator()
    hello = m.Hello(kind, 77, "Acme", "S-1", "SN9", "1.2")
    assert translator.translate(hello, 1.0) == [
        DeviceConnected(
            at=1.0,
            device="scanner",
            kind=name,
            vendor="Acme",
            model="S-1",
            serial="SN9",
            firmware="1.2",
        )
    ]
    assert translator.kind == name


def test_a_message_a_scanner_should_not_send_is_shown() -> None:
    translator = ScannerTranslator()
    [fault] = translator.translate(m.ShuffleStarted(1, 8), 1.0)
    assert fault.code == UNEXPECTED_MESSAGE
    assert "SHUFFLE_STARTED" in fault.text


def test_indicate_builds_protocol_messages() -> None:
    deal = ScannerTranslator.indicate(m.IndicatePattern.DEAL, 3)
    assert deal == m.Indicate(m.IndicatePattern.DEAL, 3)
    assert deal.encode_payload() == b"\x05\x03"
    assert ScannerTranslator.indicate(2, 7).encode_payload() == b"\x02\x07"
    assert ScannerTranslator.indicate(0).encode_payload() == b"\x00\x00"
    # docs/spec-protocol.md: 7 bets open, arg the seconds left when known
    assert ScannerTranslator.indicate(7).encode_payload() == b"\x07\x00"
    assert ScannerTranslator.indicate(7, 15).encode_payload() == b"\x07\x0f"
    assert ScannerTranslator().status_request().encode_payload() == b""
    assert ScannerTranslator().status_request().TYPE == m.MessageType.STATUS_REQUEST


@pytest.mark.parametrize(
    ("pattern", "arg"), [(8, 0), (-1, 0), (5, 0), (5, 7), (6, 4), (1, 1), (7, 256)]
)
def test_indicate_rejects_what_the_protocol_lacks(pattern: int, arg: int) -> None:
    with pytest.raises(ValueError, match="INDICATE"):
        ScannerTranslator.indicate(pattern, arg)


def test_state_exports_restores_and_rebuilds_from_inputs(registry: DeckRegistry) -> None:
    live = ScannerTranslator(registry=registry, kind="rfid")
    produced = live.translate(m.Shoe(m.ShoeState.LOADED), 0.0)
    uids = [uid_of(card, registry) for card in ("AS", "2S", "3S")]
    produced += live.translate(m.Card(1, uid=uids[0]), 1.0)
    produced += live.translate(m.Card(3, uid=uids[1]), 2.0)  # one missed
    state = live.export_state()
    assert state["last_counter"] == 3
    assert state["uids"] == sorted(uid.hex().upper() for uid in uids[:2])

    # through JSON, as the daemon stores it
    stored = [input_from_json(input_to_json(item)) for item in produced]
    restored = ScannerTranslator(registry=registry)
    restored.restore_state(state)
    rebuilt = ScannerTranslator(registry=registry, kind="rfid")
    rebuilt.replay(stored)
    assert rebuilt.export_state() == state
    for translator in (restored, rebuilt, live):
        out = translator.translate(m.Card(4, uid=uids[0]), 3.0)
        assert [type(item) for item in out] == [CardDrawn]
        assert out[0].duplicate


@pytest.mark.parametrize(
    "state",
    [
        None,
        {},
        {"version": 2, "kind": None, "last_counter": None, "uids": []},
        {"version": 1, "kind": "toaster", "last_counter": None, "uids": []},
        {"version": 1, "kind": None, "last_counter": -1, "uids": []},
        {"version": 1, "kind": None, "last_counter": None, "uids": "04AA"},
        {"version": 1, "kind": None, "last_counter": None, "uids": ["xyz"]},
    ],
)
def test_restore_rejects_what_is_not_a_state(state: object) -> None:
    translator = ScannerTranslator()
    with pytest.raises(ValueError, match=r"state|UID"):
        translator.restore_state(state)  # type: ignore[arg-type]


def test_replay_ignores_other_devices() -> None:
    translator = ScannerTranslator(device="scanner")
    translator.replay([CardDrawn(at=1.0, device="shuffler", card=None, counter=9, uid="01020304")])
    assert translator.export_state()["uids"] == []
    assert translator.last_counter is None


def test_back_to_back_through_the_real_link(registry: DeckRegistry) -> None:
    """Device link -> host link -> translator: ACK only after the input is handed on."""
    device, host = DeviceLink(), HostLink()
    translator = ScannerTranslator(registry=registry)
    device.start_session(m.Hello(m.DeviceKind.RFID_SHOE, 5, "Sim", "R", "1", "0"))
    device.send(m.Shoe(m.ShoeState.LOADED))
    cards = ["AS", "KD", "5H"]
    for counter, card in enumerate(cards, start=1):
        device.send(m.Card(counter, m.CardFlags.NONE, uid=uid_of(card, registry)))
    inputs = []
    for step in range(200):
        for delivery in host.receive_data(device.bytes_to_send()):
            inputs += translator.translate(delivery.message, float(step))
            host.ack(delivery.handle)
        device.receive_data(host.bytes_to_send())
        device.poll(step * 0.01)
        host.poll(step * 0.01)
    assert isinstance(inputs[0], DeviceConnected)
    assert inputs[0].kind == "rfid"
    assert isinstance(inputs[1], ShoeStateChanged)
    assert [str(item.card) for item in inputs[2:]] == cards
    assert device.pending == 0


_messages = st.one_of(
    st.builds(
        m.Card,
        st.integers(0, 2**32 - 1),
        st.sampled_from(list(m.CardFlags)),
        rank=st.integers(1, 13),
        suit=st.integers(0, 3),
    ),
    st.builds(
        lambda counter, uid: m.Card(counter, uid=uid),
        st.integers(0, 2**32 - 1),
        st.binary(min_size=4, max_size=10),
    ),
    st.builds(m.CutCard, st.integers(0, 2**32 - 1)),
    st.builds(m.Shoe, st.sampled_from(list(m.ShoeState))),
    st.builds(m.Button, st.sampled_from(list(m.ButtonId))),
    st.builds(m.Heartbeat, st.integers(0, 2**32 - 1)),
    st.builds(m.Fault, st.integers(0, 0xFFFF), st.sampled_from(list(m.Severity)), st.text()),
    st.builds(m.FaultCleared, st.integers(0, 0xFFFF)),
    st.builds(m.Hello, st.sampled_from(list(m.DeviceKind)), st.integers(0, 2**32 - 1)),
    st.builds(m.ShuffleStarted, st.integers(0, 2**32 - 1), st.integers(0, 255)),
    st.builds(m.Indicate, st.sampled_from(list(m.IndicatePattern)), st.integers(0, 255)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_messages, max_size=40))
def test_any_message_sequence_translates_without_raising(messages: list[m.Message]) -> None:
    """Every message becomes inputs that survive the journal's JSON form; cards are kept."""
    translator = ScannerTranslator(registry=SAMPLE_REGISTRY)
    cards_in = 0
    cards_out = 0
    for number, message in enumerate(messages):
        out = translator.translate(message, float(number))
        cards_in += isinstance(message, m.Card)
        cards_out += sum(isinstance(item, CardDrawn) for item in out)
        for item in out:
            assert input_from_json(input_to_json(item)) == item
    assert cards_out == cards_in
    state = translator.export_state()
    ScannerTranslator().restore_state(state)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=40),  # line noise
            st.builds(  # frames with a good CRC around random payloads of any type
                encode_frame,
                st.integers(1, 255),
                st.sampled_from([int(t) for t in m.MessageType]) | st.integers(0, 255),
                st.binary(max_size=70),
            ),
        ),
        max_size=20,
    )
)
def test_random_bytes_through_the_link_never_raise(chunks: list[bytes]) -> None:
    """Bytes -> HostLink -> both translators: whatever arrives, nothing raises."""
    host = HostLink()
    scanner = ScannerTranslator(registry=SAMPLE_REGISTRY)
    shuffler = ShufflerTranslator()
    for number, chunk in enumerate(chunks):
        for delivery in host.receive_data(chunk):
            for translator in (scanner, shuffler):
                for item in translator.translate(delivery.message, float(number)):
                    assert input_from_json(input_to_json(item)) == item
            host.ack(delivery.handle)


def test_status_answer_for_the_shoe_being_dealt_is_not_a_new_shoe() -> None:
    scanner = ScannerTranslator(kind="optical")
    assert scanner.translate(m.Shoe(m.ShoeState.LOADED), 1.0)[0].state == ShoeState.LOADED
    scanner.translate(m.Card(1, rank=5, suit=0), 2.0)
    scanner.translate(m.Card(2, rank=6, suit=1), 3.0)
    scanner.status_request()  # the daemon re-synchronises after a reconnect
    assert scanner.translate(m.Shoe(m.ShoeState.LOADED), 4.0) == []
    # The counter goes on where it was: no gap, no new shoe.
    (card,) = scanner.translate(m.Card(3, rank=7, suit=2), 5.0)
    assert card.counter == 3
    # A real load later (no request pending) starts a shoe again.
    assert scanner.translate(m.Shoe(m.ShoeState.LOADED), 6.0)[0].state == ShoeState.LOADED
    assert scanner.last_counter == 0


def test_status_answer_after_a_removal_is_a_load() -> None:
    scanner = ScannerTranslator(kind="optical")
    scanner.translate(m.Shoe(m.ShoeState.LOADED), 1.0)
    scanner.translate(m.Shoe(m.ShoeState.REMOVED), 2.0)
    scanner.status_request()
    # The dealer loaded a shoe while the controller was away: that is news.
    (loaded,) = scanner.translate(m.Shoe(m.ShoeState.LOADED), 3.0)
    assert loaded.state == ShoeState.LOADED


def test_a_load_crossing_the_status_request_is_counted_once() -> None:
    scanner = ScannerTranslator(kind="optical")
    scanner.status_request()  # sent on connect, while the shoe was announcing its load
    (loaded,) = scanner.translate(m.Shoe(m.ShoeState.LOADED), 1.0)
    assert loaded.state == ShoeState.LOADED
    assert scanner.translate(m.Shoe(m.ShoeState.LOADED), 1.1) == []  # the answer
