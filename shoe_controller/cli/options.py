"""Options several of shoe-controller's commands share, written once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from shoe_controller.service.config import DEFAULT_PATH


def config_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--config FILE` (as `config_path`), the installed configuration by default."""
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=DEFAULT_PATH,
        show_default=True,
        help=help_text,
    )


def own_folder(_ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A folder of the command's own: an empty name (click reads it as ".") or "." would be the
    folder the command was typed in, whose files the command writes or clears."""
    if value is not None and str(value) in {"", "."}:
        raise click.BadParameter("give a folder of its own, not the current one", param=param)
    return value
