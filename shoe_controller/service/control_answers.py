"""The answers to shoectl's questions and its supervisor actions, from the daemon's live
objects: the table, the journal, the sinks and the devices (docs/control.md).

`ControlService` has no socket (control.ControlServer is the one around it, and authorizes
the peer first). Everything runs on the daemon's one asyncio loop, so the service calls
`controller.submit` directly: a supervisor's command is applied and journaled in the same step
as any card.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from shoe_controller import __version__
from shoe_controller.game.board import Board
from shoe_controller.game.roads import RoadError
from shoe_controller.service.config import Config
from shoe_controller.service.control_requests import (
    EVENTS_LIMIT_MAX,
    PROTOCOL_VERSION,
    ControlError,
    event_types,
    optional_int,
    text_field,
    type_matches,
)
from shoe_controller.service.health import assess, check_line
from shoe_controller.service.peers import Peer, os_user_note
from shoe_controller.service.round_summary import ALERT_TYPES, summarize_round
from shoe_controller.service.scoreboard.history import shoe_events
from shoe_controller.service.surveillance_answers import SurveillanceDesk
from shoe_controller.store.controller import Controller
from shoe_controller.store.errors import JournalOutcomeUnknown
from shoe_controller.store.export import Selection, export_records
from shoe_controller.store.journal import JournalError, RecordInvalid, StoredEvent
from shoe_controller.table.actions import ACTIONS
from shoe_controller.table.config import SHUFFLER_DEALER
from shoe_controller.vocab.events import EventType, iso_time
from shoe_controller.vocab.inputs import SupervisorCommand

log = structlog.get_logger("control")

READ_CHUNK = 500
# Events one request may read: the socket shares the daemon's loop with the devices, so no
# request may hold it long (reading 5000 events took about 70 ms on the development PC).
MAX_SCAN = 5000
ALERT_SCAN = 2000
RECENT_ALERTS = 10


FOLLOWER_QUEUE_MAX = 1000  # events a follower may fall behind before it reads the journal
STATUS_FRESH_S = 0.25  # a status answer is reused this long unless new events were stored


@dataclass(eq=False, slots=True)
class Subscription:
    """A follower of the event stream: the events stored since it last wrote, handed over
    by `publish` (one journal read for all followers: none), and a wake-up when there are
    some. `behind` is the seq it must catch up from in the journal when it fell too far
    behind."""

    types: tuple[str, ...] = ()
    pending: deque[StoredEvent] = field(default_factory=deque)
    behind: int | None = None
    hide_surveillance: bool = False  # a follower outside the surveillance group (issue 15)
    _waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        """Resume the follower if it waits (new events, or its client left)."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait(self) -> None:
        """Until the next wake(): a future of its own, not a task, as a follower waits
        after every commit (issue 13: this work follows each card's ACK)."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None


class ControlService:
    """Answers the control socket's requests from the daemon's live objects."""

    def __init__(
        self,
        controller: Controller,
        sink_statuses: Callable[[], Iterable[Any]],
        device_stats: Callable[[], Iterable[Mapping[str, Any]]],
        config: Config,
        clock: Callable[[], float] = time.time,
        *,
        journal_fault: Callable[[], str | None] | None = None,
        submit: Callable[[SupervisorCommand], list[StoredEvent]] | None = None,
        loop_stats: Callable[[], Mapping[str, Any]] | None = None,
        version: str = __version__,
    ) -> None:
        """`sink_statuses()` gives each delivery sink's SinkStatus (or its JSON), in the
        configuration's order; `device_stats()` one `DeviceRunner.stats()` dict per
        configured device;
        `journal_fault()`, if given, the daemon's current journal fault text or None;
        `loop_stats()` the event loop's lag (LoopLag.to_json);
        `submit(command)` stores a supervisor command (default: the controller's own, the
        daemon passes its submit so that a journal fault shows in its status too)."""
        self._controller = controller
        self._submit = submit or controller.submit
        self._loop_stats = loop_stats or dict
        self._sink_statuses = sink_statuses
        self._device_stats = device_stats
        self._config = config
        self._clock = clock
        self._journal_fault = journal_fault or (lambda: None)
        self._version = version
        self._subscriptions: set[Subscription] = set()
        self._alerts: deque[StoredEvent] | None = None  # the last alerts, once read
        self._status_cache: tuple[float, dict[str, Any]] | None = None
        # `report` and `edge`, and who sees the surveillance events (issue 15)
        self.surveillance = SurveillanceDesk(controller, config, clock, self._submit)
        self._handlers: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "hello": self._hello,
            "status": self._status,
            "check": self._check,
            "devices": self._devices,
            "rounds": self._rounds,
            "round": self._round,
            "export": self._export,  # shoectl round N --export (issue 18)
            "road": self._road,
            "events": self._events,
            "outbox": self._outbox,
        }

    @property
    def journal(self) -> Any:
        return self._controller.journal

    # ------------------------------------------------------------------ live events

    def publish(self, stored: Sequence[StoredEvent]) -> None:
        """New events are in the journal (the daemon calls this after every commit): each
        follower gets them without reading the journal, the recent alerts and the status
        answer follow them."""
        if not stored:
            return
        self._status_cache = None
        if self._alerts is not None:
            self._alerts.extend(e for e in stored if type_matches(e.type, ALERT_TYPES))
        for subscription in self._subscriptions:
            if subscription.behind is None:
                subscription.pending.extend(
                    e for e in stored if type_matches(e.type, subscription.types)
                )
                if len(subscription.pending) > FOLLOWER_QUEUE_MAX:  # a slow reader
                    subscription.behind = subscription.pending[0].seq - 1
                    subscription.pending.clear()
            subscription.wake()

    def subscribe(self, types: tuple[str, ...] = ()) -> Subscription:
        subscription = Subscription(types)
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
        by = text_field(request, "by", "the supervisor's id (--by)")
        reason = text_field(request, "reason", "why (--reason)")
        args = request.get("args", {})
        if not isinstance(args, Mapping):
            raise ControlError("bad_request", "args must be an object")
        key = _command_key(request)
        first = self.journal.command_outcome(key) if key else None
        if first is not None:  # sent again (after an unknown outcome): its first answer
            return {**self._acted(action, by, peer, first), "repeated": True}
        command = SupervisorCommand(
            at=self._clock(),
            action=action,
            by=by,
            reason=reason,
            args=dict(args),
            os_user=os_user_note(peer),
            key=key,
        )
        try:
            stored = self._submit(command)
        except JournalOutcomeUnknown as error:
            raise ControlError(
                "outcome_unknown",
                f"{action}: the disk failed while storing it, so whether it was stored is"
                " unknown until the journal is checked (the controller restarts to check"
                f" it); send it again with the same key: it is never done twice ({error})",
            ) from None
        except JournalError as error:
            raise ControlError(
                "not_stored", f"{action} was not stored, nothing changed: {error}"
            ) from None
        except RecordInvalid as error:
            raise ControlError(
                "bad_request", f"{action} was not stored, nothing changed: {error}"
            ) from None
        result = self._acted(action, by, peer, stored)
        log.info("supervisor command", action=action, by=by, os_user=peer.user, uid=peer.uid,
                 accepted=result["accepted"])  # fmt: skip
        return result

    @staticmethod
    def _acted(action: str, by: str, peer: Peer, stored: Sequence[StoredEvent]) -> dict[str, Any]:
        """The answer to an action, from the events it caused."""
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
        """The status answer; reused for STATUS_FRESH_S while no event was stored, so that
        clients asking in a loop cost the loop one answer a quarter second, not one each."""
        now = time.monotonic()
        cached = self._status_cache
        if cached is not None and now - cached[0] < STATUS_FRESH_S:
            return cached[1]
        status = self.health_status()
        status["alerts"] = self._recent_alerts()
        self._status_cache = (now, status)
        return status

    def health_status(self) -> dict[str, Any]:
        """The status answer without the recent alerts (no journal scan: sd_notify's STATUS
        asks every few seconds), with the health verdict."""
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
                "journal_chain": self.journal.chain_status(),  # start-up walk (issue 18)
                "loop_lag": dict(self._loop_stats()),  # the worst event-loop stalls
            },
            "table": view,
            "devices": devices,
            "outbox": outbox,
        }
        status["health"] = assess(status, self._config.health)
        return status

    def _check(self, request: Mapping[str, Any]) -> dict[str, Any]:
        status = self._status(request)
        return {"line": check_line(status), **status["health"]}

    def _devices(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return {"devices": self._merged_devices(self._controller.table.view())}

    def _rounds(self, request: Mapping[str, Any]) -> dict[str, Any]:
        shoe = self._shoe_of(request)
        last = optional_int(request, "last", low=1)
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
        shoe, number, events = self._round_asked(request, "round needs its number")
        view = self._controller.table.view()
        return {
            "shoe": shoe,
            "round": number,
            "summary": summarize_round(events, self._live(view, shoe)),
            "events": [event.to_wire() for event in events],
        }

    def _export(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """A round's dispute file (store/export.py): its shoe from the start through the
        round, with the hash chain. A round still dealt in squeeze mode is refused: its
        inputs name cards not revealed yet (R15)."""
        shoe, number, events = self._round_asked(request, "export needs a round number")
        procedures = self._config.procedures
        if procedures.squeeze and summarize_round(events, None)["status"] == "in_progress":
            raise ControlError(
                "refused",
                f"round {number} is still being dealt under the squeeze (R15): export it once"
                " it is over",
            )
        selection = Selection(round=(shoe, number))
        records = export_records(self.journal, selection, procedures=procedures, now=self._clock())
        return {"shoe": shoe, "round": number, "records": list(records)}

    def _road(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The shoe's board from its journaled events (docs/scoreboard.md, the same board the
        scoreboard page draws): results, the five roads, the ask road, the statistics."""
        shoe = self._shoe_of(request)
        procedures = self._config.procedures
        board = Board(None if procedures.mode == SHUFFLER_DEALER else procedures.cards_in_shoe)
        try:
            board.feed_all(shoe_events(self.journal, shoe))
        except RoadError as error:
            raise ControlError(
                "journal", f"a round result cannot go on the road: {error}"
            ) from None
        return {"table": self._config.table.id, **board.to_json(), "shoe": shoe}

    def _events(self, request: Mapping[str, Any]) -> dict[str, Any]:
        types = event_types(request)
        limit = optional_int(request, "limit", low=1, high=EVENTS_LIMIT_MAX) or 20
        after = optional_int(request, "after", low=0)
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

    def _round_asked(
        self, request: Mapping[str, Any], missing: str
    ) -> tuple[int, int, list[StoredEvent]]:
        """The shoe, the round number and the round's journaled events a request names."""
        shoe = self._shoe_of(request)
        number = optional_int(request, "round", low=0)
        if number is None:
            raise ControlError("bad_request", f"{missing}: {{'round': N}}")
        events = self.journal.round_events(shoe, number)
        if not events:
            raise ControlError("not_found", f"shoe {shoe} has no round {number} in the journal")
        return shoe, number, events

    def _shoe_of(self, request: Mapping[str, Any]) -> int:
        shoe = optional_int(request, "shoe", low=0)
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

    def _outbox_summary(self, waiting: int = 1) -> dict[str, Any]:
        """Each sink's place in its outbox (docs/delivery.md), and the slowest one's backlog
        and age, which the health model and the status line judge."""
        journal = self.journal
        marks = journal.sink_marks()
        now = self._clock()
        sinks = []
        for status in self._sink_statuses():
            sink = dict(status.to_json() if hasattr(status, "to_json") else status)
            mark = marks.get(sink["name"])
            through = sink["delivered_through"]
            if through is None:
                through = mark.delivered_through if mark is not None else 0
            pending = (
                journal.sink_events_after(sink["name"], through, waiting) if sink["backlog"] else []
            )
            oldest = pending[0].event.at if pending else None
            sink["oldest_waiting_at"] = oldest
            sink["oldest_waiting_age_s"] = _age(oldest, now)
            sink["why"] = _why_waiting(sink)
            if waiting > 1:
                sink["waiting"] = [
                    {
                        "seq": item.seq,
                        "event_seq": item.event.seq,
                        "type": item.event.type,
                        "at": item.event.at,
                        "shoe": item.event.shoe,
                        "round": item.event.round,
                    }
                    for item in pending
                ]
            sinks.append(sink)
        ages = [sink["oldest_waiting_age_s"] for sink in sinks if sink["backlog"]]
        out: dict[str, Any] = {
            "last_seq": journal.last_seq(),
            "backlog": max((sink["backlog"] for sink in sinks), default=0),
            "oldest_waiting_age_s": max((age for age in ages if age is not None), default=None),
            "sinks": sinks,
        }
        if waiting > 1:
            out["first_seq_held"] = journal.first_seq()
        return out

    def _recent_alerts(self) -> list[dict[str, Any]]:
        if self._alerts is None:  # read once; publish keeps it since
            found = self.last_matching(RECENT_ALERTS, ALERT_TYPES, scan=ALERT_SCAN)
            self._alerts = deque(found, maxlen=RECENT_ALERTS)
        alerts = list(self._alerts)
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


