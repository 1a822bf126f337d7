"""Benchmark: do the journal's signed checkpoints move a card's ACK?

A checkpoint is one Ed25519 signature and one commit of two records, on the daemon's loop
between two inputs, every few minutes. Measured in one run, on this machine:
  1. in-process, with a real journal file each: the same shoes dealt by the perfect dealer
     through `Controller.submit` without checkpoints (the baseline) and with the daemon's own
     `Checkpoints` taking one every INPUTS_APART inputs and at each shoe's end (the timer
     faked: at 2 cards/s, every 10 s, thirty times the default's rate); the cards'
     submits are timed (a card is ACKed when it returns); the two tables are dealt in lock
     step, each input to both, each first in turn, so the machine's moods fall on both
     alike. Also a checkpoint itself (sign and commit) and a signature alone.
  2. the real daemon (`shoe-controller run`, real processes, the bench shoe on a pty, the
     reference table server): the card's last byte on the pty to its ACK, without a key and
     with one and `[journal] checkpoint_every_s = 10` (the least), at DAEMON_RATE cards/s,
     a fresh daemon each time, the two kinds in turn (each first in every other round).
Printed: p50 and p99, and the ratios with checkpoints / without (aim: about 1x).

    python bench/bench_checkpoints.py [--quick] [--no-daemon]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench_daemon import BenchShoe, Notify, deal_phase, timed_start
from shoe_testkit.perfect_dealer import START_TIME, deal_shoe

from shoe_controller.delivery.routing import EventFilter
from shoe_controller.kit.rig import RigOptions, TableRig
from shoe_controller.service.checkpoints import Checkpoints
from shoe_controller.store.chain import ChainPoint
from shoe_controller.store.checkpoint import Signer
from shoe_controller.store.checkpoint_keys import write_new_key
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal, StoredEvent
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import full_deck
from shoe_controller.vocab.events import iso_time
from shoe_controller.vocab.inputs import CardDrawn, Input

CONFIG = TableConfig(insurance=False)
EVERY_S = 300.0
INPUTS_APART = 20  # a checkpoint every 20 inputs: about every 10 s at 2 cards/s
DAEMON_RATE = 10.0  # cards a second: 400 cards in 40 s, four periodic checkpoints


def percentiles(samples: list[float]) -> tuple[float, float]:
    return statistics.median(samples), statistics.quantiles(samples, n=100)[98]


class BenchTable:
    """A controller on a journal of its own, with the daemon's checkpoints or without."""

    def __init__(self, path: Path, signer: Signer | None) -> None:
        self.timer = 0.0
        self.journal = Journal.open(path, "bench", routes={"server": EventFilter()})
        self.checkpoints: Checkpoints | None = None
        self.controller = Controller(CONFIG, self.journal, on_stored=self._stored)
        if signer is not None:
            self.checkpoints = Checkpoints(
                signer, self.controller, self.controller.submit_many, controller_id="bench",
                every_s=EVERY_S, clock=time.time, monotonic=lambda: self.timer,
            )  # fmt: skip
        self.controller.start("bench", time.time())
        self.cards: list[float] = []  # seconds of each card's submit
        self.taken: list[float] = []  # seconds of each checkpoint the upkeep took

    def _stored(self, events: list[StoredEvent]) -> None:
        if self.checkpoints is not None:
            self.checkpoints.on_stored(events)

    def step(self, item: Input) -> None:
        """One input, timed if a card; then the upkeep's round, between two inputs."""
        began = time.perf_counter()
        self.controller.submit(item)
        if isinstance(item, CardDrawn):
            self.cards.append(time.perf_counter() - began)
        self.timer += EVERY_S / INPUTS_APART
        if self.checkpoints is not None:
            before = self.checkpoints.taken
            began = time.perf_counter()
            self.checkpoints.tick()
            if self.checkpoints.taken > before:
                self.taken.append(time.perf_counter() - began)


