"""Study: how often, and how deep in the shoe, each bet turns player-favoured.

Deals N simulated 8-deck shoes (cut card 14 cards from the back: it comes out after card
402, R2.1, R3.1) with the perfect dealer through the real table (`table.procedures.Table`),
feeds the table's events to the surveillance companion's own analysis (`companion.companion
.Analyst`: the exact edge of every bet after every round and after the burn, on the cards
not seen) and counts, per bet: the shoes in which it was ever favoured, the rounds favoured,
how deep (cards dealt) it first was, the largest edge, and what a player betting one unit
only when favoured would win per shoe. Draws the edge across the shoe (mean, 5-95 % band)
into a PNG (matplotlib: `pip install matplotlib`; the study alone needs it).

Reproducible: shoe i is shuffled by `random.Random(f"{seed}:{i}")`.

Run: nice -n 15 python tools/surveillance_study.py [--shoes 2000] [--seed 2026] [--jobs 2]
     [--png docs/surveillance-edges.png] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shoe_testkit.perfect_dealer import deal_shoe  # noqa: E402

from shoe_controller.companion.companion import Analyst  # noqa: E402
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE, Bet  # noqa: E402
from shoe_controller.table.config import TableConfig  # noqa: E402
from shoe_controller.table.procedures import Table  # noqa: E402
from shoe_controller.vocab.cards import Card, Suit  # noqa: E402

DECKS = 8
BEHIND_CUT = 14
CARDS = 52 * DECKS
BIN = 16  # cards dealt per bin of the plot
BETS = tuple(bet.value for bet in Bet)


def one_shoe(args: tuple[int, int]) -> list[tuple[int, int, dict[str, float]]]:
    """(cards dealt, round, {bet: player edge}) of every analysis in shoe `index`."""
    seed, index = args
    config = TableConfig(decks=DECKS)
    cards = [Card(rank, suit) for _ in range(DECKS) for rank in range(1, 14) for suit in Suit]
    random.Random(f"{seed}:{index}").shuffle(cards)
    table = Table(config)
    analyst = Analyst(DECKS, DEFAULT_PAY_TABLE, config.big_small_last_round)
    rows = []
    seq = 0
    for item in deal_shoe(cards, config, cut_after=CARDS - BEHIND_CUT).inputs:
        for event in table.apply(item):
            seq += 1
            analyst.feed({**event.to_json(), "seq": seq})
        if analyst.due is None:
            continue
        report = analyst.report()
        if report is None:
            continue
        left = sum(report["cards_left"].values())
        edges = {name: values["player_edge"] for name, values in report["bets"].items()}
        rows.append((CARDS - left, report["round"], edges))
    return rows


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summarize(shoes: list[list[tuple[int, int, dict[str, float]]]]) -> dict[str, Any]:
    """Per bet: how often and how deep it is favoured (edge > 0)."""
    out: dict[str, Any] = {}
    for name in BETS:
        ever = 0
        favoured_rounds = 0
        rounds = 0
        first_depths: list[int] = []
        largest: list[float] = []
        gains: list[float] = []
        for rows in shoes:
            mine = [(dealt, edges[name]) for dealt, _, edges in rows if name in edges]
            rounds += len(mine)
            good = [(dealt, edge) for dealt, edge in mine if edge > 0]
            favoured_rounds += len(good)
            gains.append(sum(edge for _, edge in good))
            if good:
                ever += 1
                first_depths.append(good[0][0])
                largest.append(max(edge for _, edge in good))
        out[name] = {
            "shoes_favoured": ever / len(shoes),
            "rounds_favoured": favoured_rounds / rounds if rounds else 0.0,
            "favoured_rounds_per_shoe": favoured_rounds / len(shoes),
            "first_favoured_cards_dealt_p10": percentile(first_depths, 0.10),
            "first_favoured_cards_dealt_median": percentile(first_depths, 0.50),
            "first_favoured_cards_dealt_p90": percentile(first_depths, 0.90),
            "largest_edge_median": percentile(largest, 0.50),
            "largest_edge_p95": percentile(largest, 0.95),
            "largest_edge_max": max(largest, default=float("nan")),
            "gain_per_shoe_when_favoured": statistics.fmean(gains),
        }
    return out


def bands(shoes: list[list[tuple[int, int, dict[str, float]]]]) -> dict[str, list[tuple]]:
    """Per bet and bin of cards dealt: (bin centre, mean, p5, p95, share favoured)."""
    out: dict[str, list[tuple]] = {}
    for name in BETS:
        binned: dict[int, list[float]] = {}
        for rows in shoes:
            for dealt, _, edges in rows:
                if name in edges:
                    binned.setdefault(dealt // BIN, []).append(edges[name])
        out[name] = [
            (
                (key + 0.5) * BIN,
                statistics.fmean(values),
                percentile(values, 0.05),
                percentile(values, 0.95),
                sum(value > 0 for value in values) / len(values),
            )
            for key, values in sorted(binned.items())
            if len(values) >= 20
        ]
    return out


def plot(curves: dict[str, list[tuple]], path: Path, shoes: int, seed: int) -> None:
    import matplotlib  # noqa: PLC0415 - the study's own dependency

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, axes = plt.subplots(4, 4, figsize=(16, 13), sharex=True)
    for axis, name in zip(axes.flat, BETS, strict=False):
        rows = curves[name]
        x = [row[0] for row in rows]
        axis.fill_between(x, [r[2] * 100 for r in rows], [r[3] * 100 for r in rows], alpha=0.3,
                          label="5-95 % of shoes")  # fmt: skip
        axis.plot(x, [r[1] * 100 for r in rows], label="mean")
        axis.axhline(0, color="black", linewidth=0.8)
        axis.set_title(name)
        axis.set_ylabel("player edge, %")
    share = axes.flat[len(BETS)]
    for name in ("perfect_pair", "player_pair", "any_pair", "lucky6", "banker_dragon", "tie"):
        rows = curves[name]
        share.plot([r[0] for r in rows], [r[4] * 100 for r in rows], label=name)
    share.set_title("rounds player-favoured, %")
    share.legend(fontsize=7)
    for axis in axes.flat[len(BETS) + 1 :]:
        axis.axis("off")
    for axis in axes[-1]:
        axis.set_xlabel("cards dealt (of 416; cut card after 402)")
    axes.flat[0].legend(fontsize=7)
    figure.suptitle(
        f"Exact player edge of every bet on the next round, {shoes} simulated 8-deck shoes"
        f" (seed {seed}, R14 default pay table)"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def markdown(summary: dict[str, Any]) -> str:
    lines = [
        "| bet | shoes ever favoured | rounds favoured | per shoe | first favoured at card"
        " (p10 / median / p90) | largest edge (median / p95 / max) | gain per shoe |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in summary.items():
        lines.append(
            f"| {name} | {row['shoes_favoured'] * 100:.1f} % | {row['rounds_favoured'] * 100:.2f} %"
            f" | {row['favoured_rounds_per_shoe']:.2f} |"
            f" {row['first_favoured_cards_dealt_p10']:.0f} /"
            f" {row['first_favoured_cards_dealt_median']:.0f} /"
            f" {row['first_favoured_cards_dealt_p90']:.0f} |"
            f" {row['largest_edge_median'] * 100:+.2f} / {row['largest_edge_p95'] * 100:+.2f} /"
            f" {row['largest_edge_max'] * 100:+.1f} % |"
            f" {row['gain_per_shoe_when_favoured']:.3f} |"
        )
    return "\n".join(lines).replace("nan", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoes", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--png", type=Path, default=REPO / "docs" / "surveillance-edges.png")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    work = [(args.seed, index) for index in range(args.shoes)]
    with multiprocessing.Pool(args.jobs) as pool:
        shoes = pool.map(one_shoe, work, chunksize=20)
    elapsed = time.perf_counter() - started
    analyses = sum(len(rows) for rows in shoes)
    summary = summarize(shoes)
    curves = bands(shoes)
    print(f"{args.shoes} shoes, seed {args.seed}: {analyses} analyses in {elapsed:.0f} s\n")
    print(markdown(summary))
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": summary, "bands": curves}, indent=1))
    plot(curves, args.png, args.shoes, args.seed)
    print(f"\nplot: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
