"""Benchmark: the surveillance companion's analysis per round, and what it costs a card's ACK.

The heavy work must never delay a card's ACK. Measured in one run:
  1. the analysis per round as the companion does it (`Analyst.report`: the cards seen, the
     exact odds, every bet's edge, the report's JSON), p50/p99 over simulated 8-deck shoes,
     beside the bare odds engine (`odds.analyse`) on the same compositions;
  2. card -> ACK with real processes (`shoe-controller run`, a reference-protocol shoe on a
     pty, the table server) with the monitor off, then on (`shoe-controller surveillance`
     beside the daemon at nice 10 as its unit runs it, reporting after every round), at 2
     and 100 cards/s, p50/p99, as a ratio on/off; and the first card of each round, dealt
     just as the round before was reported, on its own;
  3. how far behind the reports are: from a round's result (its time in the journal) to its
     report's journaling, p50/p99.
Beside it the shuffle watch: in 1, its per-round work as the companion does it
(`ShuffleAnalyst`: a round's events in, the `shuffle_report` request out: the reference
indexed on the shoe's first findings, the round's cards fed, every test, its p-value, the
report) on the second of two full 8-deck shoes, which repeats 20 cards of the first; in 2,
every run deals a whole first shoe (untimed) before the timed one, which repeats 20 cards of
it, so with the monitor on the watch works after every round of the cards measured (its
findings, and the slug alert, are counted to show it did).

Run: nice -n 15 python bench/bench_surveillance.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_daemon import BenchShoe, Notify, deal_phase, describe, timed_start
from shoe_testkit.perfect_dealer import START_TIME, deal_shoe

from drivers.wire.messages import CutCard, Shoe, ShoeState
from shoe_controller.companion.companion import Analyst
from shoe_controller.companion.shuffle_feed import ShuffleAnalyst
from shoe_controller.game.odds import analyse
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE
from shoe_controller.kit.rig import RigOptions, TableRig
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import EventType

REPO = Path(__file__).resolve().parents[1]
COMPANION_NICE = 10  # as systemd/shoe-surveillance.service runs it (Nice=10)


def analysis_times(shoes: int) -> None:
    """The companion's analysis per round against the bare engine, same compositions."""
    config = TableConfig()
    ours: list[float] = []
    engine: list[float] = []
    for index in range(shoes):
        cards = [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]
        random.Random(index).shuffle(cards)
        table = Table(config)
        analyst = Analyst(8, DEFAULT_PAY_TABLE, config.big_small_last_round)
        seq = 0
        for item in deal_shoe(cards, config, cut_after=402).inputs:
            for event in table.apply(item):
                seq += 1
                analyst.feed({**event.to_json(), "seq": seq})
            if analyst.due is None:
                continue
            basis = analyst.shoes[analyst.due].basis
            assert basis is not None
            composition = analyst.composition(basis.seen)
            started = time.perf_counter()
            analyst.report()
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            analyse(composition)
            engine.append(time.perf_counter() - started)
    print(f"analysis per round, {shoes} shoes, {len(ours)} rounds (in-process)")
    mine = describe("companion: cards seen -> every bet's edge -> report", ours)
    bare = describe("bare engine: odds.analyse of the same composition", engine)
    print(f"    ratio companion / engine                         p50 {mine[0] / bare[0]:5.2f}x"
          f"   p99 {mine[1] / bare[1]:5.2f}x")  # fmt: skip
    print(f"    share of a round at 2 cards/s (~2.7 s a round)   p99 {mine[1] / 2.7 * 100:.3f} %")


SLUG = (150, 20, 20)  # 20 cards of the first shoe from its 151st, at the second's 21st


def _slugged(previous: list[Any], rng: random.Random) -> list[Any]:
    """The 8 decks of `previous` in a random order but for SLUG's run of it, in order."""
    start, length, at = SLUG
    slug = previous[start : start + length]
    rest = list(previous)
    for card in slug:
        rest.remove(card)
    rng.shuffle(rest)
    return rest[:at] + slug + rest[at:]


