"""The one health model (service/health.py) on status answers, and how shoectl shows it."""

from __future__ import annotations

from typing import Any

import pytest

from shoe_controller.cli.shoectl.render import hold_text
from shoe_controller.service.config import ConfigError, HealthSection, from_mapping
from shoe_controller.service.health import CRITICAL, OK, WARNING, ErrorRate, assess, check_line


def status(**parts: Any) -> dict[str, Any]:
    table = {"shoe": 3, "state": "dealing", "shoe_open": True, "holds": [], "faults": []}
    table |= parts.pop("table", {})
    answer = {
        "controller": {"journal_fault": None, "replay_mismatch": None},
        "table": table,
        "devices": parts.pop("devices", []),
        "outbox": {"backlog": 0, "sinks": []} | parts.pop("outbox", {}),
    }
    answer["health"] = assess(answer, HealthSection())
    return answer


def device(state: str, **extra: Any) -> dict[str, Any]:
    return {"device": "scanner", "configured": True, "status": state, **extra}


def levels(answer: dict[str, Any]) -> list[tuple[int, str]]:
    return [(p["level"], p["text"]) for p in answer["health"]["problems"]]


def test_a_quiet_table_is_ok() -> None:
    answer = status(devices=[device("connected")])
    assert answer["health"] == {"level": OK, "status": "OK", "problems": []}


@pytest.mark.parametrize("state", ["silent", "lost", "open_failed", "stopped"])
def test_a_device_down_stops_play_while_a_shoe_is_open(state: str) -> None:
    open_shoe = status(devices=[device(state)])
    assert levels(open_shoe) == [(CRITICAL, f"scanner is {state} while a shoe is open")]
    assert "cable and power" in open_shoe["health"]["problems"][0]["action"]
    between_shoes = status(devices=[device(state)], table={"shoe_open": False})
    assert levels(between_shoes) == [(WARNING, f"scanner is {state}")]


def test_a_table_refusing_cards_is_critical_with_the_reason() -> None:
    refusing = {"code": "no_shoe", "text": "no shoe is open", "since": "t", "count": 4}
    answer = status(table={"refusing_cards": refusing, "shoe_open": False})
    ((level, text),) = levels(answer)
    assert level == CRITICAL
    assert text.startswith("the table refuses the shoe's cards (no_shoe, 4 since t)")


def test_a_hold_names_the_commands_that_end_it() -> None:
    hold = {
        "code": "device_fault",
        "text": "jam",
        "actions": ["resume", "change_shoe"],
        "waiting_for": "scanner to clear fault 0x0001 (FAULT_CLEARED)",
    }
    answer = status(table={"holds": [hold]})
    (problem,) = answer["health"]["problems"]
    assert problem["level"] == CRITICAL
    assert problem["action"] == (
        "supervisor: shoectl resume or shoectl change-shoe"
        " (first: scanner to clear fault 0x0001 (FAULT_CLEARED))"
    )
    assert hold_text(hold, _plain) == (
        "device_fault: jam (ways out: resume, change-shoe;"
        " first scanner to clear fault 0x0001 (FAULT_CLEARED))"
    )


def test_link_errors_above_their_rate_are_a_warning() -> None:
    limit = HealthSection().link_errors_per_minute
    calm = status(devices=[device("connected", error_rates={"retransmits": int(limit)})])
    assert levels(calm) == []
    noisy = status(devices=[device("connected", error_rates={"crc_errors": int(limit) + 5})])
    expected = f"scanner: {int(limit) + 5} crc errors a minute (more than {limit:g})"
    assert levels(noisy) == [(WARNING, expected)]


def sink(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "target": f"http://{name}", "backlog": 0, "fault": None,
            "consecutive_failures": 0, "oldest_waiting_age_s": None} | fields  # fmt: skip


def test_the_backlog_ages_are_configured() -> None:
    config = from_mapping({"health": {"backlog_warning_s": 10, "backlog_critical_s": 20}})
    old = {"sinks": [sink("server", backlog=3, oldest_waiting_age_s=15.0)]}
    answer = {**status(outbox=old)}
    assert assess(answer, config.health)["level"] == WARNING
    older = {"sinks": [sink("server", backlog=3, oldest_waiting_age_s=25.0)]}
    assert assess({**answer, "outbox": older}, config.health)["level"] == CRITICAL
    assert assess(answer, HealthSection())["level"] == OK  # 15 s is young for the default


