"""How late the event loop wakes up: the daemon's own measure of anything blocking it.

Everything the daemon does shares one asyncio loop: a step that blocks it (a slow fsync, a
big query) delays every card's ACK. A ticker that asks to wake every `interval` seconds and
notes how late it actually woke measures exactly that, in production, at no real cost.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

WINDOW_S = 60.0  # "recent" means the last minute


class LoopLag:
    """Tick on the loop; keep the worst lateness of the last minute and since start."""

    def __init__(
        self,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        on_lag: Callable[[float], None] | None = None,
    ) -> None:
        """`on_lag(seconds)` is told every tick's lateness (the metrics' histogram)."""
        self._interval = interval
        self._clock = clock
        self._on_lag = on_lag
        self._recent: deque[tuple[float, float]] = deque()  # (when, lag) keeping a max-queue
        self.worst = 0.0
        self.ticks = 0

    async def run(self) -> None:
        while True:
            expected = self._clock() + self._interval
            await asyncio.sleep(self._interval)
            self.note(self._clock() - expected)

    def note(self, lag: float) -> None:
        now = self._clock()
        lag = max(0.0, lag)
        self.ticks += 1
        self.worst = max(self.worst, lag)
        if self._on_lag is not None:
            self._on_lag(lag)
        # A monotonic queue: a later, larger lag makes earlier smaller ones irrelevant.
        while self._recent and self._recent[-1][1] <= lag:
            self._recent.pop()
        self._recent.append((now, lag))
        while self._recent and self._recent[0][0] < now - WINDOW_S:
            self._recent.popleft()

    @property
    def recent_worst(self) -> float:
        return self._recent[0][1] if self._recent else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "recent_worst_ms": round(self.recent_worst * 1000, 1),
            "worst_ms": round(self.worst * 1000, 1),
            "ticks": self.ticks,
        }
