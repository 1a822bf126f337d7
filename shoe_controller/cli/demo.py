"""`shoe-controller demo`: a whole table on this machine, with simulated devices.

Real processes, as on a table PC: the simulated shoe on a pseudo-terminal, the reference
table server on 127.0.0.1, and the daemon between them with its own journal. The demo
plays the dealer's part the simulator cannot (it knows no baccarat): when the table says a
shoe ended, it takes the shoe out and loads a new one. It prints every round as the table
server receives it, with the shoe's bead road growing, until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from shoe_controller.testing.rig import TABLE_ID, RigError, RigOptions, TableRig


@dataclass(frozen=True)
class DemoOptions:
    pace: float  # seconds between cards
    shoes: int | None  # stop after this many shoes (None: until Ctrl-C)
    seed: int
    squeeze: bool


def run_demo(directory: Path, options: DemoOptions, out: TextIO) -> int:
    """Run the table; returns the number of rounds shown."""
    rig = TableRig(
        directory, RigOptions(pace=options.pace, seed=options.seed, squeeze=options.squeeze)
    )
    try:
        with rig:
            click.echo(
                f"table {TABLE_ID}: shoe on {rig.port_of('shoe')}, table server on "
                f"127.0.0.1:{rig.receiver_port}, logs and journal in {directory}",
                file=out,
            )
            return _follow(rig, options, out)
    except RigError as error:
        raise click.ClickException(str(error)) from None


def _follow(rig: TableRig, options: DemoOptions, out: TextIO) -> int:
    """Deal card by card as a dealer would, and print what the table server receives.

    The dealer draws the next card once the controller has stored the last one, and at the
    end of a shoe takes it out and loads a fresh one: so no card is drawn into a shoe the
    table has closed, whatever the pace.
    """
    printed, rounds = 0, 0
    road: list[str] = []

    def show() -> None:
        nonlocal printed, rounds
        for event in rig.records.received_events(after=printed):
            printed = event["seq"]
            rounds += event["type"] == "round.result"
            line = _describe(event, road)
            if line:
                click.echo(line, file=out)

    while options.shoes is None or rig.records.shoes_ended < options.shoes:
        ended = rig.records.shoes_ended
        rig.dealer.deal(1)
        if rig.records.shoes_ended > ended:
            more = options.shoes is None or rig.records.shoes_ended < options.shoes
            rig.dealer.change_shoe(load=more)
        show()
        time.sleep(options.pace)
    # The last shoe's events on their way to the table server: show them too.
    rig.wait_delivered()
    show()
    return rounds


_WINNER_MARK = {"player": click.style("P", fg="blue"), "banker": click.style("B", fg="red")}


def _describe(event: dict[str, Any], road: list[str]) -> str | None:
    data = event["data"]
    kind = event["type"]
    if kind == "round.result":
        winner = data["winner"]
        road.append(_WINNER_MARK.get(winner, click.style("T", fg="green")))
        pairs = " ".join(name for name in ("player_pair", "banker_pair") if data.get(name)).replace(
            "_", " "
        )
        return (
            f"shoe {event['shoe']} round {event['round']:>2}: "
            f"P {' '.join(data['player']):<9} {data['player_total']}  "
            f"B {' '.join(data['banker']):<9} {data['banker_total']}  "
            f"{winner:<6} {pairs:<23} {''.join(road[-40:])}"
        )
    if kind in ("shoe.shuffled", "shoe.burned", "shoe.cut_card", "shoe.ended"):
        return f"shoe {event['shoe']}: {kind.split('.', 1)[1]} {data}"
    if kind in ("procedure.alert", "security.alert", "round.voided"):
        return f"shoe {event['shoe']}: {kind} {data}"
    return None


@click.command("demo")
@click.option("--fast", is_flag=True, help="Deal a whole shoe in seconds, then stop.")
@click.option("--pace", type=float, default=None, help="Seconds between cards (default 0.6).")
@click.option("--shoes", type=int, default=None, help="Stop after this many shoes.")
@click.option("--seed", type=int, default=1, show_default=True, help="The shuffle's seed.")
@click.option("--squeeze", is_flag=True, help="Squeeze mode (R15): cards hidden until revealed.")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the journal, logs and config here (default: a temporary directory).",
)
def demo_command(
    *,
    fast: bool,
    pace: float | None,
    shoes: int | None,
    seed: int,
    squeeze: bool,
    directory: Path | None,
) -> None:
    """A whole table on this machine: simulated shoe, table server and the daemon."""
    options = DemoOptions(
        pace=pace if pace is not None else (0.002 if fast else 0.6),
        shoes=shoes if shoes is not None else (1 if fast else None),
        seed=seed,
        squeeze=squeeze,
    )
    with contextlib.ExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="shoe-demo-")))
        directory.mkdir(parents=True, exist_ok=True)
        try:
            rounds = run_demo(directory, options, sys.stdout)
        except KeyboardInterrupt:
            click.echo("\nstopped")
            return
        click.echo(f"{rounds} rounds dealt")
