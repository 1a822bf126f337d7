"""Shuffle integrity: each order statistic against brute force, the nulls against
exact enumeration, the incremental watch against the batch definitions, and a slug carried over
from the previous shoe found live with its places and the cards that follow it."""

from __future__ import annotations

import itertools
import json
import math
import random
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoe_controller.game.surveillance.shuffle_null import (
    DEFAULT_TABLES,
    FairShuffle,
    descent_distribution,
    succession_distribution,
)
from shoe_controller.game.surveillance.shuffle_order import (
    CommonRun,
    Stretch,
    common_runs,
    factory_stretches,
    longest_common_run,
    longest_factory_stretch,
    maximal_common_runs,
    position_map,
    rising_sequences,
    successions,
)
from shoe_controller.game.surveillance.shuffle_watch import (
    SLUG,
    SLUG_ENDED,
    UNSHUFFLED,
    ShuffleSettings,
    ShuffleWatch,
    judge,
    verdict,
)
from shoe_controller.game.surveillance.shuffle_watch import (
    TestResult as Result,
)
from shoe_controller.table.books import FactoryRun
from shoe_controller.vocab.cards import Card, Suit, full_deck

DECK = full_deck()
NULL = FairShuffle.for_decks(8)
SMALL = [Card(rank, suit) for rank in (1, 2, 3) for suit in (Suit.S, Suit.H)]  # 6 kinds

cards_of = st.lists(st.one_of(st.sampled_from(SMALL), st.none()), max_size=24)
plain_cards = st.lists(st.sampled_from(SMALL), max_size=24)


# ------------------------------------------------------------------------------ brute force


def brute_runs(cards, reference):
    """Every (length, this, previous) of a common run that cannot grow either way."""
    found = []
    for i, j in itertools.product(range(len(cards)), range(len(reference))):
        if cards[i] is None or cards[i] != reference[j]:
            continue
        if i and j and cards[i - 1] is not None and cards[i - 1] == reference[j - 1]:
            continue  # grows to the left
        length = 0
        while (
            i + length < len(cards)
            and j + length < len(reference)
            and cards[i + length] is not None
            and cards[i + length] == reference[j + length]
        ):
            length += 1
        found.append(CommonRun(length, (i + 1, i + length), (j + 1, j + length)))
    return found


def key(run):
    return (run.length, run.this, run.previous)


def brute_windows(cards, reference, k):
    return sum(
        all(
            a is not None and a == b
            for a, b in zip(cards[i : i + k], reference[j : j + k], strict=True)
        )
        for i in range(len(cards) - k + 1)
        for j in range(len(reference) - k + 1)
    )


def in_new_deck_order(window):
    """All the same suit, ranks one apart, all up or all down (docs/table.md)."""
    if any(card is None for card in window):
        return False
    if len(window) == 1:
        return True
    steps = {b.rank - a.rank for a, b in itertools.pairwise(window)}
    return len({card.suit for card in window}) == 1 and steps in ({1}, {-1})


def brute_stretches(cards):
    """Maximal windows in new-deck order."""
    good = [
        (a, b)
        for a in range(len(cards))
        for b in range(a + 1, len(cards) + 1)
        if in_new_deck_order(cards[a:b])
    ]
    maximal = [
        (a, b) for a, b in good if not any(c <= a and b <= d and (c, d) != (a, b) for c, d in good)
    ]
    return sorted((b - a, (a + 1, b)) for a, b in maximal)


def bayer_diaconis_packets(permutation):
    """Rising sequences read off as Bayer and Diaconis do: from the lowest value, take x, x+1,
    ... while each lies to the right of the one before; then start again."""
    where = {value: place for place, value in enumerate(permutation)}
    packets, value = 0, 0
    while value < len(permutation):
        packets += 1
        while value + 1 < len(permutation) and where[value + 1] > where[value]:
            value += 1
        value += 1
    return packets


def adjacent_both(uids, reference_uids):
    """Successions by the plain definition: a pair of reference neighbours adjacent here."""
    pairs = set(itertools.pairwise(reference_uids))
    return sum(pair in pairs for pair in itertools.pairwise(uids))


