"""The one health model (service/health.py) on status answers, and how shoectl shows it."""

from __future__ import annotations

from typing import Any

import pytest

from shoe_controller.cli.shoectl.render import hold_text
from shoe_controller.service.config import ConfigError, HealthSection, from_mapping
from shoe_controller.service.health import (
    CRITICAL,
    OK,
    WARNING,
    ErrorRate,
    assess,
    check_line,
    summary,
)
from shoe_controller.vocab import words
from shoe_controller.vocab.protocol import JOURNAL_SPACE_LOW


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
    state_words = words.device_state(state)  # `open_failed` is said "not opened"
    open_shoe = status(devices=[device(state)])
    assert levels(open_shoe) == [(CRITICAL, f"scanner is {state_words} while a shoe is open")]
    assert "cable and power" in open_shoe["health"]["problems"][0]["action"]
    between_shoes = status(devices=[device(state)], table={"shoe_open": False})
    assert levels(between_shoes) == [(WARNING, f"scanner is {state_words}")]


def test_a_table_refusing_cards_is_critical_with_the_reason() -> None:
    refusing = {"code": "no_shoe", "text": "no shoe is open", "since": "t", "count": 4}
    answer = status(table={"refusing_cards": refusing, "shoe_open": False})
    ((level, text),) = levels(answer)
    assert level == CRITICAL
    assert text.startswith("the table refuses the shoe's cards (no shoe open, 4 since t)")


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
        "device fault: jam (ways out: resume, change-shoe;"
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
    """A dead broker is a problem even while the table server keeps up."""
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


# ---- what the mutation run found untested ------------------------------------


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
    # docs/spec-protocol.md: severity 1 warning, 2 error, 3 fatal.
    fault = {"device": "shuffler", "code": 0x0301, "severity": severity, "text": "jam"}
    answer = status(devices=[device("connected")], table={"faults": [fault]})
    assert levels(answer) == [(level, "shuffler: device fault 0x0301: jam")]


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


# ---- the second mutation run: each problem as the pit boss reads it (level, text, action) ------


