"""`TableRig`: brings a table's processes up in order, and down; the one object its callers hold.

It starts the receiver, the simulators and the daemon itself (their command lines and the
daemon's configuration are the rig's own knowledge) and hands the rest to its parts: the
processes (`RigProcesses`), the dealer (`Dealer`) and the readers of what was stored
(`TableRecords`).

Callers reach the parts directly: `rig.dealer.deal()`, `rig.records.journal_events()`.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from drivers.sim.control import SimControlClient
from shoe_controller.kit.rig.config import TABLE_ID, RigOptions, toml_text
from shoe_controller.kit.rig.dealer import Dealer
from shoe_controller.kit.rig.processes import START_TIMEOUT_S, RigError, RigProcesses
from shoe_controller.kit.rig.records import TableRecords
from shoe_controller.store.checkpoint_keys import write_new_key
from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.events import EventType


def receiver_arguments(db: Path, key_file: Path, port: int) -> list[str]:
    """The reference table server's command line after `python`, for this table's id: its
    store, the table's key, 127.0.0.1:`port` (0: any free one, printed on its first line)."""
    return [
        "-m",
        "shoe_controller.kit.receiver",
        "--db",
        str(db),
        "--key-file",
        str(key_file),
        "--table-id",
        TABLE_ID,
        "--port",
        str(port),
    ]


