"""A whole table as real processes on this machine: receiver, simulated devices, the daemon.

`TableRig` starts the reference table server (`python -m shoe_controller.testing.receiver`), the
simulated shoe (and, for a batch-shuffler table, the shuffler) on pseudo-terminals
(`python -m drivers.sim`), and the daemon (`shoe-controller run`) with a configuration it
writes; it can SIGKILL and restart any of them. It plays the dealer in lock step: a card is
drawn only once the shoe's previous frames are acknowledged, which the daemon does only after
the journal stored them (DESIGN.md), so no card is drawn into a shoe the table has closed.
It reads what happened from the daemon's journal (read-only) and the receiver's database.

Used by `shoe-controller demo`, the end-to-end tests and bench/bench_daemon.py. Every file
(configuration, key, journal, receiver database, logs, pty links, sockets) lives in one
directory; keep its path short, Unix socket paths are limited to 107 bytes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from drivers.sim.control import SimControlClient
from drivers.translate.registry import DeckRegistry
from shoe_controller.store.journal import Journal, JournalError, StoredEvent
from shoe_controller.testing.receiver import ReceiverStore
from shoe_controller.vocab.cards import Card, from_protocol
from shoe_controller.vocab.events import EventType

TABLE_ID = "07"
START_TIMEOUT_S = 30.0  # a process that has not started by then is not going to
POLL_S = 0.002  # how often a wait looks again (the demo's --fast pace)
_REPO_ROOT = Path(__file__).resolve().parents[2]


class Dealt(NamedTuple):
    """A card as the simulated shoe sent it: its counter and what it is."""

    counter: int
    card: Card


class RigError(RuntimeError):
    """A rig process died or the table stopped answering; the message says where the logs are."""


@dataclass(frozen=True)
class RigOptions:
    """What table to build. The defaults are the demo's: an optical shoe, no shuffler."""

    pace: float = 0.002  # the simulated shoe's seconds between cards
    seed: int = 1  # the simulated shoe's shuffle
    decks: int = 8
    cut_after: int = 400  # the cut card comes out after this many cards
    squeeze: bool = False
    insurance: bool = False
    scanner_kind: Literal["optical", "rfid"] = "optical"
    batch_shuffler: bool = False  # add a batch shuffler; [table] mode = "batch_shuffler"
    shuffle_time: float = 0.2  # the shuffler's seconds from SHUFFLE_STARTED to SHUFFLE_DONE
    receiver_control: bool = False  # the receiver's /control endpoints (fault injection)
    table: Mapping[str, Any] = field(default_factory=dict)  # more [table] keys
    log_level: str = "info"


