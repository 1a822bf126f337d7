"""Where a card's time goes in the daemon, stage by stage, on the daemon's own parts in-process.

read -> decode (the link: COBS, CRC, ARQ) -> translate (message to input) -> table (the
procedures) -> commit (the journal, synchronous=FULL) -> ACK (the link's frame). Whatever
bench_ack.py measures beyond the sum is waiting: the loop, threads, the pty.

Run: python bench/bench_ack_stages.py  (bench_ack.py runs it at the end)
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path

from latency import percentile

from drivers.translate.scanner import ScannerTranslator
from drivers.wire.link import DeviceLink, HostLink, LinkConfig
from drivers.wire.messages import Card, CardFlags, DeviceKind, Hello, Shoe, ShoeState
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.inputs import input_to_json

STAGES = ("decode", "translate", "table", "commit", "ack")


def stages(directory: Path, cards: int = 400) -> None:
    journal = Journal.open(directory / "stages.db", "tbl-stages")
    controller = Controller(TableConfig(), journal)
    shadow = Table(TableConfig())  # the same inputs, to time the procedures alone
    device, host = DeviceLink(LinkConfig()), HostLink()
    translator = ScannerTranslator()
    device.start_session(Hello(DeviceKind.OPTICAL_SHOE, 7, "bench", "stages", "S1", "1.0"))
    times: dict[str, list[float]] = {stage: [] for stage in STAGES}
    deck = [(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in range(4)]
    random.Random(3).shuffle(deck)
    messages = [Shoe(ShoeState.LOADED)] + [
        Card(n + 1, CardFlags.NONE, rank, suit) for n, (rank, suit) in enumerate(deck[:cards])
    ]
    for message in [None, *messages]:
        if message is not None:
            device.send(message)
        frame = device.bytes_to_send()
        t0 = time.perf_counter()
        deliveries = host.receive_data(frame)
        t1 = time.perf_counter()
        for delivery in deliveries:
            inputs = translator.translate(delivery.message, time.time())
            t2 = time.perf_counter()
            for item in inputs:
                shadow.apply(item)
            t3 = time.perf_counter()
            state = {"scanner": {"session": delivery.handle.session_after.to_dict()}}
            controller.submit_many(inputs, state)
            t4 = time.perf_counter()
            host.ack(delivery.handle)
            device.receive_data(host.bytes_to_send())
            t5 = time.perf_counter()
            if isinstance(delivery.message, Card):
                times["decode"].append(t1 - t0)
                times["translate"].append(t2 - t1)
                times["table"].append(t3 - t2)
                times["commit"].append((t4 - t3) - (t3 - t2))  # submit = table + commit
                times["ack"].append(t5 - t4)
        _ = [input_to_json(item) for item in inputs]  # keep the loop honest about its inputs
    journal.close()
    print("where a card's time goes (in-process, the daemon's parts; ms)")
    total = 0.0
    for stage in STAGES:
        p50 = percentile(times[stage], 0.5)
        total += p50
        print(
            f"  {stage:<10} p50 {p50 * 1e3:7.3f}   p99 {percentile(times[stage], 0.99) * 1e3:7.3f}"
        )
    print(f"  {'sum':<10} p50 {total * 1e3:7.3f}")


if __name__ == "__main__":
    work = Path(tempfile.mkdtemp(prefix="bench-stages-"))
    try:
        stages(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
