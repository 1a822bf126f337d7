"""Prometheus metrics on /metrics (docs/metrics.md): scraped over real HTTP from a
real daemon (simulated shoe on a pty, reference table server, real processes) and parsed with
prometheus_client's own text parsers; names after Prometheus's conventions (`_total`,
`_seconds`, base units, the `shoe_` prefix); values that follow the table: cards, rounds,
ACKs, the link's errors, a hold, a sink's backlog; and under the squeeze (R15) nothing that
names a card. The collector itself is also checked from snapshots made up for it.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families
from shoe_testkit.net import free_port
from shoe_testkit.rig import RigOptions, TableRig

from shoe_controller.service.config import ConfigError, from_mapping
from shoe_controller.service.devices import CardTimes
from shoe_controller.service.looplag import LoopLag
from shoe_controller.service.metrics import ACK_BUCKETS_S, DaemonMetrics
from shoe_controller.service.metrics_http import MetricsServer
from shoe_controller.store.records import StoredEvent

RULES = Path(__file__).resolve().parents[2] / "docs" / "alerts" / "shoe-controller.rules.yml"
PROMTOOL = shutil.which("promtool")
CARD = re.compile(r"(?<![A-Za-z0-9])(?:10|[A2-9TJQK])[SHDC♠♥♦♣](?![A-Za-z0-9])")
OPENMETRICS = "application/openmetrics-text; version=1.0.0"


# ---------------------------------------------------------------------- helpers


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Every sample of a Prometheus text page: (name, sorted labels) -> value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(page: Samples, name: str, **labels: str) -> float:
    return page[(name, tuple(sorted(labels.items())))]


def check_names(text: str) -> list[str]:
    """Prometheus's naming rules over every family of a page; returns the family names."""
    names = []
    for family in text_string_to_metric_families(text):
        names.append(family.name)
        assert re.fullmatch(r"[a-z][a-z0-9_]*", family.name), family.name
        assert family.name.startswith(("shoe_", "process_")), family.name  # ours, or standard
        assert family.documentation, f"{family.name} has no HELP"
        # base units only: seconds and bytes, no milliseconds, minutes or kilobytes
        assert not re.search(r"_(ms|milliseconds|minutes|hours|kb|mb|percent)(_|$)", family.name)
        if family.type == "counter":
            assert all(s.name == family.name + "_total" for s in family.samples), family.name
        else:
            assert not family.name.endswith("_total"), f"{family.name}: a {family.type}"
        if family.type == "histogram":
            assert family.name.endswith("_seconds"), family.name  # every histogram is a duration
        if re.search(r"\b(seconds|time|age|stall)\b", family.documentation, re.I) and (
            family.type == "gauge"
        ):
            assert family.name.endswith("_seconds"), f"{family.name}: {family.documentation}"
    return names


class Scraper:
    """GET /metrics of the rig's daemon, over real HTTP, and its control socket."""

    def __init__(self, rig: TableRig, port: int) -> None:
        self.rig = rig
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.socket_path = str(rig.directory / "control.sock")

    def text(self, accept: str | None = None) -> str:
        headers = {"Accept": accept} if accept else {}
        response = httpx.get(self.url, headers=headers, timeout=10.0)
        assert response.status_code == 200
        return response.text

    def page(self) -> Samples:
        return samples(self.text())

    def wait_for(self, what: str, condition: Any) -> Samples:
        """Scrape until `condition(page)` holds; the page it held on."""
        found: list[Samples] = []

        def holds() -> bool:
            try:
                page = self.page()
            except httpx.TransportError:
                return False  # not listening yet
            found[:] = [page]
            return bool(condition(page))

        self.rig.wait_until(holds, what)
        return found[0]

    def request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One request to the control socket as shoectl sends it (root: may act)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(30.0)
            client.connect(self.socket_path)
            client.sendall(json.dumps(request).encode() + b"\n")
            answer = json.loads(client.makefile("rb").readline())
        assert answer["ok"], answer
        return answer["result"]


@pytest.fixture
def directory() -> Iterator[Path]:
    # Not tmp_path: the simulators' control sockets need a path under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="metrics-") as name:
        yield Path(name)