class TableRig:
    """Start, stop, kill and restart a table's processes; deal cards; read what was stored."""

    def __init__(self, directory: str | os.PathLike[str], options: RigOptions | None = None):
        self.directory = Path(directory)
        self.options = options or RigOptions()
        # the files of the table, all in `directory`
        self.config_path = self.directory / "config.toml"
        self.receiver_db = self.directory / "receiver.db"
        self.key_file = self.directory / "table.key"
        # The checkpoints' key (docs/journal.md "Checkpoints"): made with options.checkpoints;
        # named all the same, so that no rig's daemon signs with a key of this machine's /etc.
        self.checkpoint_key = self.directory / "checkpoint.key"
        self.registry_dir = self.directory / "decks"
        self.receiver_port: int | None = None
        self.receiver: subprocess.Popen[str] | None = None
        self.daemon: subprocess.Popen[str] | None = None
        self.companion: subprocess.Popen[str] | None = None  # `shoe-controller surveillance`
        self.shoe: SimControlClient | None = None
        self.shuffler: SimControlClient | None = None
        self._dealer: Dealer | None = None  # once the simulators run
        self._sims: dict[str, subprocess.Popen[str]] = {}
        self._processes = RigProcesses(self.directory)
        self.records = TableRecords(self.directory / "journal.db", self.receiver_db)

    @property
    def dealer(self) -> Dealer:
        """The dealer at the simulated shoe (and shuffler), once the simulators run."""
        if self._dealer is None:
            raise RigError("no dealer yet: start the simulators first")
        return self._dealer

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
        if self.options.checkpoints and not self.checkpoint_key.exists():
            write_new_key(self.checkpoint_key)
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
        processes = (self.companion, self.daemon, *self._sims.values(), self.receiver)
        self._processes.stop(p for p in processes if p)
        self.records.close()

    def __enter__(self) -> TableRig:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the receiver

    def start_receiver(self, port: int | None = None) -> int:
        """The reference table server on 127.0.0.1 (`port`: the last one, else any free one)."""
        if port is None:
            port = self.receiver_port or 0
        args = receiver_arguments(self.receiver_db, self.key_file, port)
        if self.options.receiver_control:
            args.append("--control")
        self.receiver = self._processes.spawn("receiver", args)
        self.receiver_port = int(self._processes.first_line(self.receiver, "the table server"))
        self._processes.watch("receiver", self.receiver)
        return self.receiver_port

    def kill_receiver(self) -> None:
        """SIGKILL the table server (its database keeps what it acknowledged)."""
        self._processes.kill("receiver", self.receiver)

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
        if options.batch_shuffler or not options.autoload:
            shoe_args.append("--no-autoload")  # the cards come from the shuffler (or dealer)
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
        self._dealer = Dealer(
            self.shoe, self.shuffler, self.records, self._processes, self.registry_dir
        )

    def _start_sim(self, name: str, args: Sequence[str]) -> SimControlClient:
        control = self.directory / f"{name}.ctl"
        process = self._processes.spawn(
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
        self._processes.first_line(process, f"the simulated {name}")
        self._sims[name] = process
        self._processes.watch(name, process)
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
            "journal": {
                "path": str(self.records.journal_path),
                "checkpoint_key": str(self.checkpoint_key),
                **options.journal,
            },
            "control": {"socket": str(self.directory / "control.sock"), **options.control},
            "log": {"format": "json", "level": options.log_level, **options.log},
        }
        if options.metrics:
            config["metrics"] = dict(options.metrics)
        if options.batch_shuffler:
            config["shuffler"] = {
                "protocol": "slp",
                "port": str(self.port_of("shuffler")),
                "kind": "shuffler",
            }
        for name, keys in sections.items():
            config.setdefault(name, {}).update(keys)
        self.config_path.write_text(toml_text(config))
        return self.config_path

    def start_daemon(
        self,
        env: Mapping[str, str] | None = None,
        *,
        wait: bool = True,
        prefix: Sequence[str] = (),
        python: str = sys.executable,
    ) -> None:
        """`shoe-controller run`; with `wait`, returns once its controller.started is stored.

        `prefix`: a command the daemon runs under (`strace -f -o FILE`: then `self.daemon` is
        that command's process, and the daemon its child); `python`: the interpreter (one
        another user may run)."""
        before = self.records.last_seq()
        self.daemon = self._processes.spawn(
            "daemon",
            ["-m", "shoe_controller.cli.main", "run", "--config", str(self.config_path)],
            env=env,
            stdout=subprocess.DEVNULL,
            prefix=prefix,
            python=python,
        )
        self._processes.watch("daemon", self.daemon)
        if wait:
            self.wait_started(after_seq=before)

    def wait_started(self, after_seq: int = 0) -> StoredEvent:
        """The daemon's controller.started event with a seq after `after_seq`, once stored."""
        found: list[StoredEvent] = []

        def started() -> bool:
            journal = self.records.journal()
            if journal is None:
                return False
            found[:] = [
                event
                for event in journal.reads.events_after(after_seq, limit=100_000)
                if event.type == EventType.CONTROLLER_STARTED
            ]
            return bool(found)

        self.wait_until(started, "the daemon to start")
        return found[0]

    def start_surveillance(self, prefix: Sequence[str] = (), python: str = sys.executable) -> None:
        """The surveillance companion beside the daemon (docs/surveillance.md), on its config;
        it reports every bet's edge after each round, so `shoectl edge` has an answer.
        `prefix`, `python`: as for `start_daemon`."""
        self.companion = self._processes.spawn(
            "surveillance",
            ["-m", "shoe_controller.cli.main", "surveillance", "--config", str(self.config_path)],
            stdout=subprocess.DEVNULL,
            prefix=prefix,
            python=python,
        )
        self._processes.watch("surveillance", self.companion)

    def kill_daemon(self) -> None:
        """SIGKILL, as a power cut would: nothing is flushed, closed or said."""
        self._processes.kill("daemon", self.daemon)

    def stop_daemon(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit code (0: a clean stop)."""
        daemon = self.daemon
        assert daemon is not None
        self._processes.forget("daemon")
        daemon.send_signal(signal.SIGTERM)
        return daemon.wait(timeout)

    def wait_until(
        self, condition: Callable[[], bool], what: str, timeout: float = START_TIMEOUT_S
    ) -> None:
        """Poll `condition`; RigError if a process dies or `timeout` seconds pass."""
        self._processes.wait_until(condition, what, timeout)

    def wait_delivered(self, timeout: float = START_TIMEOUT_S) -> int:
        """Wait until the table server acknowledged every event stored for it; returns its
        last seq (the [server] sink's, docs/delivery.md)."""
        last = self.records.server_last_seq()
        self.wait_until(
            lambda: self.records.received_through() >= last, "the events to arrive", timeout
        )
        return last
