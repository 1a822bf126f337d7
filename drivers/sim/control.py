"""Control commands of a simulated device, and a client for its control socket (JSON lines).

One request per line, one reply per line. A request is an object with ``"cmd"`` and the
command's fields; the reply is ``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``.

Commands (fields in brackets are optional):
- ``status``: device status (kind, boot_id, counter, cards_left, link statistics, …).
- ``dealt``: the CARD frames of the current shoe, as ``{"counter", "flags", "rank", "suit"|"uid"}``.
- ``load`` [cards, cut_after]: load a shoe; ``cards`` is a list of ``[rank, suit]`` or
  ``{"rank", "suit", "uid" (hex), "deck", "flags" (int or names), "skip"}``.
- ``deal`` count; ``pause``; ``resume``; ``remove``; ``cover`` open (bool).
- ``flag`` flags (int or names: FACE_UP, LOW_CONFIDENCE, MULTI): on the next CARD.
- ``skip`` [count=1]: leave counter values out before the next CARD (R10.5).
- ``reread``: the last CARD again in a new frame (a double read); ``count_back`` [count=1]:
  the next CARD's counter goes back by ``count`` (a shoe that lost count).
- ``button`` button (1 REVEAL, 2 CALL_SUPERVISOR, 3 NO_MORE_BETS, or the name).
- ``fault`` code [severity=2, text]; ``clear_fault`` code.
- ``shuffle`` [decks]; ``check`` [result, missing, extra] (next SHUFFLE_DONE; cards as
  ``[rank, suit]``).
- Line faults, ``direction`` "out" (device to host, default) or "in": ``noise`` count,
  ``drop`` count | rate, ``flip`` count | rate, ``double`` count, ``silence`` seconds,
  ``clear_line``.
- ``reboot``: new boot_id and HELLO. ``unplug`` [seconds=1]: close the pty, reopen a new one
  at the same symlink path ``seconds`` later.
- ``registry`` directory: write the RFID deck registry CSVs; replies with the paths.
- ``stop``: end the simulator.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from drivers.sim.base import SimDevice
from drivers.sim.line_faults import LineFaults
from drivers.sim.shoe import ShoeSim
from drivers.sim.shufflers import ShufflerDealerSim, ShufflerSim, ShuffleUnit
from drivers.sim.uids import write_registry
from drivers.wire.messages import ButtonId, Card, CardFlags, Severity, ShuffleResult


class ControlError(ValueError):
    """A control request the simulator cannot carry out."""


class SimHost(Protocol):
    """What runs a simulated device and what the control commands act on (`pty.SimRunner`)."""

    device: SimDevice
    clock: Callable[[], float]  # the simulated device's time
    unplugs: int  # times the cable was pulled

    @property
    def path(self) -> str:
        """What the host opens (the pty's stable symlink, else its slave device)."""
        ...

    def unplug(self, seconds: float) -> None:
        """Pull the cable: the port closes and comes back `seconds` later."""
        ...

    def request_stop(self) -> None:
        """End the simulator (from its own loop thread)."""
        ...


def parse_flags(value: Any) -> CardFlags:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list | tuple):
        flags = CardFlags.NONE
        for name in value:
            flags |= CardFlags[str(name).upper()]
        return flags
    return CardFlags(int(value))


def card_to_json(card: Card) -> dict[str, Any]:
    data: dict[str, Any] = {"counter": card.counter, "flags": int(card.flags)}
    if card.uid is not None:
        data["uid"] = card.uid.hex().upper()
    else:
        data["rank"] = card.rank
        data["suit"] = card.suit
    return data


def _shoe(device: SimDevice) -> ShoeSim:
    if not isinstance(device, ShoeSim):
        raise ControlError("this device deals no cards")
    return device


def _shuffle_unit(device: SimDevice) -> ShuffleUnit:
    if not isinstance(device, ShufflerSim | ShufflerDealerSim):
        raise ControlError("this device does not shuffle")
    return device.unit


def _line(device: SimDevice, request: dict[str, Any]) -> LineFaults:
    direction = request.get("direction", "out")
    if direction not in ("out", "in"):
        raise ControlError(f"direction must be 'out' or 'in', not {direction!r}")
    return device.out_faults if direction == "out" else device.in_faults


def _button(value: Any) -> ButtonId:
    if isinstance(value, str) and not value.isdigit():
        return ButtonId[value.upper()]
    return ButtonId(int(value))


