"""`ControlService`: what the control socket answers, as one object for the daemon: the seeing
answers, the status, the followers, the supervisor actions and the surveillance desk, wired
to the daemon's live objects: the table, the journal, the sinks and the devices.

It has no socket (server.ControlServer is the one around it, and authorizes the peer first).
Everything runs on the daemon's one asyncio loop, so the actions call the daemon's submit
directly: a supervisor's command is applied and journaled in the same step as any card.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from shoe_controller import __version__
from shoe_controller.service.config import Config
from shoe_controller.service.control.actions import SupervisorActions
from shoe_controller.service.control.answers import Answers
from shoe_controller.service.control.followers import Followers
from shoe_controller.service.control.journal_answers import Live, live_of
from shoe_controller.service.control.scan import MAX_SCAN, last_matching, matching_after
from shoe_controller.service.control.status import LiveStatus
from shoe_controller.service.control.surveillance import SurveillanceDesk
from shoe_controller.service.peers import Peer
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.inputs import SupervisorCommand


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
        submit = submit or controller.submit
        self._status = LiveStatus(
            controller,
            sink_statuses,
            device_stats,
            config,
            clock,
            journal_fault=journal_fault or (lambda: None),
            loop_stats=loop_stats or dict,
            version=version,
        )
        self._sink_statuses = sink_statuses
        self._clock = clock
        self.config = config
        self._answers = Answers(controller, config, self._status, version)
        self._actions = SupervisorActions(controller, submit, clock)
        # `report` and `edge`, and who sees the surveillance events
        self.surveillance = SurveillanceDesk(controller, config, clock, submit)
        self.following = Followers(controller, self.surveillance.hidden_from)

    @property
    def journal(self) -> Any:
        return self._controller.journal

    def live(self, command: Any) -> Live:
        """What the live objects say that `command`'s journal answer needs, now (memory
        only: taken on the loop, the answer built by the reader process, reads.py)."""
        return live_of(self._controller, self._sink_statuses, self._clock, command)

    @property
    def followers(self) -> int:
        """How many connections follow the events now."""
        return len(self.following)

    def publish(self, stored: Sequence[StoredEvent]) -> None:
        """New events are in the journal (the daemon calls this after every commit): each
        follower gets them without reading the journal, the recent alerts and the status
        answer follow them."""
        if not stored:
            return
        self._status.on_stored(stored)
        self.following.publish(stored)

    def answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The result of a seeing command; ControlError for a bad request."""
        return self._answers.answer(request)

    def act(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        """Submit a supervisor action for an authorized `peer` (actions.SupervisorActions)."""
        return self._actions.act(request, peer)

    def health_status(self) -> dict[str, Any]:
        """The status answer without the recent alerts, with the health verdict (systemd's
        STATUS and the metrics read it every few seconds: no journal scan)."""
        return self._status.health_status()

    def matching_after(
        self, seq: int, types: tuple[str, ...], limit: int, scan: int = MAX_SCAN
    ) -> list[StoredEvent]:
        """Up to `limit` events after `seq` of the `types` (scan.matching_after)."""
        return matching_after(self.journal.reads, seq, types, limit, scan)

    def last_matching(
        self, count: int, types: tuple[str, ...], scan: int = MAX_SCAN
    ) -> list[StoredEvent]:
        """The last `count` events of the `types`, oldest first (scan.last_matching)."""
        return last_matching(self.journal.reads, count, types, scan)
