"""Every command and option of both programs, given the values people get wrong.

The walk comes from click's own command tree (shoe_testkit/cli_walk.py), not from a list:
for each option and argument, the wrong values of its type (not a number, empty, below or
above its range, huge; a missing file, a folder, a place that cannot be written), each the
only thing wrong on its command line, run as the program runs (a forked child of a process
that imported it, calling its `main`). No traceback may reach the person, ever; a value that
is wrong must end non-zero, said in words; under `--json` the same error is one JSON object
on standard output with the same exit code (cli/program.py). shoectl is pointed at a socket
that is not there, so that a value it accepts ends at "cannot reach the controller".
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from shoe_testkit.cli_walk import (
    REPO,
    Ran,
    bad_values,
    commands,
    invocation,
    is_numeric,
    prepare,
    run_forked,
    walk,
)

from shoe_controller.cli.main import main as controller_main
from shoe_controller.cli.shoectl import main as shoectl_main

TIME_LIMIT_S = 8.0  # a value accepted by a command that runs until stopped (monitor)
PROGRAMS = {
    "shoe-controller": ("shoe_controller.cli.main", controller_main),
    "shoectl": ("shoe_controller.cli.shoectl", shoectl_main),
}
TRACEBACK = "Traceback (most recent call last)"


def _has_json(command: click.Command) -> bool:
    return any(isinstance(p, click.Option) and "--json" in p.opts for p in command.params)


def _cases(prog: str, scratch: Path) -> Iterator[tuple[str, bool, list[str]]]:
    """(what, must it be refused, arguments) for every bad value of every parameter."""
    main = PROGRAMS[prog][1]
    prefix = ["--socket", str(scratch / "no.sock")] if prog == "shoectl" else []
    for path, command, param in walk(main, (prog,)):
        then = ["status"] if isinstance(command, click.Group) else []
        for bad in bad_values(param, scratch):
            args = invocation(prefix, path, command, param, bad.value, scratch, then)
            name = param.opts[0] if param.opts else param.name
            what = f"{' '.join(path)} {name} {bad.label} ({bad.value!r})"
            yield what, bad.refused, args
            if bad.refused and (_has_json(command) or prog == "shoectl"):
                end = args.index("--") if "--" in args else len(args)
                yield f"{what}, --json", True, [*args[:end], "--json", *args[end:]]


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, bool, Ran]]]:
    scratch = tmp_path_factory.mktemp("walk")
    prepare(scratch)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO / "tests/support"), str(REPO)))}
    env.update(NO_COLOR="1", TZ="UTC", HOME=str(scratch))
    env.pop("SHOECTL_SOCKET", None)
    found = {}
    for prog, (module, _main) in PROGRAMS.items():
        cases = list(_cases(prog, scratch))
        ran = run_forked(
            module,
            prog,
            [args for _, _, args in cases],
            env=env,
            cwd=scratch,
            time_limit_s=TIME_LIMIT_S,
        )
        found[prog] = [
            (what, refused, result) for (what, refused, _), result in zip(cases, ran, strict=True)
        ]
    return found


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_no_value_makes_a_traceback_and_every_wrong_one_is_refused_in_words(
    prog: str, walked: dict[str, list[tuple[str, bool, Ran]]]
) -> None:
    problems = []
    for what, refused, ran in walked[prog]:
        shown = ran.stdout + ran.stderr
        if TRACEBACK in shown:
            problems.append(f"{what}: a traceback: {shown.strip().splitlines()[-1]}")
        elif refused and ran.code is None:
            problems.append(f"{what}: accepted, still running after {TIME_LIMIT_S} s")
        elif refused and ran.code == 0:
            problems.append(f"{what}: exit 0")
        elif refused and not shown.strip():
            problems.append(f"{what}: exit {ran.code} without a word")
    assert not problems, f"{len(problems)} of {len(walked[prog])}:\n" + "\n".join(problems)
    assert len(walked[prog]) > 40  # the walk found the tree


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_under_json_an_error_is_one_json_object_on_stdout_with_its_exit_code(
    prog: str, walked: dict[str, list[tuple[str, bool, Ran]]]
) -> None:
    plain = {what: ran for what, _, ran in walked[prog]}
    checked = 0
    for what, _refused, ran in walked[prog]:
        if not what.endswith(", --json") or ran.code in (None, 0):
            continue  # an exit 0 or a traceback: the test above says it
        try:
            answer = json.loads(ran.stdout)
        except ValueError:
            raise AssertionError(f"{what}: not JSON: {ran.stdout!r} {ran.stderr!r}") from None
        assert set(answer) == {"error", "message"}, (what, answer)
        assert isinstance(answer["error"], str), (what, answer)
        assert answer["message"], (what, answer)
        assert ran.code == plain[what.removesuffix(", --json")].code, what  # as without
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_every_numeric_option_has_its_range(prog: str) -> None:
    """A number a person types is checked where it is read: below or above what the command
    can use is a usage error naming the option, not a failure deep inside (the table's own
    settings in `replay` are the table's to check: table/config.py says their ranges)."""
    unranged = [
        f"{' '.join(path)} {param.opts[0] if param.opts else param.name}"
        for path, _command, param in walk(PROGRAMS[prog][1], (prog,))
        if is_numeric(param.type)
        and not isinstance(param.type, click.types._NumberRangeBase)
        and path != ("shoe-controller", "replay")
    ]
    assert not unranged


def test_the_walk_sees_every_command() -> None:
    names = {" ".join(path) for path, _ in commands(controller_main, ("shoe-controller",))}
    assert {"shoe-controller export", "shoe-controller report", "shoe-controller demo"} <= names
    names = {" ".join(path) for path, _ in commands(shoectl_main, ("shoectl",))}
    assert {"shoectl round", "shoectl road", "shoectl dealer", "shoectl events"} <= names
