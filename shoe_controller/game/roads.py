"""The display board's roads computed from a shoe's round results: bead plate, big road, the
three derived roads (big eye boy, small road, cockroach pig) and the ask road (docs/spec-roads.md).

Pure functions: a list of results in, plain data out (no terminal, no colour: `shoectl` and
the scoreboard page draw them). The results are the shoe's real rounds in order (trial rounds
excluded, R2.3), as `table.view()["road"]` and the journal's `round.result` events give them.

Bead plate: every round, ties included, one cell each; six rows, the columns filled top to
bottom, left to right.

Big road: ties get no cell of their own; they are counted on the cell of the round before
(ties before the shoe's first Banker or Player win are counted on the first cell, which then
has no winner until that win comes). A column holds consecutive wins of one side; a new
winner starts the next column. A column that cannot go down (row 6 reached, or the cell
below taken by an earlier tail) turns right and runs along its row: the dragon tail.

Derived roads (docs/spec-roads.md "Derived roads"): each looks k columns back in the big road's
*logical* columns (their full length, however they are drawn; ties ignored): k = 1 big eye
boy, 2 small road, 3 cockroach pig. Their red and blue mean "regular" and "irregular", not
Banker and Player. A derived road is drawn like the big road (same colour down, a change of
colour starts a column, six rows, dragon tails): its cells are laid out by `big_road` itself.
The ask road is the entry each derived road would add if the next round were a Banker win,
or a Player win.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

ROWS = 6
WINNERS = ("banker", "player", "tie")
NATURALS = (None, "player", "banker", "both")
RED, BLUE = "red", "blue"
# The derived roads and how many columns each looks back (docs/spec-roads.md), in the board's order.
DERIVED_ROADS = (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3))


class RoadError(ValueError):
    """A round result that cannot go on a road."""


@dataclass(frozen=True, slots=True)
class RoundResult:
    """What the roads need of one round (docs/spec-push-api.md round.result)."""

    winner: str  # "banker", "player" or "tie"
    player_pair: bool = False
    banker_pair: bool = False
    natural: str | None = None  # "player", "banker", "both" or None
    round: int | None = None

    def __post_init__(self) -> None:
        if self.winner not in WINNERS:
            raise RoadError(f"winner must be one of {', '.join(WINNERS)}, got {self.winner!r}")
        if self.natural not in NATURALS:
            raise RoadError(f"natural must be player, banker, both or null, got {self.natural!r}")
        for name in ("player_pair", "banker_pair"):
            if not isinstance(getattr(self, name), bool):
                raise RoadError(f"{name} must be true or false, got {getattr(self, name)!r}")

    @classmethod
    def from_mapping(cls, entry: Mapping[str, Any]) -> RoundResult:
        """From a `table.view()` road entry or a `round.result` event's data.

        The pair flags are taken as given (a missing one is no pair), never coerced: a
        stored "false" is refused, not drawn as a pair.
        """
        if not isinstance(entry, Mapping) or "winner" not in entry:
            raise RoadError(f"a round result needs a winner, got {entry!r}")
        return cls(
            winner=entry["winner"],
            player_pair=entry.get("player_pair", False),
            banker_pair=entry.get("banker_pair", False),
            natural=entry.get("natural"),
            round=entry.get("round"),
        )


@dataclass(frozen=True, slots=True)
class BeadCell:
    column: int
    row: int
    result: RoundResult

    def to_json(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "row": self.row,
            "round": self.result.round,
            "winner": self.result.winner,
            "player_pair": self.result.player_pair,
            "banker_pair": self.result.banker_pair,
            "natural": self.result.natural,
        }


@dataclass(frozen=True, slots=True)
class BigRoadCell:
    """One cell of the big road; `ties` counts the ties that followed it (or came first)."""

    column: int
    row: int
    winner: str | None  # None only for leading ties not yet followed by a win
    ties: int
    player_pair: bool
    banker_pair: bool
    natural: str | None
    round: int | None
    streak: int  # which win of its column this is, 1-based

    def to_json(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "row": self.row,
            "winner": self.winner,
            "ties": self.ties,
            "player_pair": self.player_pair,
            "banker_pair": self.banker_pair,
            "natural": self.natural,
            "round": self.round,
            "streak": self.streak,
        }


def bead_plate(results: Iterable[RoundResult], rows: int = ROWS) -> list[BeadCell]:
    """Every round in order, `rows` to a column, top to bottom then left to right."""
    if rows < 1:
        raise RoadError(f"a bead plate needs at least one row, got {rows}")
    return [
        BeadCell(column=index // rows, row=index % rows, result=result)
        for index, result in enumerate(results)
    ]


def big_road(results: Iterable[RoundResult], rows: int = ROWS) -> list[BigRoadCell]:
    """The big road's cells in the order they were written (see the module's docstring)."""
    if rows < 1:
        raise RoadError(f"a big road needs at least one row, got {rows}")
    cells: list[BigRoadCell] = []
    taken: set[tuple[int, int]] = set()
    column_start = -1  # grid column where the current logical column began
    column, row = 0, 0
    turned = False  # the current column runs right (dragon tail)
    leading_ties = 0
    for result in results:
        if result.winner == "tie":
            if cells:
                last = cells[-1]
                cells[-1] = replace(last, ties=last.ties + 1)
            else:
                leading_ties += 1
            continue
        previous = cells[-1] if cells else None
        if previous is not None and previous.winner == result.winner:
            streak = previous.streak + 1
            if not turned and row + 1 < rows and (column, row + 1) not in taken:
                row += 1
            else:
                turned = True
                column += 1
        else:
            # A new logical column starts right of the previous one's start, on the top row;
            # skip a top cell an earlier dragon tail already runs through.
            streak = 1
            column_start += 1
            while (column_start, 0) in taken:
                column_start += 1
            column, row, turned = column_start, 0, False
        ties = leading_ties if previous is None else 0
        cell = BigRoadCell(
            column=column,
            row=row,
            winner=result.winner,
            ties=ties,
            player_pair=result.player_pair,
            banker_pair=result.banker_pair,
            natural=result.natural,
            round=result.round,
            streak=streak,
        )
        taken.add((column, row))
        cells.append(cell)
    if not cells and leading_ties:
        # Only ties so far: the first cell shows them, its winner still to come.
        return [BigRoadCell(0, 0, None, leading_ties, False, False, None, None, 0)]
    return cells


@dataclass(frozen=True, slots=True)
class DerivedCell:
    """One cell of a derived road as drawn (`colour` "red" or "blue")."""

    column: int
    row: int
    colour: str

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column, "row": self.row, "colour": self.colour}


@dataclass(frozen=True, slots=True)
class DerivedRoad:
    """A derived road: its colours in order, and its cells as drawn (dragon tails turned)."""

    sequence: tuple[str, ...]
    cells: tuple[DerivedCell, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "sequence": list(self.sequence),
            "cells": [cell.to_json() for cell in self.cells],
        }


def _growing_columns(results: Iterable[RoundResult]) -> Iterator[list[int]]:
    """The big road's logical columns after each of its entries (ties ignored): their full
    lengths in order, one list grown in place (copy what is kept)."""
    lengths: list[int] = []
    previous: str | None = None
    for result in results:
        if result.winner == "tie":
            continue
        if result.winner == previous:
            lengths[-1] += 1
        else:
            lengths.append(1)
            previous = result.winner
        yield lengths


def column_lengths(results: Iterable[RoundResult]) -> list[int]:
    """The big road's logical columns, their full lengths in order (ties ignored)."""
    lengths: list[int] = []
    for grown in _growing_columns(results):
        lengths = grown
    return list(lengths)


