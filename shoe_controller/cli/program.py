"""What both programs (`shoe-controller`, `shoectl`) do with an error, in one place.

Without `--json` an error is said as click says it (one line; a usage error with the usage
above it), or in the program's own words (`Failure`: `shoectl: cannot reach ...`), on
standard error. With `--json` anywhere on the command line (before a `--`), the same error is
one JSON object on standard output, `{"error": CODE, "message": WORDS}`, for the script that
asked for JSON; the exit code is the same either way (docs/shoectl.md "Exit codes").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, Any, NoReturn

import click

JSON_FLAG = "--json"
_JSON_META = "program.json"

USAGE, FILE, FAILED = "usage", "file", "failed"  # the codes of click's own errors


class Failure(click.ClickException):
    """An error a command says in its program's words, with the code `--json` gives it."""

    def __init__(self, message: str, *, program: str, code: str, exit_code: int) -> None:
        super().__init__(message)
        self.program = program
        self.code = code
        self.exit_code = exit_code

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"{self.program}: {self.format_message()}", err=True, file=file)


def error_code(error: click.ClickException) -> str:
    """The word a script reads from an error (`{"error": ...}`)."""
    if isinstance(error, Failure):
        return error.code
    if isinstance(error, click.UsageError):
        return USAGE
    if isinstance(error, click.FileError):
        return FILE
    return FAILED


def wants_json(args: Sequence[str]) -> bool:
    """`--json` given anywhere before a `--` (the group's option or a command's)."""
    words = list(args)
    if "--" in words:
        words = words[: words.index("--")]
    return JSON_FLAG in words


def _said(error: click.ClickException, as_json: bool) -> NoReturn:
    """The error as JSON on stdout with its exit code; without --json, click says it."""
    if not as_json:
        raise error
    message = error.format_message()
    click.echo(json.dumps({"error": error_code(error), "message": message}, ensure_ascii=False))
    raise SystemExit(error.exit_code) from None


class Program(click.Group):
    """A program's top group: its errors come out as the module says, whoever raised them."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        as_json = wants_json(args)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except click.ClickException as error:
            _said(error, as_json)
        ctx.meta[_JSON_META] = as_json
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            _said(error, bool(ctx.meta.get(_JSON_META)))
