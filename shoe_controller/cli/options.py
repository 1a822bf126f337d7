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
