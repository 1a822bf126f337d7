"""Words for people, not Python: every message a person reads, collected, is free
of Python reprs (`['`, `(False`, `{'`, `None` as a value) and names no file a clone of the
repository lacks (PUSH_API.md, RULES.md, ROADS.md, PROTOCOL.md: its copies are
docs/spec-*.md and docs/rules.md).

Collected: the `--help` of every command and subcommand of `shoe-controller` and `shoectl`
(every option's help and choices in it); the usage errors of shoectl's checked arguments and
of typed times; every literal text in the command lines' sources (the templates of their
errors, refusals and status lines); and what shoectl shows of every event, hold and text of
every golden scenario (tests/scenarios/*.scenario), through its own renderers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from shoe_testkit.scenario.parse import parse_scenario

from shoe_controller.cli.main import SUBCOMMANDS
from shoe_controller.cli.main import main as controller_main
from shoe_controller.cli.monitor import statistics_text
from shoe_controller.cli.shoectl.commands import main as shoectl_main
from shoe_controller.cli.shoectl.render import (
    Painter,
    event_row,
    hold_text,
    render_status,
    sink_line,
    through_text,
)
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.shoectl.typed_times import TimeTypedError, read_time
from shoe_controller.cli.shoectl.wording import details_text, in_shoectl_words
from shoe_controller.store.records import ReplayStep, StoredEvent
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.inputs import ShoeState, ShoeStateChanged

ROOT = Path(__file__).resolve().parents[2]
CLI_SOURCES = [
    *sorted((ROOT / "shoe_controller" / "cli").rglob("*.py")),
    ROOT / "drivers" / "monitor.py",
]
SCENARIOS = sorted((ROOT / "tests" / "scenarios").glob("*.scenario"))
FORBIDDEN = (
    ("a Python list", re.compile(r"\['")),
    ("a Python tuple", re.compile(r"\((?:False|True|None)\b")),
    ("a Python dict", re.compile(r"\{'")),
    ("None as a value", re.compile(r"(?<![\w.-])None(?![\w-])")),
    ("a file a clone lacks", re.compile(r"(?<![\w/.-])(?:PUSH_API|RULES|ROADS|PROTOCOL)\.md")),
)
PLAIN = Painter(False)


def problems(text: str) -> list[str]:
    return [f"{what}: {match[0]!r} in {text!r}" for what, pattern in FORBIDDEN
            for match in pattern.finditer(text)]  # fmt: skip


def commands(group: click.Command, ctx: click.Context) -> Iterator[tuple[str, click.Command]]:
    """(the command line, the command) of `group` and every command under it."""
    yield ctx.command_path, group
    if isinstance(group, click.Group):
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, name
            yield from commands(command, click.Context(command, info_name=name, parent=ctx))


def _helps() -> Iterator[tuple[str, click.Command, str]]:
    for root, name in ((controller_main, "shoe-controller"), (shoectl_main, "shoectl")):
        top = click.Context(root, info_name=name)
        for path, command in commands(root, top):
            yield path, command, command.get_help(click.Context(command, info_name=path))


COMMANDS = list(_helps())
HELPS = [(path, text) for path, _, text in COMMANDS]


def test_every_command_was_found() -> None:
    found = {path for path, _ in HELPS}
    expected = {"shoe-controller check", "shoe-controller replay", "shoe-controller demo",
                "shoectl status", "shoectl events", "shoectl end-trial"}  # fmt: skip
    assert expected <= found


@pytest.mark.parametrize(("path", "text"), HELPS, ids=[path for path, _ in HELPS])
def test_help_is_for_people(path: str, text: str) -> None:
    assert problems(text) == []
    assert "end_trial" not in text  # commands are named as typed: end-trial


def literal_texts(path: Path) -> Iterator[tuple[int, str]]:
    """Every string literal of a module but its docstrings and comments: the message templates
    (an f-string's literal parts joined, `{}` where a value goes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    patterns = {  # a regular expression is no message
        id(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "re.compile" and node.args
    }
    inside_fstrings = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield (
                node.lineno,
                "".join(
                    part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
                ),
            )
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and id(node) not in inside_fstrings
            and id(node) not in patterns
        ):
            yield node.lineno, node.value


def repr_in_fstrings(path: Path) -> Iterator[tuple[int, str]]:
    """f-string values that print as Python: a list, tuple, set or dict put in whole."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FormattedValue):
            continue
        value = node.value
        made = isinstance(value, ast.List | ast.Tuple | ast.Set | ast.Dict | ast.ListComp)
        called = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and (value.func.id in ("sorted", "list", "tuple", "set", "dict"))
        )
        if made or called:
            yield node.lineno, ast.unparse(value)


@pytest.mark.parametrize("path", CLI_SOURCES, ids=[str(p.relative_to(ROOT)) for p in CLI_SOURCES])
def test_the_command_lines_message_templates_are_for_people(path: Path) -> None:
    found = [f"line {line}: {problem}" for line, text in literal_texts(path)
             for problem in problems(text)]  # fmt: skip
    found += [f"line {line}: {{{code}}} prints as Python" for line, code in repr_in_fstrings(path)]
    assert found == []


def usage_error(*args: str) -> str:
    result = CliRunner().invoke(shoectl_main, list(args))
    assert result.exit_code == 2, (args, result.output)
    return result.output


def test_checked_arguments_are_refused_in_words() -> None:
    texts = [
        usage_error("events", "--type", "bogus"),
        usage_error("confirm", "--by", "s", "--reason", "r", "--card", "ZZ"),
        usage_error("correct", "--by", "s", "--reason", "r", "--card", "QH", "--position", "x"),
        usage_error("rounds", "--shoe", "0"),
        usage_error("events", "--since", "soon"),
        usage_error("events", "--since", "5 parsecs ago"),
        usage_error("events", "-f", "--until", "now"),
        usage_error("void", "--by", " ", "--reason", "r"),
    ]
    for text in texts:
        assert problems(text) == []
    assert "unknown event type bogus; a family: " in texts[0]
    assert "x is not a position: P1, B1, P2, B2, P3, B3" in texts[2]
    with pytest.raises(TimeTypedError) as refused:
        read_time("")
    assert problems(str(refused.value)) == []


def scenario_views() -> Iterator[tuple[str, str]]:
    """What shoectl shows of each golden scenario: every event's row, every hold."""
    shown = Times.chosen(True)
    for path in SCENARIOS:
        scenario = parse_scenario(path.read_text(encoding="utf-8"), path.name)
        table = Table(scenario.config, last_shoe=scenario.last_shoe)
        seq = 0
        for step in scenario.steps:
            for item in step.inputs:
                events = table.apply(item)
                for carried in table.take_carried():
                    events += table.apply(carried)
                for event in events:
                    seq += 1
                    row = event_row({**event.to_json(), "seq": seq}, PLAIN, shown)
                    yield path.name, "  ".join(c if isinstance(c, str) else c[0] for c in row)
            for hold in table.view().get("holds") or []:
                yield path.name, hold_text(hold, PLAIN, shown)