# -------------------------------------------------------------------- statistics, rank+suit


@settings(max_examples=150, deadline=None)
@given(cards=cards_of, reference=cards_of)
def test_common_runs_are_the_brute_force_ones(cards, reference):
    expected = brute_runs(cards, reference)
    assert sorted(maximal_common_runs(cards, reference), key=key) == sorted(expected, key=key)
    for k in (1, 2, 3):
        assert common_runs(cards, reference, k) == brute_windows(cards, reference, k)
    longest = longest_common_run(cards, reference)
    if not expected:
        assert longest is None
    else:
        best = min(expected, key=lambda run: (-run.length, run.this, run.previous))
        assert longest == best


def test_a_common_run_has_its_places_in_both_shoes_from_1():
    reference = [DECK[i] for i in (0, 5, 9, 13, 17, 21, 25)]
    cards = [DECK[40], DECK[9], DECK[13], DECK[17], DECK[41]]
    assert longest_common_run(cards, reference) == CommonRun(3, (2, 4), (3, 5))
    assert CommonRun(3, (2, 4), (3, 5)).to_json() == {
        "length": 3,
        "this": [2, 4],
        "previous": [3, 5],
    }
    with pytest.raises(ValueError, match="at least 1 card"):
        common_runs(cards, reference, 0)


@settings(max_examples=150, deadline=None)
@given(cards=st.lists(st.one_of(st.sampled_from(DECK[:12]), st.none()), max_size=30))
def test_stretches_in_new_deck_order_are_the_brute_force_ones(cards):
    found = factory_stretches(cards)
    assert sorted((s.length, s.this) for s in found) == brute_stretches(cards)
    longest = longest_factory_stretch(cards)
    assert (longest.length if longest else 0) == max((s.length for s in found), default=0)


@settings(max_examples=100, deadline=None)
@given(cards=st.lists(st.sampled_from(DECK[:16]), max_size=40))
def test_every_run_the_security_hold_counts_is_a_stretch_here(cards):
    # table/books.py FactoryRun (the hold at factory_order_run cards) restarts at a turn; a
    # stretch here may begin on the turning card, so it is never shorter.
    watch, ends = FactoryRun(), {}
    for index, card in enumerate(cards):
        ends[index + 1] = watch.feed(card)
    stretches = factory_stretches(cards)
    for end, length in ends.items():
        assert any(s.this[1] >= end and s.this[0] <= end - length + 1 for s in stretches)


def test_a_factory_deck_shows_four_stretches_of_13_whatever_the_suit_order():
    rng = random.Random(7)
    shoe = [rng.choice(DECK) for _ in range(30)]
    deck = [Card(r, Suit.S) for r in range(1, 14)] + [Card(r, Suit.C) for r in range(13, 0, -1)]
    deck += [Card(r, Suit.D) for r in range(1, 14)] + [Card(r, Suit.H) for r in range(13, 0, -1)]
    stretches = factory_stretches([*shoe, *deck, *shoe], min_length=13)
    assert [(s.length, s.this, s.ascending) for s in stretches] == [
        (13, (31, 43), True),
        (13, (44, 56), False),
        (13, (57, 69), True),
        (13, (70, 82), False),
    ]
    assert Stretch(13, (31, 43), True).to_json() == {"length": 13, "this": [31, 43]}


# --------------------------------------------------------------------- statistics, identities


@settings(max_examples=150, deadline=None)
@given(st.permutations(list(range(9))), st.integers(0, 9), st.integers(0, 9))
def test_identity_statistics_against_the_plain_definitions(order, dealt, reference_dealt):
    reference = list(range(9))[:reference_dealt]
    here = order[:dealt]
    permutation = position_map(here, reference)
    shared = [uid for uid in here if uid in reference]
    assert sorted(permutation) == list(range(len(shared)))
    assert rising_sequences(here, reference) == bayer_diaconis_packets(permutation)
    # among the shared cards, relabelled 0..c-1 by the reference's order, successions are
    # reference neighbours adjacent here
    assert successions(here, reference) == adjacent_both(permutation, list(range(len(shared))))
    if dealt == reference_dealt == 9:
        assert successions(here, reference) == adjacent_both(here, reference)