def started(directory: Path, **options: Any) -> tuple[TableRig, Scraper]:
    port = free_port()
    rig = TableRig(directory, RigOptions(metrics={"listen": f"127.0.0.1:{port}"}, **options))
    rig.start()
    scraper = Scraper(rig, port)
    scraper.wait_for("the metrics page", lambda page: value(page, "shoe_status_up") == 1)
    return rig, scraper


def journal_count(rig: TableRig, event_type: str) -> int:
    return sum(1 for event in rig.records.journal_events() if event.type == event_type)


# ---------------------------------------------------------------------- a real daemon


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[TableRig, Scraper]]:
    """One daemon for the tests below, in their order; each leaves the table dealing."""
    with tempfile.TemporaryDirectory(prefix="metrics-") as name:
        rig, scraper = started(Path(name))
        try:
            yield rig, scraper
        finally:
            rig.close()


@pytest.mark.slow
def test_cards_rounds_commits_and_acks_follow_the_journal(live: tuple[TableRig, Scraper]) -> None:
    rig, scraper = live
    rig.dealer.deal(16)
    # what the journal holds, read by another reader of the SQLite file
    dealt, results = journal_count(rig, "card.dealt"), journal_count(rig, "round.result")
    assert results >= 1
    page = scraper.wait_for(
        "the cards counted", lambda p: value(p, "shoe_cards_dealt_total") == dealt
    )
    assert value(page, "shoe_rounds_total", trial="false") == results
    status = scraper.request({"cmd": "status"})["table"]
    assert value(page, "shoe_shoe_cards_drawn") == status["cards_dealt"]  # burn included
    assert status["cards_dealt"] == rig.shoe.request("status")["dealt"]  # as the shoe says
    assert value(page, "shoe_shoe_cards_left") == status["cards_left"]
    assert value(page, "shoe_shoe_rounds") == status["real_rounds"] >= results
    assert value(page, "shoe_journal_last_seq") == rig.records.last_seq()
    # every CARD frame was ACKed once, after its commit: one observation each
    card_frames = sum(1 for item in rig.records.journal_inputs() if item["type"] == "card")
    assert value(page, "shoe_card_ack_seconds_count", device="scanner") == card_frames
    assert value(page, "shoe_card_ack_seconds_bucket", device="scanner", le="+Inf") == (card_frames)
    for stage in ("decode", "translate", "store", "ack"):  # where each card's time went
        where = {"device": "scanner", "stage": stage}
        assert value(page, "shoe_card_stage_seconds_count", **where) == card_frames
        assert value(page, "shoe_card_stage_seconds_sum", **where) > 0
    assert value(page, "shoe_journal_commit_seconds_count") > card_frames  # + HELLO, started
    assert value(page, "shoe_journal_commit_seconds_sum") > 0
    # the loop's ticker notes its lateness every 0.1 s: a quick deal may end before its first
    scraper.wait_for("a loop tick", lambda p: value(p, "shoe_loop_lag_seconds_count") > 0)
    assert value(page, "shoe_health_status") == 0
    assert value(page, "shoe_table_held") == 0
    assert value(page, "shoe_device_connected", device="scanner") == 1


