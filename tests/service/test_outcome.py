"""The one way out of a commit of unknown outcome (service/outcome.py): the process
exits for systemd to restart it, once, with one log line, and never sooner than MIN_UPTIME_S
after its own start, so that a disk that keeps failing makes no busy restart loop."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from shoe_controller.service.outcome import (
    EXIT_AFTER_S,
    EXIT_OUTCOME_UNKNOWN,
    MIN_UPTIME_S,
    OutcomeUnknownExit,
)
from shoe_controller.store.errors import JournalOutcomeUnknown


class Clock:
    """The process's monotonic clock, stepped by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_exit_waits_out_the_minimum_life_since_the_process_started() -> None:
    clock = Clock()
    recovery = OutcomeUnknownExit(clock=clock, exit_process=lambda code: None)
    clock.now += 1.5  # the first commit failed 1.5 s after the start
    assert recovery.delay() == MIN_UPTIME_S - 1.5
    clock.now += MIN_UPTIME_S  # a daemon that ran for long: a moment for the answer only
    assert recovery.delay() == EXIT_AFTER_S
    assert not recovery.pending


def test_a_failed_commit_exits_once_with_one_line_however_many_follow() -> None:
    clock = Clock()
    codes: list[int] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        exited = loop.create_future()

        def exit_process(code: int) -> None:
            codes.append(code)
            exited.set_result(None)

        recovery = OutcomeUnknownExit(clock=clock, exit_process=exit_process)
        clock.now += MIN_UPTIME_S  # it has lived long enough: the exit comes in EXIT_AFTER_S
        for n in range(3):  # the same disk fails every commit that follows
            recovery.schedule(JournalOutcomeUnknown(f"commit {n}: disk I/O error"), loop)
        assert recovery.pending
        assert recovery.reason == "commit 0: disk I/O error"
        await exited
        await asyncio.sleep(EXIT_AFTER_S * 2)  # nothing else was scheduled

    with capture_logs() as logs:
        asyncio.run(main())
    assert codes == [EXIT_OUTCOME_UNKNOWN]
    assert [(entry["log_level"], entry["error"]) for entry in logs] == [
        ("critical", "commit 0: disk I/O error")
    ]
