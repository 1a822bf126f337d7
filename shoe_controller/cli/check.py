"""`shoe-controller check`: the start-up checks of `run` alone, as `nginx -t` tests nginx's.

The configuration is read and everything it names checked exactly as `shoe-controller run`
does before it starts anything (service/config.py's `load`, service/preflight.py's
`load_checked`, and the sinks' secrets the daemon reads first: docs/config.md); nothing is
opened, created or started. Exit 0 when the daemon would start with it, 1 with the one line
that `run` would have refused with.
"""

from __future__ import annotations

from pathlib import Path

import click

from shoe_controller.cli.options import config_option
from shoe_controller.service.config import Config, ConfigError


@click.command("check")
@config_option("The TOML configuration to check (config/shoe-controller.toml documents every key).")
def check_command(config_path: Path) -> None:
    """Check a configuration as `run` does at start-up, and start nothing (like nginx -t)."""
    from shoe_controller.service import sink_kinds  # noqa: PLC0415 - the daemon's own checks
    from shoe_controller.service.preflight import load_checked  # noqa: PLC0415 - as run

    try:
        config = load_checked(config_path).config
        sink_kinds.check_secrets(config)
    except (ConfigError, ValueError) as error:
        text = str(error).replace("\r", "\\r").replace("\n", "\\n")
        if not isinstance(error, ConfigError):
            text = f"{config_path}: {text}"
        failed = f"shoe-controller: {config_path}: check failed"
        raise click.ClickException(f"{text}\n{failed}") from None
    for line in summary(config):
        click.echo(f"shoe-controller: {line}")
    click.echo(
        f"shoe-controller: {config_path}: every start-up check passed; `shoe-controller run`"
        " starts with it"
    )


def summary(config: Config) -> list[str]:
    """What the configuration sets up, one line a part, for the person who checks it."""
    lines = [f"table {config.table.id} ({config.controller_id}), mode {config.procedures.mode}"]
    for name, device in (("scanner", config.scanner), ("shuffler", config.shuffler)):
        if device is not None:
            where = device.port or f"usb {device.usb}"
            lines.append(f"{name}: {device.kind} ({device.protocol}) on {where}")
    for section in config.sinks:
        label = section.label
        lines.append("events to " + ("the table server ([server])" if label == "server" else label))
    lines.append(f"journal {config.journal.path}, control socket {config.control.socket}")
    return lines