@pytest.mark.slow
def test_the_links_errors_and_reconnects_are_counted_as_the_link_counts_them(
    live: tuple[TableRig, Scraper],
) -> None:
    rig, scraper = live
    rig.shoe.request("flip", count=3)  # bits flipped on the wire: a spoilt frame, resent
    rig.dealer.deal(3)
    rig.shoe.request("unplug", seconds=0.3)
    scraper.wait_for(
        "the shoe back after its unplug",
        lambda p: (
            value(p, "shoe_device_reconnects_total", device="scanner") >= 1
            and value(p, "shoe_device_connected", device="scanner") == 1
        ),
    )
    rig.dealer.deal(2)
    page = scraper.page()
    (scanner,) = scraper.request({"cmd": "devices"})["devices"]
    link, connection = scanner["link"], scanner["connection"]
    bad = {
        "cobs": "cobs_errors",
        "oversize": "oversize",
        "bad_version": "bad_version",
        "malformed": "malformed",
    }
    assert link["crc_errors"] + sum(link[key] for key in bad.values()) >= 1, link
    expected = [
        ("shoe_device_link_crc_errors_total", {}, link["crc_errors"]),
        ("shoe_device_link_naks_total", {"direction": "out"}, link["naks_out"]),
        ("shoe_device_link_naks_total", {"direction": "in"}, link["naks_in"]),
        ("shoe_device_link_retransmits_total", {}, link["retransmits"]),
        ("shoe_device_link_frames_received_total", {}, link["frames_in"]),
        ("shoe_device_reconnects_total", {}, connection["reconnects"]),
        ("shoe_device_silences_total", {}, connection["silences"]),
        *(
            ("shoe_device_link_bad_frames_total", {"reason": reason}, link[key])
            for reason, key in bad.items()
        ),
    ]
    for name, labels, count in expected:
        assert value(page, name, device="scanner", **labels) == count, (name, labels)
    assert value(page, "shoe_device_silent", device="scanner") == 0


@pytest.mark.slow
def test_a_hold_shows_held_with_its_code(live: tuple[TableRig, Scraper]) -> None:
    _, scraper = live
    held = scraper.request({"cmd": "act", "action": "hold", "by": "sup7", "reason": "check"})
    assert held["accepted"]
    page = scraper.wait_for("the hold", lambda p: value(p, "shoe_table_held") == 1)
    assert value(page, "shoe_holds", code="supervisor_hold") == 1
    assert value(page, "shoe_table_state", state="held") == 1
    assert value(page, "shoe_health_status") == 2  # CRITICAL, as shoectl check says
    assert value(page, "shoe_health_problems", level="CRITICAL") >= 1
    assert value(page, "shoe_supervisor_alerts_total", code="supervisor_hold") == 1
    resumed = scraper.request({"cmd": "act", "action": "resume", "by": "sup7", "reason": "ok"})
    assert resumed["accepted"]
    page = scraper.wait_for("the resume", lambda p: value(p, "shoe_table_held") == 0)
    assert not any(name == "shoe_holds" for name, _ in page)  # no hold, no series
    assert value(page, "shoe_supervisor_alerts_total", code="supervisor_hold") == 1  # counted


@pytest.mark.slow
def test_a_sinks_backlog_and_its_age_while_the_table_server_is_down(
    live: tuple[TableRig, Scraper],
) -> None:
    rig, scraper = live
    rig.wait_delivered()
    rig.kill_receiver()
    rig.dealer.deal(2)
    page = scraper.wait_for(
        "the backlog and a failed attempt",
        lambda p: value(p, "shoe_sink_consecutive_failures", sink="server") >= 1,
    )
    backlog = value(page, "shoe_sink_backlog_events", sink="server")
    last = rig.records.server_last_seq()
    assert backlog >= 2  # the two cards' events at least
    assert value(page, "shoe_sink_last_seq", sink="server") == last
    assert backlog == last - value(page, "shoe_sink_delivered_through", sink="server")
    assert value(page, "shoe_sink_oldest_undelivered_age_seconds", sink="server") > 0
    assert value(page, "shoe_sink_fault", sink="server") == 0  # down is not a refusal
    assert value(page, "shoe_health_status") == 1  # delivery failing and retried: WARNING
    rig.start_receiver()
    page = scraper.wait_for(
        "the backlog delivered", lambda p: value(p, "shoe_sink_backlog_events", sink="server") == 0
    )
    assert value(page, "shoe_sink_oldest_undelivered_age_seconds", sink="server") == 0
    assert value(page, "shoe_sink_delivered_through", sink="server") == last
    assert value(page, "shoe_sink_last_delivered_timestamp_seconds", sink="server") > 0


