"""The pace for Prometheus (service/pace_metrics.py): the recorded shift of
tests/data/shift-29.jsonl journaled through a real controller, every commit handed to the
daemon's collector as the daemon hands it, the page parsed with prometheus_client's parser;
the figures are the hand count of tests/cli/test_pace_report.py."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from shoe_testkit.control import REPO

from shoe_controller.service.looplag import LoopLag
from shoe_controller.service.metrics import DaemonMetrics
from shoe_controller.service.pace_metrics import PaceMetrics
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.store.records import StoredEvent
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.inputs import input_from_json

SHIFT = REPO / "tests" / "data" / "shift-29.jsonl"


def test_the_recorded_shift_on_the_metrics_page(tmp_path: Path) -> None:
    metrics = DaemonMetrics(lambda: None, LoopLag)
    with Journal.open(tmp_path / "journal.db", "tbl-07-shoe") as journal:
        controller = Controller(
            TableConfig(betting="server", insurance=False), journal, on_stored=metrics.on_stored
        )
        for line in SHIFT.read_text(encoding="utf-8").splitlines():
            controller.submit(input_from_json(json.loads(line)))
    body, _ = metrics.exposition(None)
    page = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }
    assert page["shoe_round_seconds_count", ()] == 34
    assert page["shoe_round_seconds_bucket", (("le", "15.0"),)] == 33  # one took 45 s
    assert page["shoe_round_seconds_bucket", (("le", "40.0"),)] == 33
    assert page["shoe_round_seconds_bucket", (("le", "50.0"),)] == 34
    assert page["shoe_round_seconds_sum", ()] == 33 * 15 + 45
    assert page["shoe_bets_closed_to_first_card_seconds_count", ()] == 34  # the void's too
    assert page["shoe_bets_closed_to_first_card_seconds_sum", ()] == 340
    assert page["shoe_shoe_downtime_seconds_count", ()] == 2
    assert page["shoe_shoe_downtime_seconds_sum", ()] == 550 + 670
    assert page["shoe_rounds_by_dealer_total", (("dealer", "D-1"),)] == 17
    assert page["shoe_rounds_by_dealer_total", (("dealer", "D-2"),)] == 17


# ------------------------------------------------------- the collector on events written here


def _stored(kind: str, at: str, **data: object) -> StoredEvent:
    return StoredEvent(0, "x", kind, f"2026-11-30T{at}.000000Z", 1, 1, dict(data), 0)


def _page(pace: PaceMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(pace)
    text = generate_latest(registry).decode()
    assert 'shoe_round_seconds_bucket{le="+Inf"}' in text  # Prometheus's spelling
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_rounds_are_counted_to_the_dealer_in_charge_or_none() -> None:
    pace = PaceMetrics()
    sign = "supervisor.action"
    pace.on_stored([
        _stored("round.started", "06:00:00"),
        _stored("round.result", "06:00:20"),  # before anyone signed in: "none"
        _stored(sign, "06:01:00", action="dealer", details={"dealer": "D-1", "signed": "in"}),
        _stored("round.started", "06:02:00"),
        _stored("round.result", "06:02:15"),
        _stored(sign, "06:03:00", action="dealer", details={"dealer": "D-1", "signed": "out"}),
        _stored("round.started", "06:04:00"),
        _stored("round.result", "06:04:10"),  # signed out, though named: "none"
        _stored(sign, "06:05:00", action="dealer", details={"dealer": "D-2", "signed": "in"}),
        _stored(sign, "06:05:30", action="dealer"),  # no details: signed out
        _stored("round.started", "06:06:00"),
        _stored("round.result", "06:06:30"),
    ])  # fmt: skip
    page = _page(pace)
    by_dealer = {labels: value for (name, labels), value in page.items()
                 if name == "shoe_rounds_by_dealer_total"}  # fmt: skip
    assert by_dealer == {(("dealer", "none"),): 3, (("dealer", "D-1"),): 1}
    assert page["shoe_shoe_downtime_seconds_count", ()] == 0  # no shoe ended since start


def test_a_round_over_every_bucket_counts_in_inf_only_and_an_unseen_start_counts_nothing() -> None:
    pace = PaceMetrics()
    pace.on_stored([
        _stored("round.result", "06:00:00"),  # its start was before the daemon started
        _stored("round.started", "06:00:10", bets_closed_at="2026-11-30T06:00:05.000000Z"),
        _stored("round.result", "06:06:10"),  # 360 s: over the last bound, 300 s
        _stored("round.result", "06:06:20"),  # no round open: nothing
        _stored("round.started", "06:07:00"),
        _stored("round.voided", "06:07:30"),
        _stored("round.result", "06:07:40"),  # the voided round's: nothing
        _stored("shoe.ended", "06:10:00"),
        _stored("round.started", "06:15:00", trial=True),  # the next shoe: downtime 300 s
        _stored("round.result", "06:15:10"),  # a trial round: not a real round's time
    ])  # fmt: skip
    page = _page(pace)
    assert page["shoe_round_seconds_count", ()] == 1
    assert page["shoe_round_seconds_sum", ()] == 360
    assert page["shoe_round_seconds_bucket", (("le", "300.0"),)] == 0
    assert page["shoe_round_seconds_bucket", (("le", "+Inf"),)] == 1
    assert page["shoe_bets_closed_to_first_card_seconds_sum", ()] == 5
    assert page["shoe_shoe_downtime_seconds_sum", ()] == 300
    assert page["shoe_shoe_downtime_seconds_bucket", (("le", "300.0"),)] == 1
    assert page["shoe_shoe_downtime_seconds_bucket", (("le", "180.0"),)] == 0
    assert page["shoe_rounds_by_dealer_total", (("dealer", "none"),)] == 1


def test_a_round_is_timed_from_its_first_card_and_each_shoe_change_counted_once() -> None:
    pace = PaceMetrics()
    pace.on_stored([
        _stored("shoe.ended", "06:00:00"),
        _stored("round.started", "06:05:10", first_card_at="2026-11-30T06:05:05.000000Z",
                bets_closed_at="2026-11-30T06:05:01.000000Z"),
        _stored("round.result", "06:05:20"),  # 15 s from the first card
        _stored("round.started", "06:06:00"),  # the same shoe: no more downtime
        _stored("round.result", "06:06:12"),
    ])  # fmt: skip
    page = _page(pace)
    assert page["shoe_round_seconds_sum", ()] == 15 + 12
    assert page["shoe_bets_closed_to_first_card_seconds_sum", ()] == 4
    assert page["shoe_shoe_downtime_seconds_count", ()] == 1
    assert page["shoe_shoe_downtime_seconds_sum", ()] == 310  # to round.started, 06:05:10


def test_the_page_says_what_each_figure_is() -> None:
    registry = CollectorRegistry()
    registry.register(PaceMetrics())
    helps = [line for line in generate_latest(registry).decode().splitlines()
             if line.startswith("# HELP")]  # fmt: skip
    assert helps == [
        "# HELP shoe_round_seconds A real round's first card to its result",
        "# HELP shoe_bets_closed_to_first_card_seconds Bets closed to the round's first card",
        "# HELP shoe_shoe_downtime_seconds A shoe's end to the next shoe's first round (the"
        " shuffle or shoe change)",
        "# HELP shoe_rounds_by_dealer_total Real rounds with a result since start, by the dealer"
        " in charge (none: no dealer signed in since start)",
    ]
