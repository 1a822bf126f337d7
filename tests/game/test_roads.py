"""The roads against hand-worked boards (docs/spec-roads.md's worked example among them), and the
bead
plate's and big road's invariants for any shoe; tests/game/test_roads_property.py checks the
derived roads against a second implementation."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shoe_testkit.roads import results_from

from shoe_controller.game.roads import (
    RoadError,
    RoundResult,
    ask_road,
    bead_plate,
    big_eye_boy,
    big_road,
    cockroach_pig,
    column_lengths,
    derived_entry,
    derived_road,
    roads_json,
    small_road,
    summary,
)

LETTER = {"B": "banker", "P": "player", "T": "tie"}


def shoe(text: str) -> list[RoundResult]:
    """'B P T bB' -> results; a leading 'b'/'p' marks a banker/player pair."""
    results = []
    for number, token in enumerate(text.split(), start=1):
        results.append(
            RoundResult(
                winner=LETTER[token[-1]],
                banker_pair="b" in token[:-1],
                player_pair="p" in token[:-1],
                round=number,
            )
        )
    return results


def grid(cells: list) -> dict[tuple[int, int], str]:
    return {(cell.column, cell.row): (cell.winner or "-")[0].upper() for cell in cells}


def test_bead_plate_fills_six_rows_top_to_bottom_then_the_next_column() -> None:
    cells = bead_plate(shoe("B P T B B P P"))
    assert [(c.column, c.row, c.result.winner[0].upper()) for c in cells] == [
        (0, 0, "B"),
        (0, 1, "P"),
        (0, 2, "T"),
        (0, 3, "B"),
        (0, 4, "B"),
        (0, 5, "P"),
        (1, 0, "P"),
    ]


def test_bead_plate_keeps_pair_marks_and_round_numbers() -> None:
    cells = bead_plate(shoe("bB pP bpT"))
    assert [(c.result.banker_pair, c.result.player_pair) for c in cells] == [
        (True, False),
        (False, True),
        (True, True),
    ]
    assert [c.result.round for c in cells] == [1, 2, 3]


def test_big_road_columns_streaks_and_ties_on_the_cell_before() -> None:
    # Hand-worked: a tie before the first win goes on the first cell; B B T: the tie on
    # the second B; eight Bankers run down six rows and turn right along row 5.
    cells = big_road(shoe("T B B T P B B B B B B B B P"))
    assert grid(cells) == {
        (0, 0): "B",
        (0, 1): "B",
        (1, 0): "P",
        (2, 0): "B",
        (2, 1): "B",
        (2, 2): "B",
        (2, 3): "B",
        (2, 4): "B",
        (2, 5): "B",
        (3, 5): "B",
        (4, 5): "B",
        (3, 0): "P",
    }
    ties = {(c.column, c.row): c.ties for c in cells if c.ties}
    assert ties == {(0, 0): 1, (0, 1): 1}
    assert [c.streak for c in cells if c.column == 2 or c.row == 5] == [1, 2, 3, 4, 5, 6, 7, 8]


def test_big_road_turns_early_when_an_earlier_tail_is_below() -> None:
    # B x8: (0,0..5) then (1,5) (2,5). P x6 from column 1: rows 0-4, (1,5) is taken: the
    # sixth turns right to (2,4). B x5 from column 2: rows 0-3, (2,4) is taken: (3,3).
    cells = big_road(shoe("B " * 8 + "P " * 6 + "B " * 5))
    positions = [(c.column, c.row, c.winner[0].upper()) for c in cells]
    assert positions[8:] == [
        (1, 0, "P"),
        (1, 1, "P"),
        (1, 2, "P"),
        (1, 3, "P"),
        (1, 4, "P"),
        (2, 4, "P"),
        (2, 0, "B"),
        (2, 1, "B"),
        (2, 2, "B"),
        (2, 3, "B"),
        (3, 3, "B"),
    ]


def test_big_road_skips_a_start_column_a_tail_runs_through() -> None:
    # Two rows make it short: B B B -> (0,0) (0,1) (1,1); P P P -> (1,0) then (1,1) is
    # taken: (2,0) (3,0); the next B would start at column 2 whose top is taken, then 3:
    # it starts at column 4.
    cells = big_road(shoe("B B B P P P B"), rows=2)
    assert [(c.column, c.row) for c in cells] == [
        (0, 0),
        (0, 1),
        (1, 1),
        (1, 0),
        (2, 0),
        (3, 0),
        (4, 0),
    ]


def test_a_shoe_of_ties_only_shows_one_cell_waiting_for_its_winner() -> None:
    cells = big_road(shoe("T T"))
    assert len(cells) == 1
    assert (cells[0].winner, cells[0].ties, cells[0].column, cells[0].row) == (None, 2, 0, 0)
    assert cells[0].to_json() == {
        "column": 0, "row": 0, "winner": None, "ties": 2, "player_pair": False,
        "banker_pair": False, "natural": None, "round": None, "streak": 0,
    }  # fmt: skip
    # Even ties with pairs: the waiting cell marks no pair, it stands for no win yet.
    assert big_road(shoe("bpT"))[0].to_json()["player_pair"] is False
    assert big_road([]) == []


def test_results_from_entries_and_clear_errors() -> None:
    results = results_from(
        [
            {"round": 4, "winner": "banker", "player_pair": True, "banker_pair": False},
            {"winner": "tie", "natural": "both", "perfect_pair": False},
        ]
    )
    assert results[0] == RoundResult("banker", player_pair=True, round=4)
    assert results[1].natural == "both"
    with pytest.raises(
        RoadError, match=r"^winner must be one of banker, player, tie, got 'dragon'$"
    ):
        results_from([{"winner": "dragon"}])
    with pytest.raises(RoadError, match="needs a winner"):
        results_from([{"round": 1}])
    with pytest.raises(RoadError, match="natural"):
        RoundResult("banker", natural="yes")


def test_roads_json_counts() -> None:
    data = roads_json(shoe("bB P T pP B"))
    assert list(data) == [
        "rows", "summary", "bead_plate", "big_road", "big_eye_boy", "small_road",
        "cockroach_pig", "ask",
    ]  # fmt: skip
    assert data["summary"] == {
        "rounds": 5,
        "banker": 2,
        "player": 2,
        "tie": 1,
        "banker_pair": 1,
        "player_pair": 1,
    }
    assert len(data["bead_plate"]) == 5
    assert len(data["big_road"]) == 4
    assert data["big_road"][1]["ties"] == 1


results_strategy = st.lists(
    st.builds(
        RoundResult,
        winner=st.sampled_from(["banker", "player", "tie"]),
        player_pair=st.booleans(),
        banker_pair=st.booleans(),
    ),
    max_size=90,
)


@given(results_strategy, st.integers(min_value=1, max_value=6))
def test_big_road_invariants(results: list[RoundResult], rows: int) -> None:
    cells = big_road(results, rows)
    wins = [r for r in results if r.winner != "tie"]
    ties = sum(r.winner == "tie" for r in results)
    assert len({(c.column, c.row) for c in cells}) == len(cells)  # no cell written twice
    assert all(0 <= c.row < rows for c in cells)
    assert sum(c.ties for c in cells) == ties
    if wins:
        assert [c.winner for c in cells] == [r.winner for r in wins]
        for before, after in itertools.pairwise(cells):
            if before.winner == after.winner:  # same column: down one, or right one
                assert after.streak == before.streak + 1
                assert (after.column, after.row) in {
                    (before.column, before.row + 1),
                    (before.column + 1, before.row),
                }
            else:  # a new column, on the top row, right of where the last one began
                assert after.streak == 1
                assert after.row == 0


@given(results_strategy)
def test_bead_plate_invariants(results: list[RoundResult]) -> None:
    cells = bead_plate(results)
    assert [c.result for c in cells] == results
    assert all(c.column * 6 + c.row == i for i, c in enumerate(cells))
    assert summary(results)["rounds"] == len(results)


@pytest.mark.parametrize("rows", [0, -1])
def test_a_road_needs_at_least_one_row(rows: int) -> None:
    with pytest.raises(RoadError, match="at least one row"):
        bead_plate(shoe("B"), rows)
    with pytest.raises(RoadError, match="at least one row"):
        big_road(shoe("B"), rows)
    with pytest.raises(RoadError, match="at least one row"):
        roads_json(shoe("B"), rows)


def test_one_row_bead_plate_is_a_line_and_big_road_streaks_run_right() -> None:
    assert [(c.column, c.row) for c in bead_plate(shoe("B P T"), rows=1)] == [
        (0, 0),
        (1, 0),
        (2, 0),
    ]
    # One row: a streak cannot go down, it turns right at once; the next winner starts right
    # of the tail, the columns the tail runs through being taken.
    cells = big_road(shoe("B B B P P B"), rows=1)
    assert [(c.column, c.row, c.winner, c.streak) for c in cells] == [
        (0, 0, "banker", 1),
        (1, 0, "banker", 2),
        (2, 0, "banker", 3),
        (3, 0, "player", 1),
        (4, 0, "player", 2),
        (5, 0, "banker", 1),
    ]
    one_row = roads_json(shoe("B B B"), rows=1)
    assert one_row["rows"] == 1
    assert [(c["column"], c["row"]) for c in one_row["big_road"]] == [(0, 0), (1, 0), (2, 0)]
    assert [(c["column"], c["row"]) for c in one_row["bead_plate"]] == [(0, 0), (1, 0), (2, 0)]


@pytest.mark.parametrize("flag", ["player_pair", "banker_pair"])
@pytest.mark.parametrize("value", [1, 0, "false", "true", None, [True]])
def test_pair_flags_must_be_booleans(flag: str, value: object) -> None:
    with pytest.raises(RoadError, match=f"{flag} must be true or false"):
        RoundResult("banker", **{flag: value})  # type: ignore[arg-type]
    # From a journal's round.result too: "false" must not be drawn as a pair.
    with pytest.raises(RoadError, match=f"{flag} must be true or false"):
        results_from([{"winner": "banker", flag: value}])


def test_missing_pair_flags_are_no_pairs() -> None:
    (result,) = results_from([{"winner": "player", "round": 3}])
    assert (result.player_pair, result.banker_pair, result.natural) == (False, False, None)


def test_big_road_cells_carry_their_round_and_flags() -> None:
    results = [
        RoundResult("player", player_pair=True, natural="player", round=1),
        RoundResult("tie", round=2),
        RoundResult("banker", banker_pair=True, natural="both", round=3),
    ]
    assert [cell.to_json() for cell in big_road(results)] == [
        {"column": 0, "row": 0, "winner": "player", "ties": 1, "player_pair": True,
         "banker_pair": False, "natural": "player", "round": 1, "streak": 1},
        {"column": 1, "row": 0, "winner": "banker", "ties": 0, "player_pair": False,
         "banker_pair": True, "natural": "both", "round": 3, "streak": 1},
    ]  # fmt: skip
    assert [cell.to_json() for cell in bead_plate(results)][1] == {
        "column": 0, "row": 1, "round": 2, "winner": "tie", "player_pair": False,
        "banker_pair": False, "natural": None,
    }  # fmt: skip


# ---------------------------------------------------------------------- derived roads

ROADS_MD_EXAMPLE = "P B B T B P P P P B P B B B P P T"
COLOUR = {"R": "red", "B": "blue"}


def colours(text: str) -> list[str]:
    """docs/spec-roads.md's notation: 'B R B' -> blue, red, blue."""
    return [COLOUR[letter] for letter in text.split()]


