"""`shoe-controller run`: load the configuration and run this table's daemon until it stops."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from shoe_controller.cli.options import config_option
from shoe_controller.service import logs
from shoe_controller.service.config import ConfigError
from shoe_controller.service.journal_lock import EXIT_IN_USE, JournalInUse, LockUnusable


class InUse(click.ClickException):
    """Another process holds the journal: one line, and an exit code of its own (75), so that
    a script or systemd tells "try again once that one stopped" from a broken configuration
    (docs/journal.md "One daemon a journal")."""

    exit_code = EXIT_IN_USE


@click.command("run")
@config_option("The TOML configuration (config/shoe-controller.toml documents every key).")
def run_command(config_path: Path) -> None:
    """Run the controller of this table (the systemd service's command)."""
    from shoe_controller.service.daemon import Daemon, StartupError  # noqa: PLC0415 - the daemon's own imports
    from shoe_controller.service.preflight import load_checked  # noqa: PLC0415 - as the daemon

    # Everything checkable is checked before anything starts (systemd hears no READY): a bad
    # value is one line and exit status 1, never a traceback at every restart.
    try:
        checked = load_checked(config_path)
    except ConfigError as error:
        raise click.ClickException(_one_line(str(error))) from None
    config = checked.config
    logs.apply(config.log, squeeze=config.procedures.squeeze, table=config.table.id)
    try:
        daemon = Daemon(config, config_path=config_path, registries=checked.registries)
        # The journal's lock first: a second daemon opens no device, socket or journal.
        asyncio.run(daemon.run())
    except StartupError as error:
        raise click.ClickException(_one_line(str(error))) from None
    except JournalInUse as error:
        raise InUse(_one_line(str(error))) from None
    except LockUnusable as error:
        raise click.ClickException(_one_line(f"{config_path}: [journal] path: {error}")) from None
    if daemon.failed:
        raise SystemExit(1)


def _one_line(message: str) -> str:
    """The journal shows one line per refusal, whatever a file name holds."""
    return message.replace("\r", "\\r").replace("\n", "\\n")
