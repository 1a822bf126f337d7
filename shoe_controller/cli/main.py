"""The `shoe-controller` command: the daemon, its demo, and the tools around it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from drivers.monitor import monitor_command
from shoe_controller import __version__
from shoe_controller.cli.demo import demo_command
from shoe_controller.cli.replay import replay_command
from shoe_controller.game.odds import odds_command
from shoe_controller.service import logs
from shoe_controller.service.config import DEFAULT_PATH, ConfigError, load
from shoe_controller.testing.receiver import receiver_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="shoe-controller")
def main() -> None:
    """Dealing-shoe controller for a baccarat table."""


@main.command("run")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_PATH,
    show_default=True,
    help="The TOML configuration (config/shoe-controller.toml documents every key).",
)
def run_command(config_path: Path) -> None:
    """Run the controller of this table (the systemd service's command)."""
    from shoe_controller.service.daemon import Daemon, StartupError  # noqa: PLC0415 - the daemon's own imports

    try:
        config = load(config_path)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    logs.configure(
        format=config.log.format, level=config.log.level, squeeze=config.procedures.squeeze
    )
    try:
        daemon = Daemon(config, config_path=config_path)
    except StartupError as error:
        raise click.ClickException(str(error)) from None
    asyncio.run(daemon.run())
    if daemon.failed:
        raise SystemExit(1)


main.add_command(demo_command)
main.add_command(odds_command)
main.add_command(monitor_command)
main.add_command(receiver_command)
main.add_command(replay_command)


if __name__ == "__main__":
    main()
