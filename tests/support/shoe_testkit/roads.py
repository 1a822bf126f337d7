"""A plain second implementation of docs/spec-roads.md's derived roads and ask road, written from
the
page and not from shoe_controller/game/roads.py, for the tests to check it against.

It keeps the big road as a grid of (column, row) entries, both counted from 1 as docs/spec-roads.md
counts them, and reads each rule off the page literally: the road's start entry ("row 2 of
column k+1; if that cell stays empty, row 1 of column k+2"), then "has an entry at row r",
"ends exactly at row r-1", "compare the lengths".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from shoe_controller.game.roads import RoundResult

LETTER = {"B": "banker", "P": "player", "T": "tie"}
NAMES = {1: "big_eye_boy", 2: "small_road", 3: "cockroach_pig"}


def big_road_entries(winners: Sequence[str]) -> list[tuple[int, int]]:
    """(column, row) of each Banker or Player win in order, ties left out; 1-based."""
    entries: list[tuple[int, int]] = []
    last = None
    for winner in winners:
        if winner == "tie":
            continue
        if last is None or winner != last:
            column = entries[-1][0] + 1 if entries else 1
            entries.append((column, 1))
        else:
            column, row = entries[-1]
            entries.append((column, row + 1))
        last = winner
    return entries


def reference_road(winners: Sequence[str], k: int) -> list[str]:
    """The colours of the road looking k columns back, in order."""
    entries = big_road_entries(winners)
    grid: set[tuple[int, int]] = set()
    colours: list[str] = []
    started = False
    for column, row in entries:
        grid.add((column, row))
        if not started:
            if (column, row) in ((k + 1, 2), (k + 2, 1)):
                started = True
            else:
                continue

        def length(of: int) -> int:
            return sum(1 for c, _ in grid if c == of)

        if row == 1:
            colours.append("red" if length(column - 1) == length(column - 1 - k) else "blue")
        elif (column - k, row) in grid:
            colours.append("red")
        elif (column - k, row - 1) in grid:
            colours.append("blue")
        else:
            colours.append("red")
    return colours


def reference_ask(winners: Sequence[str]) -> dict[str, dict[str, str | None]]:
    """What each road would add after one more Banker, or Player, win (None: nothing)."""
    ask: dict[str, dict[str, str | None]] = {}
    for side in ("banker", "player"):
        ask[side] = {}
        for k, name in NAMES.items():
            before = reference_road(winners, k)
            after = reference_road([*winners, side], k)
            ask[side][name] = after[-1] if len(after) > len(before) else None
    return ask


def winners_of(text: str) -> list[str]:
    """'P B T' -> ['player', 'banker', 'tie']."""
    return [LETTER[token] for token in text.split()]


def results_from(entries: Iterable[Mapping[str, Any]]) -> list[RoundResult]:
    """Round results from road entries or round.result data, in order."""
    return [RoundResult.from_mapping(entry) for entry in entries]
