"""The `shoe-controller` command: the daemon, its demo, and the tools around it."""

from __future__ import annotations

import click

from drivers.monitor import monitor_command
from shoe_controller import __version__
from shoe_controller.odds import odds_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="shoe-controller")
def main() -> None:
    """Dealing-shoe controller for a baccarat table."""


main.add_command(odds_command)
main.add_command(monitor_command)
