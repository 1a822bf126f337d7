"""A Prometheus histogram kept by hand: the daemon's collectors (metrics.py, pace_metrics.py)
build their metric families on each scrape from what they counted, so they hold the counts,
not prometheus_client's own metric objects."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

from prometheus_client.utils import floatToGoString


class Histogram:
    """Observations counted per bucket, with their sum (the values are not kept: a daemon
    runs for months)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(sorted(bounds))
        self._counts = [0] * len(self.bounds)  # per bucket, not cumulative; above all: count
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self.bounds, value)  # the first bound >= value
        if index < len(self._counts):
            self._counts[index] += 1
        self.count += 1
        self.sum += value

    def buckets(self) -> list[tuple[str, float]]:
        """Prometheus's cumulative buckets, `+Inf` last."""
        cumulative = itertools.accumulate(self._counts)
        out = [(floatToGoString(b), float(n)) for b, n in zip(self.bounds, cumulative, strict=True)]
        return [*out, ("+Inf", float(self.count))]
