"""Study: what the shuffle-integrity tests tell from a fair shuffle and what not.

Two jobs (docs/shuffle.md):
- `tables`: simulates fair shoes against fair references (numpy, vectorised: the same
  definitions as game/surveillance/shuffle_order.py, checked against it on the first shoes)
  and writes the null tables the p-values read, shoe_controller/game/surveillance/
  shuffle_tables.json. Batch b of deck count d draws from SeedSequence([seed, d, b]).
- `study`: the life of a shoe, simulated. The previous shoe is a fair order of the 416
  cards; its first 402 are dealt (the cut card leaves 14, docs/surveillance.md) and are the
  reference, burn included. The discards go back in dealt order, the 14 undealt after them;
  a shuffle model (tools/shuffle_models.py) acts on that pile; the new shoe's first 402
  cards are fed, 5 at a time (a round), to the real `ShuffleWatch` with their RFID tags.
  Counted per model: each test's alarms, the live slug alert, the verdict with rank and suit
  only and with tags. Shoe i of model number m draws from SeedSequence([seed, m, i]).
  Writes a PNG of detection against the number of riffles (tools/shuffle_png.py: numpy and
  zlib, no matplotlib).

Run: nice -n 19 python tools/shuffle_study.py tables [--seed 28] [--shoes 400000]
     nice -n 19 python tools/shuffle_study.py study [--seed 2026] [--fair 100000] [--each 1000]
         [--monitored 1000] [--jobs 2] [--png docs/shuffle-detection.png] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from shuffle_models import factory_deck, riffles, shelf, slug, strip, zone  # noqa: E402
from shuffle_png import LinePlot  # noqa: E402

from shoe_controller.game.surveillance.shuffle_null import FairShuffle  # noqa: E402
from shoe_controller.game.surveillance.shuffle_order import (  # noqa: E402
    common_runs,
    longest_common_run,
    longest_factory_stretch,
)
from shoe_controller.game.surveillance.shuffle_watch import (  # noqa: E402
    RISING_SEQUENCES,
    SLUG,
    SUCCESSIONS,
    ShuffleSettings,
    ShuffleWatch,
    verdict,
)
from shoe_controller.vocab.cards import Card, Suit, from_index  # noqa: E402

DECKS, BEHIND_CUT = 8, 14
SHOE = 52 * DECKS
DEALT = SHOE - BEHIND_CUT
ROUND = 5  # cards fed between two looks (a baccarat round deals 4 to 6)
CARDS = [from_index(kind) for kind in range(52)]
TABLE_STATS = ("longest_run", "common_runs_2", "factory_stretch")
TABLES_FILE = REPO / "shoe_controller" / "game" / "surveillance" / "shuffle_tables.json"
RIFFLES = tuple(range(1, 13))  # the issue asks 1-8; 9-12 show where the tags lose it
MODELS = (
    "fair",
    *(f"riffle_{k}" for k in RIFFLES),
    "strip",
    "zone",
    "slug_10",
    "slug_20",
    "slug_40",
    "factory_deck",
    "shelf",
)
IDENTITY_TESTS = (SUCCESSIONS, RISING_SEQUENCES)
# A new deck in the order a common brand packs it: A-K spades, A-K diamonds, K-A clubs, K-A hearts.
NEW_DECK = (
    [Card(rank, Suit.S) for rank in range(1, 14)]
    + [Card(rank, Suit.D) for rank in range(1, 14)]
    + [Card(rank, Suit.C) for rank in range(13, 0, -1)]
    + [Card(rank, Suit.H) for rank in range(13, 0, -1)]
)

# ------------------------------------------------------------------------------- the tables


def null_batch(rng: np.random.Generator, decks: int, batch: int, grid: np.ndarray) -> dict:
    """Per simulated shoe and grid point: the longest common run, the common 2-runs and the
    longest stretch in new-deck order of its first n cards against a whole fair reference."""
    n_cards = 52 * decks
    base = np.repeat(np.arange(52, dtype=np.int64), decks)
    new = rng.permuted(np.tile(base, (batch, 1)), axis=1)
    ref = rng.permuted(np.tile(base, (batch, 1)), axis=1)
    rows = np.arange(batch, dtype=np.int64)[:, None]
    out: dict[str, np.ndarray] = {}
    for k in (2, 3):
        width = n_cards - k + 1
        here, there = np.zeros((batch, width), np.int64), np.zeros((batch, width), np.int64)
        for t in range(k):
            here, there = here * 52 + new[:, t : t + width], there * 52 + ref[:, t : t + width]
        keys_there = (there + rows * 52**k).ravel()
        keys_here = (here + rows * 52**k).ravel()
        order = np.argsort(keys_there, kind="stable")
        ordered = keys_there[order]
        low = np.searchsorted(ordered, keys_here, "left")
        high = np.searchsorted(ordered, keys_here, "right")
        if k == 2:
            counts = np.cumsum((high - low).reshape(batch, width), axis=1)
            last = grid - k
            out["common_runs_2"] = np.where(last >= 0, counts[:, np.clip(last, 0, None)], 0)
            continue
        # Every 3-card match, grown to its full length: the longest run of each prefix.
        found = high - low
        hit = np.nonzero(found)[0]
        found = found[hit]
        total = int(found.sum())
        starts = np.repeat(low[hit], found) + (
            np.arange(total) - np.repeat(np.cumsum(found) - found, found)
        )
        j, shoe = order[starts] % width, np.repeat(hit // width, found)
        i, length = np.repeat(hit % width, found), np.full(total, 3)
        while True:
            inside = np.nonzero((i + length < n_cards) & (j + length < n_cards))[0]
            grows = np.zeros(total, bool)
            grows[inside] = (
                new[shoe[inside], (i + length)[inside]] == ref[shoe[inside], (j + length)[inside]]
            )
            if not grows.any():
                break
            length = length + grows
        longest = np.where(out["common_runs_2"] > 0, 2, 1)
        reach = np.minimum(length[:, None], grid[None, :] - i[:, None])
        reach[reach < 3] = 0
        np.maximum.at(longest, shoe, reach)
        out["longest_run"] = longest
    rank, suit = new // 4, new % 4
    rise = rank[:, 1:] - rank[:, :-1]
    step = np.where((suit[:, 1:] == suit[:, :-1]) & (np.abs(rise) == 1), rise, 0)
    run, before = np.zeros(batch, np.int64), np.zeros(batch, np.int64)
    best = np.ones(batch, np.int64)
    factory = np.ones((batch, len(grid)), np.int64)
    where = {int(n): g for g, n in enumerate(grid)}
    for t in range(n_cards - 1):
        run = np.where(step[:, t] != 0, np.where(step[:, t] == before, run + 1, 1), 0)
        before = step[:, t]
        np.maximum(best, run + 1, out=best)
        if t + 2 in where:
            factory[:, where[t + 2]] = best
    out["factory_stretch"] = factory
    return out | {"new": new, "ref": ref}


def _grid(decks: int) -> np.ndarray:
    return np.array(sorted({*range(16, 52 * decks, 16), 52 * decks}))


def table_job(args: tuple[int, int, int, int]) -> dict[str, list[np.ndarray]]:
    """Histograms (value counts per grid point) of one batch."""
    seed, decks, index, batch = args
    grid = _grid(decks)
    out = null_batch(np.random.default_rng([seed, decks, index]), decks, batch, grid)
    if index == 0:
        check_against_module(out, grid, shoes=20)
    return {name: [np.bincount(out[name][:, g]) for g in range(len(grid))] for name in TABLE_STATS}


def check_against_module(out: dict, grid: np.ndarray, shoes: int) -> None:
    """The vectorised null must be the module's statistics exactly."""
    for b in range(shoes):
        new = [CARDS[k] for k in out["new"][b]]
        ref = [CARDS[k] for k in out["ref"][b]]
        for g in range(0, len(grid), 7):
            n = int(grid[g])
            mine = (
                longest_common_run(new[:n], ref).length,
                common_runs(new[:n], ref, 2),
                longest_factory_stretch(new[:n]).length,
            )
            theirs = tuple(int(out[name][b, g]) for name in TABLE_STATS)
            if mine != theirs:
                raise AssertionError(f"shoe {b}, {n} cards: module {mine}, simulation {theirs}")