def in_process(shoes: int, directory: Path, signer: Signer) -> None:
    print(f"1. in-process: {shoes} shoe(s), both tables in lock step, a checkpoint every"
          f" {INPUTS_APART} inputs")  # fmt: skip
    without = BenchTable(directory / "without.db", None)
    with_ = BenchTable(directory / "with.db", signer)
    for seed in range(shoes):
        cards = list(full_deck()) * CONFIG.decks
        random.Random(seed).shuffle(cards)
        shoe = deal_shoe(cards, CONFIG, cut_after=len(cards) - 16, start=START_TIME + 3600.0 * seed)
        for index, item in enumerate(shoe.inputs):
            # The same input to each, each first in turn: the disk's moods fall on both.
            for table in (without, with_) if index % 2 == 0 else (with_, without):
                table.step(item)
    assert with_.checkpoints is not None
    taken, taken_s = with_.checkpoints.taken, with_.taken
    found = {"without": without.cards, "with": with_.cards}
    for table in (without, with_):
        table.journal.close()
    base = percentiles(found["without"])
    print(
        f"  {'card submit':<28} {'cards':>6} {'p50 ms':>8} {'p99 ms':>8} {'p50 x':>6} {'p99 x':>6}"
    )
    for mode, samples in found.items():
        p50, p99 = percentiles(samples)
        print(f"  {mode + ' checkpoints':<28} {len(samples):>6} {p50 * 1e3:>8.3f}"
              f" {p99 * 1e3:>8.3f} {p50 / base[0]:>6.2f} {p99 / base[1]:>6.2f}")  # fmt: skip
    p50, p99 = percentiles(taken_s)
    print(f"  a checkpoint (sign + commit) {len(taken_s):>5} {p50 * 1e3:>8.3f} {p99 * 1e3:>8.3f}"
          f"   ({taken} taken in all)")  # fmt: skip
    point = ChainPoint(1200, 3400, "ab" * 32)
    signs = []
    for _ in range(2000):
        began = time.perf_counter()
        signer.sign("bench", point, iso_time(1_900_000_000.0))
        signs.append(time.perf_counter() - began)
    p50, p99 = percentiles(signs)
    print(f"  a signature alone            {len(signs):>5} {p50 * 1e3:>8.3f} {p99 * 1e3:>8.3f}")


def dealt_acks(rig: TableRig, notify: Notify, shoe: BenchShoe, cards: int) -> list[float]:
    """Start the daemon with the bench shoe, load it and deal `cards`: the ACKs' latencies."""
    shoe.hello()
    timed_start(rig, notify, shoe)
    shoe.pump_until(lambda: shoe.link.pending == 0)
    shoe.load()
    acks, _ = deal_phase(shoe, DAEMON_RATE, cards)
    return acks


def daemon(directory: Path, cards: int, rounds: int) -> None:
    print(f"\n2. the daemon: CARD last byte on the pty -> ACK, {rounds} x {cards} cards at"
          f" {DAEMON_RATE:g}/s each way, in turn")  # fmt: skip
    results: dict[str, tuple[list[float], int]] = {"without": ([], 0), "with": ([], 0)}
    for number in range(rounds):
        # Each kind first in every other round: the machine's moods and any order effect
        # (the page cache, the disk's queue) fall on both alike.
        for mode in ("without", "with") if number % 2 == 0 else ("with", "without"):
            acks, taken = one_daemon(directory / f"{mode}-{number}", mode == "with", cards)
            results[mode] = (results[mode][0] + acks, results[mode][1] + taken)
    base = percentiles(results["without"][0])
    print(f"  {'card ACK':<28} {'cards':>6} {'p50 ms':>8} {'p99 ms':>8} {'p50 x':>6} {'p99 x':>6}")
    for mode, (acks, taken) in results.items():
        p50, p99 = percentiles(acks)
        print(f"  {mode + ' checkpoints':<28} {len(acks):>6} {p50 * 1e3:>8.3f}"
              f" {p99 * 1e3:>8.3f} {p50 / base[0]:>6.2f} {p99 / base[1]:>6.2f}"
              f"   ({taken} checkpoint(s))")  # fmt: skip


def one_daemon(directory: Path, checkpoints: bool, cards: int) -> tuple[list[float], int]:
    """One daemon, with a checkpoint key or without, `cards` dealt: ACKs and checkpoints."""
    rig = TableRig(directory, RigOptions(checkpoints=checkpoints,
                                         journal={"checkpoint_every_s": 10}))  # fmt: skip
    rig.directory.mkdir(parents=True, exist_ok=True)
    rig.key_file.write_text("bench secret\n")
    rig.key_file.chmod(0o600)
    if checkpoints:
        write_new_key(rig.checkpoint_key)
    notify = Notify(rig.directory / "notify")
    shoe: BenchShoe | None = None
    try:
        rig.start_receiver()
        rig.write_config()
        shoe = BenchShoe(rig.port_of("shoe"))
        acks = dealt_acks(rig, notify, shoe, cards)
        taken = sum(event.type == "journal.checkpoint" for event in rig.records.journal_events())
        return acks, taken
    finally:
        rig.close()
        notify.sock.close()
        if shoe is not None:
            shoe.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer shoes and cards")
    parser.add_argument("--no-daemon", action="store_true", help="the in-process part only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-cp-") as name:
        directory = Path(name)
        signer = write_new_key(directory / "checkpoint.key")
        in_process(2 if args.quick else 6, directory, signer)
        if not args.no_daemon:
            daemon(directory, 150 if args.quick else 400, 2 if args.quick else 4)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
