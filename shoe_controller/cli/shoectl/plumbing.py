"""What every shoectl command shares: its exit codes, one request on a fresh connection,
and the way it prints (a person's text or JSON, times in the chosen zone)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

import click

from shoe_controller.cli.program import Failure
from shoe_controller.cli.shoectl.client import TIMEOUT_S, AnswerError, Client, UnreachableError
from shoe_controller.cli.shoectl.render import Painter
from shoe_controller.cli.shoectl.times import Times

EXIT_OK, EXIT_ATTENTION, EXIT_UNREACHABLE, EXIT_NOT_AUTHORIZED = 0, 1, 2, 4
EXIT_REFUSED = 1
NAGIOS_UNKNOWN = 3


# Options given before the command (`shoectl --json status`), kept in the context's meta so
# that every command sees them, whoever wrote it.
JSON_KEY, TIMEOUT_KEY, UTC_KEY = "shoectl.json", "shoectl.timeout", "shoectl.utc"
F = TypeVar("F", bound=Callable[..., Any])


def _json_too(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    """`--json` after the command, or before it."""
    return bool(value) or bool(ctx.meta.get(JSON_KEY))


def _utc_too(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """`--utc` after the command, or before it (the group's callback ran first)."""
    if value:
        ctx.meta[UTC_KEY] = True


_json_flag = click.option(
    "--json", "as_json", is_flag=True, callback=_json_too, help="Print JSON instead."
)
_utc_flag = click.option(
    "--utc",
    is_flag=True,
    expose_value=False,
    callback=_utc_too,
    help="Times in UTC instead of this machine's zone.",
)


def json_option(command: F) -> F:
    """The output options every command takes after its name too: `--json` and `--utc`."""
    return _utc_flag(_json_flag(command))


def times() -> Times:
    """How this invocation shows times (`--utc`, else the machine's zone: times.py)."""
    return Times.chosen(bool(click.get_current_context().meta.get(UTC_KEY)))


def timeout() -> float:
    """How long to wait for an answer (`shoectl --timeout`)."""
    return float(click.get_current_context().meta.get(TIMEOUT_KEY, TIMEOUT_S))


def connect() -> Client:
    """A connection to the control socket of the command line; UnreachableError if none."""
    return Client(click.get_current_context().obj, timeout())


def fail(text: str, exit_code: int = EXIT_UNREACHABLE, *, code: str = "unreachable") -> NoReturn:
    """`shoectl: TEXT` on stderr and `exit_code`; under --json `{"error": code, ...}`."""
    raise Failure(text, program="shoectl", code=code, exit_code=exit_code)


def fail_answer(error: AnswerError, exit_code: int = EXIT_UNREACHABLE) -> NoReturn:
    """The daemon's error answer in its words; its code is for `--json` alone."""
    fail(error.text, exit_code, code=str(error.code))


def ask(request: Mapping[str, Any]) -> dict[str, Any]:
    """One request on a fresh connection; exits 2 with one line when it cannot be answered."""
    try:
        with connect() as client:
            return client.request(request)
    except UnreachableError as error:
        fail(str(error))
    except AnswerError as error:
        fail_answer(error)


def out(text: str = "") -> None:
    click.echo(text, color=True)


def print_json(value: Any) -> None:
    """An answer as JSON, its times in ISO 8601 UTC with Z (times.py's rule)."""
    click.echo(json.dumps(times().in_json(value), indent=2, ensure_ascii=False))


def print_json_line(value: Any) -> None:
    """One answer (an event) on one line, its times as print_json writes them."""
    click.echo(json.dumps(times().in_json(value), ensure_ascii=False))


def painter() -> Painter:
    return Painter.for_stream(sys.stdout)