def test_one_riffle_leaves_at_most_two_rising_sequences_and_k_riffles_2_to_the_k():
    rng = random.Random(3)
    deck = list(range(52))
    for k in (1, 2, 3):
        for _ in range(50):
            order = deck
            for _ in range(k):
                cut = sum(rng.random() < 0.5 for _ in order)
                left, right, out = order[:cut], order[cut:], []
                while left or right:
                    if rng.random() < len(left) / (len(left) + len(right)):
                        out.append(left.pop(0))
                    else:
                        out.append(right.pop(0))
                order = out
            assert rising_sequences(order, deck) <= 2**k


def test_a_tag_seen_twice_counts_where_it_was_first_seen():
    assert position_map(["c", "a", "c", "b"], ["a", "b", "c", "a"]) == [2, 0, 1]
    assert position_map([None, "x"], ["x", None]) == [0]


# ------------------------------------------------------------------ exact nulls, enumerated


def test_six_distinct_cards_all_720_orders_give_the_exact_nulls():
    reference = list(range(6))
    rising = Counter(
        rising_sequences(list(order), reference) for order in itertools.permutations(reference)
    )
    succeeded = Counter(
        successions(list(order), reference) for order in itertools.permutations(reference)
    )
    eulerian = descent_distribution(6, 5)
    assert {r: Fraction(n, 720) for r, n in rising.items()} == {
        k + 1: Fraction(round(p * 720), 720) for k, p in enumerate(eulerian) if p
    }
    assert [round(p * 720) for p in eulerian] == [rising[k + 1] for k in range(6)]
    assert [round(p * 720) for p in succession_distribution(6)] == [succeeded[s] for s in range(6)]
    for value in range(8):
        assert NULL.rising_p(value, 6) == pytest.approx(
            sum(n for r, n in rising.items() if r <= value) / 720
        )
        assert NULL.successions_p(value, 6) == pytest.approx(
            sum(n for s, n in succeeded.items() if s >= value) / 720
        )


def test_the_identity_nulls_hold_whatever_was_dealt():
    # 7 tags, the reference the previous shoe's first 5, this shoe dealt to 5: for every
    # number of shared cards, the statistics' law is the exact one for that many cards.
    by_shared: dict[int, list[tuple[int, int]]] = {}
    reference = [0, 1, 2, 3, 4]
    for order in itertools.permutations(range(7)):
        permutation = position_map(list(order[:5]), reference)
        by_shared.setdefault(len(permutation), []).append(
            (rising_sequences(list(order[:5]), reference), successions(list(order[:5]), reference))
        )
    for shared, values in by_shared.items():
        rising = Counter(r for r, _ in values)
        succeeded = Counter(s for _, s in values)
        for value in range(shared + 2):
            assert NULL.rising_p(value, shared) == pytest.approx(
                sum(n for r, n in rising.items() if r <= value) / len(values)
            )
            assert NULL.successions_p(value, shared) == pytest.approx(
                sum(n for s, n in succeeded.items() if s >= value) / len(values)
            )


def test_identity_thresholds_meet_their_rate_and_no_smaller_one_would():
    for shared in (7, 40, 388):
        rate = 1e-3
        rising = NULL.rising_threshold(rate, shared)
        assert NULL.rising_p(rising, shared) <= rate < NULL.rising_p(rising + 1, shared)
        succeeded = NULL.successions_threshold(rate, shared)
        assert NULL.successions_p(succeeded, shared) <= rate
        assert NULL.successions_p(succeeded - 1, shared) > rate


def small_null():
    """Three kinds, two copies each: 720 orders of the physical cards, 90 distinct."""
    kinds = [Card(1, Suit.S), Card(2, Suit.S), Card(1, Suit.H)]
    return kinds, FairShuffle(dict.fromkeys(kinds, 2))


