"""A device whose inputs are stored before it is ACKed: what to store, then ACK or release.

`DeviceSession` owns everything between a device's frames and the journal except the storing
itself. Its caller (the daemon's `DeviceRunner`) stores what `take(item)` hands out and says
`stored()` or `failed()`:
- reference protocol: the message is translated and the inputs go out with the link state to
  store beside them (`{"session": ..., "identity": ...}`). `stored()` ACKs the frame and writes
  the ACK at once; `failed()` puts the translator back where it was and releases the frame
  unACKed, so the device's retransmission brings the card again once storage works;
- vendor ASCII protocols: nothing is acknowledged. A reading the journal could not take is
  kept and goes first, in order, with the next one (in memory: these shoes never resend).
The connection's status changes reach the caller's listener; a note they leave to store (a
`DeviceLost` until one was stored, an ASCII shoe's `DeviceConnected`) waits in the session
until the caller takes it with `next_note()`, on its own time and in the order they came, and
is stored the same way. The drivers' reconnection loop only tells; it never stores.

The session also keeps the device's identity, its last HELLO as an input (JSON) stored with the
link state. A device that comes back with the same boot_id (unplugged, or this process
restarted) sends a HELLO the link only ACKs (docs/spec-protocol.md: a retransmission): so the first
frame after a (re)connection is led by a `DeviceConnected` with that identity. And it asks a
(re)connected device for its state and active faults, with the lights the table last wanted:
the session holds them (the one place they are kept), shown on the device whose role shows
lights. A batch shuffler is asked to shuffle here too, its message built by its translator.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from drivers.adapters import Reading, TextAdapter
from drivers.session.parts import build_device
from drivers.session.spec import DeviceSpec
from drivers.translate.base import Translator
from drivers.translate.registry import DeckRegistry
from drivers.translate.scanner import ScannerTranslator
from drivers.translate.shuffler import ShufflerTranslator
from drivers.transports.connection import ConnectionStatus, DeviceConnection
from drivers.wire import messages as m
from drivers.wire.link import HostLink
from drivers.wire.link_state import Delivery, SessionState
from shoe_controller.vocab.inputs import (
    DeviceConnected,
    DeviceLost,
    Input,
    InputError,
    input_from_json,
    input_to_json,
)


@dataclass(frozen=True, slots=True)
class Pending:
    """What the session hands out to be stored: inputs, and the link state to store with them
    (None: nothing of the link to keep)."""

    inputs: list[Input]
    link_state: dict[str, Any] | None = None


StatusListener = Callable[[ConnectionStatus, "str | None"], None]


def _nothing() -> None:
    """What follows storing a note that needs no follow-up."""


class DeviceSession:
    """One device's session with the host that stores its inputs (see the module docstring)."""

    def __init__(
        self,
        spec: DeviceSpec,
        *,
        registry: DeckRegistry | None = None,
        saved_state: Mapping[str, Any] | None = None,
        history: Iterable[Input] = (),
        clock: Callable[[], float] = time.time,
        usb_backend: Any = None,
        on_status: StatusListener | None = None,
    ) -> None:
        """`saved_state` is the link state stored with the device's last data; `history` the
        open shoe's stored inputs; `on_status(status, detail)` hears every status change (a
        note it leaves waits for `next_note()`)."""
        self.spec = spec
        self.name = spec.name
        self._clock = clock
        self._on_status = on_status
        self.status = "starting"
        # A device that went silent stays "silent" until it speaks again: its port reopens
        # at once, and calling that "connected" made health flap (docs/control.md).
        self._silent = False
        self._lost_reported = True  # nothing to report until it was connected once
        self._lost_waiting = False  # a DeviceLost note waits for the caller
        self._connections = 0  # counted so that a note stored late speaks for its own
        self._identity: dict[str, Any] | None = None
        self._announce = True
        # The lights the table last asked for (None: it has not asked yet; off meanwhile).
        self._indication: tuple[int, int] | None = None
        self._unstored: list[Input] = []  # ASCII shoes' inputs waiting for the journal
        # The status changes' notes waiting for the caller, each with what follows storing it
        # and failing to.
        self._notes: deque[tuple[Pending, Callable[[], None], Callable[[], None]]] = deque()
        # What storing the pending inputs, or failing to, must be followed by.
        self._pending: tuple[Callable[[], None], Callable[[], None]] | None = None
        parts = build_device(
            spec, registry=registry, usb_backend=usb_backend, on_status=self._status_changed
        )
        self.connection: DeviceConnection[Any] = parts.connection
        self.link: HostLink | None = parts.link
        self._translator: Translator | None = parts.translator
        self._adapter: TextAdapter | None = parts.adapter
        if self._translator is not None:
            # What the translator knows (the shoe's last counter, the RFID tags it has seen)
            # follows from the open shoe's stored inputs: rebuilt from them, not stored again
            # with every card.
            self._translator.replay(history)
            self._restore(saved_state or {})

    @property
    def silent(self) -> bool:
        """The device went silent and has not spoken since (the next `take` ends that)."""
        return self._silent

    # ---------------------------------------------------------------- storing

    def take(self, item: Delivery | Reading) -> Pending:
        """What a delivery (reference protocol) or a reading (ASCII) stands for, to store now;
        then say `stored()` or `failed()`."""
        if self._silent:
            self._silent = False
            self.status = ConnectionStatus.CONNECTED.value
        if self.link is not None:
            return self._take_delivery(item)  # type: ignore[arg-type]
        return self._take_reading(item)  # type: ignore[arg-type]

    def stored(self) -> None:
        """The pending inputs are stored: ACK the frame they came in (at once)."""
        self._finish(stored=True)

    def failed(self) -> None:
        """The pending inputs were not stored: release the frame unACKed, or keep the readings."""
        self._finish(stored=False)

    def _finish(self, *, stored: bool) -> None:
        if self._pending is None:
            raise RuntimeError(f"{self.name}: nothing is waiting to be stored")
        after_stored, after_failure = self._pending
        self._pending = None
        (after_stored if stored else after_failure)()

    def _take_delivery(self, delivery: Delivery) -> Pending:
        translator, link = self._translator, self.link
        assert translator is not None
        assert link is not None
        before = translator.export_state()
        now = self._clock()
        inputs, identity = self._with_identity(translator.translate(delivery.message, now), now)

        def after_stored() -> None:
            self._identity, self._announce = identity, False
            link.ack(delivery.handle)
            self.connection.send_now()  # the ACK first: the card is on disk, the shoe may go on

        def after_failure() -> None:
            translator.restore_state(before)
            link.release(delivery.handle)

        self._pending = (after_stored, after_failure)
        return Pending(inputs, self._link_state(delivery, identity))

    def _take_reading(self, reading: Reading) -> Pending:
        """A vendor ASCII shoe never resends: what the journal could not take yet goes first,
        in order, with the next reading."""
        assert self._adapter is not None
        inputs = [*self._unstored, *self._adapter.translate(reading, self._clock())]

        def after_stored() -> None:
            self._unstored = []

        def after_failure() -> None:
            self._unstored = inputs

        self._pending = (after_stored, after_failure)
        return Pending(inputs)

    def _restore(self, saved: Mapping[str, Any]) -> None:
        """Take up the link session and the device's identity stored with the last data."""
        assert self.link is not None
        if "session" in saved:
            self.link.restore_session(SessionState.from_dict(saved["session"]))
        if isinstance(saved.get("identity"), dict):
            self._identity = saved["identity"]

    def _link_state(self, delivery: Delivery, identity: dict[str, Any] | None) -> dict[str, Any]:
        state: dict[str, Any] = {"session": delivery.handle.session_after.to_dict()}
        if identity is not None:
            state["identity"] = identity
        return state

    def _with_identity(
        self, inputs: list[Input], now: float
    ) -> tuple[list[Input], dict[str, Any] | None]:
        """The inputs, led by a DeviceConnected when the device is back without a new HELLO;
        and the identity to keep."""
        connected = [item for item in inputs if isinstance(item, DeviceConnected)]
        if connected:
            return inputs, input_to_json(connected[-1])
        if self._announce and self._identity is not None:
            try:
                again = input_from_json({**self._identity, "at": now})
            except InputError:  # a stored identity from another version: wait for a HELLO
                return inputs, None
            return [again, *inputs], self._identity
        return inputs, self._identity

    # ---------------------------------------------------------------- commands

    def send(self, message: m.Message) -> None:
        """Queue a command (INDICATE, STATUS_REQUEST, SHUFFLE) for a reference-protocol device."""
        if self.link is None:
            return  # the vendor ASCII shoes take no commands
        self.link.send(message)
        self.connection.wake()

    def indicate(self, pattern: int, arg: int) -> None:
        """The table's lights: shown on a device whose role shows them when they change (kept,
        and shown again after a reconnection); any other device ignores them."""
        if not self.spec.role.shows_lights or self._indication == (pattern, arg):
            return
        self._indication = (pattern, arg)
        if self.link is not None:
            # Built by the shoe's translator whatever deals here: a shuffler-dealer machine
            # on the [scanner] section has a ShufflerTranslator, which shows no lights.
            self.send(ScannerTranslator.indicate(pattern, arg))

    def shuffle(self, decks: int) -> None:
        """Ask a device whose role shuffles to shuffle `decks` decks; any other ignores it."""
        if self.spec.role.shuffles:
            self.send(ShufflerTranslator.shuffle(decks))

    def stop(self) -> None:
        self.connection.stop()

    def _resynchronise(self) -> None:
        """Ask a (re)connected device for its state and active faults (docs/spec-protocol.md).

        A restarted controller numbers its frames from 1 again, and the device, which cannot
        see the restart, drops a frame whose seq equals the last one it accepted as a
        duplicate. So a shoe first gets its lights (an INDICATE may be lost harmlessly), then
        the request, then its lights again.
        """
        assert self.link is not None
        assert self._translator is not None
        lights = self.spec.role.shows_lights
        shown = self._indication or (0, 0)
        if lights:
            self.link.send(ScannerTranslator.indicate(*shown))
        self.link.send(self._translator.status_request())
        if lights:
            self.link.send(ScannerTranslator.indicate(*shown))

    # ---------------------------------------------------------------- status

    def _status_changed(self, status: ConnectionStatus, detail: str | None) -> None:
        if status is ConnectionStatus.SILENT:
            self._silent = True
        elif status in (ConnectionStatus.LOST, ConnectionStatus.STOPPED):
            self._silent = False  # says more than silent (a reopen that fails does not)
        self.status = "silent" if self._silent else status.value
        now = self._clock()
        if status is ConnectionStatus.CONNECTED:
            self._lost_reported, self._lost_waiting = False, False
            self._connections += 1
            if self._adapter is not None:
                self._notes.append((Pending(self._adapter.connected(now)), _nothing, _nothing))
            else:
                self._announce = True
                self._resynchronise()
        elif (
            status in (ConnectionStatus.LOST, ConnectionStatus.SILENT, ConnectionStatus.OPEN_FAILED)
            and not self._lost_reported
            and not self._lost_waiting
        ):
            # Reported once stored: if the journal refused it, each reopen attempt that fails
            # tries again, so the table and the server do learn the device is gone.
            lost = DeviceLost(at=now, device=self.name, reason=detail or "")
            self._lost_waiting = True
            self._notes.append((Pending([lost]), *self._lost_followups()))
        if self._on_status is not None:
            self._on_status(status, detail)

    def next_note(self) -> Pending | None:
        """The oldest status note waiting to be stored (then `stored()` or `failed()`), or
        None. One the journal refused is not kept: the next status change tries again."""
        if not self._notes:
            return None
        note, after_stored, after_failure = self._notes.popleft()
        self._pending = (after_stored, after_failure)
        return note

    def _lost_followups(self) -> tuple[Callable[[], None], Callable[[], None]]:
        """What storing a DeviceLost, or failing to, means while the device stays away: a
        reconnection meanwhile starts afresh."""
        connection = self._connections

        def after_stored() -> None:
            if self._connections == connection:
                self._lost_reported, self._lost_waiting = True, False

        def after_failure() -> None:
            if self._connections == connection:
                self._lost_waiting = False

        return after_stored, after_failure

    def stats(self) -> dict[str, Any]:
        """The device's port, status and counters (link or adapter) for `shoectl devices`."""
        out: dict[str, Any] = {
            "device": self.name,
            "protocol": self.spec.protocol,
            "kind": self.spec.kind,  # the configuration's (None: the device's HELLO says it)
            "port": self.connection.transport.name,
            "status": self.status,
            "connection": self.connection.stats.as_dict(),
        }
        if self.link is not None:
            out["link"] = self.link.stats.as_dict()
        else:
            assert self._adapter is not None
            out["adapter"] = self._adapter.stats.as_dict()
        return out
