"""Where a card's time goes in the daemon, stage by stage, on the daemon's own parts in-process.

read -> decode (the link: COBS, CRC, ARQ) -> translate (message to input) -> table (the
procedures) -> commit (the journal, synchronous=FULL) -> ACK (the link's frame); beside them
the minimal host's own steps (decode, a one-row commit, ACK) on the same frames, and a design
option that is not the daemon's: the ACK once the input alone is stored. Each is
measured back to back and at the cards' paces (2/s, 100/s): on an idle machine every stage
costs several times more after a pause (caches, the CPU's and the disk's wake-up), and the
more a card does, the more that costs. Whatever bench_ack.py measures beyond the sum is
waiting: the loop, the pty.

Run: python bench/bench_ack_stages.py [--quick]  (bench_ack.py runs it at the end)
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from latency import percentile

from drivers.translate.scanner import ScannerTranslator
from drivers.wire.link import DeviceLink, HostLink, LinkConfig
from drivers.wire.messages import Card, CardFlags, DeviceKind, Hello, Message, Shoe, ShoeState
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.inputs import input_to_json

STAGES = ("decode", "translate", "table", "commit", "ack")
PACES = {"back to back": 0.0, "100 cards/s": 0.01, "2 cards/s": 0.5}
BURN_PHASE = 15  # SHOE loaded, the burn card and what it burns: fed first, not timed
Times = dict[str, list[float]]


def frames(cards: int) -> list[Message]:
    """SHOE loaded and the first cards of a shuffled 8-deck shoe: the burn phase, then
    `cards` cards dealt into rounds (the ones timed)."""
    deck = [(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in range(4)]
    random.Random(3).shuffle(deck)
    dealt = [Card(n + 1, CardFlags.NONE, rank, suit) for n, (rank, suit) in enumerate(deck)]
    return [Shoe(ShoeState.LOADED), *dealt[: BURN_PHASE - 1 + cards]]


def connected_links() -> tuple[DeviceLink, HostLink]:
    device, host = DeviceLink(LinkConfig()), HostLink()
    device.start_session(Hello(DeviceKind.OPTICAL_SHOE, 7, "bench", "stages", "S1", "1.0"))
    for delivery in host.receive_data(device.bytes_to_send()):
        host.ack(delivery.handle)
    device.receive_data(host.bytes_to_send())
    return device, host


# One card's handling after its frame is decoded: the stages it timed, by name (perf_counter
# deltas), given the delivery and the moment the decode finished.
Handler = Callable[[Any, float], dict[str, float]]


def timed_frames(messages: list[Message], pace_s: float, handle: Handler) -> Times:
    """Feed each frame through a host link, `pace_s` apart once the burn phase is over, and
    time the decode and what `handle` says of each card after it."""
    device, host = connected_links()
    times: Times = {stage: [] for stage in STAGES}
    for index, message in enumerate(messages):
        device.send(message)
        frame = device.bytes_to_send()
        timed = index >= BURN_PHASE
        time.sleep(pace_s if timed else 0.0)
        began = time.perf_counter()
        deliveries = host.receive_data(frame)
        decoded = time.perf_counter()
        for delivery in deliveries:
            stages = handle(delivery, decoded)
            host.ack(delivery.handle)
            device.receive_data(host.bytes_to_send())
            if timed and isinstance(delivery.message, Card):
                stages |= {
                    "decode": decoded - began,
                    "ack": time.perf_counter() - stages.pop("end"),
                }
                for stage, seconds in stages.items():
                    times[stage].append(seconds)
    return times


def daemon_stages(directory: Path, messages: list[Message], pace_s: float) -> Times:
    """The daemon's parts: its link, translator, table and journal (Controller)."""
    journal = Journal.open(directory / f"stages-{pace_s}.db", "tbl-stages")
    controller = Controller(TableConfig(), journal)
    shadow = Table(TableConfig())  # the same inputs, to time the procedures alone
    translator = ScannerTranslator()

    def handle(delivery: Any, decoded: float) -> dict[str, float]:
        inputs = translator.translate(delivery.message, time.time())
        translated = time.perf_counter()
        for item in inputs:
            shadow.apply(item)
        applied = time.perf_counter()
        controller.submit_many(
            inputs, {"scanner": {"session": delivery.handle.session_after.to_dict()}}
        )
        stored = time.perf_counter()
        table = applied - translated
        return {
            "translate": translated - decoded,
            "table": table,
            "commit": (stored - applied) - table,  # submit = table + commit
            "end": stored,
        }

    try:
        return timed_frames(messages, pace_s, handle)
    finally:
        journal.close()