def derived_entry(lengths: Sequence[int], k: int) -> str | None:
    """What the road looking `k` columns back adds for the big road's newest entry, the last
    of the last column in `lengths` (docs/spec-roads.md); None before the road starts."""
    if k < 1:
        raise RoadError(f"a derived road looks at least one column back, got {k}")
    column = len(lengths)  # 1-based, as docs/spec-roads.md counts
    # The road starts at row 2 of column k+1, or at row 1 of column k+2 when that stays empty.
    if column < k + 1 or (column == k + 1 and lengths[-1] < 2):
        return None
    row = lengths[-1]
    if row == 1:  # a new column: were the two columns before it, k apart, of equal length?
        return RED if lengths[column - 2] == lengths[column - 2 - k] else BLUE
    beside = lengths[column - k - 1]  # column c-k, as long as it is
    # blue when it ends exactly at row r-1; red when it has an entry at row r, and when it
    # ends above r-1 (a straight drop)
    return BLUE if beside == row - 1 else RED


def derived_sequence(results: Iterable[RoundResult], k: int) -> list[str]:
    """The colours the road looking `k` columns back gets, one per big-road entry from its
    start on."""
    entries = (derived_entry(lengths, k) for lengths in _growing_columns(results))
    return [entry for entry in entries if entry is not None]


