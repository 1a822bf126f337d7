"""A live control socket for tests: the daemon's parts on one asyncio loop, a simulated shoe.

`LiveTable` runs, on its own loop thread (as the daemon runs everything on one loop): a real
SQLite journal, the Controller with its Table, a PushSink (started only when a test asks),
a DeviceRunner reading a simulated optical shoe through a real pty, and the ControlService
behind a ControlServer on a Unix socket. Tests talk to it as shoectl does: through the socket,
or by running `python -m shoe_controller.cli.shoectl` as a real process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from drivers.session.spec import DeviceTimings
from drivers.sim.base import SimConfig
from drivers.sim.devices import make_device
from drivers.sim.pty import SimRunner
from drivers.sim.shoe import ShoeSim
from drivers.wire.messages import ButtonId, DeviceKind
from shoe_controller.delivery.push import PushConfig, PushSink
from shoe_controller.delivery.sink import Backoff
from shoe_controller.service.config import Config, DeviceSection, from_mapping
from shoe_controller.service.control import ControlServer, ControlService
from shoe_controller.service.devices import DeviceRunner
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.inputs import Input, SupervisorCommand
from shoe_testkit.groups import NO_SUPERVISORS, NO_VIEWERS, SURVEILLANCE
from shoe_testkit.one_server import open_journal, server_sink

GUARD_S = 60.0  # only stops a hung test; asserts nothing about speed
REPO = Path(__file__).resolve().parents[3]
R = TypeVar("R")


def sim_cards(names: str) -> list[tuple[int, int]]:
    """'AS 4C QH' -> the simulator's (rank, suit) pairs."""
    return [(card.rank, card.suit.value) for card in map(parse_card, names.split())]


