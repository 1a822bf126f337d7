"""`shoe-controller surveillance`: the companion that reports the exact edge of every bet on the
cards left after every round (docs/surveillance.md)."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

import click

from shoe_controller.cli.options import config_option
from shoe_controller.service import logs
from shoe_controller.service.config import ConfigError, load


@click.command("surveillance")
@config_option("The controller's TOML configuration (its socket, decks, pay table, R14.1 round).")
@click.option(
    "--socket", "socket_path", metavar="PATH", help="The control socket (default: the config's)."
)
def surveillance_command(config_path: Path, socket_path: str | None) -> None:
    """Follow the table and report the exact edge of every bet on the cards left, each round.

    Runs beside the controller as its own process (numpy and the analysis stay out of the
    daemon): it follows the journal's events on the control socket and sends a report after
    every round, after a burn and when a shoe opens; the controller raises surveillance.edge
    when a bet's player edge rises above [surveillance] threshold. Run it as the
    controller's user or a member of [surveillance] group (docs/surveillance.md).
    """
    from shoe_controller.companion.companion import (  # noqa: PLC0415 - numpy, when called
        Companion,
        nothing_to_watch,
    )
    from shoe_controller.service.control_client import AnswerError  # noqa: PLC0415

    try:
        config = load(config_path)
    except ConfigError as error:
        raise click.ClickException(str(error).replace("\n", "\\n")) from None
    logs.apply(config.log, squeeze=config.procedures.squeeze, table=config.table.id)
    reason = nothing_to_watch(config)
    if reason is not None:
        click.echo(f"surveillance: nothing to watch: {reason}", err=True)
        return
    scanner = config.scanner
    if scanner is not None and scanner.kind == "rfid" and not config.procedures.card_tags:
        click.echo(
            "surveillance: the shuffle watch compares rank and suit only: the table publishes"
            " no RFID tags ([table] card_tags = false; docs/shuffle.md)",
            err=True,
        )
    companion = Companion(config, socket_path=socket_path)

    def stop(signum: int, frame: FrameType | None) -> None:
        companion.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        companion.run()
    except AnswerError as error:
        raise click.ClickException(f"the controller refused: {error.text}") from None