@pytest.mark.slow
def test_every_family_follows_prometheus_naming_in_both_formats(
    live: tuple[TableRig, Scraper],
) -> None:
    _, scraper = live
    names = check_names(scraper.text())
    for name in (
        "shoe_cards_dealt",
        "shoe_journal_commit_seconds",
        "shoe_card_ack_seconds",
        "shoe_loop_lag_recent_worst_seconds",
        "process_cpu_seconds",
    ):
        assert name in names
    families = list(openmetrics_families(scraper.text(OPENMETRICS)))  # its own, stricter parser
    assert {family.name for family in families} >= set(names)
    assert httpx.get(scraper.url.removesuffix("metrics"), timeout=10.0).status_code == 200
    assert httpx.get(scraper.url + "x", timeout=10.0).status_code == 404


@pytest.mark.slow
def test_the_sample_rules_use_only_metrics_the_daemon_serves(
    live: tuple[TableRig, Scraper],
) -> None:
    _, scraper = live
    text = scraper.text()
    served = set(re.findall(r"^# TYPE (\S+)", text, re.M)) | {name for name, _ in samples(text)}
    served |= {f"{name}_{part}" for name in served for part in ("bucket", "count", "sum")}
    rules = [
        rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]
    ]
    used = {name for rule in rules for name in re.findall(r"\bshoe_[a-z_]+", rule["expr"])}
    assert used  # the file names metrics, and each of them is on the page
    assert used <= served, used - served
    for rule in rules:
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"].startswith("{{ $labels.instance }}: ")


@pytest.mark.slow
def test_under_the_squeeze_the_metrics_name_no_card(directory: Path) -> None:
    """R15: scraped while squeezed cards are hidden and after: no rank or suit anywhere."""
    rig, scraper = started(directory, squeeze=True)
    try:
        pages = []
        for _ in range(12):
            rig.dealer.deal(1, wait=True)  # the dealer reveals once four cards are out
            pages.append(scraper.text())
        hidden = [
            event
            for event in rig.records.journal_events()
            if event.type == "card.dealt" and event.data.get("card") is None
        ]
        assert hidden  # cards were dealt face down, and scraped while they were
        for text in pages:
            assert not CARD.search(text), CARD.search(text)
        last = samples(pages[-1])
        assert value(last, "shoe_cards_dealt_total") == journal_count(rig, "card.dealt")
        check_names(pages[-1])
    finally:
        rig.close()


# ---------------------------------------------------------------------- the collector


def status_snapshot(**table: Any) -> dict[str, Any]:
    """A status answer as ControlService.health_status() gives it, made up for the test."""
    return {
        "controller": {"journal_chain": {"intact": True}, "replay_mismatch": None},
        "health": {
            "level": 2,
            "problems": [{"level": 2}, {"level": 1}, {"level": 1}],
        },
        "table": {
            "state": "held",
            "shoe": 3,
            "shoe_open": True,
            "cards_dealt": 40,
            "cards_left": 376,
            "real_rounds": 7,
            "holds": [{"code": "duplicate_card"}, {"code": "tamper"}, {"code": "tamper"}],
            "faults": [{"device": "journal", "code": 0xF004}],
            **table,
        },
        "devices": [
            {
                "device": "scanner",
                "configured": True,
                "status": "silent",
                "connection": {"reconnects": 4, "silences": 3, "open_failures": 1},
                "link": {
                    "frames_in": 90,
                    "retransmits": 5,
                    "crc_errors": 2,
                    "duplicates": 1,
                    "naks_in": 6,
                    "naks_out": 7,
                },
            },
            {
                "device": "ascii",
                "configured": True,
                "status": "connected",
                "connection": {"reconnects": 0},
                "adapter": {"garbled": 9},
            },
            {"device": "stranger", "configured": False, "status": "disconnected"},
        ],
        "outbox": {
            "last_seq": 120,
            "sinks": [
                {
                    "name": "server",
                    "backlog": 0,
                    "oldest_waiting_age_s": None,
                    "delivered_through": 120,
                    "last_seq": 120,
                    "consecutive_failures": 0,
                    "fault": None,
                    "last_delivered_at": 1_700_000_000.0,
                },
                {
                    "name": "broker",
                    "backlog": 30,
                    "oldest_waiting_age_s": 412.5,
                    "delivered_through": None,
                    "last_seq": 90,
                    "consecutive_failures": 11,
                    "fault": {"code": "amqp_access_refused"},
                    "last_delivered_at": None,
                },
            ],
        },
    }


