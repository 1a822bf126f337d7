"""What the latency benchmarks share: percentiles and the bare HTTP round-trip baseline."""

from __future__ import annotations

import time

import httpx


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def http_round_trips(url: str, table_id: str, samples: int) -> list[float]:
    """The baseline: GET .../ack on a kept-alive connection, as the publisher's client."""
    times = []
    async with httpx.AsyncClient(base_url=url, trust_env=False) as client:
        await client.get(f"/v1/tables/{table_id}/ack")  # connect once, like the publisher
        for _ in range(samples):
            start = time.perf_counter()
            response = await client.get(f"/v1/tables/{table_id}/ack")
            response.raise_for_status()
            times.append(time.perf_counter() - start)
    return times