def test_each_sink_is_judged_by_itself_and_named() -> None:
    """Issue 16: a dead broker is a problem even while the table server keeps up."""
    fault = {"code": "amqp_access_refused", "text": "broker refused our login"}
    outbox = {
        "sinks": [
            sink("server"),
            sink("studio", backlog=40, oldest_waiting_age_s=400.0, fault=fault),
            sink(
                "overlay",
                backlog=2,
                oldest_waiting_age_s=1.0,
                consecutive_failures=3,
                last_error="timeout",
            ),
        ]
    }
    problems = status(outbox=outbox)["health"]["problems"]
    texts = [(problem["level"], problem["text"]) for problem in problems]
    assert texts == [
        (
            CRITICAL,
            "sink studio refuses our events (amqp_access_refused): broker refused our login",
        ),
        (CRITICAL, "40 event(s) undelivered to sink studio for 400 s"),
        (WARNING, "delivery to sink overlay failing: timeout"),
    ]
    assert not [text for _, text in texts if "server" in text]
    alone = {"sinks": [sink("server", kind="http", backlog=2, oldest_waiting_age_s=70.0)]}
    (problem,) = status(outbox=alone)["health"]["problems"]
    assert problem["text"] == "2 event(s) undelivered to the table server for 70 s"


@pytest.mark.parametrize(
    "values",
    [{"backlog_warning_s": 0}, {"backlog_critical_s": 5}, {"link_errors_per_minute": "many"}],
)
def test_bad_health_settings_are_named(values: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"\[health\]"):
        from_mapping({"health": values})


def test_an_error_rate_counts_the_last_minute_without_extrapolating() -> None:
    rate = ErrorRate()
    assert rate.per_minute() is None
    rate.sample(0.0, 0)
    rate.sample(0.5, 1)  # one retransmit in the first half second is one, not 120 a minute
    assert rate.per_minute() == 1
    for second in range(5, 125, 5):
        rate.sample(float(second), 1 + second // 5)
    assert rate.per_minute() == 12  # 12 more in the last 60 s (a sample every 5 s)
    rate.sample(200.0, 25)
    assert rate.per_minute() == 0


def test_check_line_leads_with_the_worst_problem() -> None:
    fault = {"device": "scanner", "code": 0x0201, "severity": 1, "text": "lamp dim"}
    answer = status(devices=[device("silent")], table={"faults": [fault]})
    assert check_line(answer).startswith(
        "SHOE CRITICAL - scanner is silent while a shoe is open (+1 more); shoe 3 dealing"
    )


def _plain(text: str, style: str | None = None) -> str:
    return text


_plain.enabled = False  # type: ignore[attr-defined]


# ---- what the mutation run found untested (issue 27) ------------------------------------


def test_a_broken_hash_chain_is_critical_and_says_to_keep_the_journal() -> None:
    broken = {"intact": False, "first_bad": "event seq 9 (input 4)", "problem": "hash differs"}
    answer = status(devices=[device("connected")])
    answer["controller"]["journal_chain"] = broken
    health = assess(answer, HealthSection())
    assert health["level"] == CRITICAL
    (problem,) = health["problems"]
    assert problem["text"] == "journal chain broken at event seq 9 (input 4): hash differs"
    assert "shoe-controller verify --journal COPY" in problem["action"]
    answer["controller"]["journal_chain"] = {"intact": True, "first_bad": None}
    assert assess(answer, HealthSection())["level"] == OK


@pytest.mark.parametrize(("severity", "level"), [(1, WARNING), (2, CRITICAL), (3, CRITICAL)])
def test_a_device_fault_of_severity_error_or_worse_is_critical(severity: int, level: int) -> None:
    # PROTOCOL.md: severity 1 warning, 2 error, 3 fatal.
    fault = {"device": "shuffler", "code": 0x0301, "severity": severity, "text": "jam"}
    answer = status(devices=[device("connected")], table={"faults": [fault]})
    assert levels(answer) == [(level, "shuffler fault 0x0301: jam")]


def test_a_device_not_configured_that_is_disconnected_is_a_warning() -> None:
    # A shuffler plugged in without a [shuffler] section and unplugged again: worth a look,
    # never a stop; while connected it is no problem at all.
    spare = {"device": "shuffler", "configured": False, "status": "disconnected"}
    assert levels(status(devices=[device("connected"), spare])) == [
        (WARNING, "shuffler is disconnected")
    ]
    plugged = {**spare, "status": "connected"}
    assert levels(status(devices=[device("connected"), plugged])) == []


def test_a_backlog_whose_age_is_not_known_yet_is_not_judged_by_age() -> None:
    outbox = {"sinks": [sink("server", backlog=4, oldest_waiting_age_s=None)]}
    assert levels(status(devices=[device("connected")], outbox=outbox)) == []


def test_an_error_rate_keeps_the_sample_at_the_span_start_and_drops_older_ones() -> None:
    rate = ErrorRate(span=60.0)
    rate.sample(0.0, 0)
    rate.sample(60.0, 5)
    rate.sample(120.0, 7)
    assert rate.per_minute() == 2  # 60 s ago is inside the span: 7 - 5, not 7 - 0
    rate.sample(150.0, 9)
    assert rate.per_minute() == 4  # the sample at 60 s is kept until one at or before 90 s
