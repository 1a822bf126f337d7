"""Inputs per second through Table.apply (full 8-deck shoes replayed) vs the bare rules engine.

The baseline does the least any controller must do with the same cards: find each card's
position (`rules.next_position`) and each round's outcome (`rules.outcome`). The table does
that plus the procedures (burn, cut card, insurance windows, holds, events, the lifecycle
machine). Printed: both rates and their ratio, measured in this run.

    python bench/bench_table.py [--shoes N] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from shoe_testkit.perfect_dealer import DealtShoe, deal_shoe

from shoe_controller.game.rules import next_position, outcome
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import Card, full_deck


def _shoes(count: int, config: TableConfig) -> list[DealtShoe]:
    shoes = []
    for seed in range(count):
        cards = list(full_deck()) * config.decks
        random.Random(seed).shuffle(cards)
        shoes.append(deal_shoe(cards, config, cut_after=len(cards) - 16))
    return shoes


def _replay(shoes: list[DealtShoe], config: TableConfig) -> int:
    applied = 0
    for shoe in shoes:
        table = Table(config)
        for item in shoe.inputs:
            table.apply(item)
        applied += len(shoe.inputs)
    return applied


def _engine(rounds: list[list[Card]]) -> int:
    cards_seen = 0
    for cards in rounds:
        for count in range(len(cards)):
            next_position(cards[:count])
        outcome(cards)
        cards_seen += len(cards)
    return cards_seen


def _best(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    best = float("inf")
    work = 0
    for _ in range(repeat):
        start = time.perf_counter()
        work = run()
        best = min(best, time.perf_counter() - start)
    return best, work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for name, config in (("manual", TableConfig()), ("squeeze", TableConfig(squeeze=True))):
        shoes = _shoes(args.shoes, config)
        rounds = [cards for shoe in shoes for cards in shoe.rounds]
        table_time, inputs = _best(lambda shoes=shoes, config=config: _replay(shoes, config),
                                   args.repeat)  # fmt: skip
        engine_time, cards = _best(lambda rounds=rounds: _engine(rounds), args.repeat)
        build_time, _ = _best(lambda config=config: len([Table(config) for _ in range(100)]), 3)
        print(f"{name}: {args.shoes} shoes, {inputs} inputs, {cards} round cards")
        print(
            f"  table.apply     {inputs / table_time:12,.0f} inputs/s"
            f"  ({table_time / inputs * 1e6:6.1f} us per input)"
        )
        print(
            f"  rules engine    {cards / engine_time:12,.0f} cards/s"
            f"  ({engine_time / cards * 1e6:6.1f} us per card)"
        )
        print(f"  ratio (table time / engine time, same shoes): {table_time / engine_time:.1f}x")
        print(f"  Table() construction: {build_time / 100 * 1e6:.0f} us")


if __name__ == "__main__":
    main()