def test_the_mean_number_of_common_runs_is_exact_and_bounds_the_longest_run():
    kinds, null = small_null()
    shoe = [kind for kind in kinds for _ in range(2)]
    reference = [kinds[0], kinds[1], kinds[0], kinds[2], kinds[1]]
    orders = list(itertools.permutations(shoe))
    for dealt in (3, 4, 6):
        for length in (1, 2, 3):
            mean = Fraction(sum(brute_windows(o[:dealt], reference, length) for o in orders), 720)
            assert null.expected_common_runs(reference, dealt, length) == pytest.approx(float(mean))
            reached = sum(
                (longest_common_run(o[:dealt], reference) or CommonRun(0, (0, 0), (0, 0))).length
                >= length
                for o in orders
            )
            assert null.longest_run_p(length, dealt, reference) >= reached / 720 - 1e-12


def test_the_mean_number_of_windows_in_new_deck_order_is_exact():
    shoe = [Card(r, Suit.S) for r in (1, 2, 3, 4)] + [Card(r, Suit.H) for r in (1, 2, 3)]
    null = FairShuffle(Counter(shoe))
    orders = list(itertools.permutations(shoe))
    for dealt in (4, 7):
        for length in (2, 3, 4):
            windows = sum(
                in_new_deck_order(o[a : a + length])
                for o in orders
                for a in range(dealt - length + 1)
            )
            assert null.expected_factory_stretches(dealt, length) == pytest.approx(
                windows / len(orders)
            )


def test_the_shipped_simulation_agrees_with_the_exact_means_where_both_speak():
    # Far enough in the tail, P(longest >= L) is the mean number of common L-runs (a run of
    # L + 1 is rare): the simulated table and the exact mean must agree within its noise.
    null = FairShuffle.for_decks(8)
    table = DEFAULT_TABLES.decks[8]
    assert table.shoes >= 100_000
    whole = random.Random(1).sample(list(DECK) * 8, 416)  # the table's reference: a shoe
    for cards in (208, 304, 400):
        runs = table.at("longest_run", cards)
        stretches = table.at("factory_stretch", cards)
        assert table.grid[table.grid.index(cards)] == cards
        for length, tolerance in ((4, 0.1), (5, 0.25)):
            simulated = runs.at_least(length) / table.shoes
            exact = null.expected_common_runs(whole, cards, length)
            assert simulated == pytest.approx(exact, rel=tolerance)
        simulated = stretches.at_least(4) / table.shoes
        assert simulated == pytest.approx(null.expected_factory_stretches(cards, 4), rel=0.1)
    reference = whole[:402]
    for value in range(2, 9):  # p-values fall as the statistic grows
        assert null.longest_run_p(value + 1, 402, reference) <= null.longest_run_p(
            value, 402, reference
        )
        assert null.factory_p(value + 1, 402) <= null.factory_p(value, 402)
    assert null.common_runs_p(2, 0, 402, 402) == 1.0
    assert FairShuffle.for_decks(8, tables=None).common_runs_p(2, 50, 402, 402) is None


def test_the_live_threshold_is_the_shortest_run_rarer_than_one_shoe_in_10000():
    reference = random.Random(2).sample(list(DECK) * 8, 402)
    watch = ShuffleWatch(reference)
    null, threshold = watch.null, watch.live_threshold
    assert null.longest_run_p(threshold, 402, reference) <= 1e-4
    assert null.longest_run_p(threshold - 1, 402, reference) > 1e-4
    looser = ShuffleWatch(reference, settings=ShuffleSettings(live_rate=0.05))
    assert looser.live_threshold < threshold


# ------------------------------------------------------------------- the watch against batch


def small_watch(reference, reference_uids, live_rate=0.2):
    copies = Counter(card for card in reference if card is not None) + Counter(SMALL)
    null = FairShuffle(copies)
    return ShuffleWatch(
        reference,
        reference_uids=reference_uids,
        settings=ShuffleSettings(live_rate=live_rate, alarm_rate=0.05, runs_listed=50),
        null=null,
    )


