"""The daemon's upkeep every few seconds: systemd's watchdog pings and STATUS, the device links'
error rates, the journal's retention, the free space on the journal's disk, and the journal's
periodic signed checkpoints (service/checkpoints.py).

It runs as one task on the daemon's loop, so a stuck loop stops the watchdog pings and systemd
restarts the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import structlog

from drivers.session.spec import DeviceRole
from shoe_controller.service.checkpoints import Checkpoints
from shoe_controller.service.config import JournalSection
from shoe_controller.service.devices import DeviceRunner
from shoe_controller.service.sdnotify import Notifier
from shoe_controller.store.controller import Controller
from shoe_controller.store.errors import JournalOutcomeUnknown
from shoe_controller.store.journal import JournalError
from shoe_controller.vocab.inputs import DeviceFault, DeviceFaultCleared, Input
from shoe_controller.vocab.protocol import JOURNAL_DEVICE, JOURNAL_SPACE_LOW, Severity

log = structlog.get_logger("daemon")

PRUNE_EVERY_S = 3600.0
STATUS_EVERY_S = 5.0
MB = 1024 * 1024


class Upkeep:
    """The daemon's periodic chores, until the daemon stops."""

    def __init__(
        self,
        settings: JournalSection,
        controller: Controller,
        notifier: Notifier,
        *,
        devices: Mapping[DeviceRole, DeviceRunner],
        status_line: Callable[[], str],
        submit: Callable[[Sequence[Input]], object],
        clock: Callable[[], float],
        on_outcome_unknown: Callable[[JournalError], None] | None = None,
        checkpoints: Checkpoints | None = None,
    ) -> None:
        """`status_line()` is systemd's STATUS; `submit(inputs)` stores the journal disk's
        fault (Daemon.submit: JournalError when it cannot); `on_outcome_unknown(error)` is
        told of a retention commit the disk failed (the daemon exits to recover);
        `checkpoints` is ticked at every round (None: no key, no checkpoints)."""
        self._settings = settings
        self._controller = controller
        self._notifier = notifier
        self._devices = devices
        self._status_line = status_line
        self._submit = submit
        self._clock = clock
        self._on_outcome_unknown = on_outcome_unknown
        self._checkpoints = checkpoints

    async def run(self, stop: asyncio.Event) -> None:
        """Watchdog pings from the loop itself (a stuck loop stops them), status, retention."""
        interval = min(self._notifier.watchdog_interval or STATUS_EVERY_S, STATUS_EVERY_S)
        last_prune = 0.0
        while not stop.is_set():
            self._notifier.watchdog()
            for runner in self._devices.values():
                runner.sample_error_rates(time.monotonic())
            self._notifier.status(self._status_line())
            now = time.monotonic()
            if now - last_prune >= PRUNE_EVERY_S:
                last_prune = now
                self._prune()
            if self._checkpoints is not None:
                self._checkpoints.tick()
            self._watch_space()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)

    def _prune(self) -> None:
        try:
            pruned = self._controller.journal.prune(self._settings.retention_days * 86400.0)
        except JournalOutcomeUnknown as error:
            if self._on_outcome_unknown is not None:
                self._on_outcome_unknown(error)
            return
        except JournalError as error:
            log.error("pruning failed", error=str(error))
            return
        if pruned.shoes:
            log.info("pruned delivered shoes", shoes=list(pruned.shoes), events=pruned.events)

    def _watch_space(self) -> None:
        """Retention keeps whatever a sink has not confirmed, so a consumer down for days
        grows the journal: before its disk fills, hold the table with an alert, never drop
        an event; lift the fault once there is room again (a quarter more than
        the limit, so that it does not flap)."""
        limit = self._settings.min_free_mb * MB
        try:
            free = shutil.disk_usage(Path(self._settings.path).resolve().parent).free
        except OSError as error:
            log.warning("journal disk space unknown", error=str(error))
            return
        key = (JOURNAL_DEVICE, JOURNAL_SPACE_LOW)
        raised = any(
            (fault.get("device"), fault.get("code")) == key
            for fault in self._controller.table.view().get("faults", [])
        )
        fault: Input | None = None
        if free < limit and not raised:
            fault = DeviceFault(
                self._clock(), JOURNAL_DEVICE, JOURNAL_SPACE_LOW, int(Severity.ERROR),
                f"{free // MB} MB free on the journal's disk, less than [journal] min_free_mb"
                f" = {self._settings.min_free_mb}: free space, or bring back the sinks"
                " that hold events (shoectl outbox)",
            )  # fmt: skip
        elif free >= limit * 5 // 4 and raised:
            fault = DeviceFaultCleared(self._clock(), JOURNAL_DEVICE, JOURNAL_SPACE_LOW)
        if fault is not None:
            log.warning("journal disk space", free_mb=free // MB, limit_mb=limit // MB)
            with contextlib.suppress(JournalError):  # submit reports it; retried in 5 s
                self._submit([fault])
