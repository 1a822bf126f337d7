"""`shoe-controller demo`: a whole table on this machine, with simulated devices.

Real processes, as on a table PC: the simulated shoe on a pseudo-terminal, the reference
table server on 127.0.0.1, and the daemon between them with its own journal. The demo
plays the dealer's part the simulator cannot (it knows no baccarat): when the table says a
shoe ended, it takes the shoe out and loads a new one. It prints every round as the table
server receives it, with the shoe's bead road growing, until Ctrl-C. The daemon serves the
live scoreboard page (docs/scoreboard.md) on a loopback port; the demo prints its URL.

Ctrl-C, SIGTERM and SIGHUP stop it the same way: every process it started is stopped before
it exits. Cards are written as shoectl writes them (`Q♥`), events in shoectl's words.

A sandbox for every command: the surveillance companion runs beside the daemon (`shoectl
edge`), metrics are served on a loopback port (`curl …/metrics`), the demo's user is the
table's supervisor group (`shoectl void …`), and the demo prints the `SHOECTL_SOCKET=…` line
and a few commands to try.

A reused `--dir` goes on from its journal: the shoes are numbered on, and a shoe an earlier
run left open is ended first as a supervisor would (`change-shoe`), because the simulated shoe
of a new run cannot go on with that shoe's cards. `--fresh` deletes the earlier run's files
first. The rounds it reports are the ones this run dealt.

One demo a folder, and none in a folder whose journal a daemon runs on: the demo holds
`DIR/demo.lock` for its whole life and looks at the journal's lock (service/journal_lock.py)
before it deletes, writes or starts anything; refused, it says so in one line, exit 75.
"""

from __future__ import annotations

import contextlib
import grp
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import click

from shoe_controller.cli.options import own_folder
from shoe_controller.cli.run import InUse
from shoe_controller.cli.shoectl.client import AnswerError, Client, UnreachableError
from shoe_controller.cli.shoectl.render import Painter, card_text, event_details
from shoe_controller.kit.rig import TABLE_ID, RigError, RigOptions, TableRig
from shoe_controller.service import journal_lock
from shoe_controller.service.config import listen_address
from shoe_controller.store.journal import Journal, JournalError

STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The companion reports once numpy is loaded and the shoe's odds solved: over 30 s on a slow
# table PC (an emulated one took that), under a second on a desktop; a stopped one ends the wait.
COMPANION_FIRST_REPORT_S = 300.0


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


@dataclass(frozen=True)
class Earlier:
    """What an earlier run left in a reused folder."""

    text: str  # one sentence for a person
    shoes: int  # the journal's last shoe number (0: none yet)


def earlier_run(directory: Path) -> Earlier | None:
    """What a reused directory holds (None: nothing of an earlier run)."""
    journal_path = directory / "journal.db"
    if not journal_path.exists():
        return None
    try:
        with Journal.open(journal_path, None, read_only=True) as journal:
            shoes = journal.reads.shoes()
            last_seq, marks = journal.reads.last_seq(), journal.sinks.marks()
    except JournalError as error:
        text = f"reusing {directory}: its journal cannot be read ({error}); --fresh starts anew"
        return Earlier(text, 0)
    going_on = "the demo goes on from it (--fresh starts from an empty journal)"
    if not shoes:
        text = f"reusing {directory}: its journal holds {last_seq} event(s) and no shoe yet"
        return Earlier(f"{text}; {going_on}", 0)
    last = shoes[-1].shoe
    held = f"shoe {last}" if len(shoes) == 1 else f"shoes {shoes[0].shoe} to {last}"
    delivered = "; ".join(
        f"{mark.sink} has {mark.delivered_through} of its {mark.last_seq}"
        for mark in marks.values()
    )
    text = (
        f"reusing {directory}: its journal holds {held} and {last_seq} event(s)"
        f" ({delivered or 'no sink'}); {going_on}"
    )
    return Earlier(text, last)


def found_in(directory: Path) -> str | None:
    """What a reused directory holds, in one sentence (None: nothing of an earlier run)."""
    earlier = earlier_run(directory)
    return earlier.text if earlier is not None else None