class TableRig:
    """Start, stop, kill and restart a table's processes; deal cards; read what was stored."""

    def __init__(self, directory: str | os.PathLike[str], options: RigOptions | None = None):
        self.directory = Path(directory)
        self.options = options or RigOptions()
        self.receiver_port: int | None = None
        self.journal_path = self.directory / "journal.db"
        self.receiver: subprocess.Popen[str] | None = None
        self.daemon: subprocess.Popen[str] | None = None
        self.shoe: SimControlClient | None = None
        self.shuffler: SimControlClient | None = None
        self.shoes_ended = 0  # shoe.ended events seen in the journal
        self._sims: dict[str, subprocess.Popen[str]] = {}
        self._alive: dict[str, subprocess.Popen[str]] = {}  # processes that must not die
        self._journal: Journal | None = None
        self._store: ReceiverStore | None = None
        self._journaled = 0  # last journal seq read by poll_journal()
        self._registry: DeckRegistry | None = None
        self._dealt_target = 0  # cards of this load the shoe was told to deal
        self._round = _RoundWatch()

    # ------------------------------------------------------------------ paths

    @property
    def config_path(self) -> Path:
        return self.directory / "config.toml"

    def use_journal(self, path: str | os.PathLike[str]) -> None:
        """Point the next configuration (and the rig's reader) at another journal file."""
        if self._journal is not None:
            self._journal.close()
        self._journal, self._journaled, self.journal_path = None, 0, Path(path)

    @property
    def receiver_db(self) -> Path:
        return self.directory / "receiver.db"

    @property
    def key_file(self) -> Path:
        return self.directory / "table.key"

    @property
    def registry_dir(self) -> Path:
        return self.directory / "decks"

    def port_of(self, device: str) -> Path:
        """The pty symlink the daemon opens for `device` ("shoe" or "shuffler")."""
        return self.directory / device

    # ------------------------------------------------------------------ life cycle

    def start(self, daemon_env: Mapping[str, str] | None = None) -> TableRig:
        """Everything, in the order a table PC brings it up; returns once the daemon started.

        `daemon_env`: more environment for the daemon (NOTIFY_SOCKET, WATCHDOG_USEC, ...).
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        self.key_file.write_text(secrets.token_hex(32) + "\n")
        os.chmod(self.key_file, 0o600)
        try:
            self.start_receiver()
            self.start_simulators()
            self.write_config()
            self.start_daemon(daemon_env)
        except BaseException:
            self.close()  # no process outlives a failed start
            raise
        return self

    def close(self) -> None:
        """SIGTERM every process still running (SIGKILL if it hangs); close the readers."""
        for client in (self.shoe, self.shuffler):
            if client is not None:
                client.close()
        processes = [p for p in (self.daemon, *self._sims.values(), self.receiver) if p]
        self._alive.clear()
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        for reader in (self._journal, self._store):
            if reader is not None:
                reader.close()
        self._journal = self._store = None

    def __enter__(self) -> TableRig:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the receiver

    def start_receiver(self, port: int | None = None) -> int:
        """The reference table server on 127.0.0.1 (`port`: the last one, else any free one)."""
        if port is None:
            port = self.receiver_port or 0
        args = [
            "-m",
            "shoe_controller.testing.receiver",
            "--db",
            str(self.receiver_db),
            "--key-file",
            str(self.key_file),
            "--table-id",
            TABLE_ID,
            "--port",
            str(port),
        ]
        if self.options.receiver_control:
            args.append("--control")
        self.receiver = self._spawn("receiver", args)
        self.receiver_port = int(self._first_line(self.receiver, "the table server"))
        self._alive["receiver"] = self.receiver
        return self.receiver_port

    def kill_receiver(self) -> None:
        """SIGKILL the table server (its database keeps what it acknowledged)."""
        self._kill("receiver", self.receiver)

    @property
    def receiver_url(self) -> str:
        return f"http://127.0.0.1:{self.receiver_port}"

    # ------------------------------------------------------------------ the simulators

    def start_simulators(self) -> None:
        options = self.options
        shoe_args = [
            "--device",
            "shoe",
            "--kind",
            options.scanner_kind,
            "--pace",
            str(options.pace),
            "--seed",
            str(options.seed),
            "--decks",
            str(options.decks),
            "--cut-after",
            str(options.cut_after),
            "--manual",
        ]
        if options.scanner_kind == "rfid":
            shoe_args += ["--registry", str(self.registry_dir)]
        if options.batch_shuffler:
            shoe_args.append("--no-autoload")  # the cards come from the shuffler first
        self.shoe = self._start_sim("shoe", shoe_args)
        if options.batch_shuffler:
            self.shuffler = self._start_sim(
                "shuffler",
                [
                    "--device",
                    "shuffler",
                    "--seed",
                    str(options.seed),
                    "--decks",
                    str(options.decks),
                    "--shuffle-time",
                    str(options.shuffle_time),
                ],
            )

    def _start_sim(self, name: str, args: Sequence[str]) -> SimControlClient:
        control = self.directory / f"{name}.ctl"
        process = self._spawn(
            name,
            [
                "-m",
                "drivers.sim",
                "--pty-link",
                str(self.port_of(name)),
                "--control",
                str(control),
                *args,
            ],
        )
        self._first_line(process, f"the simulated {name}")
        self._sims[name] = process
        self._alive[name] = process
        return SimControlClient(control)

    # ------------------------------------------------------------------ the daemon

    def write_config(self, **sections: Mapping[str, Any]) -> Path:
        """The daemon's TOML; `sections` add or replace keys per section (e.g. log={...})."""
        options = self.options
        config: dict[str, dict[str, Any]] = {
            "table": {
                "id": TABLE_ID,
                "decks": options.decks,
                "squeeze": options.squeeze,
                "insurance": options.insurance,
                **({"mode": "batch_shuffler"} if options.batch_shuffler else {}),
                **options.table,
            },
            "scanner": {
                "protocol": "slp",
                "port": str(self.port_of("shoe")),
                "kind": options.scanner_kind,
                **({"registry": str(self.registry_dir)} if options.scanner_kind == "rfid" else {}),
            },
            "server": {"url": self.receiver_url, "key_file": str(self.key_file)},
            "journal": {"path": str(self.journal_path)},
            "control": {"socket": str(self.directory / "control.sock")},
            "log": {"format": "json", "level": options.log_level},
        }
        if options.batch_shuffler:
            config["shuffler"] = {
                "protocol": "slp",
                "port": str(self.port_of("shuffler")),
                "kind": "shuffler",
            }
        for name, keys in sections.items():
            config.setdefault(name, {}).update(keys)
        self.config_path.write_text(_toml(config))
        return self.config_path

    def start_daemon(self, env: Mapping[str, str] | None = None, *, wait: bool = True) -> None:
        """`shoe-controller run`; with `wait`, returns once its controller.started is stored."""
        before = self._last_seq()
        self.daemon = self._spawn(
            "daemon",
            ["-m", "shoe_controller.cli.main", "run", "--config", str(self.config_path)],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        self._alive["daemon"] = self.daemon
        if wait:
            self.wait_started(after_seq=before)

    def wait_started(self, after_seq: int = 0) -> StoredEvent:
        """The daemon's controller.started event with a seq after `after_seq`, once stored."""
        found: list[StoredEvent] = []

        def started() -> bool:
            journal = self.journal()
            if journal is None:
                return False
            found[:] = [
                event
                for event in journal.events_after(after_seq, limit=100_000)
                if event.type == EventType.CONTROLLER_STARTED
            ]
            return bool(found)

        self.wait_until(started, "the daemon to start")
        return found[0]

    def kill_daemon(self) -> None:
        """SIGKILL, as a power cut would: nothing is flushed, closed or said."""
        self._kill("daemon", self.daemon)

    def stop_daemon(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit code (0: a clean stop)."""
        daemon = self.daemon
        assert daemon is not None
        self._alive.pop("daemon", None)
        daemon.send_signal(signal.SIGTERM)
        return daemon.wait(timeout)

    # ------------------------------------------------------------------ the dealer

    def deal(self, count: int = 1, *, wait: bool = True) -> list[StoredEvent]:
        """Draw `count` cards; returns the journal's new events.

        With `wait`, in lock step: each card is drawn once the shoe's last frame is
        acknowledged (so stored). Without, the shoe is told to deal them all at its pace
        and nothing waits (for a daemon that is down or a shoe that is unplugged); `settle()`
        waits for them afterwards.
        """
        assert self.shoe is not None
        if not wait:
            self._dealt_target = self.shoe.request("status")["dealt"] + count
            self.shoe.request("deal", count=count)
            return self.poll_journal()
        events: list[StoredEvent] = []
        for _ in range(count):
            target = self.shoe.request("status")["dealt"] + 1
            self.shoe.request("deal", count=1)
            self.wait_until(lambda n=target: self._stored(n), "the controller to store a card")
            events += self.poll_journal()
            if self._round.reveal_due:
                events += self.reveal()
        return events

    def reveal(self) -> list[StoredEvent]:
        """R15: the dealer presses REVEAL once the squeezed cards are open; returns the events."""
        assert self.shoe is not None
        self.shoe.request("button", button="REVEAL")
        return self.settle()

    def settle(self, timeout: float = START_TIMEOUT_S) -> list[StoredEvent]:
        """Wait until every card asked for is dealt and every device frame acknowledged."""
        assert self.shoe is not None

        def settled() -> bool:
            clients = [client for client in (self.shoe, self.shuffler) if client is not None]
            statuses = [client.request("status") for client in clients]
            if statuses[0]["dealt"] < self._dealt_target:
                return False
            return all(status["pending"] == 0 for status in statuses)

        self.wait_until(settled, "the devices' frames to be acknowledged", timeout)
        return self.poll_journal()

    def _stored(self, dealt: int) -> bool:
        assert self.shoe is not None
        status = self.shoe.request("status")
        return status["dealt"] >= dealt and status["pending"] == 0

    def deal_until_shoe_ends(self, max_cards: int = 1000) -> list[StoredEvent]:
        """Deal in lock step until the journal has one more shoe.ended; returns the events."""
        ended = self.shoes_ended
        events: list[StoredEvent] = []
        for _ in range(max_cards):
            events += self.deal(1)
            if self.shoes_ended > ended:
                return events
        raise RigError(f"no shoe.ended after {max_cards} cards; see the logs in {self.directory}")

    def change_shoe(self, *, load: bool = True) -> None:
        """The dealer's part at the end of a shoe: take it out and load the next one.

        With a batch shuffler the daemon asked it to shuffle at shoe.ended; the next shoe is
        loaded once that shuffle's deck check is stored.
        """
        assert self.shoe is not None
        self.shoe.request("remove")
        if load:
            self.load_shoe()

    def load_shoe(self) -> None:
        """Load a shoe; a batch-shuffler table first waits for a passing deck check."""
        assert self.shoe is not None
        if self.shuffler is not None:
            self.wait_until(self._shuffled, "the shuffler's deck check")
        self.shoe.request("load")
        self._dealt_target = 0
        self.settle()

    def shuffle(self) -> None:
        """Start the shuffler by hand (a table's first shoe: nobody ended a shoe yet)."""
        assert self.shuffler is not None
        self.shuffler.request("shuffle")

    def _shuffled(self) -> bool:
        """A passing deck check is stored after the last shoe.ended (or ever, before one)."""
        events = self.journal_events()
        last_end = max((e.seq for e in events if e.type == EventType.SHOE_ENDED), default=0)
        return any(
            e.type == EventType.SHOE_SHUFFLED and e.seq > last_end and e.data["ok"] for e in events
        )

    def dealt_cards(self) -> list[Dealt]:
        """The cards of the shoe's current load as the simulator sent them (its `dealt`)."""
        assert self.shoe is not None
        return [
            Dealt(item["counter"], self._card(item)) for item in self.shoe.request("dealt")["cards"]
        ]

    def _card(self, item: Mapping[str, Any]) -> Card:
        if "uid" not in item:
            return from_protocol(item["rank"], item["suit"])
        if self._registry is None:
            self._registry = DeckRegistry.load(self.registry_dir)
        found = self._registry.lookup(item["uid"])
        if found is None:
            raise RigError(f"the simulator dealt UID {item['uid']}, not in its own registry")
        return found.card

    # ------------------------------------------------------------------ reading

    def journal(self) -> Journal | None:
        """The daemon's journal, read-only, once the daemon has made it (else None)."""
        if self._journal is None and self.journal_path.exists():
            with contextlib.suppress(JournalError):  # not initialised yet: try again later
                self._journal = Journal.open(self.journal_path, None, read_only=True)
        return self._journal

    def _last_seq(self) -> int:
        journal = self.journal()
        return journal.last_seq() if journal is not None else 0

    def poll_journal(self) -> list[StoredEvent]:
        """Events stored since the last poll; counts the shoes that ended."""
        journal = self.journal()
        if journal is None:
            return []
        events = journal.events_after(self._journaled, limit=100_000)
        if events:
            self._journaled = events[-1].seq
        for event in events:
            self.shoes_ended += event.type == EventType.SHOE_ENDED
            self._round.follow(event)
        return events

    def journal_events(self, after: int = 0) -> list[StoredEvent]:
        journal = self.journal()
        return [] if journal is None else journal.events_after(after, limit=1_000_000)

    def journal_inputs(self) -> list[dict[str, Any]]:
        """Every input the journal holds, in order (as JSON, with its `type`)."""
        journal = self.journal()
        return [] if journal is None else [step.input for step in journal.replay_steps(1)]

    def link_states(self) -> dict[str, dict[str, Any]]:
        """What the journal keeps of each device's link (session, identity)."""
        journal = self.journal()
        return {} if journal is None else journal.link_states()

    def received_events(self, after: int = 0) -> list[dict[str, Any]]:
        """What the table server stored, in seq order (PUSH_API.md form)."""
        if self._store is None:
            self._store = ReceiverStore(self.receiver_db)
        return self._store.events(TABLE_ID, after=after)

    def received_through(self) -> int:
        if self._store is None:
            self._store = ReceiverStore(self.receiver_db)
        return self._store.acked_through(TABLE_ID)

    def wait_delivered(self, timeout: float = START_TIMEOUT_S) -> int:
        """Wait until the table server acknowledged every event in the journal; returns the seq."""
        last = self._last_seq()
        self.wait_until(lambda: self.received_through() >= last, "the events to arrive", timeout)
        return last

    # ------------------------------------------------------------------ processes

    def wait_until(
        self, condition: Callable[[], bool], what: str, timeout: float = START_TIMEOUT_S
    ) -> None:
        """Poll `condition`; RigError if a process dies or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while not condition():
            self.check_alive()
            if time.monotonic() > deadline:
                raise RigError(f"waited {timeout} s for {what}; see the logs in {self.directory}")
            time.sleep(POLL_S)

    def check_alive(self) -> None:
        for name, process in self._alive.items():
            if process.poll() is not None:
                raise RigError(
                    f"the {name} stopped (exit code {process.returncode}); see "
                    f"{self.directory / (name + '.log')}"
                )

    def _kill(self, name: str, process: subprocess.Popen[str] | None) -> None:
        self._alive.pop(name, None)
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def _spawn(
        self,
        name: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdout: int = subprocess.PIPE,
    ) -> subprocess.Popen[str]:
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(_REPO_ROOT), environment.get("PYTHONPATH")])
        )
        environment.update(env or {})
        with (self.directory / f"{name}.log").open("a") as log:
            return subprocess.Popen(
                [sys.executable, *args],
                stdout=stdout,
                stderr=log,
                stdin=subprocess.DEVNULL,
                text=True,
                env=environment,
            )

    def _first_line(self, process: subprocess.Popen[str], what: str) -> str:
        """The first line a child prints (its port, or `ready <path>`)."""
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(START_TIMEOUT_S)
        line = process.stdout.readline().strip() if ready else ""
        if not line:
            process.kill()
            process.wait()
            raise RigError(
                f"{what} did not start (exit code {process.returncode}); see the logs in "
                f"{self.directory}"
            )
        return line


class _RoundWatch:
    """What a squeeze dealer sees of the round: are there squeezed cards to open? (R15)"""

    def __init__(self) -> None:
        self.cards = 0
        self.hidden = 0

    def follow(self, event: StoredEvent) -> None:
        if event.type in (EventType.ROUND_STARTED, EventType.ROUND_RESULT, EventType.ROUND_VOIDED):
            self.cards = self.hidden = 0
        elif event.type == EventType.CARD_DEALT:
            self.cards += 1
            self.hidden += event.data.get("card") is None
        elif event.type == EventType.CARD_REVEALED:
            self.hidden = max(self.hidden - 1, 0)

    @property
    def reveal_due(self) -> bool:
        """The table waits for the reveal once four cards are out and some are hidden."""
        return self.cards >= 4 and self.hidden > 0


def _toml(config: Mapping[str, Mapping[str, Any]]) -> str:
    """A TOML document of flat sections with string, number and boolean values."""
    lines: list[str] = []
    for section, keys in config.items():
        lines.append(f"[{section}]")
        for key, value in keys.items():
            lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'
