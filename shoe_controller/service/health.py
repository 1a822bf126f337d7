"""The Nagios-style verdict on a status answer: what needs a person, and one line for
monitoring.

Pure: a status answer in, plain data out (`shoectl check` exits with the level).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Health levels, Nagios's numbers (`shoectl check` exits with them).
OK, WARNING, CRITICAL = 0, 1, 2
LEVEL_NAMES = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL", 3: "UNKNOWN"}
# Delivery: waiting this long for the table server is worth a look, then worth a run.
BACKLOG_WARN_S = 60.0
BACKLOG_CRIT_S = 300.0


def assess(status: Mapping[str, Any]) -> dict[str, Any]:
    """What needs a person, from a status answer: level (Nagios numbers) and problems."""
    problems: list[dict[str, Any]] = []

    def problem(level: int, text: str) -> None:
        problems.append({"level": level, "status": LEVEL_NAMES[level], "text": text})

    controller = status["controller"]
    if controller.get("journal_fault"):
        problem(CRITICAL, f"journal fault: {controller['journal_fault']}")
    if controller.get("replay_mismatch"):
        problem(WARNING, f"replay differs from the journal: {controller['replay_mismatch']}")
    table = status["table"]
    for hold in table.get("holds", []):
        problem(CRITICAL, f"table held ({hold.get('code')}): {hold.get('text')}")
    for fault in table.get("faults", []):
        level = CRITICAL if (fault.get("severity") or 0) >= 2 else WARNING
        code = fault.get("code")
        code_text = f"{code:#06x}" if isinstance(code, int) else str(code)
        problem(level, f"{fault.get('device')} fault {code_text}: {fault.get('text')}")
    for device in status["devices"]:
        state = device.get("status")
        if device.get("configured") and state not in ("connected", None):
            level = WARNING if state == "starting" else CRITICAL
            problem(level, f"{device['device']} is {state}")
        elif not device.get("configured") and state == "disconnected":
            problem(WARNING, f"{device['device']} is disconnected")
    outbox = status["outbox"]
    publisher = outbox.get("publisher") or {}
    if publisher.get("fault"):
        fault = publisher["fault"]
        problem(
            CRITICAL, f"table server refuses our events ({fault.get('code')}): {fault.get('text')}"
        )
    age = outbox.get("oldest_waiting_age_s")
    if outbox.get("backlog") and age is not None:
        if age >= BACKLOG_CRIT_S:
            problem(CRITICAL, f"{outbox['backlog']} event(s) undelivered for {age:.0f} s")
        elif age >= BACKLOG_WARN_S:
            problem(WARNING, f"{outbox['backlog']} event(s) undelivered for {age:.0f} s")
    if publisher.get("consecutive_failures") and not publisher.get("fault"):
        problem(WARNING, f"delivery to the table server failing: {publisher.get('last_error')}")
    level = max((p["level"] for p in problems), default=OK)
    return {"level": level, "status": LEVEL_NAMES[level], "problems": problems}


def check_line(status: Mapping[str, Any]) -> str:
    """One Nagios-style line: `SHOE OK - ... | perfdata`."""
    health = status["health"]
    table = status["table"]
    outbox = status["outbox"]
    round_info = table.get("round") or {}
    parts = [f"shoe {table.get('shoe')} {table.get('state')}"]
    if round_info.get("number") is not None:
        parts.append(f"round {round_info['number']}")
    parts.append(f"backlog {outbox.get('backlog')}")
    text = ", ".join(parts)
    if health["problems"]:
        worst = sorted(health["problems"], key=lambda p: -p["level"])
        more = f" (+{len(worst) - 1} more)" if len(worst) > 1 else ""
        text = f"{worst[0]['text']}{more}; {text}"
    perf = [
        f"backlog={outbox.get('backlog') or 0}",
        f"rounds={table.get('real_rounds') or 0}",
        f"cards_dealt={table.get('cards_dealt') or 0}",
    ]
    if table.get("cards_left") is not None:
        perf.append(f"cards_left={table['cards_left']}")
    return f"SHOE {health['status']} - {text} | {' '.join(perf)}"