def test_roads_md_worked_example() -> None:
    results = shoe(ROADS_MD_EXAMPLE)
    # Big-road columns P1, B3 (the tie on the second B), P4, B1, P1, B3, P2.
    assert column_lengths(results) == [1, 3, 4, 1, 1, 3, 2]
    cells = big_road(results)
    assert [(c.winner[0].upper(), c.streak, c.ties) for c in cells if c.ties] == [
        ("B", 2, 1),
        ("P", 2, 1),
    ]
    assert list(big_eye_boy(results).sequence) == colours("B R B R R B B B R B R B R")
    assert list(small_road(results).sequence) == colours("B R R B B B B R B B")
    assert list(cockroach_pig(results).sequence) == colours("R B R R B B")


def test_roads_md_example_ask_road() -> None:
    # After P2 in column 7: a Player win goes down to row 3 (the columns 1, 2 and 3 back
    # have a row 3, or end above row 2: red); a Banker win starts column 8, whose two
    # columns compared (7 with 6, 5, 4: 2 against 3, 1, 1) differ: blue.
    assert ask_road(shoe(ROADS_MD_EXAMPLE)) == {
        "banker": {"big_eye_boy": "blue", "small_road": "blue", "cockroach_pig": "blue"},
        "player": {"big_eye_boy": "red", "small_road": "red", "cockroach_pig": "red"},
    }


