"""The shuffler translator: shuffles, the deck check as named problems, the shuffler-dealer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.translate.registry import DeckRegistry
from drivers.translate.scanner import UNEXPECTED_MESSAGE
from drivers.translate.shuffler import RESULT_MEANINGS, ShufflerTranslator, deck_problems
from drivers.wire import messages as m
from shoe_controller.vocab.cards import from_index, parse_card
from shoe_controller.vocab.inputs import (
    CardDrawn,
    CardsMissed,
    DeviceConnected,
    DeviceFault,
    ShuffleDone,
    ShuffleStarted,
    input_from_json,
    input_to_json,
)
from shoe_controller.vocab.protocol import FaultCode

SAMPLE = Path(__file__).resolve().parents[2] / "config" / "decks"


def counts_for(decks: int, changes: dict[str, int] | None = None) -> list[int]:
    counts = [decks] * 52
    for card, delta in (changes or {}).items():
        counts[parse_card(card).index] += delta
    return counts


def done(decks: int, counts: list[int], result: int = 0, shuffle_id: int = 1, total=None):
    return m.ShuffleDone(
        shuffle_id,
        m.ShuffleResult(result),
        decks,
        sum(counts) if total is None else total,
        tuple(counts),
    )


def test_a_full_check_has_no_problems() -> None:
    assert deck_problems(counts_for(8), 8) == []
    assert deck_problems(counts_for(1), 1, total=52) == []


def test_missing_and_extra_cards_are_named() -> None:
    counts = counts_for(8, {"QH": -1, "7S": +1, "AD": -3, "TC": +2})
    assert deck_problems(counts, 8) == [
        "missing 3 x AD",
        "extra 1 x 7S",
        "extra 2 x TC",
        "missing 1 x QH",
    ]


def test_the_shuffler_verdict_and_totals_are_problems_too() -> None:
    problems = deck_problems(counts_for(6, {"KS": -1}), 6, result=1, total=310, announced_decks=8)
    assert problems == [
        "shuffler reports cards missing (result 1)",
        "checked 6 decks, SHUFFLE_STARTED announced 8",
        "missing 1 x KS",
        "total 310 differs from the 311 cards counted by kind",
    ]
    assert deck_problems(counts_for(6), 6, result=4) == ["shuffler reports damaged card (result 4)"]
    assert deck_problems([8] * 51, 8) == ["deck check has 51 counts, expected 52"]


@pytest.mark.parametrize("result", list(m.ShuffleResult))
def test_every_result_code_has_a_meaning(result: m.ShuffleResult) -> None:
    assert RESULT_MEANINGS[result]
    problems = deck_problems(counts_for(8), 8, result=result)
    assert bool(problems) is (result != m.ShuffleResult.OK)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12), st.lists(st.integers(0, 255), min_size=52, max_size=52))
def test_problems_account_for_every_count(decks: int, counts: list[int]) -> None:
    """Rebuilding the counts from the problem list gives back exactly the counts."""
    rebuilt = [decks] * 52
    for problem in deck_problems(counts, decks):
        match = re.fullmatch(r"(missing|extra) (\d+) x (\w\w)", problem)
        assert match is not None, problem
        word, number, card = match.groups()
        rebuilt[parse_card(card).index] += int(number) * (1 if word == "extra" else -1)
    assert rebuilt == counts


def test_shuffle_started_and_done_become_inputs() -> None:
    translator = ShufflerTranslator(kind="shuffler")
    assert translator.translate(m.ShuffleStarted(42, 8), 1.0) == [
        ShuffleStarted(at=1.0, device="shuffler", shuffle_id=42, decks=8)
    ]
    counts = counts_for(8, {"QH": -1})
    [result] = translator.translate(done(8, counts, result=1, shuffle_id=42), 2.0)
    assert result == ShuffleDone(
        at=2.0,
        device="shuffler",
        shuffle_id=42,
        ok=False,
        decks=8,
        total=415,
        problems=("shuffler reports cards missing (result 1)", "missing 1 x QH"),
    )
    [good] = translator.translate(done(8, counts_for(8), shuffle_id=43), 3.0)
    assert good.ok
    assert good.problems == ()
    assert input_from_json(input_to_json(result)) == result


def test_done_checks_the_decks_its_start_announced() -> None:
    translator = ShufflerTranslator()
    translator.translate(m.ShuffleStarted(5, 8), 1.0)
    [result] = translator.translate(done(6, counts_for(6), shuffle_id=5), 2.0)
    assert not result.ok
    assert result.problems == ("checked 6 decks, SHUFFLE_STARTED announced 8",)


def test_shuffler_faults_hello_and_commands() -> None:
    translator = ShufflerTranslator()
    fault = m.Fault(FaultCode.CARD_DROPPED_DURING_SHUFFLE, m.Severity.CRITICAL, "card fell")
    assert translator.translate(fault, 1.0) == [
        DeviceFault(at=1.0, device="shuffler", code=0x0102, severity=3, text="card fell")
    ]
    [hello] = translator.translate(m.Hello(m.DeviceKind.BATCH_SHUFFLER, 9, "Acme"), 2.0)
    assert hello == DeviceConnected(at=2.0, device="shuffler", kind="shuffler", vendor="Acme")
    assert ShufflerTranslator.shuffle(8).encode_payload() == b"\x08"
    assert ShufflerTranslator.status_request().TYPE == m.MessageType.STATUS_REQUEST
    for bad in (0, 256, -1):
        with pytest.raises(ValueError, match="SHUFFLE takes"):
            ShufflerTranslator.shuffle(bad)


def test_a_batch_shuffler_does_not_deal() -> None:
    translator = ShufflerTranslator(kind="shuffler")
    [fault] = translator.translate(m.Card(1, rank=1, suit=0), 1.0)
    assert fault.code == UNEXPECTED_MESSAGE


def test_shuffler_dealer_deals_like_a_shoe() -> None:
    """Kind 4: CARD like a shoe, counter restarting after SHUFFLE_DONE (docs/spec-protocol.md,
    R2.5)."""
    translator = ShufflerTranslator()
    translator.translate(m.Hello(m.DeviceKind.SHUFFLER_DEALER, 1), 0.0)
    translator.translate(m.ShuffleStarted(1, 8), 1.0)
    translator.translate(done(8, counts_for(8)), 2.0)
    face_up = m.CardFlags.FACE_UP
    first = translator.translate(m.Card(1, face_up, rank=12, suit=1), 3.0)
    assert first == [
        CardDrawn(at=3.0, device="shuffler", card=parse_card("QH"), counter=1, face_up=True)
    ]
    missed, card = translator.translate(m.Card(3, face_up, rank=1, suit=0), 4.0)
    assert missed == CardsMissed(at=4.0, device="shuffler", count=1, after_counter=1)
    assert card.card == parse_card("AS")
    translator.translate(done(8, counts_for(8), shuffle_id=2), 5.0)
    assert translator.translate(m.Card(1, face_up, rank=2, suit=0), 6.0)[0].counter == 1


def test_shuffler_dealer_recirculates_tags_so_no_duplicates() -> None:
    registry = DeckRegistry.load(SAMPLE)
    translator = ShufflerTranslator(kind="shuffler_dealer", registry=registry)
    line = next(
        row
        for row in sorted(SAMPLE.glob("*.csv"))[0].read_text().splitlines()
        if row and not row.startswith(("#", "uid_hex"))
    )
    uid = bytes.fromhex(line.split(",")[0])
    translator.translate(done(8, counts_for(8)), 0.0)
    first = translator.translate(m.Card(1, uid=uid), 1.0)[-1]
    again = translator.translate(m.Card(2, uid=uid), 2.0)[-1]
    assert first.card == again.card == from_index(0)
    assert not again.duplicate
    foreign = translator.translate(m.Card(3, uid=b"\x09\x09\x09\x09"), 3.0)[-1]
    assert foreign.foreign


def test_state_round_trip_and_replay() -> None:
    live = ShufflerTranslator(kind="shuffler_dealer")
    produced = live.translate(m.ShuffleStarted(7, 8), 1.0)
    produced += live.translate(done(8, counts_for(8), shuffle_id=6), 1.5)
    produced += live.translate(m.ShuffleStarted(7, 8), 2.0)
    produced += live.translate(m.Card(1, rank=3, suit=3), 3.0)
    state = live.export_state()
    assert state["started"] == [7, 8]
    assert state["dealer"]["last_counter"] == 1
    restored = ShufflerTranslator()
    restored.restore_state(state)
    assert restored.export_state() == state
    rebuilt = ShufflerTranslator(kind="shuffler_dealer")
    rebuilt.replay(input_from_json(input_to_json(item)) for item in produced)
    assert rebuilt.export_state() == state
    for translator in (live, restored, rebuilt):
        [result] = translator.translate(done(6, counts_for(6), shuffle_id=7), 4.0)
        assert result.problems == ("checked 6 decks, SHUFFLE_STARTED announced 8",)


@pytest.mark.parametrize(
    "state",
    [
        None,
        {"version": 1, "kind": "toaster", "started": None, "dealer": None},
        {"version": 1, "kind": None, "started": [1], "dealer": None},
        {"version": 1, "kind": None, "started": [1, 300], "dealer": None},
        {"version": 1, "kind": None, "started": None, "dealer": {"version": 9}},
    ],
)
def test_restore_rejects_what_is_not_a_state(state: object) -> None:
    with pytest.raises(ValueError, match="state"):
        ShufflerTranslator().restore_state(state)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.builds(m.ShuffleStarted, st.integers(0, 2**32 - 1), st.integers(0, 255)),
            st.builds(
                m.ShuffleDone,
                st.integers(0, 2**32 - 1),
                st.sampled_from(list(m.ShuffleResult)),
                st.integers(0, 255),
                st.integers(0, 0xFFFF),
                st.lists(st.integers(0, 255), min_size=52, max_size=52).map(tuple),
            ),
            st.builds(m.Hello, st.sampled_from(list(m.DeviceKind)), st.integers(0, 9)),
            st.builds(m.Card, st.integers(0, 2**32 - 1), rank=st.integers(1, 13), suit=st.just(0)),
            st.builds(m.Shoe, st.sampled_from(list(m.ShoeState))),
            st.builds(m.FaultCleared, st.integers(0, 0xFFFF)),
        ),
        max_size=30,
    )
)
def test_any_message_sequence_translates_without_raising(messages: list[m.Message]) -> None:
    translator = ShufflerTranslator()
    for number, message in enumerate(messages):
        for item in translator.translate(message, float(number)):
            assert input_from_json(input_to_json(item)) == item
