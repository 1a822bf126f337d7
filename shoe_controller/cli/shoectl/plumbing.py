"""What every shoectl command shares: its exit codes, one request on a fresh connection,
and the way it prints (a person's text or JSON)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, NoReturn

import click

from shoe_controller.cli.shoectl.client import TIMEOUT_S, AnswerError, Client, UnreachableError
from shoe_controller.cli.shoectl.render import Painter

EXIT_OK, EXIT_ATTENTION, EXIT_UNREACHABLE, EXIT_NOT_AUTHORIZED = 0, 1, 2, 4
EXIT_REFUSED = 1
NAGIOS_UNKNOWN = 3


# Options given before the command (`shoectl --json status`), kept in the context's meta so
# that every command sees them, whoever wrote it.
JSON_KEY, TIMEOUT_KEY = "shoectl.json", "shoectl.timeout"


def _json_too(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    """`--json` after the command, or before it."""
    return bool(value) or bool(ctx.meta.get(JSON_KEY))


json_option = click.option(
    "--json", "as_json", is_flag=True, callback=_json_too, help="Print JSON instead."
)


def timeout() -> float:
    """How long to wait for an answer (`shoectl --timeout`)."""
    return float(click.get_current_context().meta.get(TIMEOUT_KEY, TIMEOUT_S))


def connect() -> Client:
    """A connection to the control socket of the command line; UnreachableError if none."""
    return Client(click.get_current_context().obj, timeout())


def fail(text: str, code: int = EXIT_UNREACHABLE) -> NoReturn:
    click.echo(f"shoectl: {text}", err=True)
    raise SystemExit(code)


def ask(request: Mapping[str, Any]) -> dict[str, Any]:
    """One request on a fresh connection; exits 2 with one line when it cannot be answered."""
    try:
        with connect() as client:
            return client.request(request)
    except UnreachableError as error:
        fail(str(error))
    except AnswerError as error:
        fail(f"{error.text} ({error.code})")


def out(text: str = "") -> None:
    click.echo(text, color=True)


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def painter() -> Painter:
    return Painter.for_stream(sys.stdout)
