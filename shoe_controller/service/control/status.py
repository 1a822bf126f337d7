"""The status answer from the daemon's live objects (the controller, the table, each device,
each sink's backlog, the recent alerts, the health verdict), reused while no event was stored
(docs/control.md `status`, `check`, `devices`, `outbox`).

The same status, without the recent alerts, is systemd's STATUS and what the metrics read.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from shoe_controller.service.config import Config
from shoe_controller.service.control.backlogs import backlogs_of, sink_json
from shoe_controller.service.control.requests import type_matches
from shoe_controller.service.control.scan import last_matching
from shoe_controller.service.health import assess
from shoe_controller.service.round_summary import ALERT_TYPES
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.events import iso_time

ALERT_SCAN = 2000
RECENT_ALERTS = 10
STATUS_FRESH_S = 0.25  # a status answer is reused this long unless new events were stored


class LiveStatus:
    """The status answer and its parts, built from the daemon's live objects."""

    def __init__(
        self,
        controller: Controller,
        sink_statuses: Callable[[], Iterable[Any]],
        device_stats: Callable[[], Iterable[Mapping[str, Any]]],
        config: Config,
        clock: Callable[[], float],
        *,
        journal_fault: Callable[[], str | None],
        loop_stats: Callable[[], Mapping[str, Any]],
        version: str,
    ) -> None:
        """The callables as ControlService takes them (control/service.py)."""
        self._controller = controller
        self._sink_statuses = sink_statuses
        self._device_stats = device_stats
        self._config = config
        self._clock = clock
        self._journal_fault = journal_fault
        self._loop_stats = loop_stats
        self._version = version
        self._alerts: deque[StoredEvent] | None = None  # the last alerts, once read
        self._cached: tuple[float, dict[str, Any]] | None = None

    def on_stored(self, stored: Sequence[StoredEvent]) -> None:
        """New events are in the journal: the next status answer is built afresh, and the
        recent alerts take the new ones."""
        self._cached = None
        if self._alerts is not None:
            self._alerts.extend(e for e in stored if type_matches(e.type, ALERT_TYPES))

    def status(self) -> dict[str, Any]:
        """The status answer; reused for STATUS_FRESH_S while no event was stored, so that
        clients asking in a loop cost the loop one answer a quarter second, not one each."""
        now = time.monotonic()
        cached = self._cached
        if cached is not None and now - cached[0] < STATUS_FRESH_S:
            return cached[1]
        status = self.health_status()
        status["alerts"] = self._recent_alerts()
        self._cached = (now, status)
        return status

    def health_status(self) -> dict[str, Any]:
        """The status answer without the recent alerts (no journal scan: sd_notify's STATUS
        asks every few seconds), with the health verdict."""
        view = self._controller.table.view()
        devices = self.devices(view)
        outbox = self.backlogs()
        recovery = self._controller.recovery
        journal = self._controller.journal
        status = {
            "controller": {
                "controller_id": self._config.controller_id,
                "table_id": self._config.table.id,
                "version": self._version,
                "now": iso_time(self._clock()),
                "replayed_inputs": len(recovery.inputs),
                "replay_mismatch": recovery.mismatch,
                "journal_fault": self._journal_fault(),
                "journal_chain": journal.integrity.chain_status(),  # start-up walk
                "loop_lag": dict(self._loop_stats()),  # the worst event-loop stalls
            },
            "table": view,
            "devices": devices,
            "outbox": outbox,
        }
        status["health"] = assess(status, self._config.health)
        return status

    def devices(self, view: Mapping[str, Any]) -> list[dict[str, Any]]:
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

    def backlogs(self, waiting: int = 1) -> dict[str, Any]:
        """Each sink's backlog (backlogs.backlogs_of), from the live sinks."""
        statuses = [sink_json(status) for status in self._sink_statuses()]
        return backlogs_of(self._controller.journal, statuses, self._clock(), waiting)

    def _recent_alerts(self) -> list[dict[str, Any]]:
        if self._alerts is None:  # read once; on_stored keeps it since
            found = last_matching(
                self._controller.journal.reads, RECENT_ALERTS, ALERT_TYPES, scan=ALERT_SCAN
            )
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


def _details_text(details: Any) -> str:
    if isinstance(details, Mapping):
        return ", ".join(f"{key}={value}" for key, value in details.items())
    return "" if details is None else str(details)
