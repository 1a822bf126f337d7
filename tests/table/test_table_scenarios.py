"""Golden scenario files: every rule the table enforces, written as a pit boss reads it.

Each file in tests/scenarios/ lists inputs and the exact events they must give (the format is
in docs/table.md); a file fails on the first event that differs, naming its line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shoe_testkit.scenario import (
    Scenario,
    ScenarioError,
    lines_match,
    parse_scenario,
    run_scenario,
    run_steps,
    update_text,
)

from shoe_controller.table.alerts import ALERT_CODES
from shoe_controller.vocab.events import EventType

SCENARIOS = sorted((Path(__file__).parents[1] / "scenarios").glob("*.scenario"))

# The rules the table must enforce, each needing at least one golden file.
REQUIRED_RULES = {
    "R2.1",
    "R2.2",
    "R2.3",
    "R2.4",
    "R2.5",
    "R3.1",
    "R3.2",
    "R4",
    "R7",
    "R8",
    "R9.1",
    "R9.2",
    "R9.3",
    "R9.4",
    "R10.1",
    "R10.2",
    "R10.3",
    "R10.4",
    "R10.5",
    "R10.6",
    "R14.1",
    "R15",
    "R16.1",
    "R16.2",
    "R16.3",
    "R16.4",
    "R16.5",
    "R16.8",
    "R16.9",
}


def _scenario(path: Path) -> Scenario:
    return parse_scenario(path.read_text(encoding="utf-8"), path.name)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda path: path.stem)
def test_golden_scenario(path: Path) -> None:
    problems = run_scenario(_scenario(path))
    assert not problems, "\n".join(problems)


def test_every_rule_has_a_golden_scenario() -> None:
    covered = {rule for path in SCENARIOS for rule in _scenario(path).rules}
    assert REQUIRED_RULES - covered == set()


def test_every_alert_code_in_the_scenarios_is_catalogued() -> None:
    codes = set()
    alerts = ("procedure.alert ", "security.alert ")
    for path in SCENARIOS:
        for _, rendered, _ in run_steps(_scenario(path)):
            codes |= {line.split()[1] for line in rendered if line.startswith(alerts)}
    assert codes, "the scenarios emit alerts"
    assert codes - set(ALERT_CODES) == set()


SMALL = """\
# rules: R9.1
config decks=8 insurance=false
shoe loaded
-> shoe.shuffled 1 decks=8 total=416 ok
deal AS 4C
-> shoe.burned 1 count=2 first=AS cards=AS,4C
deal 9H 2C KD 5S
-> round.started 1
-> card.dealt P1 9H
-> card.dealt B1 2C
-> card.dealt P2 KD
-> card.dealt B2 5S
-> round.result 1 player P:9H,KD=9 B:2C,5S=7 natural=player
check state=ready road=player
"""


def test_a_correct_small_scenario_passes() -> None:
    scenario = parse_scenario(SMALL, "small")
    assert scenario.rules == ["R9.1"]
    assert run_scenario(scenario) == []


def test_a_wrong_event_is_reported_with_its_line_and_both_versions() -> None:
    text = SMALL.replace("natural=player", "natural=banker")
    problems = run_scenario(parse_scenario(text, "small"))
    assert len(problems) == 1
    assert "small line 13" in problems[0]
    assert "expected: round.result 1 player P:9H,KD=9 B:2C,5S=7 natural=banker" in problems[0]
    assert "got:      round.result 1 player P:9H,KD=9 B:2C,5S=7 natural=player" in problems[0]


def test_a_missing_and_an_unexpected_event_are_reported() -> None:
    missing = SMALL.replace("-> card.dealt B2 5S\n", "")
    problems = run_scenario(parse_scenario(missing, "small"))
    assert "expected: round.result" in problems[0]
    assert "got:      card.dealt B2 5S" in problems[0]
    extra = SMALL.replace("check state", "-> shoe.ended 1 rounds=1\ncheck state")
    problems = run_scenario(parse_scenario(extra, "small"))
    assert "got:      (no more events)" in problems[0]


def test_a_failed_check_is_reported() -> None:
    problems = run_scenario(parse_scenario(SMALL.replace("road=player", "road=banker"), "s"))
    assert problems == ["s line 14: check road: expected banker, got player"]


def test_update_fills_in_the_events_and_keeps_what_still_matches() -> None:
    bare = "\n".join(line for line in SMALL.splitlines() if not line.startswith("->")) + "\n"
    assert update_text(bare, "small") == SMALL
    assert update_text(SMALL, "small") == SMALL


def test_alert_text_may_be_left_out_of_an_expected_line() -> None:
    actual = 'procedure.alert no_shoe supervisor "a card was drawn but no shoe is open"'
    assert lines_match("procedure.alert no_shoe supervisor", actual)
    assert lines_match(actual, actual)
    assert not lines_match("procedure.alert no_shoe", actual)
    assert not lines_match('procedure.alert no_shoe supervisor "other text"', actual)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("shoe loaded\nfrobnicate now\n", "x line 2: unknown line 'frobnicate'"),
        ("-> card.dealt P1 QH\n", "x line 1: an expected event before any input"),
        ("shoe loaded\nconfig decks=6\n", "x line 2: config comes before the first input"),
        ("shoe sideways\n", "x line 1: shoe takes one of"),
        ("card ZZ\n", "x line 1: not a card: 'ZZ'"),
        ("card QH sideways\n", "x line 1: unknown card flag(s) ['sideways']"),
        ("config decks=5\nshoe loaded\n", "x: config: decks must be a whole number from 6 to 12"),
        ('supervisor void by=s reason="unclosed\n', "x line 1: No closing quotation"),
    ],
)
def test_a_bad_scenario_line_names_file_and_line(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "x")
    assert message in str(caught.value)


def test_every_expected_line_starts_with_its_event_type() -> None:
    # A pit boss searches the files by event type (docs/spec-push-api.md names).
    known = {str(kind) for kind in EventType}
    for path in SCENARIOS:
        for step in _scenario(path).steps:
            for _, line in step.expected:
                assert line.split()[0] in known, f"{path.name}: {line}"
