"""The daemon side of the control socket: shoectl's questions answered, supervisor actions
authorized on the peer's credentials and submitted to the table.

Protocol (docs/control.md): a Unix stream socket carrying JSON lines, one request object per
line, one answer object per line; `events` with `follow` streams event lines until the client
closes. `ControlService` is the backend (no sockets: it reads the table, the journal, the
publisher and the devices, and submits `SupervisorCommand`s); `ControlServer` is the asyncio
socket around it and does the authorization: SO_PEERCRED and SO_PEERGROUPS from the kernel,
never anything the client says.

Everything runs on the daemon's one asyncio loop, so the service calls `controller.submit`
directly: a supervisor's command is applied and journaled in the same step as any card.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import grp
import json
import os
import pwd
import socket
import stat
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from shoe_controller import __version__
from shoe_controller.game.roads import RoadError, results_from, roads_json
from shoe_controller.service.config import Config
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import JournalError, RecordInvalid, StoredEvent
from shoe_controller.table.actions import ACTIONS
from shoe_controller.vocab.events import EventType, iso_time
from shoe_controller.vocab.inputs import SupervisorCommand

log = structlog.get_logger("control")

PROTOCOL_VERSION = 1
# Anyone on the table PC may look (the answers are squeeze-safe, R15); acting is checked on
# the peer's credentials per request. The directory (/run/shoe-controller, 0755) must let
# them reach it.
SOCKET_MODE = 0o666
MAX_REQUEST_BYTES = 64 * 1024
EVENTS_LIMIT_MAX = 1000
READ_CHUNK = 500
# Events one request may read: the socket shares the daemon's loop with the devices, so no
# request may hold it long (reading 5000 events took about 70 ms on the development PC).
MAX_SCAN = 5000
ALERT_SCAN = 2000

# Health levels, Nagios's numbers (`shoectl check` exits with them).
OK, WARNING, CRITICAL = 0, 1, 2
LEVEL_NAMES = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL", 3: "UNKNOWN"}
# Delivery: waiting this long for the table server is worth a look, then worth a run.
BACKLOG_WARN_S = 60.0
BACKLOG_CRIT_S = 300.0
RECENT_ALERTS = 10

ALERT_TYPES = (str(EventType.PROCEDURE_ALERT), str(EventType.SECURITY_ALERT))

_SO_PEERGROUPS = getattr(socket, "SO_PEERGROUPS", 59)  # Linux 4.13+; Python lacks the name


class ControlError(Exception):
    """A request that gets an error answer: `code` for programs, `text` for people."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


# ---------------------------------------------------------------------- who is asking


@dataclass(frozen=True, slots=True)
class Peer:
    """The process at the other end of a connection, as the kernel reports it."""

    pid: int
    uid: int
    gid: int
    groups: tuple[int, ...]  # supplementary groups (SO_PEERGROUPS, else /proc/<pid>/status)
    user: str  # the uid's name, or "uid N" when it has none

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "uid": self.uid,
            "gid": self.gid,
            "groups": list(self.groups),
            "user": self.user,
        }


def peer_of(sock: socket.socket) -> Peer:
    """The peer's credentials from the kernel (SO_PEERCRED, SO_PEERGROUPS)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return Peer(pid, uid, gid, _peer_groups(sock, pid), _user_name(uid))


def _peer_groups(sock: socket.socket, pid: int) -> tuple[int, ...]:
    size = 64 * 4
    while size <= 65536 * 4:  # NGROUPS_MAX
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, _SO_PEERGROUPS, size)
        except OSError as error:
            if error.errno == errno.ERANGE:
                size *= 4
                continue
            break  # an older kernel: ask /proc
        return struct.unpack(f"{len(raw) // 4}I", raw)
    return _proc_groups(pid)


def _proc_groups(pid: int) -> tuple[int, ...]:
    """Supplementary groups from /proc (invisible under ProtectProc=invisible: then none)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Groups:"):
                    return tuple(int(value) for value in line.split()[1:])
    except (OSError, ValueError):
        pass
    return ()


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def authorize(
    peer: Peer,
    group_name: str,
    lookup: Callable[[str], Any] = grp.getgrnam,
) -> str | None:
    """None when `peer` may act as supervisor, else why not (R10: actions need authority).

    Root may; otherwise the peer's primary or supplementary group must be the supervisor
    group, as the kernel reported them at connect time (like a file permission check: a user
    added to the group acts once logged in again).
    """
    if peer.uid == 0:
        return None
    try:
        group = lookup(group_name)
    except KeyError:
        return (
            f"the supervisor group {group_name!r} does not exist on this machine;"
            " only root may act until it is created"
        )
    if peer.gid == group.gr_gid or group.gr_gid in peer.groups:
        return None
    return (
        f"user {peer.user} (uid {peer.uid}) is not in the supervisor group {group_name!r};"
        f" an administrator can add it (usermod -aG {group_name} {peer.user}), then log in again"
    )