def test_roads_md_example_derived_roads_as_drawn() -> None:
    drawn = big_eye_boy(shoe(ROADS_MD_EXAMPLE))
    # B R B R R B B B R B R B R: a column per change of colour.
    assert [(c.column, c.row, c.colour[0].upper()) for c in drawn.cells] == [
        (0, 0, "B"), (1, 0, "R"), (2, 0, "B"), (3, 0, "R"), (3, 1, "R"), (4, 0, "B"),
        (4, 1, "B"), (4, 2, "B"), (5, 0, "R"), (6, 0, "B"), (7, 0, "R"), (8, 0, "B"),
        (9, 0, "R"),
    ]  # fmt: skip


def test_a_derived_road_starts_at_row_two_of_column_k_plus_one() -> None:
    # B P P: column 2 has a row 2, so the big eye boy starts there (column 1 ends exactly
    # at row 1: blue); the small road needs column 3.
    assert list(big_eye_boy(shoe("B P P")).sequence) == ["blue"]
    assert list(small_road(shoe("B P P")).sequence) == []
    # B P B: column 2 stays one long, so the road starts at row 1 of column 3 (columns 2
    # and 1 both one long: red).
    assert list(big_eye_boy(shoe("B P B")).sequence) == ["red"]
    assert list(small_road(shoe("B P B P")).sequence) == ["red"]
    assert list(cockroach_pig(shoe("B P B P")).sequence) == []
    assert list(cockroach_pig(shoe("B P B P B")).sequence) == ["red"]


