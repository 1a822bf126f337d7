"""Every code a person may read has its words (vocab/words.py): the table's alert codes, hold
kinds, void and shoe-end reasons, insurance reasons, bets, faults, states, the shuffle tests."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from shoe_controller.game.odds import PROBABILITY_KEYS
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE, Bet
from shoe_controller.game.surveillance import shuffle_watch
from shoe_controller.table import lifecycle
from shoe_controller.table.alerts import ALERT_CODES
from shoe_controller.table.books import HoldKind
from shoe_controller.table.config import MODES
from shoe_controller.vocab import words
from shoe_controller.vocab.protocol import JOURNAL_SPACE_LOW, FaultCode, Severity

PACKAGE = Path(words.__file__).resolve().parents[1]
SNAKE = re.compile(r"\b[a-z0-9]+_[a-z0-9_]+\b")


def _table_source() -> str:
    return "\n".join(path.read_text() for path in (PACKAGE / "table").glob("*.py"))


def _literal_reasons(pattern: str) -> set[str]:
    """The reasons the table's code passes as literals to a call matching `pattern`."""
    return set(re.findall(pattern + r"\(ctx, \"([a-z_]+)\"", _table_source()))


@pytest.mark.parametrize(
    ("registry", "codes"),
    [
        (words.ALERTS, ALERT_CODES),
        (words.HOLD_KINDS, [kind.value for kind in HoldKind]),
        (words.BETS, [*(b.value for b in Bet), *DEFAULT_PAY_TABLE, *PROBABILITY_KEYS]),
        (words.FAULTS, [*(code.value for code in FaultCode), JOURNAL_SPACE_LOW]),
        (words.SEVERITIES, [level.value for level in Severity]),
        (
            words.TABLE_STATES,
            [
                lifecycle.NO_SHOE,
                lifecycle.BURNING,
                lifecycle.READY,
                lifecycle.DEALING,
                lifecycle.INSURANCE,
                lifecycle.REVEAL,
                lifecycle.FREE,
                lifecycle.HELD,
            ],
        ),
        (
            words.DECK_CHECKS,
            [lifecycle.UNCHECKED, lifecycle.SHUFFLING, lifecycle.CHECKED, lifecycle.BLOCKED],
        ),
        (words.MODES, MODES),
        (words.VOID_REASONS, _literal_reasons(r"void_(?:round|with_queue)") | {"early_card"}),
        (
            words.SHOE_END_REASONS,
            _literal_reasons("end_shoe") | {"supervisor", "misdeal", "security"},
        ),
        (words.INSURANCE_REASONS, _literal_reasons(r"(?:void_all|void_open|close_open|relayout)")),
        (
            words.SHUFFLE_TESTS,
            [
                shuffle_watch.LONGEST_RUN,
                shuffle_watch.FACTORY_STRETCH,
                shuffle_watch.SUCCESSIONS,
                shuffle_watch.RISING_SEQUENCES,
            ],
        ),
        (
            words.SHUFFLE_VERDICTS,
            [shuffle_watch.FAIR, shuffle_watch.SUSPECT, shuffle_watch.UNSHUFFLED],
        ),
    ],
    ids=[
        "alerts",
        "hold-kinds",
        "bets",
        "faults",
        "severities",
        "table-states",
        "deck-checks",
        "modes",
        "void-reasons",
        "shoe-end-reasons",
        "insurance-reasons",
        "shuffle-tests",
        "verdicts",
    ],
)
def test_every_code_has_words(registry: Mapping[object, str], codes: Iterable[object]) -> None:
    codes = set(codes)
    assert codes, "the registry's source names no code"
    missing = codes - set(registry)
    assert not missing, f"codes without words: {sorted(map(str, missing))}"


def test_the_words_are_words() -> None:
    for registry in (
        words.ALERTS,
        words.HOLD_KINDS,
        words.VOID_REASONS,
        words.SHOE_END_REASONS,
        words.INSURANCE_REASONS,
        words.BETS,
        words.FAULTS,
        words.DEVICE_STATES,
        words.TABLE_STATES,
        words.DECK_CHECKS,
        words.SINK_STATES,
        words.SHUFFLE_TESTS,
    ):
        for code, text in registry.items():
            assert text, code
            assert not SNAKE.search(text), (code, text)


def test_a_code_without_words_is_still_said_in_words() -> None:
    assert words.alert("vendor_thing") == "vendor thing"
    assert words.fault(0x8001) == "device fault 0x8001"
    assert words.fault(0x0001) == "card jam (fault 0x0001)"
    assert words.counted(1, "deck") == "1 deck"
    assert words.counted(8, "deck") == "8 decks"
