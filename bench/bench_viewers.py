"""What bench_ack.py's viewers case needs: a journal that holds past shoes, as a
table PC's does, the heaviest of a viewer's queries, and the per-user cap of connections
asking it in a loop.

- `prefill(config_path, shoes)`: before the daemon starts, its journal gets `shoes` whole shoes
  dealt through the daemon's own parts in-process (translator, table, journal), each ended
  by its cut card, so that `events` with `limit: 1000` has a thousand events to give;
- `heaviest(socket_path)`: each of a viewer's queries (`events` limit 1000, `rounds`, `road`,
  `outbox`) timed from one client, the slowest named;
- `Viewers(socket_path, count, request)`: a process of `count` connections, each asking the
  request in a loop; `stop()` says how many answers each kind of answer got.
"""

from __future__ import annotations

import json
import random
import socket
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from drivers.translate.scanner import ScannerTranslator
from drivers.wire.messages import (
    Button,
    ButtonId,
    Card,
    CardFlags,
    CutCard,
    IndicatePattern,
    Shoe,
    ShoeState,
)
from shoe_controller.service.config import load
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal

QUERIES = {
    "events limit 20": {"cmd": "events", "limit": 20},
    "events limit 1000": {"cmd": "events", "limit": 1000},
    "rounds": {"cmd": "rounds"},
    "road": {"cmd": "road"},
    "outbox": {"cmd": "outbox"},
}
CUT_AT = 380  # the cut card comes out after this card; the shoe ends with its round


def prefill(config_path: Path, shoes: int, seed: int = 11) -> int:
    """Deal `shoes` shoes into the journal the configuration names (no sink numbers them:
    nothing of them waits for delivery); the events stored."""
    config = load(config_path)
    journal = Journal.open(config.journal.path, config.controller_id)
    try:
        deal_shoes(Controller(config.procedures, journal), shoes, seed)
        return journal.reads.last_seq()
    finally:
        journal.close()


def deal_shoes(controller: Controller, shoes: int, seed: int = 11) -> None:
    """`shoes` whole shoes through the controller, as a shoe's frames, each ended by its cut
    card (the daemon's translator, table and journal)."""
    controller.start("bench", time.time())
    translator = ScannerTranslator()
    rng = random.Random(seed)
    decks = controller.table.config.decks
    for _ in range(shoes):
        cards = [(r, s) for _ in range(decks) for r in range(1, 14) for s in range(4)]
        rng.shuffle(cards)
        messages: list[Any] = [Shoe(ShoeState.LOADED)]
        for counter, (rank, suit) in enumerate(cards, start=1):
            messages.append(Card(counter, CardFlags.NONE, rank, suit))
            if counter == CUT_AT:
                messages.append(CutCard(counter))
        for message in messages:
            if controller.table.indicator[0] == IndicatePattern.BETS_OPEN:  # betting tables
                button = translator.translate(Button(ButtonId.NO_MORE_BETS), time.time())
                controller.submit_many(button, None)
            stored = controller.submit_many(translator.translate(message, time.time()), None)
            if any(event.type == "shoe.ended" for event in stored):
                break


