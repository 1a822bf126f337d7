"""The host's half of a table whose controller runs in the virtual table PC.

On the host: the reference table server on 127.0.0.1 (the guest reaches it as
10.0.2.100:8700) and the simulated shoe behind a pty (the guest's serial port). The dealer
deals in lock step with the shoe's own link: the next card once the last one was ACKed,
which the controller does only once the card is on its disk. So at any moment the shoe
knows which cards the table PC promised to keep: all it dealt, but the last one while that
one is still unacknowledged.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.sim.process import SimProcess
from shoe_controller.kit.receiver.store import ReceiverStore
from shoe_controller.kit.rig.config import TABLE_ID, toml_text
from shoe_controller.kit.rig.table_rig import receiver_arguments
from shoe_controller.vocab.cards import from_protocol
from shoe_testkit.tablepc.machine import SERVER_IN_GUEST

# The cards a shoe has before its cut card: enough rounds for a scenario, few enough for TCG.
CUT_AFTER = 60


@dataclass(frozen=True)
class Promise:
    """What the shoe knows at one moment: the cards it dealt, and how many were ACKed."""

    dealt: tuple[dict[str, Any], ...]  # the shoe's CARD frames, as the simulator keeps them
    acked: int  # the first `acked` of them were ACKed

    @property
    def acked_cards(self) -> tuple[dict[str, Any], ...]:
        return self.dealt[: self.acked]


class HostTable:
    """The table server and the shoe on the host, and the controller's configuration."""

    def __init__(self, directory: Path, *, seed: int = 1, cut_after: int = CUT_AFTER) -> None:
        self.directory = directory
        self.seed = seed
        self.cut_after = cut_after
        self.key = secrets.token_hex(32)
        self.key_file = directory / "table.key"
        self.receiver_db = directory / "receiver.db"
        self.receiver: subprocess.Popen[str] | None = None
        self.receiver_port = 0
        self.shoe = SimProcess(
            "--device",
            "shoe",
            "--kind",
            "optical",
            "--manual",
            "--seed",
            str(seed),
            "--cut-after",
            str(cut_after),
            directory=directory / "shoe",
            name="shoe",
        )
        self._store: ReceiverStore | None = None
        self._earlier: list[dict[str, Any]] = []  # the cards of the shoes taken out

    def start(self) -> HostTable:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "shoe").mkdir(exist_ok=True)
        self.key_file.write_text(self.key + "\n")
        self.key_file.chmod(0o600)
        self.receiver = subprocess.Popen(
            [sys.executable, *receiver_arguments(self.receiver_db, self.key_file, 0)],
            stdout=subprocess.PIPE,
            stderr=(self.directory / "receiver.log").open("a"),
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.receiver.stdout is not None
        self.receiver_port = int(self.receiver.stdout.readline().strip())
        self.shoe.start()
        return self

    def close(self) -> None:
        self.shoe.stop()
        if self.receiver is not None and self.receiver.poll() is None:
            self.receiver.terminate()
            self.receiver.wait(10)
        if self._store is not None:
            self._store.close()

    @property
    def shoe_tty(self) -> Path:
        """The pty the guest's serial port is wired to (the simulator's slave)."""
        return Path(self.shoe.path).resolve()

    def config_text(
        self, *, scanner_port: str = "/dev/shoe-scanner", **sections: dict[str, Any]
    ) -> str:
        """The controller's configuration as the technician edits it: this table's id, the
        shoe's port, the table server; no shuffler; journald's logs."""
        address, port = SERVER_IN_GUEST
        config: dict[str, dict[str, Any]] = {
            "table": {"id": TABLE_ID, "decks": 8},
            "scanner": {"protocol": "slp", "port": scanner_port, "kind": "optical"},
            "server": {
                "url": f"http://{address}:{port}",
                "key_file": "/etc/shoe-controller/table.key",
            },
            "journal": {"path": "/var/lib/shoe-controller/journal.db", "min_free_mb": 8},
        }
        for name, keys in sections.items():
            config.setdefault(name, {}).update(keys)
        return toml_text(config)

    # ------------------------------------------------------------------ the dealer

    def promise(self) -> Promise:
        """Every card the shoe dealt since the start, shoe after shoe, and how many were ACKed."""
        status = self.shoe.request("status")
        dealt = (*self._earlier, *self.shoe.request("dealt")["cards"])
        unacked = 1 if status["pending"] and dealt else 0  # lock step: only the last one
        return Promise(tuple(dealt), len(dealt) - unacked)

    def past_cut(self) -> bool:
        """The cut card is out: the round in progress is the shoe's last (R3.1)."""
        return int(self.shoe.request("status")["dealt"]) >= self.cut_after

    def deal_one(self) -> bool:
        """One card (once the last was ACKed: `wait_acked`); False if the shoe is empty.
        Returns once the shoe sent it: the simulator deals on its next tick, not at once."""
        status = self.shoe.request("status")
        if status["cards_left"] == 0:
            return False
        self.shoe.request("deal", count=1)
        deadline = time.monotonic() + 10.0
        while self.shoe.request("status")["dealt"] == status["dealt"]:
            if time.monotonic() > deadline:
                raise AssertionError("the simulated shoe did not deal")
            time.sleep(0.01)
        return True

    def wait_acked(self, patience: float = 300.0) -> None:
        """Until the shoe holds nothing unacknowledged (a rebooting table PC takes minutes)."""
        deadline = time.monotonic() + patience
        while self.shoe.request("status")["pending"]:
            if time.monotonic() > deadline:
                raise AssertionError(f"the shoe had no ACK in {patience:.0f} s")
            time.sleep(0.05)

    def new_shoe(self) -> None:
        """The dealer takes the ended shoe out and loads the next."""
        self._earlier += self.shoe.request("dealt")["cards"]
        self.shoe.request("remove")
        self.shoe.request("load")

    # ------------------------------------------------------------------ the table server

    def received(self, after: int = 0) -> list[dict[str, Any]]:
        """What the table server stored, in seq order (docs/spec-push-api.md form), each seq
        once."""
        if self._store is None:
            self._store = ReceiverStore(self.receiver_db)
        return self._store.events(TABLE_ID, after=after)

    def received_types(self, event_type: str) -> list[dict[str, Any]]:
        return [event for event in self.received() if event["type"] == event_type]


def card_names(cards: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> list[str]:
    """The shoe's CARD frames as the controller's cards ("QH", ...), for comparison."""
    return [str(from_protocol(card["rank"], card["suit"])) for card in cards]