def minimal_stages(directory: Path, messages: list[Message], pace_s: float) -> Times:
    """The minimal host (bench_daemon.MINIMAL_HOST) step by step: decode, a row committed, ACK."""
    db = sqlite3.connect(directory / f"minimal-{pace_s}.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE inputs (n INTEGER PRIMARY KEY, body TEXT)")

    def handle(delivery: Any, decoded: float) -> dict[str, float]:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO inputs (body) VALUES (?)", (repr(delivery.message),))
        db.execute("COMMIT")
        stored = time.perf_counter()
        return {"commit": stored - decoded, "end": stored}

    try:
        return timed_frames(messages, pace_s, handle)
    finally:
        db.close()


def input_first_stages(directory: Path, messages: list[Message], pace_s: float) -> Times:
    """A design option, not the daemon: the ACK once the input alone is stored (the inputs
    row, the link session and the counter, as the journal's schema has them), the table's
    work and the events after it. What docs/architecture.md's one transaction costs, by
    difference."""
    db = sqlite3.connect(directory / f"input-first-{pace_s}.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE inputs (input_no INTEGER PRIMARY KEY, type TEXT, body TEXT)")
    db.execute("CREATE TABLE links (device TEXT PRIMARY KEY, state TEXT, input_no INTEGER)")
    db.execute("CREATE TABLE journal (id INTEGER PRIMARY KEY, last_input INTEGER)")
    db.execute("INSERT INTO journal VALUES (1, 0)")
    translator = ScannerTranslator()
    numbers = itertools.count(1)

    def handle(delivery: Any, decoded: float) -> dict[str, float]:
        inputs = translator.translate(delivery.message, time.time())
        translated = time.perf_counter()
        session = json.dumps(delivery.handle.session_after.to_dict())
        db.execute("BEGIN IMMEDIATE")
        for item in inputs:
            number, body = next(numbers), input_to_json(item)
            db.execute(
                "INSERT INTO inputs VALUES (?, ?, ?)", (number, body["type"], json.dumps(body))
            )
            db.execute("UPDATE journal SET last_input = ?", (number,))
        db.execute(
            "INSERT INTO links VALUES ('scanner', ?, 0) ON CONFLICT (device)"
            " DO UPDATE SET state = excluded.state",
            (session,),
        )
        db.execute("COMMIT")
        stored = time.perf_counter()
        return {"translate": translated - decoded, "commit": stored - translated, "end": stored}

    try:
        return timed_frames(messages, pace_s, handle)
    finally:
        db.close()


def wal_frames(wal: Path) -> list[int]:
    """The page number of each frame in a WAL file (SQLite's WAL format: a 32-byte header,
    then frames of a 24-byte header, the page number first, and a page)."""
    data = wal.read_bytes() if wal.exists() else b""
    if len(data) < 32:
        return []
    page_size = int.from_bytes(data[8:12], "big")
    return [
        int.from_bytes(data[offset : offset + 4], "big")
        for offset in range(32, len(data) - 24 - page_size + 1, 24 + page_size)
    ]


