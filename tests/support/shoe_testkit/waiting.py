"""Waiting for something the code under test will do: polled, bounded, never a speed assertion."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

PATIENCE_S = 60.0  # a safety net for waits, never a speed assertion


def wait_until(predicate: Callable[[], Any], what: str, patience: float = PATIENCE_S) -> Any:
    """Poll `predicate` until truthy; fail (not hang) if it never happens."""
    deadline = time.monotonic() + patience
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


async def eventually(predicate: Callable[[], Any], what: str) -> Any:
    """wait_until on the running loop: the code under test runs while it waits."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE_S
    while not (value := predicate()):
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(0.005)
    return value