def test_a_long_streak_gives_a_straight_drop_and_a_derived_dragon_tail() -> None:
    # B, then ten Players: row 2 of column 2 meets column 1's end (blue), rows 3-10 are a
    # straight drop (red). Eight reds run down six rows and turn right along row 6.
    road = big_eye_boy(shoe("B" + " P" * 10))
    assert list(road.sequence) == ["blue"] + ["red"] * 8
    assert [(c.column, c.row) for c in road.cells] == [
        (0, 0), (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (2, 5), (3, 5),
    ]  # fmt: skip
    # The big road itself turned too; the derived roads read the logical column (10 long).
    assert column_lengths(shoe("B" + " P" * 10)) == [1, 10]
    assert max(cell.row for cell in big_road(shoe("B" + " P" * 10))) == 5


def test_a_dragon_tail_in_the_big_road_is_read_at_its_full_length() -> None:
    # Column 2 is eight Bankers (drawn as six down and two along row 6). A Player starts
    # column 3: the big eye boy compares columns 2 and 1 (8 against 1): blue. Drawn or not,
    # a column as long as eight compares like one.
    results = shoe("P" + " B" * 8 + " P P")
    assert column_lengths(results) == [1, 8, 2]
    assert list(big_eye_boy(results).sequence) == ["blue"] + ["red"] * 6 + ["blue", "red"]


def test_ties_at_the_start_and_ties_between_add_nothing_to_derived_roads() -> None:
    with_ties = shoe("T T B T P T P B T")
    without = shoe("B P P B")
    for name in ("big_eye_boy", "small_road", "cockroach_pig"):
        assert roads_json(with_ties)[name] == roads_json(without)[name], name
    assert ask_road(with_ties) == ask_road(without)
    # T T B P: the road is not started; one more Player would start it at row 2 of
    # column 2 (column 1 ends at row 1: blue), a Banker at row 1 of column 3 (red).
    assert ask_road(shoe("T T B P")) == {
        "banker": {"big_eye_boy": "red", "small_road": None, "cockroach_pig": None},
        "player": {"big_eye_boy": "blue", "small_road": None, "cockroach_pig": None},
    }


def test_a_shoe_of_only_ties_has_no_derived_road_and_nothing_to_ask() -> None:
    data = roads_json(shoe("T T T"))
    assert column_lengths(shoe("T T T")) == column_lengths([]) == []
    for name in ("big_eye_boy", "small_road", "cockroach_pig"):
        assert data[name] == {"sequence": [], "cells": []}
    nothing = {"big_eye_boy": None, "small_road": None, "cockroach_pig": None}
    assert data["ask"] == {"banker": nothing, "player": nothing}
    assert roads_json([])["ask"] == {"banker": nothing, "player": nothing}


def test_derived_roads_json_have_the_sequence_beside_the_cells() -> None:
    data = roads_json(shoe("B P P B"))
    assert data["big_eye_boy"] == {
        "sequence": ["blue", "blue"],
        "cells": [
            {"column": 0, "row": 0, "colour": "blue"},
            {"column": 0, "row": 1, "colour": "blue"},
        ],
    }
    assert data["small_road"] == {"sequence": [], "cells": []}
    one_row = derived_road(shoe("B P P B"), 1, rows=1).to_json()["cells"]
    assert [(cell["column"], cell["row"]) for cell in one_row] == [(0, 0), (1, 0)]


def test_every_derived_road_is_drawn_in_the_rows_it_is_given() -> None:
    # Ten Bankers after B P B P: each derived road ends in a red streak of eight or more,
    # which on a two-row board turns right along row 2 (a dragon tail) after two cells.
    results = shoe("B P B P" + " B" * 10)
    roads = {"big_eye_boy": big_eye_boy, "small_road": small_road, "cockroach_pig": cockroach_pig}
    two_rows = roads_json(results, rows=2)
    for name, road in roads.items():
        drawn = road(results, rows=2)
        assert max(cell.row for cell in drawn.cells) == 1, name
        assert max(cell.row for cell in road(results).cells) > 1, name  # six rows by default
        assert [cell.column for cell in drawn.cells][-3:] == [6, 7, 8], name
        assert two_rows[name] == drawn.to_json(), name
    # the tail of the last streak, one column each
    assert [(c.column, c.row) for c in cockroach_pig(results, rows=2).cells] == [
        (0, 0), (1, 0), (2, 0), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1),
    ]  # fmt: skip


def test_derived_entry_needs_a_column_to_look_back_to() -> None:
    assert derived_entry([], 1) is None
    assert derived_entry([3], 1) is None
    with pytest.raises(RoadError, match="at least one column back"):
        derived_entry([1, 1], 0)


def test_a_long_shoe_keeps_every_road_consistent_with_its_counts() -> None:
    # 80 rounds with dragon tails on both sides and ties everywhere.
    text = " ".join(["B"] * 9 + ["T", "P"] * 6 + ["P"] * 7 + ["B", "T", "P"] * 12 + ["B"] * 16)
    results = shoe(text)
    data = roads_json(results)
    assert data["summary"]["rounds"] == len(results) == 80
    wins = sum(result.winner != "tie" for result in results)
    assert len(data["big_road"]) == wins
    lengths = column_lengths(results)
    for name, k in (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3)):
        # Every win from the road's start on adds one entry.
        start = sum(lengths[:k]) + 1 if lengths[k] >= 2 else sum(lengths[: k + 1])
        assert len(data[name]["sequence"]) == wins - start, name
        assert len(data[name]["cells"]) == len(data[name]["sequence"])
    assert max(cell["column"] for cell in data["big_road"]) > len(lengths)  # tails turned