def made_up(status: Any) -> DaemonMetrics:
    lag = LoopLag(clock=lambda: 100.0)
    lag.note(0.25)
    return DaemonMetrics(
        status, lambda: lag, journal_fault=lambda: "disk full", version="9.9", table_id="07"
    )


def scrape(metrics: DaemonMetrics) -> str:
    body, content_type = metrics.exposition(None)
    assert content_type.startswith("text/plain")
    return body.decode()


def stored(seq: int, event_type: str, **data: Any) -> StoredEvent:
    return StoredEvent(seq, f"c:{seq}", event_type, "2026-01-01T00:00:00.000000Z", 1, 1, data, seq)


def test_the_collector_reads_each_part_of_a_snapshot() -> None:
    text = scrape(made_up(status_snapshot))
    check_names(text)
    page = samples(text)
    assert value(page, "shoe_build_info", version="9.9", table="07", controller_id="") == 1
    assert value(page, "shoe_journal_fault") == 1
    assert value(page, "shoe_health_status") == 2
    assert value(page, "shoe_health_problems", level="WARNING") == 2
    assert value(page, "shoe_health_problems", level="CRITICAL") == 1
    assert value(page, "shoe_table_held") == 1
    assert value(page, "shoe_holds", code="tamper") == 2
    assert value(page, "shoe_holds", code="duplicate_card") == 1
    assert value(page, "shoe_shoe_cards_left") == 376
    assert value(page, "shoe_device_silent", device="scanner") == 1
    assert value(page, "shoe_device_connected", device="ascii") == 1
    assert ("shoe_device_connected", (("device", "stranger"),)) not in page  # not configured
    assert value(page, "shoe_device_faults", device="journal") == 1
    assert value(page, "shoe_device_faults", device="scanner") == 0
    assert value(page, "shoe_device_reconnects_total", device="scanner") == 4
    assert value(page, "shoe_device_link_naks_total", device="scanner", direction="in") == 6
    assert value(page, "shoe_device_link_naks_total", device="scanner", direction="out") == 7
    assert value(page, "shoe_device_garbled_total", device="ascii") == 9
    assert value(page, "shoe_sink_backlog_events", sink="broker") == 30
    assert value(page, "shoe_sink_oldest_undelivered_age_seconds", sink="broker") == 412.5
    assert value(page, "shoe_sink_oldest_undelivered_age_seconds", sink="server") == 0
    assert value(page, "shoe_sink_fault", sink="broker") == 1
    assert ("shoe_sink_delivered_through", (("sink", "broker"),)) not in page  # not yet known
    assert value(page, "shoe_loop_lag_recent_worst_seconds") == 0.25


def test_the_hooks_fill_their_histograms() -> None:
    metrics = made_up(status_snapshot)
    observed = [0.0004, 0.003, 0.003, 0.08, 7.0]
    for seconds in observed:
        # a card's stages: what it took to ACK (translate + store + ack) is `seconds`
        times = CardTimes(decode=0.00007, translate=0.0, store=seconds * 0.75, ack=seconds / 4)
        metrics.observe_card_ack("scanner", times)
        metrics.observe_commit(seconds)
    page = samples(scrape(metrics))
    stage = {"device": "scanner"}
    assert value(page, "shoe_card_stage_seconds_count", **stage, stage="decode") == 5
    assert value(page, "shoe_card_stage_seconds_bucket", **stage, stage="decode", le="0.0001") == 5
    assert value(page, "shoe_card_stage_seconds_bucket", **stage, stage="decode", le="5e-05") == 0
    assert value(page, "shoe_card_stage_seconds_sum", **stage, stage="store") == pytest.approx(
        sum(observed) * 0.75
    )
    for bound in ACK_BUCKETS_S:
        expected = sum(1 for seconds in observed if seconds <= bound)
        assert value(page, "shoe_card_ack_seconds_bucket", device="scanner", le=str(bound)) == (
            expected
        )
    assert value(page, "shoe_card_ack_seconds_bucket", device="scanner", le="+Inf") == 5
    assert value(page, "shoe_journal_commit_seconds_count") == 5
    assert value(page, "shoe_journal_commit_seconds_sum") == pytest.approx(sum(observed))


