"""The `shoe-controller` command: a group that imports each subcommand only when it is called.

Each subcommand pulls in a different part of the tree (`run` the daemon, `demo` the simulators
and the receiver, `odds` numpy, `monitor` the drivers), so importing them all up front made every
invocation, `--help` included, pay for all of them. The group below follows click's "Lazily
Loading Subcommands" pattern with an explicit registry. The registry also carries each
subcommand's one-line help, so that `--help` lists every subcommand without importing any:
loading them all just to print their docstrings would cost what laziness saves.
tests/package/test_layers.py checks that each summary matches its command's docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import click

from shoe_controller import __version__
from shoe_controller.cli.program import Program


@dataclass(frozen=True, slots=True)
class Subcommand:
    """A registry entry: the one-line help `--help` shows, and the import that loads the command."""

    summary: str
    load: Callable[[], click.Command]


# Each loader imports its module when called; a plain import (not a dotted string) keeps the
# registry checkable by ruff and by a rename.
def _run() -> click.Command:
    from shoe_controller.cli.run import run_command  # noqa: PLC0415 - loaded when called

    return run_command


def _demo() -> click.Command:
    from shoe_controller.cli.demo import demo_command  # noqa: PLC0415 - loaded when called

    return demo_command


def _odds() -> click.Command:
    from shoe_controller.cli.odds import odds_command  # noqa: PLC0415 - loaded when called

    return odds_command


def _monitor() -> click.Command:
    from shoe_controller.cli.monitor import monitor_command  # noqa: PLC0415 - loaded when called

    return monitor_command


def _receiver() -> click.Command:
    from shoe_controller.kit.receiver import receiver_command  # noqa: PLC0415 - loaded when called

    return receiver_command


def _replay() -> click.Command:
    from shoe_controller.cli.replay import replay_command  # noqa: PLC0415 - loaded when called

    return replay_command


def _export() -> click.Command:
    from shoe_controller.cli.export import export_command  # noqa: PLC0415 - loaded when called

    return export_command


def _verify() -> click.Command:
    from shoe_controller.cli.verify import verify_command  # noqa: PLC0415 - loaded when called

    return verify_command


def _report() -> click.Command:
    from shoe_controller.cli.report import report_command  # noqa: PLC0415 - loaded when called

    return report_command


def _check() -> click.Command:
    from shoe_controller.cli.check import check_command  # noqa: PLC0415 - loaded when called

    return check_command


def _key() -> click.Command:
    from shoe_controller.cli.key import key_command  # noqa: PLC0415 - loaded when called

    return key_command


def _surveillance() -> click.Command:
    from shoe_controller.cli.surveillance import surveillance_command  # noqa: PLC0415 - loaded when called

    return surveillance_command


SUBCOMMANDS: Mapping[str, Subcommand] = MappingProxyType(
    {
        "run": Subcommand(
            "Run the controller of this table (the systemd service's command).", _run
        ),
        "check": Subcommand(
            "Check a configuration as `run` does at start-up, and start nothing (like nginx -t).",
            _check,
        ),
        "demo": Subcommand(
            "A whole table on this machine: simulated shoe, table server and the daemon.", _demo
        ),
        "odds": Subcommand(
            "Exact odds of every outcome and house edge of every bet, by full enumeration.", _odds
        ),
        "monitor": Subcommand(
            "Connect to one device and print every decoded input, one line each.", _monitor
        ),
        "receiver": Subcommand(
            "Run the reference table server (docs/spec-push-api.md). Prints the bound port first.",
            _receiver,
        ),
        "replay": Subcommand(
            "Replay FILE (inputs or a dispute file, '-': standard input) and show its events.",
            _replay,
        ),
        "surveillance": Subcommand(
            "Follow the table and report the exact edge of every bet on the cards left, each"
            " round.",
            _surveillance,
        ),
        "export": Subcommand(
            "Write a shoe, a round or everything since a time as JSON lines with the hash chain.",
            _export,
        ),
        "report": Subcommand(
            "A shift report from the journal: per hour and per dealer, rounds, pace, holds by"
            " kind and time to resolve, voids, misdeals, shoes.",
            _report,
        ),
        "key": Subcommand(
            "Make the table's checkpoint signing key, or print its public key.", _key
        ),
        "verify": Subcommand(
            "Check an export's hash chain and replay it, or check a journal's whole chain.",
            _verify,
        ),
    }
)


class LazyGroup(Program):
    """A click group whose subcommands come from a registry and are imported on first use."""

    def __init__(self, *args: Any, subcommands: Mapping[str, Subcommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._subcommands = subcommands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self._subcommands.get(cmd_name)
        return entry.load() if entry is not None else super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing, fed stand-ins that carry only the summaries: the same layout and
        # shortening as before, without importing a single subcommand.
        # short_help: the whole summary, wrapped as the terminal allows, never cut short.
        stand_ins = [
            click.Command(name, short_help=entry.summary)
            for name, entry in self._subcommands.items()
        ]
        added = [self.commands[name] for name in super().list_commands(ctx)]
        click.Group(commands=[*stand_ins, *added]).format_commands(ctx, formatter)


@click.group(
    cls=LazyGroup,
    subcommands=SUBCOMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="shoe-controller")
def main() -> None:
    """Dealing-shoe controller for a baccarat table."""


if __name__ == "__main__":
    main()