def _command_key(request: Mapping[str, Any]) -> str:
    """The request's idempotency key ("" without one): 1-100 printable characters."""
    key = request.get("key", "")
    if not isinstance(key, str) or len(key) > 100 or not key.isprintable():
        raise ControlError("bad_request", "key must be a text of at most 100 characters")
    return key


def _details_text(details: Any) -> str:
    if isinstance(details, Mapping):
        return ", ".join(f"{key}={value}" for key, value in details.items())
    return "" if details is None else str(details)


def _age(at: str | None, now: float) -> float | None:
    """Seconds since an event's `at` (PUSH_API.md time form)."""
    if at is None:
        return None
    try:
        then = datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return round(max(0.0, now - then.timestamp()), 3)


def _why_waiting(sink: Mapping[str, Any]) -> str:
    backlog = sink["backlog"]
    if backlog <= 0:
        return f"nothing waiting: {sink['name']} has every event"
    fault = sink.get("fault")
    if fault:
        return f"{sink['name']} refuses the events: {fault.get('text') or fault.get('code')}"
    failures = sink.get("consecutive_failures")
    if failures:
        return f"delivery failing ({failures} attempt(s)): {sink.get('last_error')}; retrying"
    state = sink.get("state")
    if state == "sending":
        return f"{backlog} event(s) being sent"
    if state == "stopped":
        return f"{backlog} event(s) waiting; the sink is stopped"
    return f"{backlog} event(s) about to be sent"
