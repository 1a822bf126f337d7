"""Shoe scanner driver: turns reference-protocol messages into the table's typed inputs.

Sans-I/O: `ScannerTranslator.translate(message, now)` maps one message from the link to
inputs; it never touches a port or a clock. `DeviceSession` (drivers/session/) wires link,
connection and translator: it translates a delivery, hands the inputs out to be stored, then
ACKs the frame once told they are. Commands to the shoe are built here (`indicate`,
`status_request`) and sent with `DeviceSession.send`.

What it keeps (small, exportable, rebuildable from the journal's inputs):
- the last card counter, to turn a counter gap into `CardsMissed` (R10.5); it restarts at
  SHOE loaded (and, for a shuffler-dealer, at SHUFFLE_DONE: `restart_counter`);
- the RFID UIDs seen in the current shoe, to flag a second sighting as a duplicate.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from drivers.translate.registry import DeckRegistry, normalize_uid
from drivers.wire import messages as m
from shoe_controller.vocab.cards import CardError, from_protocol
from shoe_controller.vocab.inputs import (
    Button,
    ButtonPressed,
    CardDrawn,
    CardsMissed,
    CutCardSeen,
    DeviceConnected,
    DeviceFault,
    DeviceFaultCleared,
    Input,
    ShoeState,
    ShoeStateChanged,
    ShuffleDone,
)

# Faults the host raises itself (0xF000 and up, docs/drivers.md "Fault codes"). 0xF002 was
# "counter went back": the table judges counters itself now (docs/table.md), the code stays
# retired so that old journals keep their meaning.
UNEXPECTED_MESSAGE = 0xF003  # a message this kind of device should not send

KIND_NAMES: dict[int, str] = {
    m.DeviceKind.RFID_SHOE: "rfid",
    m.DeviceKind.OPTICAL_SHOE: "optical",
    m.DeviceKind.BATCH_SHUFFLER: "shuffler",
    m.DeviceKind.SHUFFLER_DEALER: "shuffler_dealer",
}
KINDS = tuple(KIND_NAMES.values())

_SHOE_STATES = {
    m.ShoeState.REMOVED: ShoeState.REMOVED,
    m.ShoeState.LOADED: ShoeState.LOADED,
    m.ShoeState.EMPTY: ShoeState.EMPTY,
    m.ShoeState.COVER_OPEN: ShoeState.COVER_OPEN,
    m.ShoeState.COVER_CLOSED: ShoeState.COVER_CLOSED,
}
_BUTTONS = {
    m.ButtonId.REVEAL: Button.REVEAL,
    m.ButtonId.CALL_SUPERVISOR: Button.CALL_SUPERVISOR,
    m.ButtonId.NO_MORE_BETS: Button.NO_MORE_BETS,
}
_STATE_VERSION = 1


def connected_input(message: m.Hello, now: float, device: str) -> DeviceConnected:
    """HELLO as the table sees it: which kind of device, from whom."""
    return DeviceConnected(
        at=now,
        device=device,
        kind=KIND_NAMES.get(message.kind, f"kind {int(message.kind)}"),
        vendor=message.vendor,
        model=message.model,
        serial=message.serial,
        firmware=message.firmware,
    )


def fault_input(message: m.Fault | m.FaultCleared, now: float, device: str) -> Input:
    """FAULT and FAULT_CLEARED keep the device's code, severity and text as they are."""
    if isinstance(message, m.FaultCleared):
        return DeviceFaultCleared(at=now, device=device, code=int(message.code))
    return DeviceFault(
        at=now,
        device=device,
        code=int(message.code),
        severity=int(message.severity),
        text=message.text,
    )


def unexpected_input(message: m.Message, now: float, device: str) -> DeviceFault:
    """A message the device should not send is shown to the operator, not dropped silently."""
    return DeviceFault(
        at=now,
        device=device,
        code=UNEXPECTED_MESSAGE,
        severity=int(m.Severity.WARNING),
        text=f"unexpected {message.TYPE.name} from the {device}: {message!r}",
    )


