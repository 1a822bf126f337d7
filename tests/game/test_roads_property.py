"""The derived roads and the ask road against a plain second implementation of docs/spec-roads.md
(tests/support/shoe_testkit/roads.py), for any shoe; and how the derived roads are drawn."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from shoe_testkit.roads import big_road_entries, reference_ask, reference_road

from shoe_controller.game.roads import (
    DERIVED_ROADS,
    RoundResult,
    ask_road,
    column_lengths,
    derived_road,
    derived_sequence,
)

winners = st.lists(st.sampled_from(["banker", "player", "tie"]), max_size=90)
# Long streaks too: a shoe where one side wins many in a row makes the long columns and
# straight drops a uniform draw rarely gives.
streaky = st.lists(
    st.tuples(st.sampled_from(["banker", "player", "tie"]), st.integers(1, 9)), max_size=25
).map(lambda runs: [winner for winner, count in runs for _ in range(count)])
shoes = st.one_of(winners, streaky)


def results_of(names: list[str]) -> list[RoundResult]:
    return [RoundResult(name, round=index) for index, name in enumerate(names, 1)]


@given(shoes)
def test_each_derived_road_is_the_one_roads_md_describes(names: list[str]) -> None:
    results = results_of(names)
    for _, k in DERIVED_ROADS:
        assert derived_sequence(results, k) == reference_road(names, k), k


@given(shoes)
def test_the_ask_road_is_what_one_more_win_would_add(names: list[str]) -> None:
    assert ask_road(results_of(names)) == reference_ask(names)


@given(shoes)
def test_banker_and_player_asks_are_opposite_colours(names: list[str]) -> None:
    # Going down a column is red unless the column k back ends exactly there; a new column
    # is red only when it does: so the two hypotheses always differ (a board custom).
    ask = ask_road(results_of(names))
    for name, _ in DERIVED_ROADS:
        banker, player = ask["banker"][name], ask["player"][name]
        if banker is not None and player is not None:
            assert banker != player, name


@given(shoes)
def test_logical_columns_are_the_big_roads_full_lengths(names: list[str]) -> None:
    entries = big_road_entries(names)
    columns = sorted({column for column, _ in entries})
    expected = [max(row for c, row in entries if c == column) for column in columns]
    assert column_lengths(results_of(names)) == expected


@given(shoes, st.integers(min_value=1, max_value=6))
def test_derived_roads_are_drawn_like_the_big_road(names: list[str], rows: int) -> None:
    results = results_of(names)
    for _, k in DERIVED_ROADS:
        road = derived_road(results, k, rows)
        cells = road.cells
        assert [cell.colour for cell in cells] == list(road.sequence)
        assert len({(cell.column, cell.row) for cell in cells}) == len(cells)  # no cell twice
        assert all(0 <= cell.row < rows for cell in cells)
        if cells:
            assert (cells[0].column, cells[0].row) == (0, 0)
        starts = [cells[0].column] if cells else []
        for before, after in itertools.pairwise(cells):
            if before.colour == after.colour:  # the same colour goes down, or turns right
                assert (after.column, after.row) in {
                    (before.column, before.row + 1),
                    (before.column + 1, before.row),
                }
            else:  # a change of colour starts a column on the top row, further right
                assert after.row == 0
                assert after.column > starts[-1]
                starts.append(after.column)
