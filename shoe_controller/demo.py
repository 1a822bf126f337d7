"""`shoe-controller demo`: a whole table on this machine, with simulated devices.

Real processes, as on a table PC: the simulated shoe on a pseudo-terminal, the reference
table server on 127.0.0.1, and the daemon between them with its own journal. The demo
plays the dealer's part the simulator cannot (it knows no baccarat): when the table says a
shoe ended, it takes the shoe out and loads a new one. It prints every round as the table
server receives it, with the shoe's bead road growing, until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from drivers.sim.control import SimControlClient
from shoe_controller.journal import Journal, JournalError
from shoe_controller.receiver import ReceiverStore

TABLE_ID = "07"
START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class DemoOptions:
    pace: float  # seconds between cards
    shoes: int | None  # stop after this many shoes (None: until Ctrl-C)
    seed: int
    squeeze: bool


def _python(*args: str) -> list[str]:
    return [sys.executable, *args]


def _wait_for_line(process: subprocess.Popen[str], what: str) -> str:
    """The first line a child prints on stdout (its port, or `ready <path>`)."""
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line:
        raise click.ClickException(f"{what} did not start (exit code {process.poll()})")
    return line


def _config_text(directory: Path, port: int, squeeze: bool) -> str:
    return f"""\
[table]
id = "{TABLE_ID}"
decks = 8
squeeze = {"true" if squeeze else "false"}
insurance = false

[scanner]
protocol = "slp"
port = "{directory / "shoe"}"
kind = "optical"

[server]
url = "http://127.0.0.1:{port}"
key_file = "{directory / "table.key"}"

[journal]
path = "{directory / "journal.db"}"

[control]
socket = "{directory / "control.sock"}"

[log]
format = "json"
"""


@contextlib.contextmanager
def _processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    try:
        yield started
    finally:
        for process in reversed(started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(started):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def run_demo(directory: Path, options: DemoOptions, out: TextIO) -> int:
    """Run the table; returns the number of rounds shown."""
    (directory / "table.key").write_text(secrets.token_hex(32) + "\n")
    os.chmod(directory / "table.key", 0o600)
    with _processes() as children:
        receiver = subprocess.Popen(
            _python(
                "-m",
                "shoe_controller.receiver",
                "--db",
                str(directory / "receiver.db"),
                "--key-file",
                str(directory / "table.key"),
                "--table-id",
                TABLE_ID,
                "--port",
                "0",
            ),
            stdout=subprocess.PIPE,
            stderr=(directory / "receiver.log").open("w"),
            text=True,
        )
        children.append(receiver)
        port = int(_wait_for_line(receiver, "the table server"))
        shoe = subprocess.Popen(
            _python(
                "-m",
                "drivers.sim",
                "--device",
                "shoe",
                "--kind",
                "optical",
                "--pty-link",
                str(directory / "shoe"),
                "--control",
                str(directory / "shoe.ctl"),
                "--pace",
                str(options.pace),
                "--seed",
                str(options.seed),
                "--cut-after",
                "400",
                "--manual",
            ),
            stdout=subprocess.PIPE,
            stderr=(directory / "shoe.log").open("w"),
            text=True,
        )
        children.append(shoe)
        _wait_for_line(shoe, "the simulated shoe")
        (directory / "config.toml").write_text(_config_text(directory, port, options.squeeze))
        daemon = subprocess.Popen(
            _python("-m", "shoe_controller.cli", "run", "--config", str(directory / "config.toml")),
            stdout=subprocess.DEVNULL,
            stderr=(directory / "daemon.log").open("w"),
            text=True,
        )
        children.append(daemon)
        click.echo(
            f"table {TABLE_ID}: shoe on {directory / 'shoe'}, table server on 127.0.0.1:{port}, "
            f"logs and journal in {directory}",
            file=out,
        )
        return _follow(directory, options, out, children)


def _follow(
    directory: Path, options: DemoOptions, out: TextIO, children: list[subprocess.Popen[str]]
) -> int:
    """Deal card by card as a dealer would, and print what the table server receives.

    The dealer draws the next card once the controller has journaled the last one, and at
    the end of a shoe takes it out and loads a fresh one: so no card is drawn into a shoe
    the table has closed, whatever the pace.
    """
    dealer = SimControlClient(str(directory / "shoe.ctl"))
    journal = _open_journal(directory / "journal.db", children)
    store = ReceiverStore(directory / "receiver.db")
    printed, journaled, rounds, shoes_ended = 0, 0, 0, 0
    road: list[str] = []
    try:
        while options.shoes is None or shoes_ended < options.shoes:
            _check_alive(children, directory)
            inputs_before = journal.last_input()
            dealer.request("deal", count=1)
            _wait_until(lambda n=inputs_before: journal.last_input() > n, children, directory)
            for event in journal.events_after(journaled, limit=1000):
                journaled = event.seq
                if event.type == "shoe.ended":
                    shoes_ended += 1
                    dealer.request("remove")
                    if options.shoes is None or shoes_ended < options.shoes:
                        dealer.request("load")
            for event in store.events(TABLE_ID, after=printed):
                printed = event["seq"]
                rounds += event["type"] == "round.result"
                line = _describe(event, road)
                if line:
                    click.echo(line, file=out)
            time.sleep(options.pace)
        # The last shoe's events on their way to the table server: show them too.
        _wait_until(lambda n=journaled: store.acked_through(TABLE_ID) >= n, children, directory)
        for event in store.events(TABLE_ID, after=printed):
            rounds += event["type"] == "round.result"
            line = _describe(event, road)
            if line:
                click.echo(line, file=out)
        return rounds
    finally:
        store.close()
        journal.close()


def _check_alive(children: list[subprocess.Popen[str]], directory: Path) -> None:
    for child in children:
        if child.poll() is not None:
            raise click.ClickException(
                f"a demo process stopped (exit code {child.returncode}); see the logs in "
                f"{directory}"
            )


def _wait_until(
    condition: Callable[[], bool], children: list[subprocess.Popen[str]], directory: Path
) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not condition():
        _check_alive(children, directory)
        if time.monotonic() > deadline:
            raise click.ClickException(f"the table stopped answering; see the logs in {directory}")
        time.sleep(0.002)


def _open_journal(path: Path, children: list[subprocess.Popen[str]]) -> Journal:
    """The daemon's journal, read-only, once the daemon has made it."""
    _wait_until(path.exists, children, path.parent)
    while True:
        try:
            return Journal.open(path, None, read_only=True)
        except JournalError:
            _check_alive(children, path.parent)
            time.sleep(0.05)


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
