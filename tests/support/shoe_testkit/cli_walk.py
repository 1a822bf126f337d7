"""Every command and option of a click program, from click's own tree, and bad values for each.

`walk` yields every (command path, parameter) of a program as click builds it (the lazy
group's subcommands loaded as `--help` would), so a command added later is walked too.
`bad_values` picks, from a parameter's type, the values a person gets wrong: a number that is
not one, an empty string, below or above its range, a huge one; a file that is not there, a
folder given as a file, a place that cannot be written. `base_args` fills a command's required
parameters with values that pass, so that each bad value is the only thing wrong.

`run_forked` runs many invocations of one program as real processes, fast: a runner process
imports the program once (`python -m shoe_testkit.cli_walk MODULE`), then forks one child per
invocation, which calls the program's `main` as its console script does (standalone: click's
own error handling, `sys.exit`, an escaping exception printed by Python's own hook). Starting
the interpreter for each would cost a second of CPU each, hundreds of times.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

REPO = Path(__file__).resolve().parents[3]
HUGE_INT = "1" + "0" * 30
HUGE_FLOAT = "1e300"


@dataclass(frozen=True, slots=True)
class Bad:
    """A value to give a parameter; `refused`: the program must exit non-zero for it."""

    label: str
    value: str
    refused: bool


def walk(
    command: click.Command, path: tuple[str, ...], parent: click.Context | None = None
) -> Iterator[tuple[tuple[str, ...], click.Command, click.Parameter]]:
    """(command path, command, parameter) for every value-taking parameter of the tree."""
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    for param in command.params:
        if isinstance(param, click.Option) and (param.is_flag or param.count):
            continue
        yield path, command, param
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from walk(sub, (*path, name), ctx)


def commands(
    command: click.Command, path: tuple[str, ...], parent: click.Context | None = None
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command of the tree with its path, groups included."""
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    yield path, command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from commands(sub, (*path, name), ctx)


def is_numeric(kind: click.ParamType) -> bool:
    return isinstance(kind, click.types.IntParamType | click.types.FloatParamType)


def bad_values(param: click.Parameter, scratch: Path) -> list[Bad]:
    """The wrong values a person gives `param`, by its type."""
    from shoe_controller.cli.output_file import OutputFile  # noqa: PLC0415 - the product's

    kind = param.type
    if is_numeric(kind):
        whole = isinstance(kind, click.types.IntParamType)
        low = getattr(kind, "min", None)
        high = getattr(kind, "max", None)
        values = [Bad("not a number", "abc", True), Bad("empty", "", True)]
        if low is None:
            values.append(Bad("negative", "-1", True))
        else:
            values.append(Bad("below its range", str(low - 1), True))
            if low > 0:
                values.append(Bad("zero", "0", True))
        if high is not None:
            values.append(Bad("above its range", str(high + 1), True))
        else:
            values.append(Bad("huge", HUGE_INT if whole else HUGE_FLOAT, False))
        return values
    if isinstance(kind, OutputFile):
        return [
            Bad("empty", "", True),
            Bad("a missing folder", str(scratch / "no-such-folder" / "out.txt"), True),
            Bad("a folder", str(scratch), True),
            Bad("a file as its folder", str(scratch / "a-file" / "out.txt"), True),
            Bad("a read-only place", "/proc/out.txt", True),
        ]
    if isinstance(kind, click.Path):
        values = [Bad("empty", "", True)]  # no file's name, nor a folder's
        if kind.file_okay:  # a missing folder may be one to make (demo --dir)
            values.append(Bad("a missing file", str(scratch / "no-such-file"), bool(kind.exists)))
        if not kind.dir_okay:
            values.append(Bad("a folder", str(scratch), True))
        return values
    if isinstance(kind, click.Choice):
        return [Bad("not a choice", "no-such-choice", True), Bad("empty", "", True)]
    if param.default == "":
        return []  # empty is its own default: no wrong value of its type to give
    return [Bad("empty", "", False)]


def valid_value(param: click.Parameter, scratch: Path) -> str:
    """A value of `param`'s type that passes (for the required ones)."""
    from shoe_controller.cli.output_file import OutputFile  # noqa: PLC0415 - the product's
    from shoe_controller.cli.shoectl.checks import CardParam, PositionParam  # noqa: PLC0415

    kind = param.type
    if isinstance(kind, click.Choice):
        return str(kind.choices[0])
    if is_numeric(kind):
        low = getattr(kind, "min", None)
        return str(max(low, 1) if low is not None else 1)
    if isinstance(kind, OutputFile):
        return str(scratch / "out.txt")
    if isinstance(kind, click.Path):
        return str(scratch / ("a-folder" if not kind.file_okay else "a-file"))
    if isinstance(kind, CardParam):
        return "QH"
    if isinstance(kind, PositionParam):
        return "P1"
    return "x"


