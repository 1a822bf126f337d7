"""Each sink's backlog, from the sinks' live statuses and the journal (docs/control.md `outbox`,
docs/delivery.md): what waits, since when, and why.

The sinks' statuses are the daemon's memory and are taken on its loop; the rest is read from
the journal, by whichever connection answers: the daemon's own for `status` (at most four
times a second, status.py's cache), the reader process's for `outbox` (reads.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from shoe_controller.store.journal import Journal


def sink_json(status: Any) -> dict[str, Any]:
    """A sink's status (SinkStatus, or its JSON already) as a JSON object of its own."""
    return dict(status.to_json() if hasattr(status, "to_json") else status)


def backlogs_of(
    journal: Journal, statuses: Iterable[Mapping[str, Any]], now: float, waiting: int = 1
) -> dict[str, Any]:
    """Each sink's backlog (`statuses`: their sink_json, in the configuration's
    order), and the slowest one's backlog and age, which the health model and the status line
    judge; with `waiting` > 1 the first events each sink waits for too (the `outbox` answer).
    `now` is unix seconds, for the ages."""
    marks = journal.sinks.marks()
    sinks = []
    for status in statuses:
        sink = dict(status)
        mark = marks.get(sink["name"])
        through = sink["delivered_through"]
        if through is None:
            through = mark.delivered_through if mark is not None else 0
        pending = (
            journal.sinks.events_after(sink["name"], through, waiting) if sink["backlog"] else []
        )
        oldest = pending[0].event.at if pending else None
        sink["oldest_waiting_at"] = oldest
        sink["oldest_waiting_age_s"] = _age(oldest, now)
        sink["why"] = _why_waiting(sink)
        if waiting > 1:
            sink["waiting"] = [
                {
                    "seq": item.seq,
                    "event_seq": item.event.seq,
                    "type": item.event.type,
                    "at": item.event.at,
                    "shoe": item.event.shoe,
                    "round": item.event.round,
                }
                for item in pending
            ]
        sinks.append(sink)
    ages = [sink["oldest_waiting_age_s"] for sink in sinks if sink["backlog"]]
    out: dict[str, Any] = {
        "last_seq": journal.reads.last_seq(),
        "backlog": max((sink["backlog"] for sink in sinks), default=0),
        "oldest_waiting_age_s": max((age for age in ages if age is not None), default=None),
        "sinks": sinks,
    }
    if waiting > 1:
        out["first_seq_held"] = journal.reads.first_seq()
    return out


def _age(at: str | None, now: float) -> float | None:
    """Seconds since an event's `at` (docs/spec-push-api.md time form)."""
    if at is None:
        return None
    try:
        then = datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return round(max(0.0, now - then.timestamp()), 3)


def _why_waiting(sink: Mapping[str, Any]) -> str:
    backlog = sink["backlog"]
    if backlog <= 0:
        return f"nothing waiting: {sink['name']} has every event"
    fault = sink.get("fault")
    if fault:
        return f"{sink['name']} refuses the events: {fault.get('text') or fault.get('code')}"
    failures = sink.get("consecutive_failures")
    if failures:
        return f"delivery failing ({failures} attempt(s)): {sink.get('last_error')}; retrying"
    state = sink.get("state")
    if state == "sending":
        return f"{backlog} event(s) being sent"
    if state == "stopped":
        return f"{backlog} event(s) waiting; the sink is stopped"
    return f"{backlog} event(s) about to be sent"
