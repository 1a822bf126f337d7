"""The table's pace for Prometheus (docs/metrics.md): how long rounds take, the rounds
each dealer dealt, the downtime between shoes, the wait from bets closed to the first card.

Fed by the daemon's commit listener (through `service.metrics.DaemonMetrics`), counted as
game/pace.py counts: a round's time is its first card to its result, a shoe's downtime the
shoe before's end to its first round, the dealer in charge the last to sign in (none until one
signs in after the daemon started). Nothing names a card (R15).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime

from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric

from shoe_controller.game.pace import instant
from shoe_controller.service.histogram import Histogram
from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.events import EventType

PREFIX = "shoe_"
ROUND_BUCKETS_S = (10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0, 90.0, 120.0, 180.0, 300.0)
WAIT_BUCKETS_S = (1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0)
DOWNTIME_BUCKETS_S = (60.0, 120.0, 180.0, 300.0, 420.0, 600.0, 900.0, 1200.0, 1800.0, 3600.0)
NO_DEALER = "none"


class PaceMetrics:
    """The pace since the daemon started: histograms and a counter, from stored events."""

    def __init__(self) -> None:
        self.round_time = Histogram(ROUND_BUCKETS_S)
        self.wait_time = Histogram(WAIT_BUCKETS_S)
        self.downtime = Histogram(DOWNTIME_BUCKETS_S)
        self.by_dealer: Counter[str] = Counter()
        self._dealer = NO_DEALER
        self._round: tuple[datetime, bool, str] | None = None  # first card, trial, dealer
        self._last_end: datetime | None = None

    def on_stored(self, stored: Iterable[StoredEvent]) -> None:
        for event in stored:
            kind, data = event.type, event.data
            if kind == EventType.ROUND_STARTED:
                self._started(instant(event.at), data)
            elif kind == EventType.ROUND_RESULT and self._round is not None:
                first, trial, dealer = self._round
                self._round = None
                if not trial:
                    self.round_time.observe((instant(event.at) - first).total_seconds())
                    self.by_dealer[dealer] += 1
            elif kind == EventType.ROUND_VOIDED:
                self._round = None
            elif kind == EventType.SHOE_ENDED:
                self._last_end = instant(event.at)
            elif kind == EventType.SUPERVISOR_ACTION and data.get("action") == "dealer":
                details = data.get("details") or {}
                signed_in = details.get("signed") == "in" and details.get("dealer")
                self._dealer = str(details["dealer"]) if signed_in else NO_DEALER

    def _started(self, at: datetime, data: dict[str, object]) -> None:
        first = instant(str(data["first_card_at"])) if data.get("first_card_at") else at
        self._round = (first, bool(data.get("trial")), self._dealer)
        if data.get("bets_closed_at"):
            self.wait_time.observe((first - instant(str(data["bets_closed_at"]))).total_seconds())
        if self._last_end is not None:  # the shoe's first round: the downtime is over
            self.downtime.observe((at - self._last_end).total_seconds())
            self._last_end = None

    def collect(self) -> Iterator[Metric]:
        for name, text, buckets in (
            ("round_seconds", "A real round's first card to its result", self.round_time),
            ("bets_closed_to_first_card_seconds", "Bets closed to the round's first card",
             self.wait_time),
            ("shoe_downtime_seconds", "A shoe's end to the next shoe's first round (the"
             " shuffle or shoe change)", self.downtime),
        ):  # fmt: skip
            family = HistogramMetricFamily(PREFIX + name, text)
            family.add_metric([], buckets.buckets(), buckets.sum)
            yield family
        dealers = CounterMetricFamily(
            PREFIX + "rounds_by_dealer",
            "Real rounds with a result since start, by the dealer in charge (none: no dealer"
            " signed in since start)",
            labels=["dealer"],
        )
        for dealer, count in sorted(self.by_dealer.items()):
            dealers.add_metric([dealer], count)
        yield dealers