def prepare(scratch: Path) -> None:
    """The files `valid_value` and `bad_values` name."""
    (scratch / "a-file").write_text("{}\n")
    (scratch / "a-folder").mkdir(exist_ok=True)


def invocation(  # noqa: PLR0917 - one invocation's parts, each named at the call
    prefix: Sequence[str],
    path: tuple[str, ...],
    command: click.Command,
    tried: click.Parameter,
    value: str,
    scratch: Path,
    then: Sequence[str] = (),
) -> list[str]:
    """The arguments that give `tried` the `value`, every other required parameter a good one
    (`prefix`: the program's own options; `then`: after a group's option, a command)."""
    args: list[str] = [*prefix, *path[1:]]
    arguments: list[str] = []
    for param in command.params:
        given = value if param is tried else None
        if given is None and not param.required:
            continue
        given = given if given is not None else valid_value(param, scratch)
        if isinstance(param, click.Argument):
            arguments.append(given)
        else:
            args += [param.opts[0], given]
    return [*args, *then, "--", *arguments] if arguments else [*args, *then]


@dataclass(frozen=True, slots=True)
class Ran:
    args: list[str]
    code: int | None  # None: still running at the time limit (stopped)
    stdout: str
    stderr: str


def run_forked(
    module: str,
    prog: str,
    cases: Sequence[Sequence[str]],
    *,
    env: dict[str, str],
    cwd: Path,
    time_limit_s: float,
) -> list[Ran]:
    """Every case through the runner process of `module`'s `main`, run in `cwd` (what a
    command makes in its working folder stays there); results in case order."""
    request = json.dumps({"prog": prog, "cases": [list(case) for case in cases]})
    runner = subprocess.run(
        [sys.executable, "-m", "shoe_testkit.cli_walk", module, str(time_limit_s)],
        input=request, capture_output=True, text=True, env=env, cwd=cwd, check=False,
        timeout=60 + time_limit_s * len(cases),
    )  # fmt: skip
    assert runner.returncode == 0, runner.stderr[-3000:]
    return [Ran(**item) for item in json.loads(runner.stdout)]


# ---------------------------------------------------------------------- the runner process

_PARALLEL = 2


def _child(prog: str, main: click.Command, args: list[str], out: Path, err: Path) -> None:
    os.setsid()  # its own group: a command that started processes is stopped with them
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    sys.argv = [prog, *args]
    code = 0
    try:
        main.main(args=args, prog_name=prog)
    except SystemExit as stop:
        if isinstance(stop.code, int):
            code = stop.code
        elif stop.code is not None:
            print(stop.code, file=sys.stderr)  # as Python does for sys.exit("text")
            code = 1
    except BaseException:  # what a person would see: Python's traceback
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):
            stream.flush()
    os._exit(code)


def _stop(pid: int) -> None:
    for signum, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, signum)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                return
            time.sleep(0.02)


def _serve(module: str, time_limit_s: float) -> None:
    import tempfile  # noqa: PLC0415 - the runner's alone

    request = json.load(sys.stdin)
    prog, cases = request["prog"], request["cases"]
    main = importlib.import_module(module).main
    list(commands(main, (prog,)))  # every subcommand imported once, before the forks
    results: list[dict[str, Any] | None] = [None] * len(cases)
    with tempfile.TemporaryDirectory(prefix="cli-walk-") as folder:
        pending = list(enumerate(cases))
        running: dict[int, tuple[int, float]] = {}  # pid: (case, started)
        while pending or running:
            while pending and len(running) < _PARALLEL:
                number, args = pending.pop(0)
                out, err = Path(folder) / f"{number}.out", Path(folder) / f"{number}.err"
                pid = os.fork()
                if pid == 0:
                    _child(prog, main, args, out, err)
                running[pid] = (number, time.monotonic())
            time.sleep(0.005)
            for pid, (number, started) in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                code: int | None
                if done:
                    code = os.waitstatus_to_exitcode(status)
                elif time.monotonic() - started > time_limit_s:
                    _stop(pid)
                    code = None
                else:
                    continue
                del running[pid]
                out, err = Path(folder) / f"{number}.out", Path(folder) / f"{number}.err"
                results[number] = {
                    "args": cases[number],
                    "code": code,
                    "stdout": out.read_text(errors="replace") if out.exists() else "",
                    "stderr": err.read_text(errors="replace") if err.exists() else "",
                }
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    _serve(sys.argv[1], float(sys.argv[2]))