# ---------------------------------------------------------------------- the backend


@dataclass(eq=False, slots=True)
class Subscription:
    """A follower of the event stream; `wake` is set when new events were stored."""

    wake: asyncio.Event = field(default_factory=asyncio.Event)


class ControlService:
    """Answers the control socket's requests from the daemon's live objects."""

    def __init__(
        self,
        controller: Controller,
        publisher_status: Callable[[], Any],
        device_stats: Callable[[], Iterable[Mapping[str, Any]]],
        config: Config,
        clock: Callable[[], float] = time.time,
        *,
        journal_fault: Callable[[], str | None] | None = None,
        submit: Callable[[SupervisorCommand], list[StoredEvent]] | None = None,
        loop_stats: Callable[[], Mapping[str, Any]] | None = None,
        version: str = __version__,
    ) -> None:
        """`publisher_status()` gives a PublisherStatus (or its JSON, or None without a
        publisher); `device_stats()` one `DeviceRunner.stats()` dict per configured device;
        `journal_fault()`, if given, the daemon's current journal fault text or None;
        `loop_stats()` the event loop's lag (LoopLag.to_json);
        `submit(command)` stores a supervisor command (default: the controller's own, the
        daemon passes its submit so that a journal fault shows in its status too)."""
        self._controller = controller
        self._submit = submit or controller.submit
        self._loop_stats = loop_stats or dict
        self._publisher_status = publisher_status
        self._device_stats = device_stats
        self._config = config
        self._clock = clock
        self._journal_fault = journal_fault or (lambda: None)
        self._version = version
        self._subscriptions: set[Subscription] = set()
        self._handlers: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "hello": self._hello,
            "status": self._status,
            "check": self._check,
            "devices": self._devices,
            "rounds": self._rounds,
            "round": self._round,
            "road": self._road,
            "events": self._events,
            "outbox": self._outbox,
        }

    @property
    def journal(self) -> Any:
        return self._controller.journal

    # ------------------------------------------------------------------ live events

    def publish(self, stored: Sequence[StoredEvent]) -> None:
        """New events are in the journal (the daemon calls this after every commit)."""
        if stored:
            for subscription in self._subscriptions:
                subscription.wake.set()

    def subscribe(self) -> Subscription:
        subscription = Subscription()
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    @property
    def followers(self) -> int:
        return len(self._subscriptions)

    # ------------------------------------------------------------------ requests

    def answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The result of a seeing command; ControlError for a bad request."""
        command = request.get("cmd")
        handler = self._handlers.get(command) if isinstance(command, str) else None
        if handler is None:
            raise ControlError(
                "unknown_command",
                f"unknown command {command!r}; commands: {', '.join([*self._handlers, 'act'])}",
            )
        try:
            return handler(request)
        except JournalError as error:
            raise ControlError("journal", f"the journal cannot be read: {error}") from None

    def act(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        """Submit a supervisor action for an authorized `peer` (the server checked it).

        Returns {"accepted": bool, "text": ..., "events": [...]}: a refusal by the table
        (wrong state) is journaled as its `procedure.alert` and returned with accepted false.
        """
        action = request.get("action")
        if not isinstance(action, str) or action not in ACTIONS:
            raise ControlError(
                "bad_request", f"unknown action {action!r}; actions: {', '.join(ACTIONS)}"
            )
        by = _text_field(request, "by", "the supervisor's id (--by)")
        reason = _text_field(request, "reason", "why (--reason)")
        args = request.get("args", {})
        if not isinstance(args, Mapping):
            raise ControlError("bad_request", "args must be an object")
        command = SupervisorCommand(
            at=self._clock(),
            action=action,
            by=by,
            reason=reason,
            args=dict(args),
            os_user=os_user_note(peer),
        )
        try:
            stored = self._submit(command)
        except JournalError as error:
            raise ControlError(
                "not_stored", f"{action} was not stored, nothing changed: {error}"
            ) from None
        except RecordInvalid as error:
            raise ControlError(
                "bad_request", f"{action} was not stored, nothing changed: {error}"
            ) from None
        accepted = any(event.type == EventType.SUPERVISOR_ACTION for event in stored)
        refusal = next(
            (
                event.data.get("text", "")
                for event in stored
                if event.type == EventType.PROCEDURE_ALERT
                and event.data.get("code") == "command_refused"
            ),
            None,
        )
        log.info(
            "supervisor command",
            action=action,
            by=by,
            os_user=peer.user,
            uid=peer.uid,
            accepted=accepted,
        )
        return {
            "accepted": accepted,
            "action": action,
            "by": by,
            "os_user": peer.user,
            "uid": peer.uid,
            "text": "accepted" if accepted else (refusal or "refused"),
            "events": [event.to_wire() for event in stored],
        }

    # ------------------------------------------------------------------ seeing

    def _hello(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "version": self._version,
            "controller_id": self._config.controller_id,
            "table_id": self._config.table.id,
            "commands": [*self._handlers, "act"],
            "actions": {
                action.name: {
                    "summary": action.summary,
                    "rules": action.rules,
                    "args": [
                        {"name": arg.name, "kind": arg.kind, "help": arg.help}
                        | {"required": arg.required, "default": arg.default}
                        for arg in action.args
                    ],
                }
                for action in ACTIONS.values()
            },
        }

    def _status(self, request: Mapping[str, Any]) -> dict[str, Any]:
        view = self._controller.table.view()
        devices = self._merged_devices(view)
        outbox = self._outbox_summary()
        recovery = self._controller.recovery
        status = {
            "controller": {
                "controller_id": self._config.controller_id,
                "table_id": self._config.table.id,
                "version": self._version,
                "now": iso_time(self._clock()),
                "replayed_inputs": len(recovery.inputs),
                "replay_mismatch": recovery.mismatch,
                "journal_fault": self._journal_fault(),
                "loop_lag": dict(self._loop_stats()),  # the worst event-loop stalls
            },
            "table": view,
            "devices": devices,
            "outbox": outbox,
            "alerts": self._recent_alerts(RECENT_ALERTS),
        }
        status["health"] = assess(status)
        return status

    def _check(self, request: Mapping[str, Any]) -> dict[str, Any]:
        status = self._status(request)
        return {"line": check_line(status), **status["health"]}

    def _devices(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return {"devices": self._merged_devices(self._controller.table.view())}

    def _rounds(self, request: Mapping[str, Any]) -> dict[str, Any]:
        shoe = self._shoe_of(request)
        last = _optional_int(request, "last", low=1)
        infos = self.journal.rounds(shoe)
        total = len(infos)
        if last is not None:
            infos = infos[-last:]
        view = self._controller.table.view()
        rounds = [
            summarize_round(self.journal.round_events(shoe, info.round), self._live(view, shoe))
            for info in infos
        ]
        return {"shoe": shoe, "total": total, "rounds": rounds}

    def _round(self, request: Mapping[str, Any]) -> dict[str, Any]:
        shoe = self._shoe_of(request)
        number = _optional_int(request, "round", low=0)
        if number is None:
            raise ControlError("bad_request", "round needs its number: {'round': N}")
        events = self.journal.round_events(shoe, number)
        if not events:
            raise ControlError("not_found", f"shoe {shoe} has no round {number} in the journal")
        view = self._controller.table.view()
        return {
            "shoe": shoe,
            "round": number,
            "summary": summarize_round(events, self._live(view, shoe)),
            "events": [event.to_wire() for event in events],
        }

    def _road(self, request: Mapping[str, Any]) -> dict[str, Any]:
        shoe = self._shoe_of(request)
        entries = []
        for info in self.journal.rounds(shoe):
            summary = summarize_round(self.journal.round_events(shoe, info.round), None)
            if summary["status"] == "result" and not summary["trial"]:
                entries.append({key: summary[key] for key in _ROAD_KEYS})
        try:
            roads = roads_json(results_from(entries))
        except RoadError as error:
            raise ControlError(
                "journal", f"a round result cannot go on the road: {error}"
            ) from None
        return {"shoe": shoe, "results": entries, **roads}

    def _events(self, request: Mapping[str, Any]) -> dict[str, Any]:
        types = event_types(request)
        limit = _optional_int(request, "limit", low=1, high=EVENTS_LIMIT_MAX) or 20
        after = _optional_int(request, "after", low=0)
        if after is not None:
            events = self.matching_after(after, types, limit)
        else:
            events = self.last_matching(limit, types)
        return {"events": [event.to_wire() for event in events]}

    def _outbox(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return self._outbox_summary(waiting=20)

    # ------------------------------------------------------------------ helpers

    def matching_after(
        self, seq: int, types: tuple[str, ...], limit: int, scan: int = MAX_SCAN
    ) -> list[StoredEvent]:
        """Up to `limit` events after `seq` whose type matches `types` (all when empty),
        looking at no more than `scan` events: the loop is the daemon's, cards wait."""
        found: list[StoredEvent] = []
        scanned = 0
        while len(found) < limit and scanned < scan:
            batch = self.journal.events_after(seq, min(READ_CHUNK, scan - scanned))
            if not batch:
                break
            scanned += len(batch)
            found += [event for event in batch if type_matches(event.type, types)]
            seq = batch[-1].seq
        return found[:limit]

    def last_matching(
        self, count: int, types: tuple[str, ...], scan: int = MAX_SCAN
    ) -> list[StoredEvent]:
        """The last `count` matching events among the last `scan` stored, oldest first."""
        first = self.journal.first_seq()
        if first is None or count <= 0:
            return []
        found: list[StoredEvent] = []
        end = self.journal.last_seq()
        floor = max(first - 1, end - scan)
        while len(found) < count and end > floor:
            start = max(floor, end - READ_CHUNK)
            batch = self.journal.events_after(start, end - start)
            found = [event for event in batch if type_matches(event.type, types)] + found
            end = start
        return found[-count:]

    def _shoe_of(self, request: Mapping[str, Any]) -> int:
        shoe = _optional_int(request, "shoe", low=0)
        if shoe is not None:
            return shoe
        table = self._controller.table
        if table.view()["shoe_open"]:
            return table.shoe
        # No shoe open: the latest shoe that dealt rounds (a shuffle for the next shoe may
        # already be journaled under the next number).
        for info in reversed(self.journal.shoes()):
            if self.journal.rounds(info.shoe):
                return int(info.shoe)
        return table.shoe

    def _live(self, view: Mapping[str, Any], shoe: int) -> Mapping[str, Any] | None:
        """The table's view of its round in progress, when it belongs to `shoe`."""
        if view.get("shoe") == shoe and view.get("shoe_open"):
            return view.get("round")
        return None

    def _merged_devices(self, view: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Each device's link statistics (DeviceRunner.stats) and identity (from HELLO)."""
        stats = {str(entry.get("device")): dict(entry) for entry in self._device_stats()}
        identities = view.get("devices", {})
        merged = []
        for name in sorted(set(stats) | set(identities)):
            entry = stats.get(name, {"device": name})
            identity = dict(identities.get(name, {}))
            connected = identity.pop("connected", None)
            entry["identity"] = identity or None
            if "status" not in entry:
                entry["status"] = (
                    "connected" if connected else "disconnected" if connected is False else None
                )
            entry["configured"] = name in stats
            entry["faults"] = [
                fault for fault in view.get("faults", []) if fault.get("device") == name
            ]
            merged.append(entry)
        return merged

    def _publisher(self) -> dict[str, Any] | None:
        status = self._publisher_status()
        if status is None:
            return None
        if hasattr(status, "to_json"):
            status = status.to_json()
        return dict(status)

    def _outbox_summary(self, waiting: int = 1) -> dict[str, Any]:
        journal = self.journal
        last_seq, acked = journal.last_seq(), journal.acked_through()
        pending = journal.events_after(acked, waiting) if last_seq > acked else []
        publisher = self._publisher()
        oldest = pending[0].at if pending else None
        age = _age(oldest, self._clock())
        out: dict[str, Any] = {
            "last_seq": last_seq,
            "acked_through": acked,
            "backlog": max(0, last_seq - acked),
            "oldest_waiting_at": oldest,
            "oldest_waiting_age_s": age,
            "publisher": publisher,
            "why": _why_waiting(last_seq - acked, publisher),
        }
        if waiting > 1:
            out["waiting"] = [
                {"seq": e.seq, "type": e.type, "at": e.at, "shoe": e.shoe, "round": e.round}
                for e in pending
            ]
            out["first_seq_held"] = journal.first_seq()
        return out

    def _recent_alerts(self, count: int) -> list[dict[str, Any]]:
        alerts = self.last_matching(count, ALERT_TYPES, scan=ALERT_SCAN)
        return [
            {
                "seq": event.seq,
                "at": event.at,
                "type": event.type,
                "shoe": event.shoe,
                "round": event.round,
                "code": event.data.get("code"),
                "text": event.data.get("text") or _details_text(event.data.get("details")),
                "needs_supervisor": bool(
                    event.data.get("needs_supervisor", event.type == ALERT_TYPES[1])
                ),
            }
            for event in alerts
        ]


_ROAD_KEYS = ("round", "winner", "player_pair", "banker_pair", "natural")


def os_user_note(peer: Peer) -> str:
    """What the journal keeps of the OS user behind a supervisor action (docs/control.md)."""
    return f"{peer.user} (uid {peer.uid})"


def _details_text(details: Any) -> str:
    if isinstance(details, Mapping):
        return ", ".join(f"{key}={value}" for key, value in details.items())
    return "" if details is None else str(details)


def _text_field(request: Mapping[str, Any], name: str, meaning: str) -> str:
    value = request.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ControlError("bad_request", f"{name} is required: {meaning}")
    return value.strip()


def _optional_int(
    request: Mapping[str, Any], name: str, *, low: int = 0, high: int | None = None
) -> int | None:
    value = request.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ControlError("bad_request", f"{name} must be a whole number >= {low}, got {value!r}")
    if high is not None and value > high:
        raise ControlError("bad_request", f"{name} must be at most {high}, got {value}")
    return value


def event_types(request: Mapping[str, Any]) -> tuple[str, ...]:
    """The `types` filter of an events request: full names or families (`round`)."""
    types = request.get("types") or []
    if isinstance(types, str):
        types = [types]
    if not isinstance(types, list) or not all(isinstance(t, str) and t for t in types):
        raise ControlError("bad_request", "types must be a list of event types")
    known = {str(kind) for kind in EventType}
    families = {name.split(".")[0] for name in known}
    unknown = [t for t in types if t not in known and t not in families]
    if unknown:
        raise ControlError(
            "bad_request",
            f"unknown event type(s) {unknown}; types are {', '.join(sorted(known))}"
            f" or a family: {', '.join(sorted(families))}",
        )
    return tuple(types)


def type_matches(event_type: str, types: tuple[str, ...]) -> bool:
    if not types:
        return True
    family = event_type.split(".", maxsplit=1)[0]
    return event_type in types or family in types


def _age(at: str | None, now: float) -> float | None:
    """Seconds since an event's `at` (PUSH_API.md time form)."""
    if at is None:
        return None
    try:
        then = datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return round(max(0.0, now - then.timestamp()), 3)


def _why_waiting(backlog: int, publisher: Mapping[str, Any] | None) -> str:
    if backlog <= 0:
        return "nothing waiting: the table server has every event"
    if publisher is None:
        return f"{backlog} event(s) waiting; the publisher is not running"
    fault = publisher.get("fault")
    if fault:
        return f"the table server refuses the events: {fault.get('text') or fault.get('code')}"
    failures = publisher.get("consecutive_failures")
    if failures:
        return f"delivery failing ({failures} attempt(s)): {publisher.get('last_error')}; retrying"
    state = publisher.get("state")
    if state == "sending":
        return f"{backlog} event(s) being sent"
    if state == "stopped":
        return f"{backlog} event(s) waiting; the publisher is stopped"
    return f"{backlog} event(s) about to be sent"


# ---------------------------------------------------------------------- rounds


def summarize_round(
    events: Sequence[StoredEvent], live: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One round in a line's worth of data, from its journaled events (already squeeze-safe).

    `live` is the table's view of its round in progress (used when this is that round)."""
    first = events[0] if events else None
    summary: dict[str, Any] = {
        "shoe": first.shoe if first else None,
        "round": first.round if first else None,
        "trial": False,
        "status": "in_progress",
        "started_at": first.at if first else None,
        "ended_at": None,
        "cards": {},
        "winner": None,
        "player": None,
        "banker": None,
        "player_total": None,
        "banker_total": None,
        "natural": None,
        "player_pair": False,
        "banker_pair": False,
        "perfect_pair": False,
        "lucky6": None,
        "voided_reason": None,
        "insurance_offers": 0,
        "alerts": 0,
        "supervisor_actions": [],
    }
    cards: dict[str, str | None] = summary["cards"]
    for event in events:
        data = event.data
        if event.type == EventType.ROUND_STARTED:
            summary["trial"] = bool(data.get("trial"))
        elif event.type in (EventType.CARD_DEALT, EventType.CARD_REVEALED):
            cards[data["position"]] = data.get("card")
        elif event.type == EventType.ROUND_RESULT:
            summary["status"] = "result"
            summary["ended_at"] = event.at
            for key in ("winner", "player", "banker", "player_total", "banker_total"):
                summary[key] = data.get(key)
            for key in ("natural", "player_pair", "banker_pair", "perfect_pair", "lucky6"):
                summary[key] = data.get(key, summary[key])
        elif event.type == EventType.ROUND_VOIDED:
            summary["status"] = "voided"
            summary["ended_at"] = event.at
            summary["voided_reason"] = data.get("reason")
        elif event.type == EventType.INSURANCE_OFFERED:
            summary["insurance_offers"] += 1
        elif event.type in ALERT_TYPES:
            summary["alerts"] += 1
        elif event.type == EventType.SUPERVISOR_ACTION:
            summary["supervisor_actions"].append(data.get("action"))
    if summary["status"] == "result":
        # The result's hands are final (after corrections or re-arrangement).
        summary["cards"] = _cards_from_hands(summary["player"], summary["banker"])
    elif (
        summary["status"] == "in_progress"
        and live is not None
        and live.get("number") == summary["round"]
    ):
        summary["cards"] = {
            position: (None if card == "hidden" else card)
            for position, card in (live.get("cards") or {}).items()
        }
    return summary


def _cards_from_hands(player: Any, banker: Any) -> dict[str, str | None]:
    cards: dict[str, str | None] = {}
    for prefix, hand in (("P", player), ("B", banker)):
        for index, card in enumerate(hand or [], start=1):
            cards[f"{prefix}{index}"] = card
    order = ["P1", "B1", "P2", "B2", "P3", "B3"]
    return {position: cards[position] for position in order if position in cards}


# ---------------------------------------------------------------------- health


def assess(status: Mapping[str, Any]) -> dict[str, Any]:
    """What needs a person, from a status answer: level (Nagios numbers) and problems."""
    problems: list[dict[str, Any]] = []

    def problem(level: int, text: str) -> None:
        problems.append({"level": level, "status": LEVEL_NAMES[level], "text": text})

    controller = status["controller"]
    if controller.get("journal_fault"):
        problem(CRITICAL, f"journal fault: {controller['journal_fault']}")
    if controller.get("replay_mismatch"):
        problem(WARNING, f"replay differs from the journal: {controller['replay_mismatch']}")
    table = status["table"]
    for hold in table.get("holds", []):
        problem(CRITICAL, f"table held ({hold.get('code')}): {hold.get('text')}")
    for fault in table.get("faults", []):
        level = CRITICAL if (fault.get("severity") or 0) >= 2 else WARNING
        code = fault.get("code")
        code_text = f"{code:#06x}" if isinstance(code, int) else str(code)
        problem(level, f"{fault.get('device')} fault {code_text}: {fault.get('text')}")
    for device in status["devices"]:
        state = device.get("status")
        if device.get("configured") and state not in ("connected", None):
            level = WARNING if state == "starting" else CRITICAL
            problem(level, f"{device['device']} is {state}")
        elif not device.get("configured") and state == "disconnected":
            problem(WARNING, f"{device['device']} is disconnected")
    outbox = status["outbox"]
    publisher = outbox.get("publisher") or {}
    if publisher.get("fault"):
        fault = publisher["fault"]
        problem(
            CRITICAL, f"table server refuses our events ({fault.get('code')}): {fault.get('text')}"
        )
    age = outbox.get("oldest_waiting_age_s")
    if outbox.get("backlog") and age is not None:
        if age >= BACKLOG_CRIT_S:
            problem(CRITICAL, f"{outbox['backlog']} event(s) undelivered for {age:.0f} s")
        elif age >= BACKLOG_WARN_S:
            problem(WARNING, f"{outbox['backlog']} event(s) undelivered for {age:.0f} s")
    if publisher.get("consecutive_failures") and not publisher.get("fault"):
        problem(WARNING, f"delivery to the table server failing: {publisher.get('last_error')}")
    level = max((p["level"] for p in problems), default=OK)
    return {"level": level, "status": LEVEL_NAMES[level], "problems": problems}


def check_line(status: Mapping[str, Any]) -> str:
    """One Nagios-style line: `SHOE OK - ... | perfdata`."""
    health = status["health"]
    table = status["table"]
    outbox = status["outbox"]
    round_info = table.get("round") or {}
    parts = [f"shoe {table.get('shoe')} {table.get('state')}"]
    if round_info.get("number") is not None:
        parts.append(f"round {round_info['number']}")
    parts.append(f"backlog {outbox.get('backlog')}")
    text = ", ".join(parts)
    if health["problems"]:
        worst = sorted(health["problems"], key=lambda p: -p["level"])
        more = f" (+{len(worst) - 1} more)" if len(worst) > 1 else ""
        text = f"{worst[0]['text']}{more}; {text}"
    perf = [
        f"backlog={outbox.get('backlog') or 0}",
        f"rounds={table.get('real_rounds') or 0}",
        f"cards_dealt={table.get('cards_dealt') or 0}",
    ]
    if table.get("cards_left") is not None:
        perf.append(f"cards_left={table['cards_left']}")
    return f"SHOE {health['status']} - {text} | {' '.join(perf)}"


# ---------------------------------------------------------------------- the socket


class ControlServer:
    """The asyncio Unix-socket server around a ControlService (docs/control.md)."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        service: ControlService,
        supervisor_group: str,
    ) -> None:
        self.socket_path = Path(socket_path)
        self.service = service
        self.supervisor_group = supervisor_group
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen; a dead daemon's socket file is replaced. ControlError when another process
        listens on the path or the path is something else than a socket (left alone)."""
        _clear_stale_socket(self.socket_path)
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.socket_path), limit=MAX_REQUEST_BYTES
        )
        os.chmod(self.socket_path, SOCKET_MODE)
        log.info("control socket listening", path=str(self.socket_path))

    async def close(self) -> None:
        """Stop listening, end every connection (followers too), remove the socket file."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if server is None:
            return  # never listened: the file (if any) is another process's socket
        await server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    async def __aenter__(self) -> ControlServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            sock = writer.get_extra_info("socket")
            peer = peer_of(sock)
            await self._conversation(reader, writer, peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except asyncio.CancelledError:
            pass  # the daemon is stopping
        except Exception:  # one bad connection must not stop the daemon
            log.exception("control connection failed")
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _conversation(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer
    ) -> None:
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # longer than the limit: the stream cannot be resynchronised
                await _send(writer, _error("bad_request", "request longer than 64 KiB"))
                return
            if not line:
                return
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                await _send(writer, _error("bad_request", f"not a JSON line: {error}"))
                continue
            if not isinstance(request, dict):
                await _send(writer, _error("bad_request", "a request is a JSON object"))
                continue
            if request.get("cmd") == "events" and request.get("follow"):
                await self._follow(request, reader, writer)
                return
            await _send(writer, self._answer(request, peer))

    def _answer(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        command = request.get("cmd")
        try:
            if command == "act":
                refusal = authorize(peer, self.supervisor_group)
                if refusal is not None:
                    log.warning(
                        "supervisor command not authorized",
                        action=request.get("action"),
                        uid=peer.uid,
                        user=peer.user,
                    )
                    return _error("not_authorized", refusal, command)
                result = self.service.act(request, peer)
                if not result["accepted"]:
                    return {
                        "ok": False,
                        "cmd": command,
                        "error": {"code": "refused", "text": result["text"]},
                        "result": result,
                    }
                return {"ok": True, "cmd": command, "result": result}
            return {"ok": True, "cmd": command, "result": self.service.answer(request)}
        except ControlError as error:
            return _error(error.code, error.text, command)
        except Exception as error:  # answer, log, keep serving
            log.exception("control request failed", cmd=command)
            return _error("internal", f"the controller failed on this request: {error!r}", command)

    async def _follow(
        self,
        request: Mapping[str, Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Stream matching events until the client closes: first the last `limit` (or those
        after `after`), then each as it is stored. Reads the journal, so nothing is lost or
        repeated however slow the client."""
        service = self.service
        try:
            types = event_types(request)
            limit = _optional_int(request, "limit", low=0, high=EVENTS_LIMIT_MAX)
            after = _optional_int(request, "after", low=0)
            subscription = service.subscribe()
        except ControlError as error:
            await _send(writer, _error(error.code, error.text, "events"))
            return
        closed = asyncio.ensure_future(_until_eof(reader))
        try:
            last = service.journal.last_seq()
            backlog = []
            if after is not None:
                last = after
            elif limit:
                backlog = service.last_matching(limit, types)
            await _send(
                writer,
                {"ok": True, "cmd": "events", "result": {"following": True, "from_seq": last}},
            )
            for event in backlog:
                await _send(writer, {"event": event.to_wire()})
            while not closed.done():
                subscription.wake.clear()
                batch = service.journal.events_after(last, READ_CHUNK)
                if batch:
                    last = batch[-1].seq
                    for event in batch:
                        if type_matches(event.type, types):
                            await _send(writer, {"event": event.to_wire()})
                    await asyncio.sleep(0)  # a long catch-up must not keep the devices waiting
                    continue
                woken = asyncio.ensure_future(subscription.wake.wait())
                await asyncio.wait({woken, closed}, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
        finally:
            service.unsubscribe(subscription)
            closed.cancel()


async def _until_eof(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError, ValueError):
        while await reader.read(4096):
            pass  # a follower has nothing more to say; anything it sends is ignored


async def _send(writer: asyncio.StreamWriter, answer: Mapping[str, Any]) -> None:
    writer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
    await writer.drain()


def _error(code: str, text: str, command: Any = None) -> dict[str, Any]:
    return {"ok": False, "cmd": command, "error": {"code": code, "text": text}}


def _clear_stale_socket(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ControlError("socket_path", f"{path} exists and is not a socket; not replacing it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink()  # nobody listens: a dead daemon's socket
        return
    finally:
        probe.close()
    raise ControlError("socket_path", f"another process already listens on {path}")