# What a demo writes into its folder, and nothing else: what --fresh deletes.
DEMO_FILES = ("config.toml", "table.key", "control.sock", "shoe", "shoe.ctl", "decks")
DEMO_PREFIXES = ("journal.db", "receiver.db")


def clear_earlier_run(directory: Path) -> list[str]:
    """Delete what an earlier demo wrote into `directory` (--fresh); the names deleted."""
    deleted = []
    for entry in sorted(directory.iterdir()) if directory.is_dir() else []:
        name = entry.name
        if name.endswith(journal_lock.LOCK_SUFFIX):
            continue  # a lock file is never deleted (service/journal_lock.py)
        if name in DEMO_FILES or name.startswith(DEMO_PREFIXES) or name.endswith(".log"):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            deleted.append(name)
    return deleted


def hold_folder(directory: Path) -> journal_lock.HeldLock:
    """`directory` for this demo's life (its demo.lock), once no daemon runs on its journal;
    InUse (exit 75) naming the journal and the PID of the demo or daemon there."""
    journal = directory / "journal.db"
    try:
        held = journal_lock.HeldLock.take(directory / "demo.lock", journal, holder="the demo")
        try:
            journal_lock.check_free(journal)
        except BaseException:
            held.release()
            raise
    except journal_lock.JournalInUse as error:
        raise InUse(str(error)) from None
    except journal_lock.LockUnusable as error:
        raise click.ClickException(str(error)) from None
    return held


@dataclass(frozen=True)
class DemoOptions:
    pace: float  # seconds between cards
    shoes: int | None  # stop after this many shoes (None: until Ctrl-C)
    seed: int
    squeeze: bool
    scoreboard: str = ""  # host:port of the scoreboard page; "" picks a free loopback port
    temporary: bool = False  # the folder is deleted at exit


@dataclass
class Tally:
    """What this run dealt, kept where a Ctrl-C still finds it."""

    rounds: int = 0


def run_demo(directory: Path, options: DemoOptions, out: TextIO, tally: Tally | None = None) -> int:
    """Run the table; returns the number of rounds this run dealt."""
    tally = tally if tally is not None else Tally()
    earlier = earlier_run(directory)
    # A reused folder's shoes get other cards than its earlier shoes: the seed moves on.
    seed = options.seed + (earlier.shoes if earlier is not None else 0)
    rig = TableRig(
        directory,
        # The round's clock, as a table with dealers keeps it: `shoectl dealer` and `shoectl
        # pace` can be tried in the demo (without it the table refuses a dealer).
        RigOptions(
            options.pace, seed, squeeze=options.squeeze, autoload=False, table={"clock": True}
        ),
    )
    listen = options.scoreboard or f"127.0.0.1:{_free_port()}"
    metrics = f"127.0.0.1:{_free_port(avoid=listen)}"
    try:
        try:
            _start(rig, listen, metrics)
            after = rig.records.server_last_seq()  # what the table server had before this run
            _introduce(rig, options, listen, metrics, out)
            _end_open_shoe(rig, out)
            rig.dealer.load_shoe()
            _wait_for_surveillance(rig)
            return _follow(rig, options, out, after, tally)
        finally:
            rig.close()
    except RigError as error:
        hint = "; the folder holds an earlier demo's files: --fresh starts anew" if earlier else ""
        raise click.ClickException(f"{error}{hint}") from None


def _start(rig: TableRig, listen: str, metrics: str) -> None:
    """The rig's own start, with the scoreboard page, metrics, the demo's user as the
    supervisor group, and the surveillance companion."""
    rig.directory.mkdir(parents=True, exist_ok=True)
    rig.key_file.write_text(secrets.token_hex(32) + "\n")
    os.chmod(rig.key_file, 0o600)
    rig.start_receiver()
    rig.start_simulators()
    control = {}
    with contextlib.suppress(KeyError):  # a group without a name: root alone acts
        group = grp.getgrgid(os.getgid()).gr_name
        control = {"supervisor_group": group, "viewer_group": group}
    rig.write_config(scoreboard={"listen": listen}, metrics={"listen": metrics}, control=control)
    rig.start_daemon()
    rig.start_surveillance()