def _pairs(value: Any) -> list[tuple[int, int]]:
    return [(int(rank), int(suit)) for rank, suit in value or []]


def execute(runner: SimHost | None, request: dict[str, Any]) -> dict[str, Any]:
    """Carry out one control request on ``runner.device`` (loop thread only)."""
    if runner is None:
        raise ControlError("no runner")
    device = runner.device
    now = runner.clock()
    device.now = now
    command = request.get("cmd")
    reply: dict[str, Any] = {"ok": True}
    if command == "status":
        reply.update(device.status(), path=runner.path, unplugs=runner.unplugs)
        reply["line_out"] = asdict(device.out_faults.counters)
        reply["line_in"] = asdict(device.in_faults.counters)
    elif command == "dealt":
        reply["cards"] = [card_to_json(card) for card in _shoe(device).shoe.dealt]
    elif command == "load":
        _shoe(device).load(request.get("cards"), request.get("cut_after"))
    elif command == "deal":
        _shoe(device).deal(int(request.get("count", 1)))
    elif command == "pause":
        _shoe(device).pause()
    elif command == "resume":
        _shoe(device).resume()
    elif command == "remove":
        _shoe(device).remove()
    elif command == "cover":
        _shoe(device).cover(bool(request.get("open", True)))
    elif command == "flag":
        _shoe(device).flag_next(parse_flags(request.get("flags", 0)))
    elif command == "skip":
        _shoe(device).skip_next(int(request.get("count", 1)))
    elif command == "reread":
        try:
            _shoe(device).reread()
        except ValueError as error:
            raise ControlError(str(error)) from None
    elif command == "count_back":
        _shoe(device).count_back(int(request.get("count", 1)))
    elif command == "button":
        device.press(_button(request.get("button", 1)))
    elif command == "fault":
        device.raise_fault(
            int(request["code"]),
            Severity(int(request.get("severity", Severity.ERROR))),
            str(request.get("text", "")),
        )
    elif command == "clear_fault":
        device.clear_fault(int(request["code"]))
    elif command == "shuffle":
        _shuffle_unit(device)
        device.mechanism.shuffle(int(request.get("decks", device.config.decks)))
    elif command == "check":
        result = request.get("result")
        _shuffle_unit(device).set_next_check(
            None if result is None else ShuffleResult(int(result)),
            _pairs(request.get("missing")),
            _pairs(request.get("extra")),
        )
    elif command == "noise":
        _line(device, request).noise(int(request.get("count", 16)))
    elif command == "drop":
        line = _line(device, request)
        if "rate" in request:
            line.drop_rate = float(request["rate"])
        else:
            line.drop(int(request.get("count", 1)))
    elif command == "flip":
        line = _line(device, request)
        if "rate" in request:
            line.flip_rate = float(request["rate"])
        else:
            line.flip(int(request.get("count", 1)))
    elif command == "double":
        _line(device, request).double(int(request.get("count", 1)))
    elif command == "silence":
        _line(device, request).silence(now, float(request.get("seconds", 4.0)))
    elif command == "clear_line":
        device.out_faults.clear()
        device.in_faults.clear()
    elif command == "reboot":
        device.reboot(now)
        reply["boot_id"] = device.boot_id
    elif command == "unplug":
        runner.unplug(float(request.get("seconds", 1.0)))
    elif command == "registry":
        paths = write_registry(request["directory"], device.config.deck_serials)
        reply["paths"] = [str(path) for path in paths]
    elif command == "stop":
        runner.request_stop()
    else:
        raise ControlError(f"unknown command {command!r}")
    return reply


class SimControlClient:
    """Talks to a simulator's control socket (``--control PATH``)."""

    def __init__(self, path: str | Path, timeout: float = 10.0) -> None:
        self.path = str(path)
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buffer = bytearray()

    def request(self, cmd: str, **fields: Any) -> dict[str, Any]:
        """Send one command; returns the reply or raises ``ControlError`` if it failed."""
        sock = self._connect()
        sock.sendall(json.dumps({"cmd": cmd, **fields}).encode() + b"\n")
        while b"\n" not in self._buffer:
            chunk = sock.recv(65536)
            if not chunk:
                self.close()
                raise ConnectionError("simulator closed the control socket")
            self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer[:] = rest
        reply = json.loads(line)
        if not reply.get("ok"):
            raise ControlError(reply.get("error", "failed"))
        return reply

    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            sock.connect(self.path)
            self._sock = sock
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer.clear()

    def __enter__(self) -> SimControlClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
