"""What every shoectl command shares: its exit codes, one request on a fresh connection,
and the way it prints (a person's text or JSON)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, NoReturn

import click

from shoe_controller.cli.shoectl.client import AnswerError, Client, UnreachableError
from shoe_controller.cli.shoectl.render import Painter

EXIT_OK, EXIT_ATTENTION, EXIT_UNREACHABLE, EXIT_NOT_AUTHORIZED = 0, 1, 2, 4
EXIT_REFUSED = 1
NAGIOS_UNKNOWN = 3


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead.")


def fail(text: str, code: int = EXIT_UNREACHABLE) -> NoReturn:
    click.echo(f"shoectl: {text}", err=True)
    raise SystemExit(code)


def ask(request: Mapping[str, Any]) -> dict[str, Any]:
    """One request on a fresh connection; exits 2 with one line when it cannot be answered."""
    socket_path = click.get_current_context().obj
    try:
        with Client(socket_path) as client:
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
