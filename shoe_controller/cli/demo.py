"""`shoe-controller demo`: a whole table on this machine, with simulated devices.

Real processes, as on a table PC: the simulated shoe on a pseudo-terminal, the reference
table server on 127.0.0.1, and the daemon between them with its own journal. The demo
plays the dealer's part the simulator cannot (it knows no baccarat): when the table says a
shoe ended, it takes the shoe out and loads a new one. It prints every round as the table
server receives it, with the shoe's bead road growing, until Ctrl-C. The daemon serves the
live scoreboard page (docs/scoreboard.md) on a loopback port; the demo prints its URL.

Ctrl-C, SIGTERM and SIGHUP stop it the same way: every process it started is stopped before
it exits. Cards are written as shoectl writes them (`Q♥`), events in shoectl's words. A
reused `--dir` is said for what it holds (the journal's shoes and events) before it goes on.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import click

from shoe_controller.cli.shoectl.render import Painter, card_text, event_details
from shoe_controller.kit.rig import TABLE_ID, RigError, RigOptions, TableRig
from shoe_controller.service.config import listen_address
from shoe_controller.store.journal import Journal, JournalError

STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):  # noqa: N818 - a stop asked for, not an error
    """A signal asked the demo to stop (Ctrl-C, SIGTERM, SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP raise Stopped where the demo is, so that the blocks around
    its processes stop them; a second signal while stopping is ignored (stopping half-way
    would leave processes behind)."""

    def stop(signum: int, _frame: FrameType | None) -> None:
        for other in STOPPING_SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def found_in(directory: Path) -> str | None:
    """What a reused directory holds, in one sentence (None: nothing of an earlier run)."""
    journal_path = directory / "journal.db"
    if not journal_path.exists():
        return None
    try:
        with Journal.open(journal_path, None, read_only=True) as journal:
            shoes = journal.reads.shoes()
            last_seq, marks = journal.reads.last_seq(), journal.sinks.marks()
    except JournalError as error:
        return f"reusing {directory}: its journal cannot be read ({error})"
    if not shoes:
        return f"reusing {directory}: its journal holds {last_seq} event(s) and no shoe yet"
    last = shoes[-1]
    state = "ended" if last.ended_at is not None else "still open: the table goes on with it"
    held = f"shoe {last.shoe}" if len(shoes) == 1 else f"shoes {shoes[0].shoe} to {last.shoe}"
    delivered = "; ".join(
        f"{mark.sink} has {mark.delivered_through} of its {mark.last_seq}"
        for mark in marks.values()
    )
    return (
        f"reusing {directory}: its journal holds {held} and {last_seq} event(s)"
        f" ({delivered or 'no sink'}); shoe {last.shoe} is {state}"
    )


@dataclass(frozen=True)
class DemoOptions:
    pace: float  # seconds between cards
    shoes: int | None  # stop after this many shoes (None: until Ctrl-C)
    seed: int
    squeeze: bool
    scoreboard: str = ""  # host:port of the scoreboard page; "" picks a free loopback port


def run_demo(directory: Path, options: DemoOptions, out: TextIO) -> int:
    """Run the table; returns the number of rounds shown."""
    rig = TableRig(
        directory, RigOptions(pace=options.pace, seed=options.seed, squeeze=options.squeeze)
    )
    listen = options.scoreboard or f"127.0.0.1:{_free_port()}"
    try:
        try:
            _start(rig, listen)
            click.echo(
                f"table {TABLE_ID}: shoe on {rig.port_of('shoe')}, table server on "
                f"127.0.0.1:{rig.receiver_port}, logs and journal in {directory}",
                file=out,
            )
            click.echo(f"scoreboard on http://{listen}/", file=out)
            return _follow(rig, options, out)
        finally:
            rig.close()
    except RigError as error:
        raise click.ClickException(str(error)) from None


def _start(rig: TableRig, listen: str) -> None:
    """The rig's own start, with a [scoreboard] section in the daemon's configuration."""
    rig.directory.mkdir(parents=True, exist_ok=True)
    rig.key_file.write_text(secrets.token_hex(32) + "\n")
    os.chmod(rig.key_file, 0o600)
    rig.start_receiver()
    rig.start_simulators()
    rig.write_config(scoreboard={"listen": listen})
    rig.start_daemon()


def _checked_listen(value: str) -> str:
    if value:
        try:
            listen_address(value)
        except ValueError as error:
            raise click.BadParameter(str(error)) from None
    return value


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _follow(rig: TableRig, options: DemoOptions, out: TextIO) -> int:
    """Deal card by card as a dealer would, and print what the table server receives.

    The dealer draws the next card once the controller has stored the last one, and at the
    end of a shoe takes it out and loads a fresh one: so no card is drawn into a shoe the
    table has closed, whatever the pace.
    """
    printed, rounds = 0, 0
    road: list[str] = []
    paint = Painter.for_stream(out)

    def show() -> None:
        nonlocal printed, rounds
        for event in rig.records.received_events(after=printed):
            printed = event["seq"]
            rounds += event["type"] == "round.result"
            line = _describe(event, road, paint)
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


_WINNER_MARK = {"player": ("P", "blue"), "banker": ("B", "red"), "tie": ("T", "green")}
_SHOWN = ("shoe.shuffled", "shoe.burned", "shoe.cut_card", "shoe.ended", "procedure.alert",
          "security.alert", "round.voided")  # fmt: skip


def _describe(event: dict[str, Any], road: list[str], paint: Painter) -> str | None:
    """One line for a person: cards as shoectl writes them, never a raw dict."""
    data = event["data"]
    kind = event["type"]
    if kind == "round.result":
        winner = data["winner"]
        letter, colour = _WINNER_MARK.get(winner, ("T", "green"))
        road.append(click.style(letter, fg=colour) if paint.enabled else letter)
        pairs = ", ".join(
            name.replace("_", " ") for name in ("player_pair", "banker_pair") if data.get(name)
        )
        return (
            f"shoe {event['shoe']} round {event['round']:>2}: "
            f"P {_cards(data['player'], paint)} {data['player_total']}  "
            f"B {_cards(data['banker'], paint)} {data['banker_total']}  "
            f"{winner:<6} {pairs:<23} {''.join(road[-40:])}"
        )
    if kind in _SHOWN:
        return f"shoe {event['shoe']}: {kind} {event_details(event, paint)}"
    return None


def _cards(codes: list[str | None], paint: Painter) -> str:
    """`Q♥ 5♦`, padded to line up (colour codes take no room)."""
    plain = " ".join(card_text(code, Painter(False)) for code in codes)
    return " ".join(card_text(code, paint) for code in codes) + " " * max(0, 9 - len(plain))


@click.command("demo")
@click.option("--fast", is_flag=True, help="Deal a whole shoe in seconds, then stop.")
@click.option("--pace", type=float, default=None, help="Seconds between cards (default 0.6).")
@click.option("--shoes", type=int, default=None, help="Stop after this many shoes.")
@click.option("--seed", type=int, default=1, show_default=True, help="The shuffle's seed.")
@click.option("--squeeze", is_flag=True, help="Squeeze mode (R15): cards hidden until revealed.")
@click.option(
    "--scoreboard",
    metavar="HOST:PORT",
    default="",
    callback=lambda _ctx, _param, value: _checked_listen(value),
    help="Where the scoreboard page listens (default: a free port on 127.0.0.1).",
)
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
    scoreboard: str,
    directory: Path | None,
) -> None:
    """A whole table on this machine: simulated shoe, table server and the daemon."""
    options = DemoOptions(
        pace=pace if pace is not None else (0.002 if fast else 0.6),
        shoes=shoes if shoes is not None else (1 if fast else None),
        seed=seed,
        squeeze=squeeze,
        scoreboard=scoreboard,
    )
    with contextlib.ExitStack() as stack:
        stack.enter_context(stopped_by_signals())
        try:
            if directory is None:
                made = tempfile.TemporaryDirectory(prefix="shoe-demo-")
                directory = Path(stack.enter_context(made))
            directory.mkdir(parents=True, exist_ok=True)
            found = found_in(directory)
            if found:
                click.echo(found)
            rounds = run_demo(directory, options, sys.stdout)
        except Stopped as stop:
            click.echo(f"\nstopped ({stop}): every process of the demo stopped")
            return
        click.echo(f"{rounds} rounds dealt")
