"""The one health model: what needs a person, how urgently, and what to do about it.

`status`, `check`, sd_notify's STATUS and the control socket all read `assess`'s verdict on a
status answer (docs/control.md "What counts as a problem"):
- CRITICAL: play or delivery is stopped: a hold, the table refusing the shoe's cards, a
  device silent, lost or unopened while a shoe is open, a device error, the journal failing
  or its hash chain broken (a stored record edited, removed or moved),
  the table server refusing the events or events undelivered past the critical age;
- WARNING: degraded: a warning fault, a device down with no shoe open, delivery failing and
  retried or events older than the warning age, link errors above their rate, a replay that
  differs from the journal;
- OK otherwise.
Each problem says why and what to do. A state lasts as long as its cause (a device stays
`silent` until it speaks again, the refusal until a card is taken, a rate over a minute), so
`check` does not flap.

Pure, but for `ErrorRate`, which keeps a minute of a counter's samples.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from shoe_controller.service.config import HealthSection
from shoe_controller.store.schema import LEGACY_SINK
from shoe_controller.vocab import words
from shoe_controller.vocab.protocol import JOURNAL_SPACE_LOW

# Health levels, Nagios's numbers (`shoectl check` exits with them).
OK, WARNING, CRITICAL = 0, 1, 2
LEVEL_NAMES = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL", 3: "UNKNOWN"}
DOWN = ("lost", "silent", "open_failed", "stopped")  # a configured device that does not talk
RATE_SPAN_S = 60.0


class ErrorRate:
    """How many times a counter (retransmits, CRC errors) grew in the last minute.

    The increase itself, not extrapolated: one retransmit in a link's first second is one,
    not sixty a minute.
    """

    def __init__(self, span: float = RATE_SPAN_S) -> None:
        self._span = span
        self._samples: deque[tuple[float, int]] = deque()

    def sample(self, now: float, count: int) -> None:
        self._samples.append((now, count))
        # Keep one sample at or before the span's start: the increase covers the whole span.
        while len(self._samples) > 2 and self._samples[1][0] <= now - self._span:
            self._samples.popleft()

    def per_minute(self) -> int | None:
        """None until there are two samples."""
        if len(self._samples) < 2:
            return None
        return max(0, self._samples[-1][1] - self._samples[0][1])


def assess(status: Mapping[str, Any], limits: HealthSection) -> dict[str, Any]:
    """What needs a person, from a status answer: level (Nagios numbers) and problems."""
    problems: list[dict[str, Any]] = []

    def problem(level: int, text: str, action: str) -> None:
        problems.append(
            {"level": level, "status": LEVEL_NAMES[level], "text": text, "action": action}
        )

    controller, table = status["controller"], status["table"]
    if controller.get("journal_fault"):
        problem(
            CRITICAL,
            f"journal fault: {controller['journal_fault']}",
            "technician: free or fix the journal's disk; the shoe's frames wait unacknowledged",
        )
    chain = controller.get("journal_chain")
    if chain and not chain.get("intact"):
        problem(
            CRITICAL,
            f"journal chain broken at {chain.get('first_bad')}: {chain.get('problem')}",
            "technician: keep the journal as it is (nothing is repaired or pruned); copy it,"
            " `shoe-controller verify --journal COPY`, and report it to compliance",
        )
    if controller.get("replay_mismatch"):
        problem(
            WARNING,
            f"replay differs from the journal: {controller['replay_mismatch']}",
            "technician: keep the journal (shoe-controller export) and report it",
        )
    for hold in table.get("holds", []):
        ways = " or ".join(f"shoectl {action.replace('_', '-')}" for action in hold["actions"])
        waiting = f" (first: {hold['waiting_for']})" if hold.get("waiting_for") else ""
        problem(
            CRITICAL,
            f"table held ({words.alert(hold['code'])}): {hold['text']}",
            f"supervisor: {ways}{waiting}",
        )
    refusing = table.get("refusing_cards")
    if refusing:
        problem(
            CRITICAL,
            f"the table refuses the shoe's cards ({words.alert(refusing['code'])},"
            f" {refusing['count']} since {refusing['since']}): {refusing['text']}",
            "stop dealing; supervisor: see the text (load or start a shoe, check the shoe)",
        )
    for fault in table.get("faults", []):
        level = CRITICAL if (fault.get("severity") or 0) >= 2 else WARNING
        code = fault.get("code")
        action = HOST_FAULT_ACTIONS.get(
            code, f"technician: see the {fault.get('device')}'s manual for this code"
        )
        problem(level, f"{fault.get('device')}: {words.fault(code)}: {fault.get('text')}", action)
    _devices(status["devices"], bool(table.get("shoe_open")), limits, problem)
    _delivery(status["outbox"], limits, problem)
    level = max((p["level"] for p in problems), default=OK)
    return {"level": level, "status": LEVEL_NAMES[level], "problems": problems}


# What to do about the faults the host raises itself, where no device manual tells.
HOST_FAULT_ACTIONS = {
    JOURNAL_SPACE_LOW: "technician: free space on the journal's disk, or bring back the sinks"
    " that hold events (shoectl outbox); supervisor: resume once the fault is cleared",
}


def _devices(devices: Any, shoe_open: bool, limits: HealthSection, problem: Any) -> None:
    for device in devices:
        name, state = device["device"], device.get("status")
        if device.get("configured") and state in DOWN:
            # While a shoe is open nothing it sends can reach the table: play is stopped.
            level = CRITICAL if shoe_open else WARNING
            problem(
                level,
                f"{name} is {words.device_state(state)}"
                + (" while a shoe is open" if shoe_open else ""),
                f"stop dealing; technician: check the {name}'s cable and power (shoectl devices)",
            )
        elif device.get("configured") and state == "starting":
            problem(WARNING, f"{name} is starting", f"wait, or check the {name}'s cable")
        elif not device.get("configured") and state == "disconnected":
            problem(WARNING, f"{name} is disconnected", f"check the {name}")
        for counter, rate in (device.get("error_rates") or {}).items():
            if rate is not None and rate > limits.link_errors_per_minute:
                problem(
                    WARNING,
                    f"{name}: {rate:g} {counter.replace('_', ' ')} a minute"
                    f" (more than {limits.link_errors_per_minute:g})",
                    f"technician: check the {name}'s cable, plugs and baud rate",
                )


def _delivery(outbox: Mapping[str, Any], limits: HealthSection, problem: Any) -> None:
    """Each sink judged by itself: one stuck consumer is a problem even while the others
    keep up."""
    for sink in outbox.get("sinks", []):
        name, fault = sink_label(sink), sink.get("fault")
        if fault:
            problem(
                CRITICAL,
                f"{name} refuses our events ({fault.get('code')}): {fault.get('text')}",
                f"technician: fix {name} or its credentials (docs/delivery.md), then restart",
            )
        age = sink.get("oldest_waiting_age_s")
        if sink.get("backlog") and age is not None:
            text = f"{sink['backlog']} event(s) undelivered to {name} for {age:.0f} s"
            action = f"technician: check {name} ({sink.get('target')}) and the network"
            action += " (shoectl outbox)"
            if age >= limits.backlog_critical_s:
                problem(CRITICAL, text, action)
            elif age >= limits.backlog_warning_s:
                problem(WARNING, text, action)
        if sink.get("consecutive_failures") and not fault:
            problem(
                WARNING,
                f"delivery to {name} failing: {sink.get('last_error')}",
                f"retrying by itself; technician: check {name} if it lasts",
            )


def sink_label(sink: Mapping[str, Any]) -> str:
    """How a person is told of a sink: the [server] section's is "the table server"."""
    if sink["name"] == LEGACY_SINK and sink.get("kind", "http") == "http":
        return "the table server"
    return f"sink {sink['name']}"


