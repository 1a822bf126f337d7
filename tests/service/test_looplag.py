"""The loop-lag ticker: a real blocked loop is seen; old stalls leave the recent window."""

from __future__ import annotations

import asyncio
import time

from shoe_controller.service.looplag import WINDOW_S, LoopLag


def test_a_blocked_loop_shows_as_lag() -> None:
    lag = LoopLag(interval=0.01)

    async def scenario() -> None:
        ticker = asyncio.create_task(lag.run())
        await asyncio.sleep(0.05)
        assert lag.worst < 0.06
        time.sleep(0.08)  # a step that blocks the loop, as a slow fsync would
        await asyncio.sleep(0.05)
        ticker.cancel()

    asyncio.run(scenario())
    assert lag.ticks >= 3
    assert lag.worst >= 0.06
    assert lag.recent_worst == lag.worst
    assert lag.to_json()["worst_ms"] >= 60


class SteppedClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_recent_worst_forgets_stalls_older_than_the_window() -> None:
    clock = SteppedClock()
    lag = LoopLag(clock=clock)
    lag.note(0.5)
    clock.now = 10.0
    lag.note(0.02)
    assert lag.recent_worst == 0.5
    clock.now = WINDOW_S + 5.0
    lag.note(0.01)
    assert lag.recent_worst == 0.02  # the 0.5 s stall is over a minute old
    clock.now = 2 * WINDOW_S
    lag.note(-0.001)  # woke early: no lag
    assert lag.recent_worst == 0.01
    assert lag.worst == 0.5
