"""shoectl's supervisor actions: one command per action in the registry (table/actions.py),
sent to the daemon, which checks who may act."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import click

from shoe_controller.cli.shoectl.client import Client, UnreachableError
from shoe_controller.cli.shoectl.plumbing import (
    EXIT_NOT_AUTHORIZED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    fail,
    json_option,
    out,
    painter,
    print_json,
)
from shoe_controller.cli.shoectl.render import Painter
from shoe_controller.table.actions import POSITION_NAMES, Action, Arg


def _arg_option(arg: Arg) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    name = "--" + arg.name.replace("_", "-")
    if arg.kind == "bool":
        return click.option(name, arg.name, is_flag=True, default=None, help=arg.help)
    if arg.kind == "position":
        kind: Any = click.Choice(POSITION_NAMES, case_sensitive=False)
        metavar = "[" + "|".join(POSITION_NAMES) + "]"
        text = "the position, R7 dealing order"
    elif arg.kind == "int":
        kind, metavar, text = click.IntRange(arg.low, arg.high), "N", arg.help
    else:
        kind, metavar, text = str, "CARD", f"{arg.help}: rank then suit, e.g. QH, TD, 10D"
    return click.option(
        name, arg.name, type=kind, metavar=metavar, required=arg.required, help=text
    )


# One line for `shoectl --help`; the command's own --help gives table/actions.py's full text.


def action_command(action: Action) -> click.Command:
    def run(by: str, reason: str, as_json: bool, **values: Any) -> None:
        args = {name: value for name, value in values.items() if value is not None}
        if "position" in args:
            args["position"] = str(args["position"]).upper()
        request = {"cmd": "act", "action": action.name, "by": by, "reason": reason, "args": args}
        carry_out(request, as_json)

    run.__doc__ = f"{action.summary} ({action.rules})"
    command: Callable[..., Any] = run
    for arg in reversed(action.args):
        command = _arg_option(arg)(command)
    command = json_option(command)
    command = click.option(
        "--reason", required=True, help="Why: journaled and sent to the table server."
    )(command)
    command = click.option(
        "--by", required=True, metavar="ID", help="Your supervisor id (journaled, sent)."
    )(command)
    return click.command(action.name.replace("_", "-"), short_help=action.short)(command)


def carry_out(request: Mapping[str, Any], as_json: bool) -> None:
    """Send an action; exit 0 accepted, 1 refused by the table, 4 not authorized, 2 error."""
    socket_path = click.get_current_context().obj
    try:
        with Client(socket_path) as client:
            client.send(request)
            answer = client.receive()
    except UnreachableError as error:
        fail(str(error))
    if as_json:
        print_json(answer)
    paint = painter()
    if answer.get("ok"):
        result = answer["result"]
        if not as_json:
            out(
                paint("accepted", "ok")
                + f": {result['action']} by {result['by']} (as {result['os_user']}),"
                " journaled and sent as supervisor.action"
            )
        raise SystemExit(EXIT_OK)
    error = answer.get("error") or {}
    code, text = error.get("code"), error.get("text")
    if not as_json:
        warn = Painter.for_stream(sys.stderr)
        click.echo(f"{warn('refused', 'crit')}: {text}", err=True, color=warn.enabled)
    if code == "not_authorized":
        raise SystemExit(EXIT_NOT_AUTHORIZED)
    raise SystemExit(EXIT_REFUSED if code == "refused" else EXIT_UNREACHABLE)