def shuffle_times(shoes: int) -> None:
    """The shuffle watch's work per round as the companion does it."""
    config = TableConfig()
    rounds: list[float] = []
    slugs = 0
    for index in range(shoes):
        rng = random.Random(index)
        first = [Card(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in Suit]
        rng.shuffle(first)
        table, analyst, seq = Table(config), ShuffleAnalyst(8), 0
        for number, cards in ((1, first), (2, _slugged(first, rng))):
            start = START_TIME + 100_000.0 * number
            work = 0.0
            for item in deal_shoe(cards, config, cut_after=402, start=start).inputs:
                for event in table.apply(item):
                    seq += 1
                    began = time.perf_counter()
                    analyst.feed({**event.to_json(), "seq": seq})
                    work += time.perf_counter() - began
                if analyst.due is None:
                    continue
                began = time.perf_counter()
                request = analyst.request()
                work += time.perf_counter() - began
                if request is not None:
                    analyst.accepted(request)
                    slugs += sum(notice["kind"] == "slug" for notice in request["notices"])
                    if number == 2:
                        rounds.append(work)
                work = 0.0
    print(f"\nshuffle watch per round, {shoes} second shoes, {len(rounds)} findings, {slugs} slugs")
    _, work99 = describe("a round's events in -> its shuffle_report request out", rounds)
    print(f"    share of a round at 2 cards/s (~2.7 s a round)   p99 {work99 / 2.7 * 100:.3f} %")


def deal_first_shoe(shoe: BenchShoe, rig: TableRig) -> list[Any]:
    """Deal the bench shoe's cards at 100/s, the cut card after 402, until the shoe ended
    (untimed); then take the shoe out. The cards dealt, in order."""
    ended = rig.records.shoes_ended
    while rig.records.shoes_ended == ended:
        shoe.deal()
        shoe.pump_until(lambda: shoe.acked_at is not None)
        if shoe.counter == 402:
            shoe.send(CutCard(shoe.counter))
        if shoe.counter >= 402:
            shoe.pump_for(0.01)
            rig.records.poll_journal()
        else:
            shoe.pump_for(0.005)
    dealt = shoe.cards[: shoe.counter]
    shoe.state = ShoeState.REMOVED
    shoe.send(Shoe(ShoeState.REMOVED))
    return dealt


def _at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def run_table(
    directory: Path, name: str, paced: int, fast: int, *, monitor: bool
) -> dict[str, Any]:
    work = directory / name
    work.mkdir()
    rig = TableRig(work, RigOptions())
    rig.key_file.write_text("bench secret\n")
    rig.key_file.chmod(0o600)
    notify = Notify(work / "notify")
    shoe = BenchShoe(rig.port_of("shoe"))
    companion = None
    try:
        rig.start_receiver()
        rig.write_config()
        shoe.hello()
        timed_start(rig, notify, shoe)
        if monitor:
            log = (work / "surveillance.log").open("wb")
            companion = subprocess.Popen(
                [sys.executable, "-m", "shoe_controller.cli.main", "surveillance", "--config",
                 str(rig.config_path)],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=lambda: os.nice(COMPANION_NICE),  # noqa: PLW1509 - no threads yet
            )  # fmt: skip
            shoe.pump_for(1.5)  # it connected and follows
        # The card timed_start deals came before LOADED (refused: no shoe); the shoe's count
        # starts again at 1 once loaded (docs/spec-protocol.md), else the table holds for missed
        # cards.
        shoe.counter = 0
        shoe.load()
        first = deal_first_shoe(shoe, rig)
        shoe.pump_for(1.0)  # the companion's findings of the shoe's end
        loaded_at = rig.records.last_seq()
        shoe.load(_slugged(first, random.Random(28)))
        slow, slow_walls = deal_phase(shoe, 2.0, paced)
        quick, quick_walls = deal_phase(shoe, 100.0, fast)
        shoe.pump_for(1.0)  # the last reports
        latencies = dict(zip(slow_walls, slow, strict=True)) | dict(
            zip(quick_walls, quick, strict=True)
        )
        journal = rig.records.journal()
        assert journal is not None
        steps = journal.reads.replay_steps(1)
        firsts, event_at, lags, reports, findings, slugs = [], {}, [], 0, 0, 0
        for step in steps:
            if step.events and step.events[0].seq <= loaded_at:
                for event in step.events:
                    event_at[event.seq] = event.at
                continue  # the first shoe: untimed
            slugs += sum(event.type == EventType.SURVEILLANCE_SLUG for event in step.events)
            findings += step.input["type"] == "shuffle_findings"
            for event in step.events:
                event_at[event.seq] = event.at
            if step.input["type"] == "card" and any(
                event.type == "round.started" for event in step.events
            ):
                counter = step.input["counter"]
                if counter in latencies:
                    firsts.append(latencies[counter])
            if step.input["type"] == "surveillance_report":
                reports += 1
                lag = step.input["at"] - _at(event_at[step.input["after_seq"]])
                lags.append(lag)
                if lag > 0.05:
                    print(f"    slow report: round {step.input['round']}, {lag * 1e3:.0f} ms")
        worst = sorted(lags)[-3:]
        print(f"  run {name}: {len(firsts)} rounds, {reports} reports, {findings} shuffle"
              f" findings, {slugs} slug alerts, slowest report lags"
              f" {', '.join(f'{lag * 1e3:.0f}' for lag in worst) or '-'} ms")  # fmt: skip
        return {"2/s": slow, "100/s": quick, "first": firsts, "lags": lags, "reports": reports}
    finally:
        if companion is not None:
            companion.terminate()
            companion.wait(10)
        rig.close()
        shoe.close()


PHASES = {"2/s": "card -> ACK at 2 cards/s", "100/s": "card -> ACK at 100 cards/s",
          "first": "first card of each round (both paces)"}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args(argv)
    shoes, paced, fast = (5, 12, 200) if args.quick else (40, 40, 360)
    analysis_times(shoes)
    shuffle_times(max(shoes // 2, 3))
    directory = Path(tempfile.mkdtemp(prefix="bench-sv-"))
    try:
        print("\ncard -> ACK, real processes, same pty shoe, runs off, on, on, off (ms)")
        runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
        for number, monitor in enumerate((False, True, True, False)):
            name = f"{number}-{'on' if monitor else 'off'}"
            runs[monitor].append(run_table(directory, name, paced, fast, monitor=monitor))
        figures: dict[bool, dict[str, tuple[float, float]]] = {}
        for monitor in (False, True):
            label = f"monitor {'on' if monitor else 'off'}"
            figures[monitor] = {
                key: describe(f"{label}: {text}", [x for run in runs[monitor] for x in run[key]])
                for key, text in PHASES.items()
            }
        reports = sum(run["reports"] for run in runs[True])
        print(f"  reports journaled with the monitor on: {reports}")
        describe(
            "round's result -> its report journaled", [x for r in runs[True] for x in r["lags"]]
        )
        print("\nratios, monitor on / off")
        for key in PHASES:
            (p50, p99), (b50, b99) = figures[True][key], figures[False][key]
            print(f"    {key:<8} p50 {p50 / b50:5.2f}x   p99 {p99 / b99:5.2f}x")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