@settings(max_examples=120, deadline=None)
@given(cards=cards_of, reference=cards_of, data=st.data())
def test_the_watch_says_what_the_batch_functions_say_at_every_card(cards, reference, data):
    uids = data.draw(
        st.lists(st.one_of(st.integers(0, 30), st.none()), min_size=len(cards), max_size=len(cards))
    )
    reference_uids = data.draw(st.permutations(list(range(len(reference)))))
    watch = small_watch(reference, reference_uids)
    for seen in range(len(cards) + 1):
        if seen:
            watch.feed(cards[seen - 1], uids[seen - 1])
        here = cards[:seen]
        tests = watch.tests()
        longest = longest_common_run(here, reference)
        assert tests["longest_run"].value == (longest.length if longest else 0)
        assert watch.longest_run() == longest
        assert tests["common_runs_2"].value == common_runs(here, reference, 2)
        stretch = longest_factory_stretch(here)
        assert tests["factory_stretch"].value == (stretch.length if stretch else 0)
        assert watch.longest_stretch() == stretch
        assert tests["successions"].value == successions(uids[:seen], reference_uids)
        assert tests["rising_sequences"].value == rising_sequences(uids[:seen], reference_uids)
    report = watch.report()
    assert list(report.runs) == maximal_common_runs(cards, reference, 3)[:50]
    threshold = report.tests["factory_stretch"].threshold
    assert list(report.factory) == factory_stretches(cards, threshold)


@settings(max_examples=120, deadline=None)
@given(st.permutations(DECK[:20]), st.lists(st.integers(0, 19), max_size=40))
def test_live_notices_are_the_runs_that_reach_the_threshold(reference, picks):
    # Distinct reference cards: one run at most is open at a time, so the notices follow
    # from the batch runs: `slug` at a run's threshold-th card, `slug_ended` at the card
    # after it (when there is one).
    cards = [reference[pick] if pick % 3 else reference[min(pick + 1, 19)] for pick in picks]
    for index in range(1, len(cards)):  # make runs likely: often the next reference card
        if picks[index] % 2 == 0 and cards[index - 1] in reference:
            following = reference.index(cards[index - 1]) + 1
            cards[index] = reference[following % 20]
    watch = small_watch(reference, None, live_rate=0.5)
    threshold = watch.live_threshold
    notices = [(n.kind, n.card, n.slug.this, n.slug.previous) for n in watch.feed_many(cards)]
    expected = []
    for run in sorted(maximal_common_runs(cards, reference, threshold), key=lambda r: r.this):
        first, last = run.this
        start = (first, first + threshold - 1)
        expected.append(
            (SLUG, first + threshold - 1, start, (run.previous[0], run.previous[0] + threshold - 1))
        )
        if last < len(cards):
            expected.append((SLUG_ENDED, last + 1, run.this, run.previous))
    assert notices == expected


# ---------------------------------------------------------------------- a slug, a fair shoe


def eight_decks(seed):
    shoe = list(DECK) * 8
    random.Random(seed).shuffle(shoe)
    return shoe