def _add(total: list[np.ndarray] | None, part: list[np.ndarray]) -> list[np.ndarray]:
    if total is None:
        return part
    out = []
    for a, b in zip(total, part, strict=True):
        size = max(len(a), len(b))
        out.append(np.pad(a, (0, size - len(a))) + np.pad(b, (0, size - len(b))))
    return out


def make_tables(seed: int, shoes: dict[int, int], jobs: int, batch: int = 2000) -> dict:
    """The tables' JSON form: per deck count the histograms at every grid point."""
    work = [
        (seed, decks, index, batch)
        for decks, count in shoes.items()
        for index in range(count // batch)
    ]
    with multiprocessing.Pool(jobs) as pool:
        parts = pool.map(table_job, work, chunksize=1)
    decks_out: dict[str, Any] = {}
    for decks, count in shoes.items():
        totals: dict[str, list[np.ndarray] | None] = dict.fromkeys(TABLE_STATS)
        for (_, d, _, _), part in zip(work, parts, strict=True):
            if d == decks:
                for name in TABLE_STATS:
                    totals[name] = _add(totals[name], part[name])
        stats = {}
        for name, histograms in totals.items():
            rows = []
            for histogram in histograms or []:
                nonzero = np.nonzero(histogram)[0]
                first, last = int(nonzero[0]), int(nonzero[-1])
                rows.append([first, *(int(v) for v in histogram[first : last + 1])])
            stats[name] = rows
        decks_out[str(decks)] = {
            "shoes": (count // batch) * batch,
            "grid": [int(n) for n in _grid(decks)],
            "stats": stats,
        }
    return {"seed": f"SeedSequence([{seed}, decks, batch]), batches of {batch}", "decks": decks_out}


def write_tables(tables: dict, path: Path, command: str) -> None:
    """The tables as the JSON file shuffle_null.py reads (data, not code: never edited by hand)."""
    made = {"made_by": f"python {command}", **tables}
    path.write_text(json.dumps(made, separators=(",", ":"), sort_keys=True) + "\n")


# ------------------------------------------------------------------------------- one shoe

_NULL: FairShuffle | None = None


def _null() -> FairShuffle:
    global _NULL  # noqa: PLW0603 - one per worker process: its caches serve every shoe
    if _NULL is None:
        _NULL = FairShuffle.for_decks(DECKS)
    return _NULL


def one_shoe(args: tuple[int, int, int, bool]) -> dict[str, Any]:
    """Deal one shoe after model `MODELS[model]` and judge it with the watch."""
    seed, model, index, monitored = args
    name = MODELS[model]
    rng = np.random.default_rng([seed, model, index])
    kinds = np.concatenate([rng.permutation(np.repeat(np.arange(52), DECKS)), np.zeros(52, int)])
    kinds[SHOE:] = [card.index for card in NEW_DECK]  # the tags of a factory deck, if any
    slug_at = slug_start = None
    if name == "fair":
        order = rng.permutation(SHOE)
    elif name.startswith("riffle_"):
        order = riffles(rng, int(name.split("_")[1]))
    elif name.startswith("slug_"):
        order, slug_start, slug_at = slug(rng, int(name.split("_")[1]))
    else:
        order = {"strip": strip, "zone": zone, "shelf": shelf}.get(name, lambda r: None)(rng)
        if name == "factory_deck":
            order = factory_deck(rng, kinds)
    reference = [CARDS[k] for k in kinds[:DEALT]]
    dealt = order[:DEALT]
    cards, uids = [CARDS[k] for k in kinds[dealt]], [int(tag) for tag in dealt]
    watch = ShuffleWatch(reference, reference_uids=range(DEALT), null=_null())
    alert = None
    ever: Counter[str] = Counter()
    for start in range(0, DEALT, ROUND):
        for notice in watch.feed_many(cards[start : start + ROUND], uids[start : start + ROUND]):
            if notice.kind == SLUG and alert is None:
                alert = notice
        if monitored:
            tests = watch.tests()
            ever.update(name for name, test in tests.items() if test.alarmed)
            ever["verdict_rfid"] += verdict(tests, watch.settings) != "fair"
            plain = {n: t for n, t in tests.items() if n not in IDENTITY_TESTS}
            ever["verdict_plain"] += verdict(plain, watch.settings) != "fair"
    report = watch.report()
    plain = {n: t for n, t in report.tests.items() if n not in IDENTITY_TESTS}
    out: dict[str, Any] = {
        "model": name,
        "tests": {n: (t.value, t.p_value, t.threshold, t.alarmed) for n, t in report.tests.items()},
        "verdict_rfid": report.verdict,
        "verdict_plain": verdict(plain, watch.settings),
        "live": alert is not None,
        "live_threshold": watch.live_threshold,
        "k3": common_runs(cards, reference, 3),
        "k4": common_runs(cards, reference, 4),
        "ever": {key: value > 0 for key, value in ever.items()} if monitored else None,
    }
    if slug_at is not None:
        size = int(name.split("_")[1])
        expected = slug_at + watch.live_threshold  # the slug's threshold-th card, from 1
        out["slug"] = {"dealt_enough": expected <= DEALT, "alert_card": alert and alert.card}
        if alert is not None:
            left = slug_at + size - alert.card  # slug cards still to come after the alert
            coming = cards[alert.card : alert.card + min(left, len(alert.slug.next_cards))]
            out["slug"] |= {
                "expected": expected,
                "next_right": list(alert.slug.next_cards[: len(coming)]) == coming,
                "previous_right": alert.slug.previous[0] <= slug_start + 1,
            }
    return out


# ------------------------------------------------------------------------------- the study


def summarize(results: list[dict[str, Any]], fair_name: str = "fair") -> dict[str, Any]:
    """Per model: alarm rates per test, verdicts, live alerts; the k of common runs chosen."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_model.setdefault(result["model"], []).append(result)
    fair = by_model[fair_name]
    k_thresholds = {}
    for key in ("k3", "k4"):
        values = np.sort([r[key] for r in fair])
        # the smallest v that at most 1e-3 of the fair shoes reach
        k_thresholds[key] = next(
            v for v in range(int(values[-1]) + 2) if np.mean(values >= v) <= 1e-3
        )
    summary: dict[str, Any] = {"k_thresholds": k_thresholds, "models": {}}
    for name, rows in by_model.items():
        tests = sorted(rows[0]["tests"])
        entry: dict[str, Any] = {
            "shoes": len(rows),
            "alarms": {t: float(np.mean([r["tests"][t][3] for r in rows])) for t in tests},
            "verdict_plain": dict(Counter(r["verdict_plain"] for r in rows)),
            "verdict_rfid": dict(Counter(r["verdict_rfid"] for r in rows)),
            "live": float(np.mean([r["live"] for r in rows])),
            "k_alarms": {
                key: float(np.mean([r[key] >= k_thresholds[key] for r in rows]))
                for key in k_thresholds
            },
            "mean_values": {t: float(np.mean([r["tests"][t][0] for r in rows])) for t in tests},
            "thresholds": sorted({str(r["tests"][t][2]) for r in rows for t in tests}),
        }
        if name == fair_name:
            entry["p_at_most"] = {
                t: {
                    str(level): float(np.mean([(r["tests"][t][1] or 1) <= level for r in rows]))
                    for level in (0.05, 0.01, 1e-3)
                }
                for t in tests
            }
            monitored = [r["ever"] for r in rows if r["ever"] is not None]
            if monitored:
                keys = sorted({key for ever in monitored for key in ever} | {*tests})
                entry["monitored"] = {
                    "shoes": len(monitored),
                    "ever": {k: float(np.mean([e.get(k, False) for e in monitored])) for k in keys},
                }
        slugs = [r["slug"] for r in rows if "slug" in r]
        if slugs:
            alerted = [s for s in slugs if s["alert_card"]]
            entry["slug"] = {
                "threshold_card_dealt": float(np.mean([s["dealt_enough"] for s in slugs])),
                "alert_at_threshold_card": float(
                    np.mean([s["alert_card"] == s["expected"] for s in alerted])
                )
                if alerted
                else None,
                "alert_earlier": float(np.mean([s["alert_card"] < s["expected"] for s in alerted]))
                if alerted
                else None,
                "next_cards_right": float(np.mean([s["next_right"] for s in alerted]))
                if alerted
                else None,
                "previous_place_right": float(np.mean([s["previous_right"] for s in alerted]))
                if alerted
                else None,
            }
        summary["models"][name] = entry
    return summary


def plot(summary: dict[str, Any], path: Path, seed: int, each: int) -> None:
    models = summary["models"]
    chart = LinePlot(
        f"DETECTION AFTER K GSR RIFFLES, {each} SHOES EACH, SEED {seed}",
        "RIFFLES OF THE WHOLE 416-CARD PILE (K)",
        "DETECTED, %",
        RIFFLES,
        (0, 100, 20),
    )
    lines = [
        ("LONGEST RUN", lambda m: m["alarms"]["longest_run"]),
        ("COMMON 2-RUNS", lambda m: m["alarms"]["common_runs_2"]),
        ("SUCCESSIONS (RFID)", lambda m: m["alarms"][SUCCESSIONS]),
        ("RISING SEQ. (RFID)", lambda m: m["alarms"][RISING_SEQUENCES]),
        ("VERDICT, RANK+SUIT", lambda m: 1 - m["verdict_plain"].get("fair", 0) / m["shoes"]),
        ("VERDICT, RFID", lambda m: 1 - m["verdict_rfid"].get("fair", 0) / m["shoes"]),
    ]
    for label, rate in lines:
        ys = [100 * rate(models[f"riffle_{k}"]) for k in RIFFLES]
        chart.line(label, RIFFLES, ys, dashed=label.startswith("VERDICT"))
    chart.write(path)


def run_study(seed: int, fair: int, each: int, monitored: int, jobs: int) -> list[dict]:
    work = [(seed, 0, index, index < monitored) for index in range(fair)]
    work += [(seed, m, index, False) for m in range(1, len(MODELS)) for index in range(each)]
    with multiprocessing.Pool(jobs) as pool:
        return pool.map(one_shoe, work, chunksize=50)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    jobs = parser.add_subparsers(dest="job", required=True)
    tables = jobs.add_parser("tables", help="simulate the null tables and write them")
    tables.add_argument("--seed", type=int, default=28)
    tables.add_argument("--shoes", type=int, default=400_000, help="for 8 decks")
    tables.add_argument("--other-shoes", type=int, default=100_000, help="for 6, 7, 9-12 decks")
    tables.add_argument("--decks", type=int, nargs="*", default=[6, 7, 8, 9, 10, 11, 12])
    tables.add_argument("--out", type=Path, default=TABLES_FILE)
    tables.add_argument("--jobs", type=int, default=2)
    study = jobs.add_parser("study", help="false alarms and detection of every shuffle model")
    study.add_argument("--seed", type=int, default=2026)
    study.add_argument("--fair", type=int, default=100_000)
    study.add_argument("--each", type=int, default=1000)
    study.add_argument("--monitored", type=int, default=1000, help="fair shoes judged every round")
    study.add_argument("--jobs", type=int, default=2)
    study.add_argument("--png", type=Path, default=REPO / "docs" / "shuffle-detection.png")
    study.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    if args.job == "tables":
        shoes = {d: args.shoes if d == DECKS else args.other_shoes for d in args.decks}
        command = (
            f"tools/shuffle_study.py tables --seed {args.seed} --shoes {args.shoes}\n"
            f"        --other-shoes {args.other_shoes} --decks {' '.join(map(str, args.decks))}"
        )
        write_tables(make_tables(args.seed, shoes, args.jobs), args.out, command)
        print(f"wrote {args.out} in {time.perf_counter() - began:.0f} s")
        return 0
    settings = ShuffleSettings()
    results = run_study(args.seed, args.fair, args.each, args.monitored, args.jobs)
    summary = summarize(results)
    summary |= {
        "seed": args.seed,
        "fair": args.fair,
        "each": args.each,
        "settings": {"live_rate": settings.live_rate, "alarm_rate": settings.alarm_rate},
        "seconds": round(time.perf_counter() - began, 1),
    }
    plot(summary, args.png, args.seed, args.each)
    text = json.dumps(summary, indent=1, sort_keys=True)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