def test_committed_events_are_counted_by_kind() -> None:
    metrics = made_up(status_snapshot)
    metrics.on_stored(
        [
            stored(1, "round.started", trial=True),
            stored(2, "card.dealt", card=None),  # a squeezed card counts all the same
            stored(3, "round.result"),
            stored(4, "round.started", trial=False),
            stored(5, "card.dealt", card="KH"),
            stored(6, "round.result"),
            stored(7, "round.result"),
            stored(8, "round.voided", reason="supervisor"),
            stored(9, "round.voided", reason="a supervisor's own words"),
            stored(10, "procedure.alert", code="factory_order", needs_supervisor=True),
            stored(11, "procedure.alert", code="command_refused", needs_supervisor=False),
            stored(12, "security.alert", code="tamper"),
            stored(13, "shoe.ended"),
        ]
    )
    text = scrape(metrics)
    page = samples(text)
    assert value(page, "shoe_cards_dealt_total") == 2
    assert value(page, "shoe_rounds_total", trial="true") == 1
    assert value(page, "shoe_rounds_total", trial="false") == 2
    assert value(page, "shoe_rounds_voided_total", reason="supervisor") == 1
    assert value(page, "shoe_rounds_voided_total", reason="other") == 1  # a label stays a code
    assert value(page, "shoe_supervisor_alerts_total", code="factory_order") == 1
    assert value(page, "shoe_supervisor_alerts_total", code="tamper") == 1
    assert "command_refused" not in text
    assert value(page, "shoe_shoes_ended_total") == 1
    assert not CARD.search(text)


def test_a_status_that_cannot_be_read_leaves_the_rest_of_the_page() -> None:
    def broken() -> dict[str, Any]:
        raise OSError("disk I/O error")

    for status in (broken, lambda: None):  # a failing read; the control service not up yet
        page = samples(scrape(made_up(status)))
        assert value(page, "shoe_status_up") == 0
        assert value(page, "shoe_journal_fault") == 1
        assert ("shoe_loop_lag_worst_seconds", ()) in page
        assert not any(name == "shoe_health_status" for name, _ in page)


def test_each_daemon_has_a_registry_of_its_own() -> None:
    first, second = made_up(status_snapshot), made_up(status_snapshot)
    first.observe_commit(0.5)
    assert value(samples(scrape(first)), "shoe_journal_commit_seconds_count") == 1
    assert value(samples(scrape(second)), "shoe_journal_commit_seconds_count") == 0


def test_the_server_answers_and_a_taken_address_is_an_os_error() -> None:
    async def run() -> None:
        metrics = made_up(status_snapshot)
        port = free_port()
        server = MetricsServer(f"127.0.0.1:{port}", metrics.exposition)
        await server.start()
        try:
            taken = MetricsServer(f"127.0.0.1:{port}", metrics.exposition)
            with pytest.raises(OSError, match="address already in use"):
                await taken.start()
            async with httpx.AsyncClient() as client:
                plain = await client.get(server.url)
                open_metrics = await client.get(server.url, headers={"Accept": OPENMETRICS})
        finally:
            await server.close()
        assert plain.headers["content-type"].startswith("text/plain; version=0.0.4")
        assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
        assert open_metrics.text.endswith("# EOF\n")
        assert samples(plain.text)[("shoe_table_held", ())] == 1

    asyncio.run(run())


# ---------------------------------------------------------------------- the sample rules


def rendered(alert: str, labels: Mapping[str, str]) -> dict[str, str]:
    """The alert's annotations with its labels filled in, as Prometheus renders them."""
    rules = [
        rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]
    ]
    (rule,) = [rule for rule in rules if rule["alert"] == alert]
    return {
        key: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)
        for key, text in rule["annotations"].items()
    }