def test_a_20_card_slug_carried_over_is_found_live_with_its_places_and_next_cards():
    previous = eight_decks(2801)
    reference = previous[:402]
    slug = reference[100:120]  # positions 101-120 of the previous shoe
    rest = eight_decks(2802)
    for card in slug:
        rest.remove(card)
    shoe = rest[:200] + slug + rest[200:]  # positions 201-220 of this shoe
    assert shoe[199] != reference[99]  # no chance extension on either side
    assert shoe[220] != reference[120]
    watch = ShuffleWatch(reference)
    threshold = watch.live_threshold
    notices = []
    dealt = shoe[:402]  # the cut card leaves 14
    for start in range(0, 402, 5):  # the companion feeds a round at a time
        for notice in watch.feed_many(dealt[start : start + 5]):
            notices.append((notice, start, watch.live))
    raised = [(n, at, live) for n, at, live in notices if n.kind == SLUG]
    ended = [(n, at) for n, at, _ in notices if n.kind == SLUG_ENDED]
    assert len(raised) == len(ended) == 1
    notice, fed_from, _ = raised[0]
    assert notice.card == 200 + threshold  # the slug's threshold-th card
    assert fed_from < notice.card <= fed_from + 5  # within the round that passed the threshold
    assert notice.slug.this == (201, 200 + threshold)
    assert notice.slug.previous == (101, 100 + threshold)
    assert notice.slug.next_cards == tuple(reference[100 + threshold : 108 + threshold])
    assert list(notice.slug.next_cards) == shoe[200 + threshold : 208 + threshold]
    end, _ = ended[0]
    assert end.card == 221
    assert (end.slug.length, end.slug.this, end.slug.previous) == (20, (201, 220), (101, 120))
    report = watch.report(shoe=7, against=6)
    assert report.runs[0] == CommonRun(20, (201, 220), (101, 120))
    assert report.verdict == UNSHUFFLED
    body = json.loads(json.dumps(report.to_json()))
    assert sorted(body) == ["against", "cards_compared", "runs", "shoe", "tests", "verdict"]
    assert body["runs"][0] == {"length": 20, "this": [201, 220], "previous": [101, 120]}
    assert body["tests"]["longest_run"]["value"] == 20
    assert body["tests"]["longest_run"]["p_value"] < 1e-6
    assert (body["shoe"], body["against"], body["cards_compared"]) == (7, 6, 402)


def test_a_fair_shoe_raises_no_slug_and_is_judged_fair():
    report, notices = judge(
        eight_decks(2803)[:402],
        eight_decks(2804)[:402],
        uids=list(range(402)),
        reference_uids=random.Random(5).sample(range(416), 402),
    )
    assert notices == []
    assert report.verdict == "fair"
    assert set(report.tests) == {
        "longest_run",
        "common_runs_2",
        "factory_stretch",
        "successions",
        "rising_sequences",
    }
    for test in report.tests.values():
        assert isinstance(test.p_value, float)
        assert 0 < test.p_value <= 1
        assert not test.alarmed


def test_nothing_is_computed_from_a_card_not_given_yet():
    # R15: what the watch says after n cards depends on those n cards alone.
    first = eight_decks(11)[:150]
    reference = eight_decks(12)[:402]
    later_a, later_b = eight_decks(13)[:100], eight_decks(14)[:100]
    watches = [ShuffleWatch(reference, reference_uids=range(402)) for _ in range(2)]
    for watch in watches:
        watch.feed_many(first, list(range(150)))
    assert watches[0].report().to_json() == watches[1].report().to_json()
    watches[0].feed_many(later_a)
    watches[1].feed_many(later_b)
    assert watches[0].report().cards_compared == 250


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="live_rate"):
        ShuffleSettings(live_rate=0)
    with pytest.raises(ValueError, match="run_length"):
        ShuffleSettings(run_length=0)
    with pytest.raises(ValueError, match="shoe_cards"):
        ShuffleSettings(shoe_cards=0)
    watch = ShuffleWatch(eight_decks(1)[:402])
    with pytest.raises(TypeError, match="a card or None"):
        watch.feed("AS")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="identities"):
        watch.feed_many(DECK[:3], [1, 2])
    assert watch.cards_compared == 0


def test_a_watch_given_no_card_yet_finds_nothing():
    report = ShuffleWatch(eight_decks(3)[:402], reference_uids=range(402)).report()
    assert report.verdict == "fair"
    assert report.runs == ()
    assert report.live is None
    assert all(test.p_value == 1.0 for test in report.tests.values())


def test_unknown_cards_keep_their_places_and_break_runs():
    reference = eight_decks(21)[:402]
    shoe = [*reference[10:20]]
    shoe[4] = None
    watch = ShuffleWatch(reference)
    watch.feed_many(shoe)
    runs = maximal_common_runs(shoe, reference, 5)
    assert watch.longest_run() == runs[0] == CommonRun(5, (6, 10), (16, 20))
    assert math.isfinite(watch.report().tests["longest_run"].p_value)


# ----------------------------------------------------- what the report and its JSON say


