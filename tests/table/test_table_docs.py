"""The table's documents say what the code does: the diagram, the inputs, codes, settings."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from shoe_testkit.table import factory_order_false_alarms

from shoe_controller.table.action_specs import ACTIONS
from shoe_controller.table.alerts import ALERT_CODES
from shoe_controller.table.config import TableConfig
from shoe_controller.table.lifecycle import DIAGRAM_PATH, main, mermaid
from shoe_controller.vocab.inputs import INPUT_TYPES

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_state_diagram_is_drawn_from_the_machines_and_current(tmp_path: Path) -> None:
    assert DIAGRAM_PATH == DOCS / "state-diagram.md"
    assert DIAGRAM_PATH.read_text(encoding="utf-8") == mermaid(), (
        "docs/state-diagram.md is stale: run python -m shoe_controller.table.lifecycle"
    )
    written = tmp_path / "diagram.md"
    assert main([str(written)]) == 0
    assert written.read_text(encoding="utf-8") == mermaid()
    assert "held --> free: release" in mermaid()


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = text.find("\n### ", start + len(heading))
    return text[start : following if following != -1 else len(text)]


def test_inputs_md_documents_every_input_type_and_field() -> None:
    text = (DOCS / "inputs.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### (.+)$", text, flags=re.MULTILINE)
    for name, cls in INPUT_TYPES.items():
        heading = next((h for h in headings if f"`{name}`" in h), None)
        assert heading is not None, f"no section for input {name}"
        section = _section(text, f"### {heading}")
        for spec in dataclasses.fields(cls):
            if spec.name != "at":
                assert f"`{spec.name}`" in section, f"{name}.{spec.name} undocumented"


def test_inputs_md_documents_every_supervisor_action_and_argument() -> None:
    text = (DOCS / "inputs.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", text, re.M)}
    for name, action in ACTIONS.items():
        assert name in rows, f"action {name} undocumented"
        for arg in action.args:
            assert f"`{arg.name}`" in rows[name], f"{name} argument {arg.name} undocumented"


def test_table_md_documents_every_alert_code_and_setting() -> None:
    text = (DOCS / "table.md").read_text(encoding="utf-8")
    for code in ALERT_CODES:
        assert f"| `{code}` |" in text, f"alert code {code} undocumented"
    for spec in dataclasses.fields(TableConfig):
        assert f"| `{spec.name}` |" in text, f"setting {spec.name} undocumented"


def test_the_quoted_false_alarm_rate_is_the_formulas() -> None:
    text = (DOCS / "table.md").read_text(encoding="utf-8")
    per_shoe = factory_order_false_alarms(TableConfig().factory_order_run, 8, 416 - 14)
    assert "**750,000 shoes**" in text
    assert abs(1 / per_shoe - 750_000) / 750_000 < 0.01


def test_every_rule_the_code_cites_is_in_the_projects_own_rules_page() -> None:
    # A fresh clone stands alone: docs/rules.md holds the rules (a copy of the project's).
    repo = Path(__file__).resolve().parents[2]
    rules = (repo / "docs" / "rules.md").read_text(encoding="utf-8")
    defined = set(re.findall(r"^- (R\d+(?:\.\d+)?) ", rules, re.M))
    defined |= set(re.findall(r"\b(R\d+) [A-Z][a-z]+", rules))  # headings: "R12 Tie"
    cited = set()
    for path in [*(repo / "shoe_controller").rglob("*.py"), *(repo / "drivers").rglob("*.py")]:
        cited |= set(re.findall(r"\bR\d+(?:\.\d+)?\b", path.read_text(encoding="utf-8")))
    assert len(defined) > 40
    assert cited - defined == set()