def derived_road(results: Iterable[RoundResult], k: int, rows: int = ROWS) -> DerivedRoad:
    """The road looking `k` columns back, as drawn: laid out by the big road's own rules
    (red stands in for one side, blue for the other)."""
    sequence = derived_sequence(results, k)
    side = {RED: "banker", BLUE: "player"}
    colour = {"banker": RED, "player": BLUE}
    laid = big_road([RoundResult(side[entry]) for entry in sequence], rows)
    cells = tuple(DerivedCell(cell.column, cell.row, colour[str(cell.winner)]) for cell in laid)
    return DerivedRoad(tuple(sequence), cells)


def big_eye_boy(results: Iterable[RoundResult], rows: int = ROWS) -> DerivedRoad:
    return derived_road(results, 1, rows)


def small_road(results: Iterable[RoundResult], rows: int = ROWS) -> DerivedRoad:
    return derived_road(results, 2, rows)


def cockroach_pig(results: Iterable[RoundResult], rows: int = ROWS) -> DerivedRoad:
    return derived_road(results, 3, rows)


def ask_road(results: Sequence[RoundResult]) -> dict[str, dict[str, str | None]]:
    """For a next round won by Banker, and by Player: what each derived road would add
    ("red", "blue", or None where that road would add nothing)."""
    ask: dict[str, dict[str, str | None]] = {}
    for side in ("banker", "player"):
        after = column_lengths([*results, RoundResult(side)])
        ask[side] = {name: derived_entry(after, k) for name, k in DERIVED_ROADS}
    return ask


def summary(results: Iterable[RoundResult]) -> dict[str, int]:
    """Counts the board shows beside the roads."""
    counts = {"rounds": 0, "banker": 0, "player": 0, "tie": 0, "banker_pair": 0, "player_pair": 0}
    for result in results:
        counts["rounds"] += 1
        counts[result.winner] += 1
        counts["banker_pair"] += result.banker_pair
        counts["player_pair"] += result.player_pair
    return counts


def roads_json(results: list[RoundResult], rows: int = ROWS) -> dict[str, Any]:
    """The five roads, the ask road and the counts as JSON-able data (the control socket's
    `road` answer; docs/scoreboard.md gives the contract)."""
    data: dict[str, Any] = {
        "rows": rows,
        "summary": summary(results),
        "bead_plate": [cell.to_json() for cell in bead_plate(results, rows)],
        "big_road": [cell.to_json() for cell in big_road(results, rows)],
    }
    for name, k in DERIVED_ROADS:
        data[name] = derived_road(results, k, rows).to_json()
    data["ask"] = ask_road(results)
    return data
