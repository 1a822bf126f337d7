"""The one way out of a commit whose outcome is unknown: exit for systemd to start us afresh.

A commit the disk failed (fsync or fdatasync EIO: `JournalOutcomeUnknown`) may be in the file
or not, and the connection that made it cannot tell (PostgreSQL's fsync lesson); only a fresh
open of the journal can. So the daemon exits, without closing the journal (closing would
checkpoint the WAL past the failed sync), and systemd's `Restart=always` starts it again:
recovery reads what the file holds, devices resend the frames that were not ACKed, shoectl
sends its command's key again. The same at start-up (`controller.started`), while dealing, or
when retention's commit fails (docs/journal.md "A commit of unknown outcome"); and the same
for a journal another process wrote behind the daemon's back (`JournalWrittenElsewhere`:
docs/journal.md "One daemon a journal").

A disk that keeps failing must not become a busy loop: the process exits no sooner than
`MIN_UPTIME_S` after its own start (and `EXIT_AFTER_S` after the failure, for the control
socket's "outcome unknown" answer to leave), so under the unit's `RestartSec=2` it starts at
most 60 / (5 + 2), under 9, times a minute, with one log line each.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger("daemon")

EXIT_OUTCOME_UNKNOWN = 1  # the disk failed a commit: restart and let recovery check
DISK_FAILED = "journal commit failed on the disk: restarting to check the journal"
# The same way out for a journal another process wrote behind the daemon's back:
# the counters it keeps in memory are stale, and only a fresh start reads them from the file.
WRITTEN_ELSEWHERE = (
    "the journal was written by another process: restarting to rebuild the table from it"
)
EXIT_AFTER_S = 0.2
MIN_UPTIME_S = 5.0


class OutcomeUnknownExit:
    """Ends the process once a commit's outcome is unknown: once, paced, with one log line."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        exit_process: Callable[[int], object] = os._exit,
    ) -> None:
        """The process's start is taken to be now (the daemon makes this first thing)."""
        self._clock = clock
        self._exit = exit_process
        self._started = clock()
        self.reason: str | None = None  # the failed commit, once there was one

    @property
    def pending(self) -> bool:
        """A commit's outcome is unknown and the exit is on its way: store and close nothing."""
        return self.reason is not None

    def delay(self) -> float:
        """Seconds from now to the exit: the answer's moment, and the process's minimum life."""
        return max(EXIT_AFTER_S, MIN_UPTIME_S - (self._clock() - self._started))

    def schedule(
        self, error: Exception, loop: asyncio.AbstractEventLoop, *, why: str = DISK_FAILED
    ) -> None:
        """Exit after `delay()` on `loop`, `why` the log line; a later failure (the same
        disk) changes nothing."""
        if self.reason is not None:
            return
        self.reason = str(error)
        delay = self.delay()
        log.critical(why, error=self.reason, exit_in_s=round(delay, 1))
        loop.call_later(delay, self._exit, EXIT_OUTCOME_UNKNOWN)
