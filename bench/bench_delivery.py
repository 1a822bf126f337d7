"""Benchmark: journal commit latency and commit-to-ACK delivery latency, as ratios to baselines.

Measures, in one run on this machine:
  1. `Journal.record()` of one input with 3 events (WAL, synchronous=FULL), p50/p99, against
     a bare SQLite INSERT+COMMIT with synchronous=OFF and one with WAL + synchronous=FULL;
  2. the latency from an event's commit to the receiver's ACK over loopback, at 10 and at
     100 events per second (a real `shoe_controller.kit.receiver` process, storing durably),
     against a bare HTTP round trip (GET .../ack) to the same server.

Run: python bench/bench_delivery.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import structlog
from latency import http_round_trips, percentile
from shoe_testkit.one_server import open_journal, server_sink

from shoe_controller.delivery.push import PushConfig
from shoe_controller.store.journal import Journal
from shoe_controller.vocab.events import iso_time

TABLE_ID = "07"
CONTROLLER_ID = "bench-shoe"


def describe(name: str, samples: list[float]) -> tuple[float, float]:
    p50, p99 = percentile(samples, 0.50), percentile(samples, 0.99)
    print(f"  {name:<58} p50 {p50 * 1e3:8.3f} ms   p99 {p99 * 1e3:8.3f} ms   (n={len(samples)})")
    return p50, p99


def card_events(n: int) -> list[dict[str, object]]:
    at = iso_time(time.time())
    return [
        {"type": "card.dealt", "at": at, "shoe": 1, "round": n,
         "data": {"position": "P1", "card": "QH", "face_up": False}},
        {"type": "insurance.offered", "at": at, "shoe": 1, "round": n,
         "data": {"side": "banker", "stage": 1, "odds": 5, "banker_total": 6,
                  "player_total": 3}},
        {"type": "procedure.alert", "at": at, "shoe": 1, "round": n,
         "data": {"code": "x", "text": "y", "needs_supervisor": False}},
    ]  # fmt: skip


class BareSqlite:
    """The baseline: one small row per transaction, nothing else."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")

    def commit(self, n: int) -> float:
        start = time.perf_counter()
        self.conn.execute("BEGIN")
        self.conn.execute("INSERT INTO t (body) VALUES (?)", (f'{{"n": {n}}}',))
        self.conn.execute("COMMIT")
        return time.perf_counter() - start


class JournalCommits:
    def __init__(self, path: Path) -> None:
        self.journal = open_journal(path, CONTROLLER_ID)

    def commit(self, n: int) -> float:
        events = card_events(n)
        start = time.perf_counter()
        self.journal.record({"type": "card", "rank": 12, "suit": "H", "n": n}, events, 1)
        return time.perf_counter() - start


def commit_latencies(directory: Path, samples: int) -> dict[str, list[float]]:
    """Interleaved, so that the disk's good and bad moments fall on every contender alike."""
    contenders = {
        "off": BareSqlite(directory / "off.db", "OFF"),
        "full": BareSqlite(directory / "full.db", "FULL"),
        "journal": JournalCommits(directory / "journal.db"),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for n in range(samples):
        for name, contender in contenders.items():
            times[name].append(contender.commit(n))
    return times


def start_receiver(directory: Path, key_file: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.kit.receiver", "--port", "0",
         "--db", str(directory / "receiver.db"), "--key-file", str(key_file),
         "--table-id", TABLE_ID],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    port = int(process.stdout.readline())
    return process, f"http://127.0.0.1:{port}"


async def delivery(journal: Journal, config: PushConfig, rate: float, count: int) -> list[float]:
    """Record `count` single-event inputs at `rate` per second; commit-to-ACK latencies."""
    committed: dict[int, float] = {}
    latencies: list[float] = []
    done = asyncio.Event()
    pending_from = journal.reads.last_seq() + 1
    last = journal.reads.last_seq() + count

    def acked(through: int) -> None:
        nonlocal pending_from
        now = time.perf_counter()
        for seq in range(pending_from, through + 1):
            if seq in committed:
                latencies.append(now - committed.pop(seq))
        pending_from = max(pending_from, through + 1)
        if through >= last:
            done.set()

    publisher = server_sink(journal, config, on_delivered=acked)
    task = asyncio.create_task(publisher.run())
    await asyncio.sleep(0.2)  # let the start-up resync happen outside the measurement
    interval = 1.0 / rate
    next_at = time.perf_counter()
    for n in range(count):
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        next_at += interval
        events = card_events(n)[:1]
        stored = journal.record({"type": "card", "n": n}, events, 1)
        committed[stored[0].seq] = time.perf_counter()
        publisher.notify()
    await asyncio.wait_for(done.wait(), 60)
    publisher.stop()
    await task
    return latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--dir", default=None, help="where the files go (the journal's disk)")
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    commits = 150 if args.quick else 600
    seconds = {10.0: 3.0 if args.quick else 6.0, 100.0: 2.0 if args.quick else 5.0}

    with tempfile.TemporaryDirectory(prefix="bench-delivery-", dir=args.dir) as tmp:
        directory = Path(tmp)
        print(f"journal commit latency ({commits} commits, files in {directory.parent})")
        times = commit_latencies(directory, commits)
        off = describe("baseline: bare INSERT+COMMIT, WAL, synchronous=OFF", times["off"])
        full = describe("baseline: bare INSERT+COMMIT, WAL, synchronous=FULL", times["full"])
        ours = describe("Journal.record (1 input + 3 events, synchronous=FULL)", times["journal"])
        print(f"  ratio journal / bare synchronous=OFF:  p50 {ours[0] / off[0]:7.1f}x   "
              f"p99 {ours[1] / off[1]:7.1f}x")  # fmt: skip
        print(f"  ratio journal / bare synchronous=FULL: p50 {ours[0] / full[0]:7.1f}x   "
              f"p99 {ours[1] / full[1]:7.1f}x")  # fmt: skip

        key_file = directory / "table.key"
        key_file.write_text("bench secret\n")
        receiver, url = start_receiver(directory, key_file)
        try:
            print("\ncommit-to-ACK latency over loopback (receiver process, durable store)")
            http = describe(
                "baseline: bare HTTP round trip (GET .../ack, kept-alive)",
                asyncio.run(http_round_trips(url, TABLE_ID, 300 if args.quick else 1000)),
            )
            config = PushConfig(
                base_url=url, table_id=TABLE_ID, controller_id=CONTROLLER_ID, key_file=key_file
            )
            with open_journal(directory / "delivery.db", CONTROLLER_ID) as journal:
                for rate, duration in seconds.items():
                    latencies = asyncio.run(delivery(journal, config, rate, int(rate * duration)))
                    result = describe(f"commit -> ACK at {rate:g} events/s", latencies)
                    ratios = f"p50 {result[0] / http[0]:7.1f}x   p99 {result[1] / http[1]:7.1f}x"
                    print(f"  ratio to the HTTP round trip:           {ratios}")
        finally:
            receiver.terminate()
            receiver.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