class LiveTable:
    """The daemon's parts around a control socket, on a loop thread of their own."""

    def __init__(
        self,
        workdir: Path,
        *,
        procedures: Mapping[str, Any] | None = None,
        supervisor_group: str = NO_SUPERVISORS,  # groups of the test's own, or none (groups.py)
        viewer_group: str = NO_VIEWERS,
        control: Mapping[str, Any] | None = None,
        busy_timeout_s: float = 5.0,
    ) -> None:
        self.workdir = workdir
        # The socket's directory must let other users reach the socket (the `nobody` tests),
        # as /run/shoe-controller (0755) does; pytest's tmp_path is private to root.
        self.socket_dir = Path(tempfile.mkdtemp(prefix="shoectl-", dir="/tmp"))
        self.socket_dir.chmod(0o755)
        self.socket_path = self.socket_dir / "control.sock"
        try:
            self.config = self._configure(procedures, supervisor_group, viewer_group, control)
        except BaseException:  # a configuration refused: the directory goes with it
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            raise
        self.supervisor_group = supervisor_group
        self._busy_timeout_s = busy_timeout_s
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="daemon-loop")
        self._thread.start()
        try:
            self._start(workdir)
        except BaseException:
            self._stop_loop()  # else the test run never ends, and the directory stays
            raise

    def _configure(
        self,
        procedures: Mapping[str, Any] | None,
        supervisor_group: str,
        viewer_group: str,
        control: Mapping[str, Any] | None,
    ) -> Config:
        return from_mapping(
            {
                "table": {"id": "07", **(procedures or {})},
                "control": {
                    "socket": str(self.socket_path),
                    "supervisor_group": supervisor_group,
                    "viewer_group": viewer_group,
                    **(control or {}),
                },
                "surveillance": dict(SURVEILLANCE),
            }
        )

    def _start(self, workdir: Path) -> None:
        self.sim = SimRunner(
            make_device(
                SimConfig(
                    kind=DeviceKind.OPTICAL_SHOE,
                    autoload=False,
                    autodeal=False,
                    pace=0.002,
                    vendor="Acme Gaming",
                    model="OS-9",
                    serial="SN-4711",
                    firmware="2.3.1",
                )
            ),
            link_path=workdir / "shoe.tty",
        ).start()
        self._tasks: list[asyncio.Task[None]] = []
        self.publisher: PushSink | None = None
        try:
            self.call(self._build)
            self.run(self.server.start())
        except BaseException:
            self.sim.stop()
            raise

    # ------------------------------------------------------------------ building

    def _build(self) -> None:
        self.journal = open_journal(
            self.workdir / "journal.db",
            self.config.controller_id,
            busy_timeout_s=self._busy_timeout_s,
        )
        self.controller = Controller(
            self.config.procedures, self.journal, on_stored=self._on_stored
        )
        key_file = self.workdir / "table.key"
        key_file.write_text("test-secret\n")
        self.publisher = server_sink(
            self.journal,
            PushConfig(
                base_url=f"http://127.0.0.1:{_closed_port()}",
                table_id=self.config.table.id,
                controller_id=self.config.controller_id,
                key_file=key_file,
                backoff=Backoff(0.05, 0.2),
                timeout_s=1.0,
            ),
        )
        self.scanner = DeviceRunner(
            "scanner",
            DeviceSection(port=str(self.workdir / "shoe.tty"), kind="optical"),
            self._store,
            None,
            options=DeviceTimings(silence_timeout=30.0, backoff_initial=0.05, backoff_max=0.2),
        )
        self.service = ControlService(
            self.controller,
            lambda: [self.publisher.status()],
            lambda: [self.scanner.stats()],
            self.config,
            time.time,
        )
        self.server = ControlServer(self.socket_path, self.service, self.config.control)
        self.controller.start("test", time.time())
        self._tasks.append(self.loop.create_task(self.scanner.run()))

    def _on_stored(self, stored: list[StoredEvent]) -> None:
        if self.publisher is not None:
            self.publisher.notify()
        self.service.publish(stored)

    def _store(self, inputs: Sequence[Input], link_state: Mapping[str, Any] | None) -> None:
        self.controller.submit_many(inputs, {"scanner": link_state} if link_state else None)

    # ------------------------------------------------------------------ the loop thread

    def call(self, fn: Callable[..., R], *args: Any) -> R:
        """Run `fn(*args)` on the loop thread (the journal's thread) and return its result."""
        future: concurrent.futures.Future[R] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn(*args))
            except BaseException as error:  # handed to the test's thread
                future.set_exception(error)

        self.loop.call_soon_threadsafe(run)
        return future.result(GUARD_S)

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(GUARD_S)

    def close(self) -> None:
        try:
            self.run(self.server.close())
            if self.publisher is not None:
                self.call(self.publisher.stop)
            self.call(self.scanner.stop)
            self.run(_finish(self._tasks))
            self.call(self.journal.close)
        finally:
            self.sim.stop()
            self._stop_loop()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(GUARD_S)
        self.loop.close()
        shutil.rmtree(self.socket_dir, ignore_errors=True)

    # ------------------------------------------------------------------ the table

    def submit(self, item: Input) -> list[StoredEvent]:
        return self.call(self.controller.submit, item)

    def supervisor(self, action: str, **args: Any) -> list[StoredEvent]:
        return self.submit(SupervisorCommand(time.time(), action, "sup-test", "test", args))

    def view(self) -> dict[str, Any]:
        return self.call(self.controller.table.view)

    def start_publisher(self) -> None:
        assert self.publisher is not None
        self._tasks.append(self.run(_spawn(self.publisher.run())))

    def shoe(self) -> ShoeSim:
        device = self.sim.device
        assert isinstance(device, ShoeSim)
        return device

    def wait_connected(self) -> None:
        self.wait_for(lambda: self.view()["devices"].get("scanner", {}).get("connected"))

    def load(self, names: str) -> None:
        """Load the simulated shoe with these cards in this order (SHOE loaded)."""
        self.wait_connected()
        cards = sim_cards(names)
        before = self.call(self.journal.reads.last_seq)
        self.sim.call(lambda device: device.load(cards))
        self.wait_for(
            lambda: self.call(self.journal.reads.last_seq) > before and self.view()["shoe_open"]
        )

    def deal(self, count: int) -> None:
        """Let the simulated shoe deal `count` cards and wait until the table has them."""
        target = self.view()["cards_dealt"] + count
        self.sim.call(lambda device: device.deal(count))
        self.wait_for(lambda: self.view()["cards_dealt"] >= target)

    def press_reveal(self) -> None:
        before = self.call(self.journal.reads.last_seq)
        self.sim.call(lambda device: device.press(ButtonId.REVEAL))
        self.wait_for(lambda: self.call(self.journal.reads.last_seq) > before)

    def wait_for(self, condition: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + GUARD_S
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.01)
        raise AssertionError("the table did not get there in time")

    def events(self, after: int = 0) -> list[StoredEvent]:
        return self.call(self.journal.reads.events_after, after, 100000)

    # ------------------------------------------------------------------ clients

    def request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One JSON line to the socket and the one answer line back, as an integrator would."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(GUARD_S)
            client.connect(str(self.socket_path))
            client.sendall(json.dumps(request).encode() + b"\n")
            return json.loads(client.makefile("rb").readline())

    def shoectl(
        self,
        *args: str,
        user: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        socket_path: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real CLI in its own process; `user` prefixes e.g. a setpriv command."""
        return subprocess.run(
            [*user, sys.executable, "-m", "shoe_controller.cli.shoectl", *args],
            cwd=REPO,
            env=cli_env(socket_path or str(self.socket_path), env),
            capture_output=True,
            text=True,
            timeout=GUARD_S,
            check=False,
        )


def cli_env(socket_path: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("NO_COLOR", "SHOECTL_SOCKET", "COLUMNS")
    }
    env["SHOECTL_SOCKET"] = socket_path
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra or {})
    return env


def _closed_port() -> int:
    """A local TCP port nobody listens on: the table server is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _spawn(coroutine: Any) -> asyncio.Task[None]:
    return asyncio.create_task(coroutine)


async def _finish(tasks: list[asyncio.Task[None]]) -> None:
    _, pending = await asyncio.wait(tasks, timeout=5.0) if tasks else (set(), set())
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


# ------------------------------------------------------------------ what the tests share

# A shoe whose first card burns one more (R2.2 b), then rounds to deal from.
SHOE = "AS 4C 2S 4D 7H 9C QH 5D AH AD 3C 3H 3S KD 5C 2D 9S JC JS"


def open_shoe(live: LiveTable, cards: str = SHOE) -> None:
    live.load(cards)
    live.deal(2)  # the burn (R2.2 b): A♠, then one card