def ask(path: str, request: dict[str, Any], times: int) -> list[float]:
    """Seconds each of `times` answers to `request` took, on one connection."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        lines = sock.makefile("rb")
        line = json.dumps(request).encode() + b"\n"
        took = []
        for _ in range(times):
            start = time.perf_counter()
            sock.sendall(line)
            answer = json.loads(lines.readline())
            took.append(time.perf_counter() - start)
            if not answer["ok"]:
                raise RuntimeError(f"{request}: {answer['error']}")
    return took


def heaviest(path: str, times: int = 7) -> tuple[str, dict[str, float]]:
    """The slowest of a viewer's queries, and each one's median seconds."""
    ask(path, QUERIES["rounds"], 1)  # the reader process starts
    medians = {name: statistics.median(ask(path, request, times))
               for name, request in QUERIES.items()}  # fmt: skip
    return max(medians, key=medians.__getitem__), medians


# COUNT connections each asking REQUEST in a loop; "ready" once each had an answer; on stdin's
# end, a JSON object: how many answers of each kind (ok, or the error's code) came. An answer
# that is ok is read whole but not parsed: the viewers' own work shares the bench's 2 cores.
VIEWERS = textwrap.dedent(
    """
    import json, socket, sys, threading
    path, count, request = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode() + b"\\n"
    counts, lock, started = {}, threading.Lock(), threading.Barrier(count + 1)
    def viewing():
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(path)
            lines = sock.makefile("rb")
            first = True
            while True:
                sock.sendall(request)
                line = lines.readline()
                if not line:
                    return
                # not parsed when ok (a viewer's own work is not the daemon's: 2 cores)
                ok = line.startswith(b'{"ok": true')
                kind = "ok" if ok else json.loads(line)["error"]["code"]
                with lock:
                    counts[kind] = counts.get(kind, 0) + 1
                if first:
                    first = False
                    started.wait()
    for _ in range(count):
        threading.Thread(target=viewing, daemon=True).start()
    started.wait()
    print("ready", flush=True)
    sys.stdin.read()
    with lock:
        print(json.dumps(counts), flush=True)
    """
)


class Viewers:
    """A process of `count` connections, each asking `request` in a loop."""

    def __init__(self, path: str, count: int, request: dict[str, Any]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", VIEWERS, path, str(count), json.dumps(request)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        if self.process.stdout.readline() != "ready\n":
            raise RuntimeError("the viewers did not get their first answers")
        self.started = time.monotonic()

    def stop(self) -> tuple[dict[str, int], float]:
        """How many answers of each kind came, and over how many seconds."""
        out, _ = self.process.communicate(timeout=60)
        return json.loads(out), time.monotonic() - self.started


# ---------------------------------------------------------------------- a thread or a process

# Builds `events` (limit 1000) answers from the journal at argv[1] in a loop, as the reader
# process does, until its stdin closes.
READ_LOOP = textwrap.dedent(
    """
    import select, sys, time
    from shoe_controller.service.control.journal_answers import JournalAnswers, Live
    from shoe_controller.service.control.wire import encode
    from shoe_controller.service.config import from_mapping
    from shoe_controller.store.journal import Journal
    journal = Journal.open(sys.argv[1], None, read_only=True, quick_check=False)
    answers = JournalAnswers(journal, from_mapping({"table": {"id": "07"}}))
    print("ready", flush=True)
    while not select.select([sys.stdin], [], [], 0)[0]:
        encode({"ok": True, "result": answers.answer(READ, Live(time.time()))})
    """
).replace("READ", repr(QUERIES["events limit 1000"]))


def read_in_a_thread(path: Path, stop: threading.Event) -> threading.Thread:
    """The reader's loop (READ_LOOP) in a thread of this process: it shares the GIL."""
    from shoe_controller.service.config import from_mapping  # noqa: PLC0415
    from shoe_controller.service.control.journal_answers import JournalAnswers, Live  # noqa: PLC0415
    from shoe_controller.service.control.wire import encode  # noqa: PLC0415

    started = threading.Event()

    def loop() -> None:
        journal = Journal.open(path, None, read_only=True, quick_check=False)
        answers = JournalAnswers(journal, from_mapping({"table": {"id": "07"}}))
        started.set()
        try:
            while not stop.is_set():
                request = QUERIES["events limit 1000"]
                encode({"ok": True, "result": answers.answer(request, Live(time.time()))})
        finally:
            journal.close()

    thread = threading.Thread(target=loop, name="reads-beside")
    thread.start()
    started.wait()
    return thread


def reads_beside(directory: Path, cards: int = 200, pace_s: float = 0.01) -> None:
    """A card's handling in-process (the daemon's link, translator, table and journal, as
    bench_ack_stages.py times them) while `events` answers are built in a loop beside it:
    by nothing, by a thread of the same process, by a process of its own."""
    from bench_ack_stages import frames, timed_frames  # noqa: PLC0415
    from latency import percentile  # noqa: PLC0415

    from shoe_controller.table.config import TableConfig  # noqa: PLC0415

    print(f"a card's handling in-process at {1 / pace_s:.0f} cards/s, p50 / p99 ms, while"
          " `events` (limit 1000) answers are built beside it")  # fmt: skip
    totals = {}
    for beside in ("nothing", "a thread", "a process"):
        path = directory / f"beside-{beside.replace(' ', '-')}.db"
        journal = Journal.open(path, "tbl-beside")
        controller = Controller(TableConfig(), journal)
        deal_shoes(controller, 3)
        handle = _card_handler(controller)
        stop, thread, process = threading.Event(), None, None
        if beside == "a thread":
            thread = read_in_a_thread(path, stop)
        elif beside == "a process":
            process = subprocess.Popen(
                [sys.executable, "-c", READ_LOOP, str(path)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert process.stdout is not None
            process.stdout.readline()
        try:
            times = timed_frames(frames(cards), pace_s, handle)
        finally:
            stop.set()
            if thread is not None:
                thread.join()
            if process is not None:
                process.communicate()
            journal.close()
        stages = (times["decode"], times["commit"], times["ack"])
        whole = [sum(parts) for parts in zip(*stages, strict=True)]
        totals[beside] = (percentile(whole, 0.5), percentile(whole, 0.99))
        p50, p99 = totals[beside]
        alone = totals["nothing"]
        print(f"  {'beside: ' + beside:<24} {p50 * 1e3:7.3f} / {p99 * 1e3:7.3f}"
              f"   ({p50 / alone[0]:4.2f}x / {p99 / alone[1]:4.2f}x)")  # fmt: skip


def _card_handler(controller: Controller) -> Any:
    """A card's handling after its frame is decoded: translated, applied and committed."""
    translator = ScannerTranslator()

    def handle(delivery: Any, decoded: float) -> dict[str, float]:
        inputs = translator.translate(delivery.message, time.time())
        session = {"scanner": {"session": delivery.handle.session_after.to_dict()}}
        controller.submit_many(inputs, session)
        stored = time.perf_counter()
        return {"commit": stored - decoded, "end": stored}

    return handle
