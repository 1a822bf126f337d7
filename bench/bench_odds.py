"""Benchmark: the full 8-deck exact analysis against straightforward enumerations, as ratios.

Run (package installed, or PYTHONPATH=.): python bench/bench_odds.py [--repeat N]

Baselines, all measured in this run:
1. the reference (odds_reference.py: rules.outcome and payouts.settle on every sequence of
   cards) on a 12-card shoe it can finish, then extrapolated to 8 decks by its number of
   rounds (it would take hours there);
2. a plain-Python nested-loop enumeration by point value (main outcomes only, no pairs),
   run on the full 8-deck shoe itself.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable, Sequence

from shoe_testkit.odds_reference import reference_analysis, rounds

from shoe_controller.game.odds import Composition, analyse, main_outcome_counts
from shoe_controller.game.rules import banker_draws, is_natural, player_draws
from shoe_controller.vocab.cards import parse_card

SMALL_SHOE = "AS*2 AH 3D 4C 6S*2 7H 9D KC*2"  # the tests' rich shoe: every event happens


def timed(action: Callable[[], object], repeat: int) -> float:
    """Median wall time of `repeat` calls, in seconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def small_shoe() -> Composition:
    counts = [0] * 52
    for word in SMALL_SHOE.split():
        card, _, times = word.partition("*")
        counts[parse_card(card).index] += int(times or 1)
    return Composition(tuple(counts))


def reference_rounds_full_shoe(kinds_per_value: Sequence[int]) -> int:
    """How many card-kind sequences the reference deals on a shoe holding at least six of every
    kind (so every sequence is possible): one per round of point values, times the kinds of
    each value it draws."""
    all_kinds = sum(kinds_per_value)
    total = 0
    for a in range(10):
        for b in range(10):
            for c in range(10):
                for d in range(10):
                    ways = (
                        kinds_per_value[a]
                        * kinds_per_value[b]
                        * kinds_per_value[c]
                        * kinds_per_value[d]
                    )
                    player, banker = (a + c) % 10, (b + d) % 10
                    if is_natural(player) or is_natural(banker):
                        total += ways
                    elif player_draws(player):
                        for e in range(10):
                            drawn = ways * kinds_per_value[e]
                            total += drawn * all_kinds if banker_draws(banker, e) else drawn
                    elif banker_draws(banker, None):
                        total += ways * all_kinds
                    else:
                        total += ways
    return total


def plain_point_enumeration(point_counts: Sequence[int]) -> dict[tuple[int, int, int], int]:
    """Straightforward nested loops over point values, without replacement: counts of
    (player total, banker total, cards dealt) over N(N-1)...(N-5)."""
    shoe = list(point_counts)
    cards = sum(shoe)
    results: dict[tuple[int, int, int], int] = {}

    def add(key: tuple[int, int, int], ways: int) -> None:
        results[key] = results.get(key, 0) + ways

    for a in range(10):
        wa = shoe[a]
        shoe[a] -= 1
        for b in range(10):
            wb = wa * shoe[b]
            shoe[b] -= 1
            for c in range(10):
                wc = wb * shoe[c]
                shoe[c] -= 1
                for d in range(10):
                    wd = wc * shoe[d]
                    if wd <= 0:
                        continue
                    shoe[d] -= 1
                    player, banker = (a + c) % 10, (b + d) % 10
                    if is_natural(player) or is_natural(banker):
                        add((player, banker, 4), wd * (cards - 4) * (cards - 5))
                    elif player_draws(player):
                        for e in range(10):
                            we = wd * shoe[e]
                            if we <= 0:
                                continue
                            final_player = (player + e) % 10
                            if not banker_draws(banker, e):
                                add((final_player, banker, 5), we * (cards - 5))
                                continue
                            shoe[e] -= 1
                            for f in range(10):
                                if shoe[f] > 0:
                                    add((final_player, (banker + f) % 10, 6), we * shoe[f])
                            shoe[e] += 1
                    elif banker_draws(banker, None):
                        for e in range(10):
                            if shoe[e] > 0:
                                add((player, (banker + e) % 10, 5), wd * shoe[e] * (cards - 5))
                    else:
                        add((player, banker, 4), wd * (cards - 4) * (cards - 5))
                    shoe[d] += 1
                shoe[c] += 1
            shoe[b] += 1
        shoe[a] += 1
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed runs of the fast analysis")
    repeat = parser.parse_args().repeat

    eight = Composition.full_shoe(8)
    start = time.perf_counter()
    analyse(eight)  # the first call also builds the rule tables (once per process)
    first_call = time.perf_counter() - start
    fast_8 = timed(lambda: analyse(eight), repeat)

    small = small_shoe()
    small_rounds = sum(1 for _ in rounds(small))
    reference_small = timed(lambda: reference_analysis(small), 1)
    fast_small = timed(lambda: analyse(small), repeat)
    per_round = reference_small / small_rounds
    kinds = [16] + [4] * 9  # card kinds per point value in a 52-card deck
    rounds_8 = reference_rounds_full_shoe(kinds)
    reference_8 = rounds_8 * per_round

    start = time.perf_counter()
    plain = plain_point_enumeration(eight.point_counts)
    plain_8 = time.perf_counter() - start
    # The plain loops and the fast engine must agree before their times mean anything.
    counts, total = main_outcome_counts(eight.point_counts)
    banker_plain = sum(ways for (player, banker, _), ways in plain.items() if banker > player)
    banker_fast = sum(
        int(counts[player, banker].sum())
        for player in range(10)
        for banker in range(10)
        if banker > player
    )
    if banker_plain != banker_fast or not sum(plain.values()) == total == math.perm(416, 6):
        raise SystemExit("the plain loops and the fast engine disagree: timings void")

    print(f"fast analysis, 8 decks, first call (builds tables): {first_call * 1e3:9.2f} ms")
    print(f"fast analysis, 8 decks, median of {repeat}:{'':>16}{fast_8 * 1e3:9.2f} ms")
    print()
    print(f"reference on the {small.total}-card shoe ({small_rounds} rounds):{'':>6}", end="")
    print(f"{reference_small:9.2f} s   ({per_round * 1e6:.1f} us a round)")
    print(f"fast analysis on the same shoe:{'':>20}{fast_small * 1e3:9.2f} ms")
    print(f"  measured ratio reference / fast:{'':>17}{reference_small / fast_small:12,.0f} x")
    print(f"reference on 8 decks, extrapolated ({rounds_8:,} rounds):", end="")
    print(f" {reference_8 / 3600:6.1f} h")
    print(f"  extrapolated ratio reference / fast, 8 decks:{'':>4}{reference_8 / fast_8:12,.0f} x")
    print()
    print(f"plain-Python point-value loops, 8 decks (main only): {plain_8:7.2f} s")
    print(f"  measured ratio plain loops / fast, 8 decks:{'':>6}{plain_8 / fast_8:12,.0f} x")


if __name__ == "__main__":
    main()