def commit_pages(directory: Path, cards: int = 60) -> None:
    """Which pages one card's commit writes to the WAL, by table or index (SQLite's dbstat),
    for the daemon's journal (with the table server's sink numbering its events) and the
    minimal hosts: what a card's ACK stands for, page by page."""
    path = directory / "pages.db"
    journal = Journal.open(path, "tbl-pages", routes={"server": lambda _type: True})
    controller = Controller(TableConfig(), journal)
    translator = ScannerTranslator()
    device, host = connected_links()
    wal = Path(f"{path}-wal")
    written: dict[tuple[str, ...], int] = {}
    for index, message in enumerate(frames(cards)):
        device.send(message)
        for delivery in host.receive_data(device.bytes_to_send()):
            before = len(wal_frames(wal))
            inputs = translator.translate(delivery.message, time.time())
            session = {"scanner": {"session": delivery.handle.session_after.to_dict()}}
            controller.submit_many(inputs, session)
            pages = wal_frames(wal)[before:]
            host.ack(delivery.handle)
            device.receive_data(host.bytes_to_send())
            if index >= BURN_PHASE and isinstance(delivery.message, Card) and pages:
                with sqlite3.connect(path) as look:
                    names = dict(look.execute("SELECT pageno, name FROM dbstat"))
                key = tuple(sorted(names.get(page, f"page {page}") for page in pages))
                written[key] = written.get(key, 0) + 1
    journal.close()
    print("the pages a card's commit writes to the WAL (the daemon's journal, one sink):")
    for key, count in sorted(written.items(), key=lambda item: -item[1]):
        print(f"  {count:3} cards: {len(key)} pages: {', '.join(key)}")
    print("  minimal host: 1 page (inputs); card + session: 3 (inputs, links, counter)")


def page_cost(directory: Path, quick: bool = False) -> None:
    """What a page more in a commit costs: one row in each of k tables (k pages), WAL and
    synchronous=FULL as the journal, p50 ms at each pace."""
    print("a commit of k pages (one row in each of k tables), p50 ms:")
    for pace_name, pace_s in PACES.items():
        count = {0.0: 300, 0.01: 200, 0.5: 12 if quick else 30}[pace_s]
        cells = []
        for k in (1, 3, 8):
            db = sqlite3.connect(directory / f"pages-{k}-{pace_s}.db", isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            for table in range(k):
                db.execute(f"CREATE TABLE t{table} (n INTEGER PRIMARY KEY, body TEXT)")
            took = []
            for _ in range(count):
                time.sleep(pace_s)
                start = time.perf_counter()
                db.execute("BEGIN IMMEDIATE")
                for table in range(k):
                    db.execute(f"INSERT INTO t{table} (body) VALUES (?)", ("x" * 200,))
                db.execute("COMMIT")
                took.append(time.perf_counter() - start)
            db.close()
            cells.append(f"k={k} {percentile(took, 0.5) * 1e3:6.3f}")
        print(f"  {pace_name:<14} {'  '.join(cells)}")


def report(name: str, times: Times) -> float:
    cells, total = [], 0.0
    for stage in STAGES:
        if times[stage]:
            p50 = percentile(times[stage], 0.5)
            total += p50
            cells.append(f"{stage} {p50 * 1e3:6.3f}")
        else:
            cells.append(f"{stage} {'-':>6}")
    print(f"  {name:<38} {'  '.join(cells)}   sum {total * 1e3:6.3f}")
    return total


def stages(directory: Path, *, quick: bool = False) -> None:
    commit_pages(directory)
    page_cost(directory, quick)
    print()
    cards = {0.0: 380, 0.01: 200, 0.5: 12 if quick else 40}
    print("where a card's time goes, in-process, p50 ms: the daemon's parts, a design option, the")
    print("minimal host's steps")
    for pace_name, pace_s in PACES.items():
        messages = frames(cards[pace_s])
        parts: list[tuple[str, Callable[[Path, list[Message], float], Times]]] = [
            ("daemon", daemon_stages),
            ("input first (an option)", input_first_stages),
            ("minimal host", minimal_stages),
        ]
        sums = [
            report(f"{who}, {pace_name}", run(directory, messages, pace_s)) for who, run in parts
        ]
        print(f"    {'daemon / minimal host':<36} {sums[0] / sums[2]:5.2f}x")
        print(f"    {'input first / minimal host':<36} {sums[1] / sums[2]:5.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples at 2 cards/s")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-stages-"))
    try:
        stages(work, quick=args.quick)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
