"""The shuffle nulls' table lookups (game/surveillance/shuffle_null.py) on tables
written here by hand: how the shipped tables are read, which table point a shoe is looked up
at, the p-value a table gives and the threshold it sets, counted by hand. The nulls' values
against exact enumeration and the shipped simulation are tests/game/test_shuffle_order.py's."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from shoe_controller.game.surveillance.shuffle_null import (
    DEFAULT_TABLES,
    DeckTable,
    FairShuffle,
    Histogram,
    NullTables,
    descent_distribution,
    smallest_at_or_below,
    succession_distribution,
)
from shoe_controller.vocab.cards import full_deck

# One deck of 52 cards, 9 simulated shoes, looked at after 26 and 52 cards compared.
TABLES_JSON = {
    "seed": "by hand",
    "decks": {
        "1": {
            "shoes": 9,
            "grid": [26, 52],
            "stats": {
                "common_runs_2": [[0, 1, 2, 3, 2, 1], [1, 2, 3, 4]],
                "longest_run": [[2, 6, 3], [2, 4, 5]],
            },
        }
    },
}
TABLE = DeckTable(
    1,
    9,
    (26, 52),
    {
        "common_runs_2": (Histogram(0, (1, 2, 3, 2, 1)), Histogram(1, (2, 3, 4))),
        "longest_run": (Histogram(2, (6, 3)), Histogram(2, (4, 5))),
    },
)
ONE_DECK = FairShuffle(dict.fromkeys(full_deck(), 1), TABLE)


def test_the_tables_are_read_as_the_study_writes_them() -> None:
    assert NullTables.from_json(TABLES_JSON) == NullTables("by hand", {1: TABLE})
    shipped = resources.files("shoe_controller.game.surveillance") / "shuffle_tables.json"
    assert NullTables.from_json(json.loads(shipped.read_text("utf-8"))) == DEFAULT_TABLES
    assert sorted(DEFAULT_TABLES.decks) == [6, 7, 8, 9, 10, 11, 12]
    assert DEFAULT_TABLES.decks[8].shoes == 400_000


def test_a_histogram_counts_the_shoes_at_or_past_a_value() -> None:
    histogram = Histogram(2, (5, 3, 1))  # 5 shoes showed 2, 3 showed 3, 1 showed 4
    assert [histogram.at_least(value) for value in range(7)] == [9, 9, 9, 4, 1, 0, 0]


def test_a_table_is_looked_up_at_the_first_point_at_or_past_the_cards() -> None:
    counts = TABLE.stats["longest_run"]
    assert [TABLE.at("longest_run", cards) for cards in (1, 26, 26.5, 52)] == [
        counts[0],
        counts[0],
        counts[1],
        counts[1],
    ]
    assert TABLE.at("longest_run", 53) is None  # past the table's last point
    assert TABLE.at("factory_stretch", 26) is None  # a statistic it has no table for
    assert TABLE.shoe_cards == 52


def test_common_runs_p_values_and_thresholds_from_the_table() -> None:
    # The whole shoe against a whole reference: the table's last point, (2, 3, 4) from 1.
    assert [ONE_DECK.common_runs_p(2, value, 52, 52) for value in range(5)] == [
        1.0,
        (9 + 1) / 10,
        (7 + 1) / 10,
        (4 + 1) / 10,
        (0 + 1) / 10,
    ]
    assert ONE_DECK.common_runs_p(3, 1, 52, 52) is None  # no table for k = 3
    assert ONE_DECK.common_runs_threshold(2, 0.5, 52, 52) == 3
    assert ONE_DECK.common_runs_threshold(2, 0.1, 52, 52) == 4
    assert ONE_DECK.common_runs_threshold(3, 0.1, 52, 52) is None
    # No count reaches the rate: the threshold is one past the most there can be, the
    # window pairs (cards - k + 1) (reference - k + 1).
    assert ONE_DECK.common_runs_threshold(2, 0.01, 52, 52) == 51 * 51 + 1
    assert ONE_DECK.common_runs_threshold(2, 0.01, 52, 40) == 51 * 39 + 1
    assert ONE_DECK.common_runs_threshold(2, 0.01, 1, 52) == 1  # one card: no pair at all
    assert ONE_DECK.common_runs_threshold(2, 0.01, 52, 1) == 1


def test_no_count_or_none_at_all_has_a_p_value_of_1_even_past_the_table() -> None:
    assert ONE_DECK.common_runs_p(2, 0, 52, 60) == 1.0  # 60 reference cards: past the table
    assert ONE_DECK.common_runs_p(2, 1, 52, 60) is None
    assert ONE_DECK.common_runs_p(3, 0, 52, 52) == 1.0  # no table for k = 3 at all
    # 26 against 26 is looked up at the first point, (1, 2, 3, 2, 1) from 0.
    assert [ONE_DECK.common_runs_p(2, value, 26, 26) for value in (1, 2)] == [0.9, 0.7]


# A table whose factory-order stretches of 2 or more are 100 shoes of 999: enough to be used.
FACTORY = FairShuffle(
    dict.fromkeys(full_deck(), 1),
    DeckTable(1, 999, (26, 52), {"factory_stretch": (Histogram(1, (899, 60, 40)),) * 2}),
)


def test_new_deck_order_p_values_take_the_table_under_the_exact_bound() -> None:
    plain = FairShuffle(dict.fromkeys(full_deck(), 1))  # no table: the exact mean alone
    # 2-card windows in new-deck order: 96 of the 52 * 51 ordered pairs, in 9 or 51 windows.
    assert plain.factory_p(2, 10) == pytest.approx(9 * 96 / (52 * 51))
    assert plain.factory_p(2, 52) == 1.0  # a mean of 1.85 bounds nothing
    assert [plain.factory_p(value, 52) for value in (0, 1)] == [1.0, 1.0]  # any card is one
    assert FACTORY.factory_p(2, 10) == (100 + 1) / (999 + 1)  # the table, under the bound
    assert FACTORY.factory_p(2, 52) == (100 + 1) / (999 + 1)
    assert FACTORY.factory_p(3, 10) == pytest.approx(8 * 88 / (52 * 51 * 50))  # 40 shoes: bound
    assert FACTORY.factory_threshold(0.2, 10) == 2
    assert FACTORY.factory_threshold(0.01, 10) == 3
    assert FACTORY.factory_threshold(1e-30, 52) == 14  # none reaches it: past the longest, 13


def test_identity_thresholds_take_a_p_value_at_the_rate_and_a_shoe_without_cards() -> None:
    null = FairShuffle(dict.fromkeys(full_deck(), 1))  # its laws worked out afresh
    # 6 shared cards: P(R <= 2) = (1 + 57) / 6!, the Eulerian numbers; P(S >= 2) = 146 / 720.
    assert null.rising_p(2, 6) == pytest.approx(58 / 720)
    assert null.rising_threshold(null.rising_p(2, 6), 6) == 2  # at the rate: alarms
    assert null.rising_threshold(null.rising_p(2, 6) * 0.999, 6) == 1
    assert null.successions_p(2, 6) == pytest.approx(146 / 720)
    assert null.successions_threshold(null.successions_p(2, 6), 6) == 2
    assert null.successions_threshold(null.successions_p(2, 6) * 0.999, 6) == 3
    assert [null.rising_threshold(0.001, shared) for shared in (0, 1)] == [0, 0]
    assert [null.successions_threshold(0.001, shared) for shared in (0, 1)] == [1, 1]


def test_the_rising_sequences_law_covers_every_count_for_any_rate() -> None:
    """R of 10 shared cards: P(R <= r) from the Eulerian numbers of 10 (1, 1013, 47840, ...).
    A rate near 1 puts the threshold far out: the law must reach it (it stopped at 7 once)."""
    null = FairShuffle(dict.fromkeys(full_deck(), 1))  # its laws worked out afresh
    eulerian = [1, 1013, 47840, 455192, 1310354, 1310354, 455192, 47840, 1013, 1]
    cdf = [sum(eulerian[:r]) / 3628800 for r in range(11)]
    assert [null.rising_p(r, 10) for r in range(1, 10)] == pytest.approx(cdf[1:10])
    assert null.rising_threshold(0.99, 10) == 7  # P(R <= 7) = 0.98654
    assert null.rising_threshold(0.9999, 10) == 8  # P(R <= 8) = 0.99972
    assert null.rising_threshold(0.999, 6) == 5  # P(R <= 5) = 719 / 720
    # Every count of a shoe's cards or more is certain, none is impossible; never above 1.
    assert [null.rising_p(r, 10) for r in (10, 11)] == [1.0, 1.0]
    assert [null.rising_p(0, shared) for shared in (1, 2, 10)] == [0.0, 0.0, 0.0]
    for shared in (7, 38, 41):  # sizes whose summed law rounds above 1
        assert all(0.0 <= null.rising_p(r, shared) <= 1.0 for r in range(shared + 1))


def test_the_successions_law_at_its_ends() -> None:
    null = FairShuffle(dict.fromkeys(full_deck(), 1))  # its laws worked out afresh
    assert [null.successions_p(0, shared) for shared in (7, 8, 15)] == [1.0, 1.0, 1.0]
    assert [null.successions_p(1, shared) for shared in (0, 1)] == [0.0, 0.0]
    assert list(succession_distribution(0)) == [1.0]  # no card: no succession, surely
    assert list(succession_distribution(1)) == [1.0]
    assert list(descent_distribution(4, 0)) == pytest.approx([1 / 24])  # 1 2 3 4 alone
    assert list(descent_distribution(4, -1)) == pytest.approx([1 / 24])


def test_no_window_longer_than_the_cards_is_expected() -> None:
    plain = FairShuffle(dict.fromkeys(full_deck(), 1))
    assert plain.expected_factory_stretches(3, 5) == 0.0  # 3 cards hold no 5-card window
    assert plain.expected_factory_stretches(4, 5) == 0.0
    assert plain.factory_p(5, 3) == 0.0
    assert plain.expected_factory_stretches(52, 14) == 0.0  # a suit has 13 ranks


def test_the_first_value_at_or_below_the_rate_from_the_start() -> None:
    p_values = [0.0, 0.5, 0.1, 0.01]  # 0 is below everything, but the search starts at 1
    assert smallest_at_or_below(p_values.__getitem__, 0.1, 1, 4) == 2  # at the rate: taken
    assert smallest_at_or_below(p_values.__getitem__, 0.001, 1, 4) == 4  # none: the stop


def test_the_exact_mean_of_common_runs_counts_each_copy_once() -> None:
    ace, king = full_deck()[0], full_deck()[12]
    one = FairShuffle(dict.fromkeys(full_deck(), 1))
    assert one.expected_common_runs([ace, king], 52, 2) == pytest.approx(51 / (52 * 51))
    assert one.expected_common_runs([None, ace], 52, 2) == 0.0  # an unknown card matches nothing
    queen = full_deck()[11]
    assert one.expected_common_runs([ace, king, queen], 1, 3) == 0.0  # no 3-card window in 1
    assert one.expected_common_runs([ace, king], 52, 3) == 0.0  # nor in a reference of 2
    eight = FairShuffle(dict.fromkeys(full_deck(), 8))
    assert eight.expected_common_runs([ace, ace, ace], 3, 3) == pytest.approx(
        8 * 7 * 6 / (416 * 415 * 414)
    )


def test_a_shoe_is_looked_up_at_the_table_point_with_as_many_window_pairs() -> None:
    # (cards - 1)(reference - 1) = (n' - 1)(52 - 1): 26 x 52 is n' = 26, the first point;
    # 27 x 52 and 26 x 53 are just past it, at the second. P(N_2 >= 3) there: 0.4, 0.5.
    assert [
        ONE_DECK.common_runs_p(2, 3, cards, reference)
        for cards, reference in ((26, 52), (27, 52), (26, 53))
    ] == [0.4, 0.5, 0.5]


# A table whose longest runs of 2 are exactly 100 shoes of 999: enough to be used.
LONGEST = FairShuffle(
    dict.fromkeys(full_deck(), 1),
    DeckTable(1, 999, (26, 52), {"longest_run": (Histogram(1, (899, 100)),) * 2}),
)


def test_longest_run_p_values_take_the_table_under_the_exact_bound() -> None:
    deck = full_deck()
    assert LONGEST.longest_run_p(2, 52, deck) == (100 + 1) / (999 + 1)  # the table's
    assert LONGEST.longest_run_p(3, 52, deck) == pytest.approx(50 * 50 / (52 * 51 * 50))
    assert LONGEST.longest_run_p(1, 52, [None] * 52) == 1.0  # one card is a run of 1: surely
    plain = FairShuffle(dict.fromkeys(full_deck(), 1))
    assert plain.longest_run_p(2, 52, deck) == pytest.approx(51 * 51 / (52 * 51))
    assert plain.longest_run_p(2, 104, deck) == 1.0  # a mean of 1.98 bounds nothing
    assert LONGEST.longest_run_threshold(0.2, 52, deck) == 2
    assert LONGEST.longest_run_threshold(1e-300, 52, deck) == 53  # none: past the reference


def test_a_13_card_stretch_in_new_deck_order_has_its_exact_mean() -> None:
    one = FairShuffle(dict.fromkeys(full_deck(), 1))
    chance = 1.0
    for drawn in range(13):
        chance /= 52 - drawn
    assert one.expected_factory_stretches(52, 13) == pytest.approx(40 * 8 * chance)


def test_thresholds_from_their_smallest_values() -> None:
    assert ONE_DECK.common_runs_p(2, 1, 26, 26) == 0.9
    assert ONE_DECK.common_runs_threshold(2, 0.95, 26, 26) == 1  # one common 2-run already
    null = FairShuffle(dict.fromkeys(full_deck(), 1))  # its laws worked out afresh
    assert null.rising_threshold(0.001, 6) == 0  # P(R <= 1) = 1 / 720 is above it
    assert null.rising_threshold(0.002, 6) == 1