def test_a_stretch_may_begin_on_the_card_that_turned_it():
    six, seven, five = Card(6, Suit.S), Card(7, Suit.S), Card(5, Suit.S)
    cards = [six, seven, six, five]  # 6♠ 7♠ up, then 7♠ 6♠ 5♠ down
    assert factory_stretches(cards) == [Stretch(3, (2, 4), False), Stretch(2, (1, 2), True)]
    watch = ShuffleWatch(eight_decks(4)[:402])
    watch.feed_many(cards)
    assert watch.longest_stretch() == Stretch(3, (2, 4), False)


def test_a_live_slug_is_in_the_report_and_its_json_names_the_next_cards():
    reference = [*DECK[:8], None, *DECK[9:20]]  # card 9 of the reference left unidentified
    watch = small_watch(reference, None, live_rate=0.5)
    threshold = watch.live_threshold
    assert 2 <= threshold <= 6
    watch.feed_many(reference[8 - threshold : 8])  # the reference's cards 9 - threshold .. 8
    slug = watch.live
    assert slug is not None
    assert watch.report().live == slug
    assert slug.to_json() == {
        "length": threshold,
        "this": [1, threshold],
        "previous": [9 - threshold, 8],
        "next": [None, *(str(card) for card in DECK[9:16])],
    }


def test_the_report_gives_each_tests_whole_shoe_threshold_and_its_json():
    reference = eight_decks(51)[:402]
    watch = ShuffleWatch(reference, reference_uids=range(402))
    dealt = eight_decks(52)[:100]
    watch.feed_many(dealt, [5 * n % 402 for n in range(100)])
    tests = watch.report().tests
    rate = 1e-3
    assert tests["longest_run"].threshold == NULL.longest_run_threshold(rate, 402, reference)
    assert tests["common_runs_2"].threshold == NULL.common_runs_threshold(2, rate, 402, 402)
    assert tests["factory_stretch"].threshold == NULL.factory_threshold(rate, 402)
    assert tests["successions"].threshold == NULL.successions_threshold(rate, 100)
    assert tests["rising_sequences"].threshold == NULL.rising_threshold(rate, 100)
    assert all(isinstance(test.threshold, int) for test in tests.values())
    body = watch.report().to_json()["tests"]
    assert body["longest_run"] == {
        "value": tests["longest_run"].value,
        "p_value": tests["longest_run"].p_value,
        "threshold": tests["longest_run"].threshold,
    }


def test_the_verdict_is_unshuffled_below_one_in_a_million_and_suspect_at_a_threshold():
    rules = ShuffleSettings()
    assert verdict({"a": Result(3, 1e-6, None)}, rules) == "fair"  # at the rate: not below
    assert verdict({"a": Result(3, 0.99e-6, None)}, rules) == "unshuffled"
    assert verdict({"a": Result(5, 0.01, 5), "b": Result(1, 0.5, 9)}, rules) == "suspect"
    assert verdict({"a": Result(4, 0.01, 5)}, rules) == "fair"
    assert verdict({"a": Result(2, 0.01, 3, below=True)}, rules) == "suspect"


def test_the_report_lists_a_run_still_open_from_3_cards_and_stretches_at_the_threshold():
    reference = DECK[:20]
    watch = small_watch(reference, None)
    watch.feed_many([DECK[30], *reference[5:8]])  # ends on an open run of 3
    assert watch.report().runs == (CommonRun(3, (2, 4), (6, 8)),)
    # Two stretches in new-deck order at or past the 8-deck threshold, longest first.
    watch = ShuffleWatch(eight_decks(61)[:402])
    threshold = watch.report().tests["factory_stretch"].threshold
    up = [Card(rank, Suit.S) for rank in range(1, threshold + 1)]
    down = [Card(rank, Suit.H) for rank in range(13, 12 - threshold, -1)]
    watch.feed_many([*up, Card(5, Suit.D), *down])
    assert watch.report().factory == (
        Stretch(threshold + 1, (threshold + 2, 2 * threshold + 2), False),
        Stretch(threshold, (1, threshold), True),
    )