def problems(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return answer["health"]["problems"]


def one_problem(level: int, text: str, action: str) -> dict[str, Any]:
    names = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL"}
    return {"level": level, "status": names[level], "text": text, "action": action}


def with_controller(**fields: Any) -> dict[str, Any]:
    answer = status(devices=[device("connected")])
    answer["controller"] |= fields
    answer["health"] = assess(answer, HealthSection())
    return answer


def test_a_journal_that_cannot_store_is_critical_and_says_the_frames_wait() -> None:
    answer = with_controller(journal_fault="disk I/O error")
    assert answer["health"]["status"] == "CRITICAL"
    assert problems(answer) == [
        one_problem(
            CRITICAL,
            "journal fault: disk I/O error",
            "technician: free or fix the journal's disk; the shoe's frames wait unacknowledged",
        )
    ]


def test_a_broken_hash_chain_says_exactly_how_to_keep_the_evidence() -> None:
    broken = {"intact": False, "first_bad": "event seq 9", "problem": "hash differs"}
    assert problems(with_controller(journal_chain=broken)) == [
        one_problem(
            CRITICAL,
            "journal chain broken at event seq 9: hash differs",
            "technician: keep the journal as it is (nothing is repaired or pruned); copy it,"
            " `shoe-controller verify --journal COPY`, and report it to compliance",
        )
    ]


def test_a_replay_that_differs_from_the_journal_is_a_warning_to_report() -> None:
    answer = with_controller(replay_mismatch="event 12: round.result differs")
    assert answer["health"]["level"] == WARNING
    assert problems(answer) == [
        one_problem(
            WARNING,
            "replay differs from the journal: event 12: round.result differs",
            "technician: keep the journal (shoe-controller export) and report it",
        )
    ]


def test_a_hold_with_nothing_to_wait_for_names_only_its_commands() -> None:
    hold = {"code": "missed_card", "text": "card #5 was not scanned", "actions": ["missed"],
            "waiting_for": None}  # fmt: skip
    assert problems(status(table={"holds": [hold]})) == [
        one_problem(
            CRITICAL,
            "table held (missed card): card #5 was not scanned",
            "supervisor: shoectl missed",
        )
    ]


def test_a_table_refusing_cards_tells_the_dealer_to_stop() -> None:
    refusing = {"code": "counter_went_back", "text": "card counter 2 after 3", "since": "t",
                "count": 2}  # fmt: skip
    assert problems(status(table={"refusing_cards": refusing})) == [
        one_problem(
            CRITICAL,
            "the table refuses the shoe's cards (card counter went back, 2 since t):"
            " card counter 2 after 3",
            "stop dealing; supervisor: see the text (load or start a shoe, check the shoe)",
        )
    ]


def test_a_device_fault_sends_the_technician_to_the_devices_manual() -> None:
    fault = {"device": "shuffler", "code": 0x0301, "severity": 2, "text": "jam"}
    assert problems(status(table={"faults": [fault]})) == [
        one_problem(
            CRITICAL,
            "shuffler: device fault 0x0301: jam",
            "technician: see the shuffler's manual for this code",
        )
    ]


def test_the_hosts_own_fault_says_what_to_free_since_no_manual_does() -> None:
    fault = {"device": "journal", "code": JOURNAL_SPACE_LOW, "severity": 2,
             "text": "40 MB free on the journal's disk"}  # fmt: skip
    assert problems(status(table={"faults": [fault]})) == [
        one_problem(
            CRITICAL,
            "journal: journal disk nearly full (fault 0xf004): 40 MB free on the journal's disk",
            "technician: free space on the journal's disk, or bring back the sinks that hold"
            " events (shoectl outbox); supervisor: resume once the fault is cleared",
        )
    ]


def test_a_configured_device_still_starting_is_a_warning() -> None:
    assert problems(status(devices=[device("starting")])) == [
        one_problem(WARNING, "scanner is starting", "wait, or check the scanner's cable")
    ]


def test_a_device_seen_without_a_section_and_gone_says_to_check_it() -> None:
    spare = {"device": "shuffler", "configured": False, "status": "disconnected"}
    assert problems(status(devices=[spare])) == [
        one_problem(WARNING, "shuffler is disconnected", "check the shuffler")
    ]


def test_noisy_link_errors_send_the_technician_to_the_cable() -> None:
    noisy = device("connected", error_rates={"retransmits": 30, "crc_errors": None})
    assert problems(status(devices=[noisy])) == [
        one_problem(
            WARNING,
            "scanner: 30 retransmits a minute (more than 20)",
            "technician: check the scanner's cable, plugs and baud rate",
        )
    ]


def test_a_sink_refusing_our_events_says_to_fix_it_and_restart() -> None:
    fault = {"code": "http_401", "text": "key refused"}
    outbox = {"sinks": [sink("overlay", kind="http", fault=fault)]}
    assert problems(status(devices=[device("connected")], outbox=outbox)) == [
        one_problem(
            CRITICAL,
            "sink overlay refuses our events (http_401): key refused",
            "technician: fix sink overlay or its credentials (docs/delivery.md), then restart",
        )
    ]


def backlog_of(age: float) -> list[dict[str, Any]]:
    outbox = {"sinks": [sink("studio", kind="amqp", target="amqp://broker", backlog=7,
                             oldest_waiting_age_s=age)]}  # fmt: skip
    return problems(status(devices=[device("connected")], outbox=outbox))


@pytest.mark.parametrize(("age", "level"), [(60.0, WARNING), (299.9, WARNING), (300.0, CRITICAL)])
def test_a_backlog_is_judged_from_the_configured_ages_on(age: float, level: int) -> None:
    # [health] backlog_warning_s 60 and backlog_critical_s 300: "waiting 60 s or more".
    assert backlog_of(age) == [
        one_problem(
            level,
            f"7 event(s) undelivered to sink studio for {age:.0f} s",
            "technician: check sink studio (amqp://broker) and the network (shoectl outbox)",
        )
    ]


def test_a_backlog_younger_than_the_warning_age_is_no_problem() -> None:
    assert backlog_of(59.9) == []


def test_delivery_failing_and_retried_says_it_retries_by_itself() -> None:
    failing = sink("overlay", kind="http", consecutive_failures=2, last_error="timeout")
    assert problems(status(devices=[device("connected")], outbox={"sinks": [failing]})) == [
        one_problem(
            WARNING,
            "delivery to sink overlay failing: timeout",
            "retrying by itself; technician: check sink overlay if it lasts",
        )
    ]


@pytest.mark.parametrize(
    ("name", "kind", "label"),
    [("server", "http", "the table server"), ("server", "amqp", "sink server"),
     ("overlay", "http", "sink overlay")],
)  # fmt: skip
def test_only_the_http_sink_named_server_is_the_table_server(
    name: str, kind: str, label: str
) -> None:
    # A [[sink]] of kind "amqp" may be named "server" when there is no [server] section.
    failing = sink(name, kind=kind, consecutive_failures=1, last_error="refused")
    (problem,) = problems(status(devices=[device("connected")], outbox={"sinks": [failing]}))
    assert problem["text"] == f"delivery to {label} failing: refused"


def test_check_line_gives_the_summary_and_the_perfdata_exactly() -> None:
    answer = status(
        devices=[device("connected")],
        table={"round": {"number": 12}, "real_rounds": 11, "cards_dealt": 70, "cards_left": 346},
        outbox={"backlog": 5},
    )
    assert check_line(answer) == (
        "SHOE OK - shoe 3 dealing, round 12, backlog 5"
        " | backlog=5 rounds=11 cards_dealt=70 cards_left=346"
    )


def test_check_line_before_anything_is_dealt_counts_zeros_and_leaves_out_cards_left() -> None:
    answer = status(
        devices=[device("connected")],
        table={"state": "idle", "shoe_open": False, "round": None, "real_rounds": 0,
               "cards_dealt": 0, "cards_left": None},
        outbox={"backlog": 0},
    )  # fmt: skip
    assert check_line(answer) == (
        "SHOE OK - shoe 3 idle, backlog 0 | backlog=0 rounds=0 cards_dealt=0"
    )


def test_between_shoes_the_check_line_says_no_shoe_is_open() -> None:
    answer = status(
        devices=[device("connected")],
        table={"state": "no_shoe", "shoe": 2, "shoe_open": False, "round": None,
               "real_rounds": 0, "cards_dealt": 0, "cards_left": None},
        outbox={"backlog": 0},
    )  # fmt: skip
    assert check_line(answer) == (
        "SHOE OK - no shoe open, backlog 0 | backlog=0 rounds=0 cards_dealt=0"
    )


def test_the_summary_leads_with_a_single_problem_without_counting_more() -> None:
    answer = status(devices=[device("starting")], table={"round": {"number": 4}})
    assert summary(answer) == "scanner is starting; shoe 3 dealing, round 4, backlog 0"


def test_a_status_answer_without_holds_faults_or_sinks_is_judged_by_what_it_has() -> None:
    # A part left out counts as empty: assess judges any status answer, not only the daemon's.
    answer = {
        "controller": {},
        "table": {"shoe": 3, "state": "dealing", "shoe_open": True},
        "devices": [device("lost")],
        "outbox": {"backlog": 0},
    }
    health = assess(answer, HealthSection())
    assert health == {
        "level": CRITICAL,
        "status": "CRITICAL",
        "problems": [
            one_problem(
                CRITICAL,
                "scanner is lost while a shoe is open",
                "stop dealing; technician: check the scanner's cable and power (shoectl devices)",
            )
        ],
    }


def test_a_sink_named_server_whose_kind_is_not_given_is_the_table_server() -> None:
    # The [server] section's sink is an http one: a status without kinds names it so.
    failing = sink("server", consecutive_failures=1, last_error="refused")
    (problem,) = problems(status(devices=[device("connected")], outbox={"sinks": [failing]}))
    assert problem["text"] == "delivery to the table server failing: refused"


def test_a_fault_code_that_is_not_a_number_is_shown_as_it_came() -> None:
    fault = {"device": "scanner", "code": "E7", "severity": 1, "text": "lamp dim"}
    (problem,) = problems(status(table={"faults": [fault]}))
    assert problem["text"] == "scanner: device fault E7: lamp dim"
