"""Golden scenario files: table inputs as short lines, the events they must give, checked.

The format is documented in docs/table.md ("Scenario files"); a pit boss reads it as a log:

    # rules: R10.5 R16.9
    config decks=8
    shoe loaded
    deal 3H 9C 2D KS
    -> shoe.burned 1 count=4 first=3H cards=3H,9C,2D,KS
    card QH
    -> round.started 1
    -> card.dealt P1 QH
    supervisor resume by=sup7 reason="cover checked"
    check state=dealing indicator=5,2

`python -m shoe_testkit.scenario FILE...` runs files; `--update` rewrites their expected
lines from what the table does now (review the diff before keeping it).

The parts: `parse` (text to a Scenario), `render` (an event as one line), `run` (apply a
scenario to a fresh table, compare, rewrite the expected lines).
"""

from shoe_testkit.scenario.parse import Scenario, ScenarioError, Step, parse_scenario
from shoe_testkit.scenario.render import lines_match, render_event
from shoe_testkit.scenario.run import run_scenario, run_steps, update_text

__all__ = [
    "Scenario",
    "ScenarioError",
    "Step",
    "lines_match",
    "parse_scenario",
    "render_event",
    "run_scenario",
    "run_steps",
    "update_text",
]
