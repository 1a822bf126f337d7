"""How the reference table server misbehaves when a fault test asks it to."""

from __future__ import annotations

import dataclasses

FAULT_MODES = ("ok", "status", "garbage", "slow", "reset")
FAULT_TARGETS = ("all", "events", "ack")  # which push API requests a fault applies to
GARBAGE = b"<html><body>502 upstream says hello</body></html>"


@dataclasses.dataclass
class FaultPlan:
    """How the receiver misbehaves on the push API paths (never on /control).

    ok: behave. status: answer `status` without storing. garbage: store, then answer 200 with
    a non-JSON body. slow: store, then wait `delay_s` before answering. reset: close the
    connection without an answer. `count` requests are affected, then back to ok (None:
    until changed). `target`: "all" push API requests, only "events" POSTs or only "ack" GETs.
    """

    mode: str = "ok"
    status: int = 500
    delay_s: float = 0.0
    count: int | None = None
    target: str = "all"

    def __post_init__(self) -> None:
        if self.mode not in FAULT_MODES:
            raise ValueError(f"fault mode must be one of {FAULT_MODES}, not {self.mode!r}")
        if self.target not in FAULT_TARGETS:
            raise ValueError(f"fault target must be one of {FAULT_TARGETS}, not {self.target!r}")
        if not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status, not {self.status}")
        if self.delay_s < 0 or (self.count is not None and self.count < 0):
            raise ValueError("delay_s and count must not be negative")