def test_judge_is_the_watch_fed_the_whole_shoe_with_its_options():
    reference, dealt = eight_decks(71)[:402], eight_decks(72)[:402]
    uids, reference_uids = list(range(402)), random.Random(7).sample(range(416), 402)

    def watched(**options):
        watch = ShuffleWatch(reference, reference_uids=reference_uids, **options)
        watch.feed_many(dealt, uids)
        return watch.report()

    assert judge(dealt, reference, uids=uids, reference_uids=reference_uids)[0] == watched()
    report = judge(dealt, reference, uids=uids, reference_uids=reference_uids)[0]
    assert report.tests["successions"].value == successions(uids, reference_uids)
    assert report.tests["rising_sequences"].value == rising_sequences(uids, reference_uids)
    six = judge(dealt, reference, uids=uids, reference_uids=reference_uids, decks=6)[0]
    assert six == watched(decks=6)
    assert report.tests["common_runs_2"].p_value == pytest.approx(0.9404, abs=1e-4)
    assert six.tests["common_runs_2"].p_value is None  # 402 cards: past the 6-deck table
    listed = ShuffleSettings(runs_listed=1, alarm_rate=0.01)
    one = judge(dealt, reference, uids=uids, reference_uids=reference_uids, settings=listed)[0]
    assert one == watched(settings=listed)
    small = FairShuffle(Counter(DECK * 8))  # the same shoe without the shipped tables
    plain = judge(dealt, reference, uids=uids, reference_uids=reference_uids, null=small)[0]
    assert plain == watched(null=small)
    assert plain.tests["common_runs_2"].p_value is None  # no table, no p-value


def test_a_slug_broken_where_two_runs_go_on_is_taken_up_by_the_longer():
    a, b, c, d, e = DECK[:5]
    x, z, y, w = DECK[20:24]
    reference = [a, b, c, d, x, z, b, c, d, e, y, c, d, e, w]  # b c d e twice, c d e once more
    watch = small_watch(reference, None, live_rate=0.5)
    assert watch.live_threshold <= 3
    notices = watch.feed_many([a, b, c, d, e])
    assert [notice.kind for notice in notices] == [SLUG, SLUG_ENDED, SLUG]
    assert notices[1].slug.previous == (1, 4)  # a b c d, broken by e
    live = watch.live
    assert live is not None
    assert (live.length, live.this, live.previous) == (4, (2, 5), (7, 10))  # b c d e, not c d e


def test_a_closed_run_of_3_is_listed():
    reference = DECK[:20]
    watch = small_watch(reference, None)
    watch.feed_many([DECK[30], *reference[5:8], DECK[31]])
    assert watch.report().runs == (CommonRun(3, (2, 4), (6, 8)),)


def test_settings_take_every_rate_below_1_and_the_smallest_counts():
    for rate in (1, 1.5):
        with pytest.raises(ValueError, match="live_rate must be a rate between 0 and 1"):
            ShuffleSettings(live_rate=rate)
    edge = ShuffleSettings(run_length=1, lookahead=0, runs_listed=0, shoe_cards=1)
    assert (edge.run_length, edge.lookahead, edge.runs_listed, edge.shoe_cards) == (1, 0, 0, 1)
    with pytest.raises(ValueError, match="lookahead must be a whole number >= 0"):
        ShuffleSettings(lookahead=-1)


def test_a_watch_is_of_8_decks_unless_told():
    reference, dealt = eight_decks(81)[:402], eight_decks(82)[:200]
    default, eight = ShuffleWatch(reference), ShuffleWatch(reference, decks=8)
    default.feed_many(dealt)
    eight.feed_many(dealt)
    assert default.report() == eight.report()
    assert default.null.table is DEFAULT_TABLES.decks[8]


def test_a_run_that_goes_on_is_listed_once_when_it_ends():
    reference = DECK[:20]
    watch = small_watch(reference, None)
    watch.feed_many([*reference[:5], DECK[30]])
    assert watch.report().runs == (CommonRun(5, (1, 5), (1, 5)),)
