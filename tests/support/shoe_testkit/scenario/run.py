"""A scenario applied to a fresh table: its differences from what it expects, or rewritten."""

from __future__ import annotations

from collections.abc import Iterator

from shoe_controller.table.procedures import Table
from shoe_testkit.scenario.parse import (
    EXPECT,
    Scenario,
    ScenarioError,
    Step,
    parse_scenario,
)
from shoe_testkit.scenario.render import (
    lines_match,
    render_event,
    render_value,
    without_text,
)


def _check_value(table: Table, key: str) -> str:
    view = table.view()
    if key == "indicator":
        return ",".join(str(part) for part in table.indicator)
    if key == "holds":
        return ",".join(hold["code"] for hold in view["holds"]) or "none"
    if key == "next":
        return view["next_position"] or "none"
    if key == "round":
        return str(view["round"]["number"]) if view["round"] else "none"
    if key == "insurance":
        return ",".join(f"{o['side']}/{o['stage']}" for o in view["insurance"]) or "none"
    if key == "road":
        return ",".join(str(entry["winner"]) for entry in view["road"]) or "none"
    if key == "cards":
        cards = view["round"]["cards"] if view["round"] else {}
        return ",".join(f"{position}:{card}" for position, card in cards.items()) or "none"
    if key == "queued":
        return str(view["queued_cards"])
    if key in view:
        return render_value(view[key])
    raise ScenarioError(f"unknown check {key!r}")


def run_steps(scenario: Scenario) -> Iterator[tuple[Step, list[str], Table]]:
    """Apply each step's inputs to a fresh table; yields the rendered events per step."""
    table = Table(scenario.config, last_shoe=scenario.last_shoe)
    for step in scenario.steps:
        rendered: list[str] = []
        for item in step.inputs:
            rendered += [render_event(event) for event in table.apply(item)]
            for carried in table.take_carried():  # as the controller records them
                rendered += [render_event(event) for event in table.apply(carried)]
        yield step, rendered, table


def run_scenario(scenario: Scenario) -> list[str]:
    """Every difference between the scenario's expectations and what the table does."""
    problems: list[str] = []
    for step, actual, table in run_steps(scenario):
        expected = step.expected
        for index in range(max(len(expected), len(actual))):
            want = expected[index][1] if index < len(expected) else None
            got = actual[index] if index < len(actual) else None
            if want is not None and got is not None and lines_match(want, got):
                continue
            line = expected[index][0] if index < len(expected) else step.line
            problems.append(
                f"{scenario.name} line {line} (after `{step.text}`):\n"
                f"    expected: {want or '(no more events)'}\n"
                f"    got:      {got or '(no more events)'}"
            )
            break
        for line, key, want in step.checks:
            try:
                got = _check_value(table, key)
            except ScenarioError as error:
                problems.append(f"{scenario.name} line {line}: {error}")
                continue
            if got != want:
                problems.append(
                    f"{scenario.name} line {line}: check {key}: expected {want}, got {got}"
                )
    return problems


def update_text(text: str, name: str = "<scenario>", *, with_text: bool = False) -> str:
    """The scenario with its expected lines replaced by what the table does now.

    An expected line that still matches is kept as written, unless `with_text` asks for the
    alerts' texts to be written out.
    """
    scenario = parse_scenario(text, name)
    actual_by_line = {step.line: (step, actual) for step, actual, _ in run_steps(scenario)}
    out: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip().startswith(EXPECT):
            continue
        out.append(raw)
        if number in actual_by_line:
            step, actual = actual_by_line[number]
            kept = [want for _, want in step.expected]
            for index, got in enumerate(actual):
                keep = index < len(kept) and lines_match(kept[index], got) and not with_text
                line = kept[index] if keep else (got if with_text else without_text(got))
                out.append(f"{EXPECT} {line}")
    return "\n".join(out) + "\n"
