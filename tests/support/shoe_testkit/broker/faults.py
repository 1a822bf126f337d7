"""The faults a running node is put through: its AMQP port closed, its confirms held.

- `refuse_connections(seconds)`: `rabbitmq-upgrade drain` (maintenance mode) closes the
  client connections and the AMQP listener, so connects get ECONNREFUSED while the node and
  its queues live on; `rabbitmq-upgrade revive` reopens it, after `seconds` in the background.
- `pause_confirms()`: `rabbitmqctl set_vm_memory_high_watermark 0.0000001` raises the memory
  alarm. The broker then sends `connection.blocked` and stops reading from every connection
  that publishes, so a published message is neither routed nor confirmed (even to a client
  that ignores `connection.blocked`: tests/system/test_broker_harness.py proves it on a raw socket).
  `resume_confirms()` restores the configured watermark; the held messages are then read,
  routed and confirmed.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from shoe_testkit.broker.cli import CLI_TIMEOUT_S, BrokerError, NodeCli
from shoe_testkit.broker.procs import LOOPBACK, connects
from shoe_testkit.broker.run import START_TIMEOUT_S

# Far below what any VM uses, so the memory alarm fires at once whatever the machine's RAM.
ALARM_WATERMARK = "0.0000001"


class Faults:
    """One node's faults. `lock` is the broker's: a fault never overlaps a start or a kill."""

    def __init__(
        self,
        node: str,
        port: int,
        cli: NodeCli,
        lock: threading.RLock,
        *,
        running: Callable[[], bool],
        memory_watermark: float,
    ) -> None:
        self._node = node
        self._port = port
        self._cli = cli
        self._lock = lock
        self._running = running
        self._memory_watermark = memory_watermark
        self._refusing = False
        self._revive_timer: threading.Timer | None = None
        self._paused = False

    @property
    def refusing(self) -> bool:
        return self._refusing

    @property
    def confirms_paused(self) -> bool:
        return self._paused

    def refuse_connections(self, seconds: float | None = None) -> None:
        """Close client connections and the AMQP port now; reopen it after `seconds`
        (in a background thread) or at `accept_connections()` when `seconds` is None."""
        with self._lock:
            self._require_running()
            self.cancel_revive()
            self._cli.run("rabbitmq-upgrade", "drain")
            self._refusing = True
            self.wait_port(accepting=False)
            if seconds is not None:
                self._revive_timer = threading.Timer(seconds, self._revive_later)
                self._revive_timer.daemon = True
                self._revive_timer.start()

    def accept_connections(self) -> None:
        """Reopen the AMQP port now (ends `refuse_connections`)."""
        with self._lock:
            self.cancel_revive()
            self._require_running()
            self._cli.run("rabbitmq-upgrade", "revive")
            self.wait_port(accepting=True)
            self._refusing = False

    def wait_accepting(self, timeout: float = START_TIMEOUT_S) -> None:
        """Block until a timed refusal is over and the AMQP port accepts again."""
        deadline = time.monotonic() + timeout
        while self._refusing or not connects(self._port):
            if time.monotonic() > deadline:
                raise BrokerError(f"{self._node} did not accept connections within {timeout} s")
            time.sleep(0.02)

    def pause_confirms(self) -> None:
        """Raise the memory alarm: publishers are blocked and nothing they publish is
        confirmed until `resume_confirms()`."""
        with self._lock:
            self._require_running()
            self._cli.ctl("set_vm_memory_high_watermark", ALARM_WATERMARK)
            self._paused = True
            self._wait_memory_alarm(raised=True)

    def resume_confirms(self) -> None:
        """Restore the configured memory watermark; held publishes are read and confirmed."""
        with self._lock:
            self._require_running()
            self._cli.ctl("set_vm_memory_high_watermark", repr(self._memory_watermark))
            self._wait_memory_alarm(raised=False)
            self._paused = False

    def heal(self) -> None:
        """Undo the faults still on: accepting and confirming again."""
        with self._lock:
            if self._refusing:
                self.accept_connections()
            if self._paused:
                self.resume_confirms()

    def node_gone(self) -> None:
        """The VM stopped or was killed: a fresh boot opens its listener and has no alarm."""
        self.cancel_revive()
        self._refusing = self._paused = False

    def cancel_revive(self) -> None:
        timer, self._revive_timer = self._revive_timer, None
        if timer is not None:
            timer.cancel()

    def wait_port(self, *, accepting: bool) -> None:
        deadline = time.monotonic() + CLI_TIMEOUT_S
        while connects(self._port) != accepting:
            if time.monotonic() > deadline:
                state = "open" if accepting else "close"
                raise BrokerError(f"{LOOPBACK}:{self._port} did not {state}")
            time.sleep(0.01)

    def _revive_later(self) -> None:
        with self._lock:
            if self._revive_timer is None or not self._running():
                return  # cancelled, or the node died meanwhile: restart() opens the port
            self._revive_timer = None
            with contextlib.suppress(BrokerError):
                self.accept_connections()

    def _require_running(self) -> None:
        if not self._running():
            raise BrokerError(f"{self._node} is not running")

    def _wait_memory_alarm(self, *, raised: bool) -> None:
        deadline = time.monotonic() + CLI_TIMEOUT_S
        while True:
            memory_alarm, alarms = self._cli.memory_alarm()
            if memory_alarm == raised:
                return
            if time.monotonic() > deadline:
                wanted = "raised" if raised else "cleared"
                raise BrokerError(f"memory alarm of {self._node} not {wanted}: {alarms}")
            time.sleep(0.05)
