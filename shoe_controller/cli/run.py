"""`shoe-controller run`: load the configuration and run this table's daemon until it stops."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from shoe_controller.cli.options import config_option
from shoe_controller.service import logs
from shoe_controller.service.config import ConfigError


@click.command("run")
@config_option("The TOML configuration (config/shoe-controller.toml documents every key).")
def run_command(config_path: Path) -> None:
    """Run the controller of this table (the systemd service's command)."""
    from shoe_controller.service.daemon import Daemon, StartupError  # noqa: PLC0415 - the daemon's own imports
    from shoe_controller.service.preflight import load_checked  # noqa: PLC0415 - as the daemon

    # Everything checkable is checked before anything starts (systemd hears no READY): a bad
    # value is one line and exit status 1, never a traceback at every restart (issue 12).
    try:
        checked = load_checked(config_path)
    except ConfigError as error:
        raise click.ClickException(_one_line(str(error))) from None
    config = checked.config
    logs.apply(config.log, squeeze=config.procedures.squeeze, table=config.table.id)
    try:
        daemon = Daemon(config, config_path=config_path, registries=checked.registries)
    except StartupError as error:
        raise click.ClickException(_one_line(str(error))) from None
    asyncio.run(daemon.run())
    if daemon.failed:
        raise SystemExit(1)


def _one_line(message: str) -> str:
    """The journal shows one line per refusal, whatever a file name holds."""
    return message.replace("\r", "\\r").replace("\n", "\\n")
