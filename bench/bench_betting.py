"""Benchmark: does betting move a card's ACK?

A card is ACKed once `Controller.submit` returned: the table's step and the journal's commit
(fsync). Measured in one run, in-process, with a real journal file each: the same shoe dealt
by the perfect dealer on a table without betting (the baseline), with the dealer's button and
with the table server closing every round's bets (their inputs between the rounds, not
timed); only the cards' submits are timed. Runs interleave, so the disk's moods fall on all.
Printed: p50 and p99 per table, and their ratios to the baseline (aim: about 1x).

    python bench/bench_betting.py [--shoes N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from shoe_testkit.perfect_dealer import deal_shoe

from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import full_deck
from shoe_controller.vocab.inputs import CardDrawn

TABLES = {
    "none": TableConfig(insurance=False),
    "button": TableConfig(insurance=False, betting="button"),
    "server": TableConfig(insurance=False, betting="server"),
}


def one_shoe(config: TableConfig, seed: int, directory: Path) -> list[float]:
    """Seconds of each card's submit through a fresh controller and journal."""
    cards = list(full_deck()) * config.decks
    random.Random(seed).shuffle(cards)
    shoe = deal_shoe(cards, config, cut_after=len(cards) - 16)
    times = []
    with Journal.open(directory / f"{config.betting}-{seed}.db", "bench") as journal:
        controller = Controller(config, journal)
        for item in shoe.inputs:
            began = time.perf_counter()
            controller.submit(item)
            if isinstance(item, CardDrawn):
                times.append(time.perf_counter() - began)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoes", type=int, default=3, help="shoes per table (default 3)")
    args = parser.parse_args(argv)
    found: dict[str, list[float]] = {name: [] for name in TABLES}
    with tempfile.TemporaryDirectory(prefix="bench-betting-") as name:
        for seed in range(args.shoes):
            for table, config in TABLES.items():
                found[table] += one_shoe(config, seed, Path(name))
    base = found["none"]
    base_p50, base_p99 = statistics.median(base), statistics.quantiles(base, n=100)[98]
    print(f"{'betting':<8} {'cards':>6} {'p50 ms':>8} {'p99 ms':>8} {'p50 x':>6} {'p99 x':>6}")
    for table, times in found.items():
        p50, p99 = statistics.median(times), statistics.quantiles(times, n=100)[98]
        print(f"{table:<8} {len(times):>6} {p50 * 1000:>8.3f} {p99 * 1000:>8.3f}"
              f" {p50 / base_p50:>6.2f} {p99 / base_p99:>6.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