def expected_alert(alert: str, severity: str, **labels: str) -> dict[str, Any]:
    labels = {"instance": "t07:9720", "job": "shoe-controller", **labels}
    return {
        "exp_labels": {**labels, "severity": severity},
        "exp_annotations": rendered(alert, labels),
    }


def series(name: str, values: str, **labels: str) -> dict[str, str]:
    tags = ", ".join(
        f'{key}="{value}"'
        for key, value in {"instance": "t07:9720", "job": "shoe-controller", **labels}.items()
    )
    return {"series": f"{name}{{{tags}}}", "values": values}


@pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian: apt-get install prometheus)"
)
def test_promtool_finds_the_sample_rules_valid_and_firing(tmp_path: Path) -> None:
    """`promtool check rules`, and `promtool test rules` on 15 s samples: a hold standing,
    a silent shoe while a shoe is open, a backlog growing old; none fires before its time."""
    assert PROMTOOL is not None
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    age = "0+15x40"  # the oldest event waiting 15 s longer at each sample
    hold = expected_alert("ShoeTableHeld", "warning", code="supervisor_hold")
    silent = expected_alert("ShoeDeviceSilent", "critical", device="scanner")
    aging = expected_alert("ShoeBacklogAging", "warning", sink="broker")
    old = expected_alert("ShoeBacklogOld", "critical", sink="broker")
    unit = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "15s",
        "tests": [
            {
                "interval": "15s",
                "input_series": [
                    series("shoe_holds", "1x40", code="supervisor_hold"),
                    series("shoe_device_connected", "1 1 0x40", device="scanner"),
                    series("shoe_shoe_open", "1x40"),
                    series("shoe_sink_oldest_undelivered_age_seconds", age, sink="broker"),
                ],
                "alert_rule_test": [
                    {"eval_time": "4m", "alertname": "ShoeTableHeld", "exp_alerts": []},
                    {"eval_time": "6m", "alertname": "ShoeTableHeld", "exp_alerts": [hold]},
                    {"eval_time": "45s", "alertname": "ShoeDeviceSilent", "exp_alerts": []},
                    {"eval_time": "1m30s", "alertname": "ShoeDeviceSilent", "exp_alerts": [silent]},
                    {"eval_time": "1m", "alertname": "ShoeBacklogAging", "exp_alerts": []},
                    {"eval_time": "2m", "alertname": "ShoeBacklogAging", "exp_alerts": [aging]},
                    {"eval_time": "5m", "alertname": "ShoeBacklogOld", "exp_alerts": []},
                    {"eval_time": "6m", "alertname": "ShoeBacklogOld", "exp_alerts": [old]},
                ],
            }
        ],
    }
    tests = tmp_path / "rules_test.yml"
    tests.write_text(yaml.safe_dump(unit))
    tested = subprocess.run(
        [PROMTOOL, "test", "rules", str(tests)], capture_output=True, text=True, check=False
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


# ---------------------------------------------------------------------- configuration


def test_metrics_are_off_unless_an_address_is_given() -> None:
    assert from_mapping({}).metrics.listen == ""
    assert from_mapping({"metrics": {"listen": "[::1]:9720"}}).metrics.listen == "[::1]:9720"


@pytest.mark.parametrize(
    ("listen", "says"),
    [
        ("9720", "listen must be host:port"),
        ("127.0.0.1:0", "the port must be a number from 1 to 65535"),
        ("::1:9720", "an IPv6 address goes in brackets"),
    ],
)
def test_a_bad_address_is_refused_naming_the_key(listen: str, says: str) -> None:
    with pytest.raises(ConfigError, match=r"^\[metrics\] ") as caught:
        from_mapping({"metrics": {"listen": listen}})
    assert says in str(caught.value)


def test_the_scoreboards_address_is_refused() -> None:
    raw = {"metrics": {"listen": "127.0.0.1:8080"}, "scoreboard": {"listen": "127.0.0.1:8080"}}
    with pytest.raises(ConfigError, match=r"\[metrics\] listen = '127.0.0.1:8080' is \[score"):
        from_mapping(raw)