SCENARIO_VIEWS = list(scenario_views())


def test_what_shoectl_shows_of_every_scenario_is_for_people() -> None:
    assert len({name for name, _ in SCENARIO_VIEWS}) == len(SCENARIOS)  # every one played
    found = [f"{name}: {problem}" for name, text in SCENARIO_VIEWS for problem in problems(text)]
    syntax = re.compile(r"\b[a-z_]+=\.\.|supervisor shoectl|refused: \w+ refused")
    leftovers = [f"{name}: {text}" for name, text in SCENARIO_VIEWS if syntax.search(text)]
    assert found == []
    assert leftovers == []  # the table's syntax is shown as the command to type


def test_the_status_and_outbox_words() -> None:
    sink = {"name": "server", "backlog": 1, "delivered_through": None, "last_seq": 1,
            "why": "1 event(s) about to be sent"}  # fmt: skip
    assert sink_line(sink) == (
        "1 event(s) about to be sent; backlog 1, delivered none confirmed yet, of its seq 1"
    )
    assert through_text({**sink, "delivered_through": 3, "last_seq": 4}) == "through its seq 3 of 4"
    assert details_text({"released": ["supervisor_hold"], "misdeal": False, "card": None}) == (
        "released: supervisor's hold, misdeal: no, card: none"
    )
    assert in_shoectl_words("load the shoe (or supervisor start_shoe) before dealing") == (
        "load the shoe (or a supervisor: shoectl start-shoe) before dealing"
    )
    status = {
        "controller": {"table_id": "07", "controller_id": "c", "version": "1", "now": 0},
        "health": {"level": 2, "status": "CRITICAL", "problems": [
            {"level": 1, "status": "WARNING", "text": "a", "action": "x"},
            {"level": 2, "status": "CRITICAL", "text": "b"}]},
        "table": {"state": "dealing", "mode": "manual", "shoe": 1, "shoe_open": False},
        "outbox": {"sinks": [sink]},
        "alerts": [{"seq": 1, "at": 0, "shoe": 1, "round": None, "code": "command_refused",
                    "text": "resume refused: nothing to resume", "needs_supervisor": False}],
    }  # fmt: skip
    text = render_status(status, PLAIN, Times.chosen(True))
    assert problems(text) == []
    assert "\n  WARNING   a\n            -> x\n  CRITICAL  b\n" in text
    assert "Recent refused commands:" in text
    assert "Recent alerts:" not in text


def test_one_style_for_every_option_and_no_summary_cut_short() -> None:
    """Every option's help is a sentence (`monitor` had fragments in lower case), and
    `shoe-controller --help` shows each command's whole summary."""
    fragments = [
        f"{path} {param.opts}: {text!r}"
        for path, command, _ in COMMANDS
        for param in command.params
        if (text := (getattr(param, "help", None) or "").strip())
        and (not (text[0].isupper() or text[0] in "'`-(") or not text.endswith((".", ")")))
    ]
    assert fragments == []
    listed = " ".join(CliRunner().invoke(controller_main, ["--help"]).output.split())
    for name, entry in SUBCOMMANDS.items():
        assert f"{name} {entry.summary}" in listed, name


def test_a_replay_that_differs_says_what_differs_in_json_words() -> None:
    table = Table(TableConfig())
    [event] = table.apply(ShoeStateChanged(1.0, "scanner", ShoeState.LOADED))
    wire = event.to_json()
    stored = StoredEvent(1, "x:1", wire["type"], wire["at"], wire["shoe"], wire["round"],
                         {**wire["data"], "ok": False}, 1)  # fmt: skip
    fresh = Table(TableConfig()).apply(ShoeStateChanged(1.0, "scanner", ShoeState.LOADED))
    problem = ReplayStep(1, 1, {}, (stored,)).mismatch(fresh)
    assert (
        problem
        == "input 1: seq 1 (shoe.shuffled): its data differs: ok stored false, replayed true"
    )
    assert problems(problem) == []


def test_the_monitors_statistics_leave_out_what_is_not_known() -> None:
    text = statistics_text({"protocol": "slp", "port": "/dev/x", "inputs": 0, "by_type": {},
                            "connection": {"opens": 0, "last_error": None},
                            "translator": {"kind": None, "last_counter": None}})  # fmt: skip
    assert text.splitlines()[-1] == "  connection opens 0"
