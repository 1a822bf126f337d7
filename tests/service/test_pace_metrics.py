"""The pace for Prometheus (issue 29, service/pace_metrics.py): the recorded shift of
tests/data/shift-29.jsonl journaled through a real controller, every commit handed to the
daemon's collector as the daemon hands it, the page parsed with prometheus_client's parser;
the figures are the hand count of tests/cli/test_pace_report.py."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from shoe_testkit.control import REPO

from shoe_controller.service.looplag import LoopLag
from shoe_controller.service.metrics import DaemonMetrics
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
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
