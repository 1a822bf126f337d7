"""shoectl's supervisor actions: one command per action in the registry (table/action_specs.py),
sent to the daemon, which checks who may act."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import click

from shoe_controller.cli.shoectl.checks import CardParam, PositionParam, not_blank
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
    timeout,
    times,
)
from shoe_controller.cli.shoectl.render import Painter
from shoe_controller.cli.shoectl.wording import in_shoectl_words
from shoe_controller.table.action_specs import POSITION_NAMES, Action, Arg


def _arg_option(arg: Arg) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    name = "--" + arg.name.replace("_", "-")
    said = arg.help[:1].upper() + arg.help[1:]  # a sentence, as every option's help is
    if arg.kind == "bool":
        return click.option(name, arg.name, is_flag=True, default=None, help=f"{said}.")
    if arg.kind == "position":
        kind: Any = PositionParam()
        metavar = "P1..B3"
        text = f"{said}: {', '.join(POSITION_NAMES)} (R7's dealing order)."
    elif arg.kind == "int":
        kind, metavar, text = click.IntRange(arg.low, arg.high), "N", f"{said}."
    elif arg.kind == "text":  # its form is the table's to check (action_specs.parse_args)
        kind, metavar, text = str, "ID", f"{said}."
    else:  # checked here: a bad card is a usage error, not a refusal the table journals
        kind, metavar, text = CardParam(), "CARD", f"{said}: rank then suit, e.g. QH, TD, 10D."
    return click.option(
        name, arg.name, type=kind, metavar=metavar, required=arg.required, help=text
    )


# One line for `shoectl --help`; the command's own --help gives table/action_specs.py's full text.


def action_command(action: Action) -> click.Command:
    def run(by: str, reason: str, as_json: bool, **values: Any) -> None:
        args = {name: value for name, value in values.items() if value is not None}
        if action.one_of and not any(args.get(name) for name in action.one_of):
            given = " or ".join("--" + name.replace("_", "-") for name in action.one_of)
            raise click.UsageError(f"{action.name.replace('_', '-')} needs {given}")
        if "position" in args:
            args["position"] = str(args["position"]).upper()
        request = {
            "cmd": "act",
            "action": action.name,
            "by": by,
            "reason": reason,
            "args": args,
            "key": uuid.uuid4().hex,  # this invocation: sent again, it is carried out once
        }
        carry_out(request, as_json)

    run.__doc__ = action.summary  # the rules it follows are in docs/inputs.md
    command: Callable[..., Any] = run
    for arg in reversed(action.args):
        command = _arg_option(arg)(command)
    command = json_option(command)
    command = click.option(
        "--reason",
        required=True,
        callback=not_blank,
        help="Why: journaled and sent to the table server.",
    )(command)
    command = click.option(
        "--by",
        required=True,
        metavar="ID",
        callback=not_blank,
        help="Your supervisor id, as your house writes it (journaled and sent).",
    )(command)
    return click.command(action.name.replace("_", "-"), short_help=action.short)(command)


def carry_out(request: Mapping[str, Any], as_json: bool) -> None:
    """Send an action; exit 0 accepted, 1 refused by the table, 4 not authorized, 2 error.

    When the daemon answers that the outcome is unknown (its disk failed the commit), it
    restarts to check its journal: the same request, with the same key, goes again until it
    answers, and is carried out at most once (docs/control.md "The same command twice").
    """
    socket_path = click.get_current_context().obj
    answer = _send(socket_path, request)
    deadline = time.monotonic() + UNKNOWN_OUTCOME_WAIT_S
    while (answer.get("error") or {}).get("code") == OUTCOME_UNKNOWN:
        warn = Painter.for_stream(sys.stderr)
        click.echo(f"{warn('outcome unknown', 'warn')}: checking...", err=True, color=warn.enabled)
        answer = _resend(socket_path, request, deadline)
    if as_json:
        print_json(answer)
    paint = painter()
    if answer.get("ok"):
        result = answer["result"]
        if not as_json:
            again = " (it had been carried out before the check)" if result.get("repeated") else ""
            out(
                paint("accepted", "ok")
                + f": {result['action']} by {result['by']} (as {result['os_user']}),"
                f" journaled and sent as supervisor.action{again}"
            )
        raise SystemExit(EXIT_OK)
    error = answer.get("error") or {}
    code, text = error.get("code"), error.get("text")
    if not as_json:
        warn = Painter.for_stream(sys.stderr)
        # "resume refused: nothing to resume" reads "refused: nothing to resume".
        said = str(text).removeprefix(f"{request['action']} refused: ")
        shown = times().in_text(in_shoectl_words(said))
        click.echo(f"{warn('refused', 'crit')}: {shown}", err=True, color=warn.enabled)
    if code == "not_authorized":
        raise SystemExit(EXIT_NOT_AUTHORIZED)
    raise SystemExit(EXIT_REFUSED if code == "refused" else EXIT_UNREACHABLE)


UNKNOWN_OUTCOME_WAIT_S = 60.0  # how long shoectl waits for the daemon to check its journal
_RESEND_EVERY_S = 0.5


OUTCOME_UNKNOWN = "outcome_unknown"


def _send(socket_path: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """The answer; a connection lost once the request went is an unknown outcome too (the
    daemon may have stopped in the middle of storing it)."""
    try:
        client = Client(socket_path, timeout())
    except UnreachableError as error:
        fail(str(error))
    with client:
        try:
            client.send(request)
            return client.receive()
        except UnreachableError as error:
            return {"ok": False, "error": {"code": OUTCOME_UNKNOWN, "text": str(error)}}


def _resend(socket_path: str, request: Mapping[str, Any], deadline: float) -> dict[str, Any]:
    """The same request again once the daemon is back (it restarts to check its journal)."""
    while True:
        time.sleep(_RESEND_EVERY_S)
        try:
            with Client(socket_path, timeout()) as client:
                client.send(request)
                return client.receive()
        except UnreachableError as error:
            if time.monotonic() > deadline:
                fail(f"the outcome is still unknown: {error}; `shoectl events` shows it")
