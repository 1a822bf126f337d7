"""The one way every command writes a file it was asked for (`-o`, `--export`, `--svg`).

A place that cannot take the file is said in one line before any work is done, exit 1, as
`cp` says it: a folder that is not there, a name that is a folder, a folder that cannot be
written (read-only, no permission). `OutputFile` checks the place when the option is read;
`open_output` writes the file whole or not at all (a temporary file beside it, renamed over
it) and says a failure it meets while writing (a full disk, a place that changed since) the
same way. '-' is standard output.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import click

STDOUT = "-"


class OutputFile(click.ParamType):
    """A file to write ('-': standard output), its folder checked as the option is read."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = os.fspath(value)
        if text == STDOUT:
            return text
        if not text:
            self.fail("an empty name: give a file name, or '-' for standard output", param, ctx)
        why = unwritable(Path(text))
        if why is not None:
            raise click.FileError(text, why)
        return text


def unwritable(path: Path) -> str | None:
    """Why `path` cannot be written as a new or replaced file; None when it can."""
    if path.is_dir():
        return "it is a folder: give the name of a file in it"
    folder = path.parent
    if not folder.exists():
        return f"there is no folder {folder}"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK):
        return f"the folder {folder} cannot be written (read-only, or no permission)"
    return None


@contextmanager
def open_output(path: str) -> Iterator[IO[str]]:
    """`path` open for text ('-': standard output), replaced whole when the block ends; an
    OSError about the file becomes click's one-line FileError (exit 1)."""
    if path == STDOUT:
        with click.open_file(path, "w", encoding="utf-8") as stream:
            yield stream
        return
    try:
        with click.open_file(path, "w", encoding="utf-8", atomic=True) as stream:
            yield stream
    except OSError as error:
        raise click.FileError(path, error.strerror or str(error)) from None