def _introduce(rig: TableRig, options: DemoOptions, listen: str, metrics: str, out: TextIO) -> None:
    """Where everything is, and what to try in another terminal."""
    directory = rig.directory
    kept = " (a temporary folder, deleted when the demo stops; --dir DIR keeps it)"
    click.echo(
        f"table {TABLE_ID}: shoe on {rig.port_of('shoe')}, table server on "
        f"127.0.0.1:{rig.receiver_port}, logs and journal in {directory}"
        + (kept if options.temporary else ""),
        file=out,
    )
    click.echo(f"scoreboard on http://{listen}/", file=out)
    click.echo(f"metrics on http://{metrics}/metrics", file=out)
    shoectl = _shoectl_program()
    tries = (
        ("status", "is everything all right? what needs a person"),
        ("rounds", "the last ten games"),
        ("road", "the shoe's roads, as the scoreboard draws them"),
        ("events -f", "every event as it happens (Ctrl-C ends it)"),
        ("edge", "every bet's exact edge on the cards left (surveillance)"),
        ('void --by sup1 --reason "a try"', "an action: you are this table's supervisor"),
        ('dealer --id D-1 --by sup1 --reason "shift"', "a dealer signs in: `pace` counts to D-1"),
    )
    width = max(len(f"{shoectl} {command}") for command, _ in tries)
    click.echo("Try in another terminal:", file=out)
    click.echo(f"  export SHOECTL_SOCKET={directory / 'control.sock'}", file=out)
    for command, what in tries:
        click.echo(f"  {f'{shoectl} {command}'.ljust(width)}  # {what}", file=out)
    click.echo(f"  curl -s http://{metrics}/metrics", file=out)


def _end_open_shoe(rig: TableRig, out: TextIO) -> None:
    """A shoe an earlier run left open is ended as a supervisor would (R3.2 change-shoe): the
    simulated shoe of this run holds new cards, and cannot go on with that shoe's."""
    try:
        with Client(str(rig.directory / "control.sock")) as client:
            table = client.request({"cmd": "status"})["table"]
            if not table["shoe_open"]:
                return
            shoe = table["shoe"]
            click.echo(
                f"shoe {shoe} was left open by an earlier run: the demo ends it as a supervisor"
                " would (change-shoe), since a new simulated shoe cannot go on with its cards",
                file=out,
            )
            client.request(
                {
                    "cmd": "act",
                    "action": "change_shoe",
                    "by": "demo",
                    "reason": f"shoe {shoe} was left open by an earlier demo; a new one is loaded",
                    "args": {},
                    "key": uuid.uuid4().hex,
                }
            )
    except (UnreachableError, AnswerError) as error:
        text = f"a shoe left open by an earlier run could not be ended: {error}"
        raise RigError(text) from None


def _wait_for_surveillance(rig: TableRig) -> None:
    """Deal once the companion has reported on the new shoe: its summary then covers the
    shoe from its first round (it cannot report rounds dealt before it followed)."""

    def reported() -> bool:
        try:
            with Client(str(rig.directory / "control.sock")) as client:
                client.request({"cmd": "edge"})
        except AnswerError:
            time.sleep(0.05)  # not_found: no report on this shoe yet (the companion starts)
            return False
        except UnreachableError as error:
            raise RigError(f"the control socket: {error}") from None
        return True

    rig.wait_until(reported, "the surveillance companion's first report", COMPANION_FIRST_REPORT_S)


def _shoectl_program() -> str:
    """How to start shoectl here: its name when on PATH, else beside this Python (a venv)."""
    if shutil.which("shoectl"):
        return "shoectl"
    beside = Path(sys.executable).parent / "shoectl"
    return str(beside) if beside.exists() else f"{sys.executable} -m shoe_controller.cli.shoectl"


