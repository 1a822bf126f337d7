"""What the latency benchmarks share: percentiles and the bare HTTP round-trip baseline."""

from __future__ import annotations

import asyncio
import time

from shoe_controller.delivery.http_client import HttpClient


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def http_round_trips(
    url: str, table_id: str, samples: int, pace_s: float = 0.0
) -> list[float]:
    """The baseline: GET .../ack on a kept-alive connection, through the very client the
    table server's sink uses (delivery/http_client.py), so that what a card's way to the
    server costs beyond it is the daemon's own; `pace_s` apart, as the cards come (an
    exchange after a pause costs more than one straight after another: the machine idled)."""
    times = []
    client = HttpClient(url, ssl_context=None, timeout_s=10.0)
    path = f"/v1/tables/{table_id}/ack"
    try:
        await client.request("GET", path, headers={})  # connect once, like the sink
        for _ in range(samples):
            await asyncio.sleep(pace_s)
            start = time.perf_counter()
            response = await client.request("GET", path, headers={})
            if response.status != 200:
                raise RuntimeError(f"GET {path}: HTTP {response.status}")
            times.append(time.perf_counter() - start)
    finally:
        await client.close()
    return times
