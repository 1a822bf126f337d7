"""How long to wait before trying again after failures: the one backoff of the devices'
reconnects and the sinks' retries."""

from __future__ import annotations


def backoff_delay(failures: int, rand: float, minimum: float, maximum: float) -> float:
    """Seconds to wait after `failures` consecutive failures (≥ 1): doubling from `minimum`
    up to `maximum`, then jittered down by up to half (`rand` in [0, 1); 0 is no jitter) so
    that many clients of one server do not retry in step, and never below `minimum`."""
    capped = min(maximum, minimum * 2 ** min(failures - 1, 64))
    return max(minimum, capped * (1.0 - rand / 2))
