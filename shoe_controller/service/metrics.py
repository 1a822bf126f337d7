"""The daemon's Prometheus metrics: its live state read at each scrape, and the histograms
its hooks observe (docs/metrics.md lists every metric).

One `DaemonMetrics` per daemon, with its own `CollectorRegistry` (never prometheus_client's
global one). Nothing is counted all over the code: a scrape reads the same snapshots
`shoectl status` reads (`ControlService.health_status()`: the table's view, each device's
`DeviceRunner.stats()`, each sink's status, the health verdict) and the `LoopLag`; what a
snapshot cannot tell comes from one commit listener (`on_stored`: cards, rounds, voids,
alerts since start) and three timing hooks passed to the parts that time
(`observe_commit` to the Controller, `observe_card_ack` to each DeviceRunner,
`observe_loop_lag` to the LoopLag). Everything runs on the daemon's one event loop, the
scrape too, so nothing here needs a lock.

R15: no metric names a card. Counts are of events whose number does not depend on which card
came (a card.dealt is counted whatever it hides), labels are codes, device and sink names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from shoe_controller.service.health import CRITICAL, LEVEL_NAMES, WARNING
from shoe_controller.service.histogram import Histogram
from shoe_controller.service.looplag import LoopLag
from shoe_controller.service.pace_metrics import PaceMetrics
from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.events import EventType

if TYPE_CHECKING:
    from shoe_controller.service.devices import CardTimes

log = structlog.get_logger("metrics")

PREFIX = "shoe_"
# A SQLite commit with its fsync: well under a millisecond on an SSD, tens on an SD card.
COMMIT_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# A card's frame handed over by the link to its ACK written: the commit and the table's step.
ACK_BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# A card's stages (service/devices.CardTimes): tens of microseconds to a few milliseconds.
STAGE_BUCKETS_S = (0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.25, 1.0)
# How late the loop woke (LoopLag ticks ten times a second): a stall shows in the upper ones.
LAG_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_LABEL = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


class EventCounts:
    """What the commits stored since the daemon started, by kind (the commit listener)."""

    def __init__(self) -> None:
        self.cards_dealt = 0
        self.shoes_ended = 0
        self.rounds: Counter[bool] = Counter()  # by trial (R2.3)
        self.voids: Counter[str] = Counter()  # by reason
        self.supervisor_alerts: Counter[str] = Counter()  # by code
        self._trial = False  # the round in progress is a trial round

    def on_stored(self, stored: Iterable[StoredEvent]) -> None:
        for event in stored:
            kind = event.type
            if kind == EventType.CARD_DEALT:
                self.cards_dealt += 1  # counted whatever it hides (R15)
            elif kind == EventType.ROUND_STARTED:
                self._trial = bool(event.data.get("trial"))
            elif kind == EventType.ROUND_RESULT:
                self.rounds[self._trial] += 1
            elif kind == EventType.ROUND_VOIDED:
                self.voids[label(event.data.get("reason"))] += 1
            elif kind == EventType.SHOE_ENDED:
                self.shoes_ended += 1
            elif kind == EventType.SECURITY_ALERT or (
                kind == EventType.PROCEDURE_ALERT and event.data.get("needs_supervisor")
            ):
                self.supervisor_alerts[label(event.data.get("code"))] += 1


def label(value: Any) -> str:
    """A label value from a code the table or a sink wrote: as it is when it looks like a
    code, "other" when not (a label's values must stay few)."""
    text = str(value)
    return text if _LABEL.fullmatch(text) else "other"


class DaemonMetrics(Collector):
    """One daemon's registry: its collector, the process's standard metrics, the hooks."""

    def __init__(
        self,
        status: Callable[[], Mapping[str, Any] | None],
        loop_lag: Callable[[], LoopLag],
        *,
        journal_fault: Callable[[], str | None] = lambda: None,
        version: str = "",
        table_id: str = "",
        controller_id: str = "",
    ) -> None:
        """`status()`: the control service's `health_status()`, None before it serves;
        `loop_lag()`: the daemon's LoopLag; `journal_fault()`: its journal fault or None."""
        self._status = status
        self._loop_lag = loop_lag
        self._journal_fault = journal_fault
        self._info = {"version": version, "table": table_id, "controller_id": controller_id}
        self.events = EventCounts()
        self.pace = PaceMetrics()  # round times, rounds by dealer, downtime
        self.commit_time = Histogram(COMMIT_BUCKETS_S)
        self.card_ack_time: dict[str, Histogram] = {}
        self.card_stage_time: dict[tuple[str, str], Histogram] = {}
        self.loop_lag_time = Histogram(LAG_BUCKETS_S)
        self.registry = CollectorRegistry()
        self.registry.register(self)
        ProcessCollector(registry=self.registry)  # process_cpu_seconds_total, memory, fds

    # ------------------------------------------------------------------ the hooks

    def on_stored(self, stored: list[StoredEvent]) -> None:
        """The daemon's commit listener."""
        self.events.on_stored(stored)
        self.pace.on_stored(stored)

    def observe_commit(self, seconds: float) -> None:
        self.commit_time.observe(seconds)

    def observe_card_ack(self, device: str, times: CardTimes) -> None:
        histogram = self.card_ack_time.get(device)
        if histogram is None:
            histogram = self.card_ack_time[device] = Histogram(ACK_BUCKETS_S)
        histogram.observe(times.to_ack)
        for stage, seconds in times.by_stage():
            stage_histogram = self.card_stage_time.get((device, stage))
            if stage_histogram is None:
                stage_histogram = self.card_stage_time[device, stage] = Histogram(STAGE_BUCKETS_S)
            stage_histogram.observe(seconds)

    def observe_loop_lag(self, seconds: float) -> None:
        self.loop_lag_time.observe(seconds)

    # ------------------------------------------------------------------ the scrape

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The page and its content type, in the format the scraper's Accept asks for
        (Prometheus text 0.0.4, or OpenMetrics)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type

    def collect(self) -> Iterator[Metric]:
        yield _gauge("build_info", "The daemon's version and table (always 1)", self._info, 1)
        yield _gauge(
            "journal_fault",
            "1 while the journal cannot store or be read",
            None,
            int(self._journal_fault() is not None),
        )
        yield from self._counted()
        yield from self._timed()
        yield from self.pace.collect()
        try:
            status = self._status()
        except Exception:  # a journal read failed: the rest of the page still tells
            log.exception("metrics: status not read")
            status = None
        yield _gauge(
            "status_up",
            "1 when this scrape read the live status (table, devices, sinks)",
            None,
            int(status is not None),
        )
        if status is not None:
            yield from status_families(status)

    def _counted(self) -> Iterator[Metric]:
        counts = self.events
        yield _counter(
            "cards_dealt",
            "Cards dealt into rounds (card.dealt) since start",
            None,
            counts.cards_dealt,
        )
        yield _counter("shoes_ended", "Shoes ended since start", None, counts.shoes_ended)
        rounds = _counter_family(
            "rounds", "Rounds with a result since start, by trial (R2.3)", ["trial"]
        )
        for trial in (False, True):
            rounds.add_metric([str(trial).lower()], counts.rounds[trial])
        yield rounds
        voids = _counter_family("rounds_voided", "Rounds voided since start, by reason", ["reason"])
        for reason, count in sorted(counts.voids.items()):
            voids.add_metric([reason], count)
        yield voids
        alerts = _counter_family(
            "supervisor_alerts",
            "Alerts calling for a supervisor (holds, security) since start, by code",
            ["code"],
        )
        for code, count in sorted(counts.supervisor_alerts.items()):
            alerts.add_metric([code], count)
        yield alerts

    def _timed(self) -> Iterator[Metric]:
        commit = HistogramMetricFamily(
            PREFIX + "journal_commit_seconds", "The journal's transaction per commit"
        )
        commit.add_metric([], self.commit_time.buckets(), self.commit_time.sum)
        yield commit
        ack = HistogramMetricFamily(
            PREFIX + "card_ack_seconds",
            "A card's frame handed over by the link until its ACK is written, by device",
            labels=["device"],
        )
        for device, histogram in sorted(self.card_ack_time.items()):
            ack.add_metric([device], histogram.buckets(), histogram.sum)
        yield ack
        stages = HistogramMetricFamily(
            PREFIX + "card_stage_seconds",
            "Where a card's frame spent its time, by device and stage: decode (bytes read to"
            " the link's hand-over), translate, store (the table and the commit), ack (written)",
            labels=["device", "stage"],
        )
        for (device, stage), histogram in sorted(self.card_stage_time.items()):
            stages.add_metric([device, stage], histogram.buckets(), histogram.sum)
        yield stages
        lag = HistogramMetricFamily(
            PREFIX + "loop_lag_seconds", "How late the event loop woke, each tick (10 a second)"
        )
        lag.add_metric([], self.loop_lag_time.buckets(), self.loop_lag_time.sum)
        yield lag
        loop_lag = self._loop_lag()
        yield _gauge(
            "loop_lag_recent_worst_seconds",
            "The loop's worst stall of the last minute",
            None,
            loop_lag.recent_worst,
        )
        yield _gauge(
            "loop_lag_worst_seconds", "The loop's worst stall since start", None, loop_lag.worst
        )


def status_families(status: Mapping[str, Any]) -> Iterator[Metric]:
    """The metrics of a status answer (ControlService.health_status())."""
    yield from _health(status["health"])
    yield from _table(status["table"])
    yield from _journal(status["controller"], status["outbox"])
    yield from _devices(status["devices"], status["table"])
    yield from _sinks(status["outbox"].get("sinks", []))


def _health(health: Mapping[str, Any]) -> Iterator[Metric]:
    yield _gauge(
        "health_status",
        "The health verdict: 0 OK, 1 WARNING, 2 CRITICAL (shoectl check)",
        None,
        health["level"],
    )
    problems = _gauge_family(
        "health_problems", "Problems in the health verdict, by level", ["level"]
    )
    for level in (WARNING, CRITICAL):
        count = sum(1 for problem in health["problems"] if problem["level"] == level)
        problems.add_metric([LEVEL_NAMES[level]], count)
    yield problems


def _table(view: Mapping[str, Any]) -> Iterator[Metric]:
    holds = view.get("holds") or []
    yield _gauge("table_held", "1 while the table is held for a supervisor", None, int(bool(holds)))
    by_code = _gauge_family("holds", "The table's current holds, by code", ["code"])
    for code, count in sorted(Counter(label(hold.get("code")) for hold in holds).items()):
        by_code.add_metric([code], count)
    yield by_code
    state = _gauge_family("table_state", "The table's state (1 for the current one)", ["state"])
    state.add_metric([label(view.get("state"))], 1)
    yield state
    yield _gauge(
        "table_refusing_cards",
        "1 while the table refuses the shoe's cards",
        None,
        int(bool(view.get("refusing_cards"))),
    )
    yield _gauge("shoe_open", "1 while a shoe is open", None, int(bool(view.get("shoe_open"))))
    yield _gauge("shoe_number", "The current shoe's number", None, view.get("shoe") or 0)
    yield _gauge(
        "shoe_cards_drawn",
        "Cards drawn from the current shoe, burned ones included",
        None,
        view.get("cards_dealt") or 0,
    )
    if view.get("cards_left") is not None:
        yield _gauge("shoe_cards_left", "Cards left in the current shoe", None, view["cards_left"])
    yield _gauge(
        "shoe_rounds",
        "Rounds (not trial) started in the current shoe",
        None,
        view.get("real_rounds") or 0,
    )


def _journal(controller: Mapping[str, Any], outbox: Mapping[str, Any]) -> Iterator[Metric]:
    chain = controller.get("journal_chain")
    if chain is not None:
        yield _gauge(
            "journal_chain_intact",
            "1 when the hash chain walked at start-up is intact",
            None,
            int(bool(chain.get("intact"))),
        )
    yield _gauge(
        "journal_replay_mismatch",
        "1 when the replay at start-up differed",
        None,
        int(bool(controller.get("replay_mismatch"))),
    )
    yield _gauge(
        "journal_last_seq", "The journal's last event seq", None, outbox.get("last_seq") or 0
    )


_LINK_COUNTERS = (  # LinkStats fields of the reference protocol (docs/spec-protocol.md)
    ("device_link_frames_received", "Good frames received from the device", "frames_in"),
    ("device_link_retransmits", "Frames resent to the device (no ACK in time)", "retransmits"),
    ("device_link_crc_errors", "Frames from the device with a bad CRC", "crc_errors"),
    ("device_link_duplicates", "Frames the device sent again (already stored)", "duplicates"),
)
_BAD_FRAME_REASONS = ("cobs", "oversize", "bad_version", "malformed")
_BAD_FRAME_KEYS = {"cobs": "cobs_errors"}  # the LinkStats field of a reason, where it differs
_CONNECTION_COUNTERS = (
    ("device_reconnects", "Sessions ended by a lost port or silence", "reconnects"),
    ("device_silences", "Sessions ended by the device's silence", "silences"),
    ("device_open_failures", "Attempts to open the port that failed", "open_failures"),
)


def _devices(devices: Sequence[Mapping[str, Any]], view: Mapping[str, Any]) -> Iterator[Metric]:
    configured = [device for device in devices if device.get("configured")]
    names = [label(device["device"]) for device in configured]
    connected = _gauge_family(
        "device_connected", "1 while the device's port is open and it talks", ["device"]
    )
    silent = _gauge_family(
        "device_silent", "1 while the device is silent (no frame, no heartbeat)", ["device"]
    )
    for name, device in zip(names, configured, strict=True):
        connected.add_metric([name], int(device.get("status") == "connected"))
        silent.add_metric([name], int(device.get("status") == "silent"))
    yield connected
    yield silent
    faults = _gauge_family(
        "device_faults", "Active faults, by device (the host's own: journal)", ["device"]
    )
    raised = Counter(label(fault.get("device")) for fault in view.get("faults") or [])
    for name in sorted(set(names) | set(raised)):
        faults.add_metric([name], raised[name])
    yield faults
    for metric, text, key in _CONNECTION_COUNTERS:
        family = _counter_family(metric, text, ["device"])
        for name, device in zip(names, configured, strict=True):
            family.add_metric([name], (device.get("connection") or {}).get(key) or 0)
        yield family
    linked = [
        (name, device["link"])
        for name, device in zip(names, configured, strict=True)
        if device.get("link")
    ]
    for metric, text, key in _LINK_COUNTERS:
        family = _counter_family(metric, text, ["device"])
        for name, link in linked:
            family.add_metric([name], link.get(key) or 0)
        yield family
    naks = _counter_family(
        "device_link_naks",
        "NAKs, by device and direction (in: the device refused our frame; out: we refused its)",
        ["device", "direction"],
    )
    for name, link in linked:
        naks.add_metric([name, "in"], link.get("naks_in") or 0)
        naks.add_metric([name, "out"], link.get("naks_out") or 0)
    yield naks
    bad = _counter_family(
        "device_link_bad_frames",
        "Frames from the device refused for a reason other than their CRC, by reason",
        ["device", "reason"],
    )
    for name, link in linked:
        for reason in _BAD_FRAME_REASONS:
            bad.add_metric([name, reason], link.get(_BAD_FRAME_KEYS.get(reason, reason)) or 0)
    yield bad
    garbled = _counter_family(
        "device_garbled", "Garbled messages from a vendor ASCII shoe", ["device"]
    )
    for name, device in zip(names, configured, strict=True):
        if device.get("adapter"):
            garbled.add_metric([name], device["adapter"].get("garbled") or 0)
    yield garbled


def _sinks(sinks: Sequence[Mapping[str, Any]]) -> Iterator[Metric]:
    """Each sink by itself (docs/delivery.md): one stuck consumer shows while others keep up."""
    families = {
        "backlog": _gauge_family(
            "sink_backlog_events", "Events not yet confirmed by the sink", ["sink"]
        ),
        "age": _gauge_family(
            "sink_oldest_undelivered_age_seconds",
            "Age of the oldest event the sink has not confirmed (0: none waits)",
            ["sink"],
        ),
        "through": _gauge_family(
            "sink_delivered_through", "The sink's seq the consumer confirmed through", ["sink"]
        ),
        "last": _gauge_family("sink_last_seq", "The sink's last seq given to an event", ["sink"]),
        "failures": _gauge_family(
            "sink_consecutive_failures", "Failed attempts since the last success", ["sink"]
        ),
        "fault": _gauge_family(
            "sink_fault", "1 while the consumer refuses the events (a fault)", ["sink"]
        ),
        "delivered_at": _gauge_family(
            "sink_last_delivered_timestamp_seconds",
            "When the consumer last confirmed (Unix time)",
            ["sink"],
        ),
    }
    for sink in sinks:
        name = [label(sink["name"])]
        backlog = sink.get("backlog") or 0
        age = sink.get("oldest_waiting_age_s")
        families["backlog"].add_metric(name, backlog)
        families["age"].add_metric(name, age if backlog and age is not None else 0)
        if sink.get("delivered_through") is not None:
            families["through"].add_metric(name, sink["delivered_through"])
        families["last"].add_metric(name, sink.get("last_seq") or 0)
        families["failures"].add_metric(name, sink.get("consecutive_failures") or 0)
        families["fault"].add_metric(name, int(bool(sink.get("fault"))))
        if sink.get("last_delivered_at") is not None:
            families["delivered_at"].add_metric(name, sink["last_delivered_at"])
    yield from families.values()


# ---------------------------------------------------------------------- families


def _gauge_family(name: str, text: str, labels: Sequence[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, text, labels=list(labels))


def _counter_family(name: str, text: str, labels: Sequence[str]) -> CounterMetricFamily:
    return CounterMetricFamily(PREFIX + name + "_total", text, labels=list(labels))


def _gauge(name: str, text: str, labels: Mapping[str, str] | None, value: float) -> Metric:
    family = _gauge_family(name, text, list(labels or {}))
    family.add_metric(list((labels or {}).values()), value)
    return family


def _counter(name: str, text: str, labels: Mapping[str, str] | None, value: float) -> Metric:
    family = _counter_family(name, text, list(labels or {}))
    family.add_metric(list((labels or {}).values()), value)
    return family