def summary(status: Mapping[str, Any]) -> str:
    """The worst problem (and how many more), the shoe, the round and the backlog."""
    health, table, outbox = status["health"], status["table"], status["outbox"]
    round_info = table.get("round") or {}
    state = table.get("state")
    # Between shoes the number is the last shoe's (or the first's, before any): not "shoe 2
    # no shoe".
    parts = [
        "no shoe open"
        if state == "no_shoe"
        else f"shoe {table.get('shoe')} {words.table_state(state)}"
    ]
    if round_info.get("number") is not None:
        parts.append(f"round {round_info['number']}")
    parts.append(f"backlog {outbox.get('backlog')}")
    text = ", ".join(parts)
    if health["problems"]:
        worst = sorted(health["problems"], key=lambda p: -p["level"])
        more = f" (+{len(worst) - 1} more)" if len(worst) > 1 else ""
        text = f"{worst[0]['text']}{more}; {text}"
    return text


def check_line(status: Mapping[str, Any]) -> str:
    """One Nagios-style line: `SHOE OK - ... | perfdata`."""
    table, outbox = status["table"], status["outbox"]
    perf = [
        f"backlog={outbox.get('backlog') or 0}",
        f"rounds={table.get('real_rounds') or 0}",
        f"cards_dealt={table.get('cards_dealt') or 0}",
    ]
    if table.get("cards_left") is not None:
        perf.append(f"cards_left={table['cards_left']}")
    return f"SHOE {status['health']['status']} - {summary(status)} | {' '.join(perf)}"
