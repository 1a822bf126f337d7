"""`shoectl events --follow`: the live event stream, picked up again after the daemon
restarts, from the last seq it printed (nothing missed, nothing printed twice)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import click

from shoe_controller.cli.shoectl.client import UnreachableError
from shoe_controller.cli.shoectl.plumbing import connect, fail

RETRY_FIRST_S, RETRY_MAX_S = 0.25, 5.0


def follow_events(request: Mapping[str, Any], show: Callable[[Mapping[str, Any]], None]) -> None:
    """Print the events of `request` as they come, until Ctrl-C (the caller's) or a refused
    request. A controller that cannot be reached at all is an error (exit 2); one that goes
    away once followed is waited for, and the stream goes on after the last seq seen."""
    after: int | None = None  # the last seq seen: printed, or the stream's start
    lost = False  # followed once, then lost: say so when it follows again
    delay = RETRY_FIRST_S

    def started(_from_seq: int) -> None:
        nonlocal lost, delay
        if lost:
            click.echo(f"shoectl: reconnected; going on after seq {after}", err=True)
        lost, delay = False, RETRY_FIRST_S

    while True:
        asked = {**request, "follow": True}
        if after is not None:
            asked["after"] = after  # the daemon sends what came since, from its journal
        client = None
        try:
            with connect() as client:
                for event in client.stream(asked, started):
                    if after is None or event["seq"] > after:
                        show(event)
                        after = event["seq"]
        except UnreachableError as error:
            if client is not None and client.following_from is not None:
                # It followed, then went away: from now on wait for it to come back.
                after = max(after or 0, client.following_from)
                lost = True
                click.echo(
                    f"shoectl: {error}; reconnecting, then going on after seq {after}", err=True
                )
            elif not lost:
                fail(str(error))  # never reached: not running, no permission
            time.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)