class ScannerTranslator:
    """One shoe scanner (RFID, optical, or the dealing side of a shuffler-dealer)."""

    def __init__(
        self,
        *,
        device: str = "scanner",
        registry: DeckRegistry | None = None,
        kind: str | None = None,
    ) -> None:
        """`registry` maps RFID UIDs to cards; without one every UID is foreign.

        `kind` ("rfid", "optical", "shuffler_dealer") until a HELLO says otherwise; a
        shuffler-dealer recirculates its cards (R2.5), so its UIDs are not checked for
        duplicates.
        """
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
        self.device = device
        self.kind = kind
        self._registry = registry
        self._last_counter: int | None = None  # None: unknown (no shoe loaded, or removed)
        self._seen: set[str] = set()
        # A STATUS_REQUEST went out: the next SHOE reports the state, it is not an event.
        self._status_pending = False

    # -- device to host ----------------------------------------------------------------

    def translate(self, message: m.Message, now: float) -> list[Input]:
        """The inputs one message stands for (often one, none for HEARTBEAT)."""
        if isinstance(message, m.Card):
            return self._card(message, now)
        if isinstance(message, m.CutCard):
            out = self._cut_gap(message.counter, now)
            out.append(CutCardSeen(at=now, device=self.device, counter=message.counter))
            return out
        if isinstance(message, m.Shoe):
            if message.state == m.ShoeState.LOADED:
                if self._status_pending and self._last_counter is not None:
                    self._status_pending = False
                    return []  # the shoe it deals from, still loaded: an answer, not a new shoe
                # News (the answer may still follow: a load can cross the request).
                self.start_shoe()
            else:
                self._status_pending = False
                if message.state == m.ShoeState.REMOVED:
                    self._last_counter = None
            return [ShoeStateChanged(at=now, device=self.device, state=_SHOE_STATES[message.state])]
        if isinstance(message, m.Button):
            return [ButtonPressed(at=now, device=self.device, button=_BUTTONS[message.button])]
        if isinstance(message, m.Fault | m.FaultCleared):
            return [fault_input(message, now, self.device)]
        if isinstance(message, m.Hello):
            self.kind = KIND_NAMES.get(message.kind, self.kind)
            return [connected_input(message, now, self.device)]
        if isinstance(message, m.Heartbeat):
            return []
        return [unexpected_input(message, now, self.device)]

    def start_shoe(self) -> None:
        """A new shoe (SHOE loaded): the counter restarts at 1 and no UID has been seen."""
        self._last_counter = 0
        self._seen.clear()

    def restart_counter(self) -> None:
        """The counter restarts at 1 (a shuffler-dealer after SHUFFLE_DONE,
        docs/spec-protocol.md)."""
        self._last_counter = 0

    # -- host to device ----------------------------------------------------------------

    @staticmethod
    def indicate(pattern: int, arg: int = 0) -> m.Indicate:
        """INDICATE for `link.send`; raises ValueError for a pattern or arg docs/spec-protocol.md
        lacks."""
        try:
            chosen = m.IndicatePattern(pattern)
        except ValueError:
            raise ValueError(f"INDICATE pattern {pattern!r} is not 0-7") from None
        allowed = {
            m.IndicatePattern.BURN: range(256),
            m.IndicatePattern.BETS_OPEN: range(256),  # seconds left, 0 when not known
            m.IndicatePattern.DEAL: range(1, 7),
            m.IndicatePattern.RESULT: range(1, 4),
        }.get(chosen, range(1))
        if not isinstance(arg, int) or arg not in allowed:
            raise ValueError(
                f"INDICATE {chosen.name} takes arg {allowed.start}-{allowed.stop - 1}, got {arg!r}"
            )
        return m.Indicate(chosen, arg)

    def status_request(self) -> m.StatusRequest:
        """STATUS_REQUEST for `link.send`: the shoe answers SHOE, then FAULT per active fault.

        The SHOE that answers it says "loaded" for the shoe being dealt as well: that answer
        does not start a new shoe (a reconnect mid-shoe must not look like a reload).
        """
        self._status_pending = True
        return m.StatusRequest()

    # -- state for the daemon ------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """What the translator keeps, as JSON values (store it, or rebuild it with `replay`)."""
        return {
            "version": _STATE_VERSION,
            "kind": self.kind,
            "last_counter": self._last_counter,
            "uids": sorted(self._seen),
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take up a state from `export_state`; ValueError naming the fault if it is not one."""
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise ValueError(f"not a scanner state of version {_STATE_VERSION}: {state!r}")
        kind, counter, uids = state.get("kind"), state.get("last_counter"), state.get("uids")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"scanner state kind {kind!r} is not one of {', '.join(KINDS)}")
        if counter is not None and (not isinstance(counter, int) or counter < 0):
            raise ValueError(f"scanner state last_counter {counter!r} is not a counter")
        if not isinstance(uids, list):
            raise ValueError(f"scanner state uids {uids!r} is not a list")
        seen = {normalize_uid(uid) for uid in uids}
        self.kind, self._last_counter, self._seen = kind, counter, seen

    def replay(self, inputs: Iterable[Input]) -> None:
        """Rebuild the state from stored inputs (the journal's, oldest first) of this device."""
        for item in inputs:
            if getattr(item, "device", None) != self.device:
                continue
            if isinstance(item, ShoeStateChanged) and item.state == ShoeState.LOADED:
                self.start_shoe()
            elif isinstance(item, ShoeStateChanged) and item.state == ShoeState.REMOVED:
                self._last_counter = None
            elif isinstance(item, ShuffleDone) and self.kind == "shuffler_dealer":
                self.restart_counter()
            elif isinstance(item, DeviceConnected):
                self.kind = item.kind if item.kind in KINDS else self.kind
            elif isinstance(item, CardsMissed) and item.after_counter is not None:
                self._last_counter = item.after_counter + item.count
            elif isinstance(item, CardDrawn):
                last = self._last_counter
                if item.counter is not None and (last is None or item.counter > last):
                    self._last_counter = item.counter  # as live: a lie never lowers it
                if item.uid is not None and self._tracks_duplicates:
                    self._seen.add(normalize_uid(item.uid))

    @property
    def last_counter(self) -> int | None:
        return self._last_counter

    @property
    def uids_seen(self) -> int:
        return len(self._seen)

    # -- internals ---------------------------------------------------------------------

    @property
    def _tracks_duplicates(self) -> bool:
        return self.kind != "shuffler_dealer"

    def _card_gap(self, counter: int, now: float) -> list[Input]:
        """CardsMissed for the counters skipped before this card (R10.5); the card itself is
        always delivered after.

        A counter at or below the last one (a double read, a device that lost count) is
        passed on as it came: the table checks every counter against its own count and
        decides (docs/table.md "Inputs the table checks"). The last counter never goes back
        here, so a lie is not taken for the new count.
        """
        last = self._last_counter
        if last is None:
            self._last_counter = counter
            return []  # no SHOE loaded seen and nothing restored: nothing to compare with
        if counter <= last:
            return []
        self._last_counter = counter
        if counter > last + 1:
            missed = counter - last - 1
            return [CardsMissed(at=now, device=self.device, count=missed, after_counter=last)]
        return []

    def _cut_gap(self, counter: int, now: float) -> list[Input]:
        """CUT_CARD names the last card before it: cards up to it not seen were missed."""
        last = self._last_counter
        if last is None or counter <= last:
            return []
        self._last_counter = counter
        return [CardsMissed(at=now, device=self.device, count=counter - last, after_counter=last)]

    def _card(self, message: m.Card, now: float) -> list[Input]:
        # A counter not above the last is a read the table will judge (a double read is not
        # a second copy of the tag, so it must not be flagged as one).
        repeated = self._last_counter is not None and message.counter <= self._last_counter
        out = self._card_gap(message.counter, now)
        flags = message.flags
        common: dict[str, Any] = {
            "at": now,
            "device": self.device,
            "counter": message.counter,
            "face_up": bool(flags & m.CardFlags.FACE_UP),
            "low_confidence": bool(flags & m.CardFlags.LOW_CONFIDENCE),
            "multi": bool(flags & m.CardFlags.MULTI),
        }
        if message.uid is None:
            try:
                card = from_protocol(message.rank, message.suit)  # type: ignore[arg-type]
            except CardError:
                card = None  # messages.py validates; a slip still yields an unread card
            out.append(CardDrawn(card=card, **common))
            return out
        uid = message.uid.hex().upper()
        duplicate = False
        if self._tracks_duplicates and not repeated:
            duplicate = uid in self._seen
            self._seen.add(uid)
        registered = self._registry.lookup(uid) if self._registry is not None else None
        out.append(
            CardDrawn(
                card=registered.card if registered else None,
                uid=uid,
                foreign=registered is None,
                duplicate=duplicate,
                **common,
            )
        )
        return out