def _checked_listen(value: str) -> str:
    if value:
        try:
            listen_address(value)
        except ValueError as error:
            raise click.BadParameter(str(error)) from None
    return value


def _free_port(avoid: str = "") -> int:
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if not avoid.endswith(f":{port}"):
            return port


def _follow(rig: TableRig, options: DemoOptions, out: TextIO, after: int, tally: Tally) -> int:
    """Deal card by card as a dealer would, and print what the table server receives of
    this run (its events after seq `after`).

    The dealer draws the next card once the controller has stored the last one, and at the
    end of a shoe takes it out and loads a fresh one: so no card is drawn into a shoe the
    table has closed, whatever the pace. Shoes are counted from this run's start.
    """
    printed = after
    road: list[str] = []
    paint = Painter.for_stream(out)
    ended_before = rig.records.shoes_ended  # the journal's, up to the shoe loaded above

    def ended() -> int:
        return rig.records.shoes_ended - ended_before

    def show() -> None:
        nonlocal printed
        for event in rig.records.received_events(after=printed):
            printed = event["seq"]
            tally.rounds += event["type"] == "round.result"
            line = _describe(event, road, paint)
            if line:
                click.echo(line, file=out)

    while options.shoes is None or ended() < options.shoes:
        before = ended()
        rig.dealer.deal(1)
        if ended() > before:
            more = options.shoes is None or ended() < options.shoes
            rig.dealer.change_shoe(load=more)
        show()
        time.sleep(options.pace)
    # The last shoe's events on their way to the table server: show them too.
    rig.wait_delivered()
    show()
    return tally.rounds


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
@click.option(
    "--pace", type=click.FloatRange(0, 60), help="Seconds between cards, 0 to 60 (default 0.6)."
)
@click.option("--shoes", type=click.IntRange(1, 10_000), help="Stop after this many shoes.")
@click.option(
    "--seed",
    type=click.IntRange(0, 2**63 - 1),
    default=1,
    show_default=True,
    help="The shuffle's seed (a reused --dir adds the shoes its journal holds: no shoe repeats).",
)
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
    callback=own_folder,
    help="Keep the journal, logs and configuration in this folder, and go on from them the next"
    " time (default: a temporary folder, deleted when the demo stops).",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Delete what an earlier demo left in --dir (journal, table server database, logs)"
    " and start from an empty journal.",
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
    fresh: bool,
) -> None:
    """A whole table on this machine: simulated shoe, table server and the daemon.

    The surveillance companion, the scoreboard page and metrics run too; the demo prints the
    SHOECTL_SOCKET to give shoectl and a few commands to try. Ctrl-C stops every process.
    """
    if fresh and directory is None:
        raise click.UsageError(
            "--fresh deletes what an earlier demo left in --dir: give --dir DIR (without"
            " --dir the demo starts from an empty temporary folder anyway)"
        )
    options = DemoOptions(
        pace=pace if pace is not None else (0.002 if fast else 0.6),
        shoes=shoes if shoes is not None else (1 if fast else None),
        seed=seed,
        squeeze=squeeze,
        scoreboard=scoreboard,
        temporary=directory is None,
    )
    tally = Tally()
    with contextlib.ExitStack() as stack:
        stack.enter_context(stopped_by_signals())
        try:
            if directory is None:
                made = tempfile.TemporaryDirectory(prefix="shoe-demo-")
                directory = Path(stack.enter_context(made))
            directory.mkdir(parents=True, exist_ok=True)
            stack.enter_context(hold_folder(directory))  # before anything in it changes
            if fresh:
                deleted = clear_earlier_run(directory)
                if deleted:
                    click.echo(f"--fresh: deleted the earlier demo's {', '.join(deleted)}")
            found = found_in(directory)
            if found:
                click.echo(found)
            rounds = run_demo(directory, options, sys.stdout, tally)
        except Stopped as stop:
            click.echo(f"\n{tally.rounds} rounds dealt")
            click.echo(f"stopped ({stop}): every process of the demo stopped")
            return
        click.echo(f"{rounds} rounds dealt")
