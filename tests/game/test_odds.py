"""Exact odds (odds.py): published figures, the brute-force reference, --remaining and the CLI."""

import json
import math
from fractions import Fraction

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shoe_testkit.odds_reference import reference_analysis

from shoe_controller.cli.odds import odds_command
from shoe_controller.game.odds import (
    PROBABILITY_KEYS,
    Composition,
    OddsError,
    analyse,
    format_analysis,
    main_outcome_counts,
    parse_remaining,
)
from shoe_controller.game.payouts import Bet, pay_table
from shoe_controller.vocab.cards import Card, Suit, full_deck, parse_card

# Ordered ways to draw six cards from 8 and 6 decks: the denominator of the published counts.
SIX_OF_8_DECKS = math.perm(416, 6)  # 4,998,398,275,503,360
SIX_OF_6_DECKS = math.perm(312, 6)

REQUIRED_KEYS = {
    "banker",
    "player",
    "tie",
    "player_pair",
    "banker_pair",
    "any_pair",
    "perfect_pair",
    "big",
    "small",
    "lucky6_2cards",
    "lucky6_3cards",
    "natural",
    *(f"player_dragon_margin_{m}" for m in range(4, 10)),
    *(f"banker_dragon_margin_{m}" for m in range(4, 10)),
    "player_dragon_natural_win",
    "banker_dragon_natural_win",
    "natural_tie",
}


@pytest.fixture(scope="module")
def eight_decks():
    return analyse(Composition.full_shoe(8))


@pytest.fixture(scope="module")
def six_decks():
    return analyse(Composition.full_shoe(6))


def shoe(text: str) -> Composition:
    """A hand-built composition: `AS*2 KH` is two ace of spades and one king of hearts."""
    counts = [0] * 52
    for word in text.split():
        card, _, times = word.partition("*")
        counts[parse_card(card).index] += int(times or 1)
    return Composition(tuple(counts))


# --- Published exact figures ----------------------------------------------------------------
# Combination counts over 416_P_6 from Wizard of Odds (baccarat side bets: Dragon Bonus, Lucky 6,
# Side Totals; Perfect Pairs v1) and casinoexploit.com's 8- and 6-deck tables (Thorp's figures).


@pytest.mark.parametrize(
    ("key", "combinations"),
    [
        ("banker", 2_292_252_566_437_888),
        ("player", 2_230_518_282_592_256),
        ("tie", 475_627_426_473_216),
        ("lucky6_2cards", 186_173_936_904_192),
        ("lucky6_3cards", 83_058_367_551_488),
        ("player_dragon_margin_9", 18_409_431_764_992),
        ("player_dragon_margin_8", 34_097_645_543_424),
        ("player_dragon_margin_7", 89_590_261_473_280),
        ("player_dragon_margin_6", 141_238_897_317_888),
        ("player_dragon_margin_5", 166_169_165_987_840),
        ("player_dragon_margin_4", 186_780_352_174_080),
        ("player_dragon_natural_win", 812_685_054_124_032),
        ("banker_dragon_margin_9", 15_390_342_909_952),
        ("banker_dragon_margin_8", 28_305_092_784_128),
        ("banker_dragon_margin_7", 79_517_099_278_336),
        ("banker_dragon_margin_6", 119_200_072_366_080),
        ("banker_dragon_margin_5", 157_275_882_332_160),
        ("banker_dragon_margin_4", 201_147_167_287_296),
        ("banker_dragon_natural_win", 812_685_054_124_032),
        ("natural_tie", 89_325_908_267_520),
    ],
)
def test_eight_deck_combinations_match_published_counts_exactly(eight_decks, key, combinations):
    assert eight_decks.probabilities[key] == Fraction(combinations, SIX_OF_8_DECKS)


@pytest.mark.parametrize(
    ("key", "combinations"),
    [
        ("banker", 403_095_751_234_560),
        ("player", 392_220_492_728_832),
        ("tie", 83_552_962_932_288),
    ],
)
def test_six_deck_combinations_match_published_counts_exactly(six_decks, key, combinations):
    assert six_decks.probabilities[key] == Fraction(combinations, SIX_OF_6_DECKS)


@pytest.mark.parametrize(
    ("decks", "key", "published"),
    [
        # multiplayerbaccarat.com / vegastrip.com (Thorp): banker, player, tie.
        (8, "banker", 0.458597),
        (8, "player", 0.446247),
        (8, "tie", 0.095156),
        (6, "banker", 0.458653),
        (6, "player", 0.446279),
        (6, "tie", 0.095069),
        # vegastrip.com (Yui-Bin Chen): fewer decks.
        (4, "banker", 0.458761),
        (4, "player", 0.446340),
        (4, "tie", 0.094898),
        (2, "banker", 0.459073),
        (2, "player", 0.446508),
        (2, "tie", 0.094419),
        (1, "banker", 0.459624),
        (1, "player", 0.446760),
        (1, "tie", 0.093615),
        # Wizard of Odds 4-5-6 side bet: probability of exactly four cards.
        (8, "small", 0.378868),
        (6, "small", 0.378925),
        (8, "big", 0.303444 + 0.317687),
        (6, "big", 0.303540 + 0.317535),
        # Wizard of Odds Lucky 6 and Perfect Pairs (v1) tables.
        (8, "lucky6_2cards", 0.037247),
        (8, "lucky6_3cards", 0.016617),
        (8, "perfect_pair", 0.033450),
        (6, "perfect_pair", 0.031896),
    ],
)
def test_probabilities_match_published_six_decimal_figures(decks, key, published):
    analysis = analyse(Composition.full_shoe(decks))
    assert float(analysis.probabilities[key]) == pytest.approx(published, abs=1.5e-6)


def test_perfect_pair_matches_published_combinations_exactly(eight_decks, six_decks):
    # Wizard of Odds, Perfect Pairs (version 1): wins / all, 8 and 6 decks (R13).
    assert eight_decks.probabilities["perfect_pair"] == Fraction(246_848_784, 7_379_583_120)
    assert six_decks.probabilities["perfect_pair"] == Fraction(74_114_820, 2_323_673_820)


def test_pair_is_a_rank_match_of_the_first_two_cards(eight_decks):
    # R13: 13 ranks of 32 cards; published hit rate 7.470% and house edge 10.361% at 11 to 1.
    assert eight_decks.probabilities["player_pair"] == Fraction(13 * 32 * 31, 416 * 415)
    assert eight_decks.probabilities["banker_pair"] == eight_decks.probabilities["player_pair"]
    assert float(eight_decks.house_edge["player_pair"]) == pytest.approx(0.10361, abs=5e-6)


@pytest.mark.parametrize(
    ("decks", "bet", "published"),
    [
        # multiplayerbaccarat.com: 5% commission banker, player, tie at 8 to 1.
        (8, "banker", 0.010579),
        (8, "player", 0.012351),
        (8, "tie", 0.143596),
        (6, "banker", 0.010558),
        (6, "player", 0.012374),
        (6, "tie", 0.144382),
        # excelpunks.com: banker paid half when it wins on 6 (no-commission baccarat).
        (8, "banker_no_commission", 0.014581),
        # Wizard of Odds: Lucky 6, Macau pay table 12 / 20.
        (8, "lucky6", 0.166836),
        # Wizard of Odds: Perfect Pairs v1 at 25 to 1; 4-5-6 "4 cards" at 3 to 2.
        (8, "perfect_pair", 0.130294),
        (6, "perfect_pair", 0.170716),
        (8, "small", 0.05283),
    ],
)
def test_house_edges_match_published_figures(decks, bet, published):
    analysis = analyse(Composition.full_shoe(decks))
    assert float(analysis.house_edge[bet]) == pytest.approx(published, abs=1.5e-6)


def test_house_edges_follow_the_pay_table_passed_in():
    # Wizard of Odds Dragon Bonus pays 6 and 4 for margins 7 and 6 (R14.2 overrides) and the
    # Las Vegas Lucky 6 pays 23 on three cards: edges 2.6517%, 9.3731%, 11.6985%.
    table = pay_table({"dragon_margin_7": 6, "dragon_margin_6": 4, "lucky6_3cards": 23})
    analysis = analyse(Composition.full_shoe(8), table)
    assert float(analysis.house_edge["player_dragon"]) == pytest.approx(0.026517, abs=1.5e-6)
    assert float(analysis.house_edge["banker_dragon"]) == pytest.approx(0.093731, abs=1.5e-6)
    assert float(analysis.house_edge["lucky6"]) == pytest.approx(0.116985, abs=1.5e-6)
    # Tie at 9 to 1: 4.8440% (multiplayerbaccarat.com).
    tie_nine = analyse(Composition.full_shoe(8), pay_table({"tie": 9}))
    assert float(tie_nine.house_edge["tie"]) == pytest.approx(0.048440, abs=1.5e-6)


@pytest.mark.parametrize(
    ("side", "total", "combinations"),
    [
        # Wizard of Odds "Side Totals": final Player / Banker totals, 8 decks.
        ("player", 9, 668_220_074_600_448),
        ("player", 0, 469_796_508_410_880),
        ("player", 4, 371_426_030_979_072),
        ("banker", 6, 605_184_530_090_752),
        ("banker", 5, 503_359_177_443_584),
        ("banker", 3, 363_761_246_869_760),
    ],
)
def test_main_outcome_counts_are_indexed_player_total_then_banker_total(side, total, combinations):
    counts, denominator = main_outcome_counts(Composition.full_shoe(8).point_counts)
    assert denominator == SIX_OF_8_DECKS
    by_total = counts.sum(axis=(1, 2, 3)) if side == "player" else counts.sum(axis=(0, 2, 3))
    assert int(by_total[total]) == combinations


# --- Against the brute-force reference (rules.outcome + payouts.settle on every sequence) ---

# Eleven cards of eight kinds that reach every event: naturals and natural ties, every R9.4
# branch, Lucky 6 on two and three cards, every dragon margin, pairs and a perfect pair.
RICH_SHOE = "AS*2 AH 3D 4C 6S*2 7H 9D KC*2"


@pytest.fixture(scope="module")
def rich_reference():
    return reference_analysis(shoe(RICH_SHOE))


def test_rich_shoe_reaches_every_event(rich_reference):
    probabilities, _ = rich_reference
    assert {key for key, value in probabilities.items() if value > 0} >= REQUIRED_KEYS


def test_fast_engine_equals_reference_exactly_on_a_rich_small_shoe(rich_reference):
    probabilities, edges = rich_reference
    analysis = analyse(shoe(RICH_SHOE))
    for key in PROBABILITY_KEYS:
        assert analysis.probabilities[key] == probabilities.get(key, 0), key
    assert dict(analysis.house_edge) == edges


def test_fast_engine_equals_reference_with_another_pay_table():
    table = pay_table(
        {"banker": "0.96", "banker_no_commission_six": "0.55", "dragon_margin_5": 3, "small": 2}
    )
    composition = shoe("AS*2 5D 6C*2 8H 2S KS*2")
    _, edges = reference_analysis(composition, table)
    assert dict(analyse(composition, table).house_edge) == edges


KINDS = [parse_card(text) for text in ("AS", "AH", "2D", "4C", "5S", "6H", "7D", "9C", "KS")]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(KINDS), min_size=6, max_size=8))
def test_fast_engine_equals_reference_on_random_tiny_shoes(cards):
    # Tiny shoes run cards out: impossible draws must weigh exactly zero.
    counts = [0] * 52
    for card in cards:
        counts[card.index] += 1
    composition = Composition(tuple(counts))
    probabilities, edges = reference_analysis(composition)
    analysis = analyse(composition)
    assert {key: analysis.probabilities[key] for key in PROBABILITY_KEYS} == {
        key: probabilities.get(key, Fraction(0)) for key in PROBABILITY_KEYS
    }
    assert dict(analysis.house_edge) == edges


# --- Invariants -----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.lists(st.integers(0, 51), max_size=300))
def test_probabilities_are_consistent_for_any_partial_shoe(decks, dealt_indices):
    deck = full_deck()
    dealt = [deck[index] for index in dealt_indices]
    try:
        composition = Composition.after_dealt(decks, dealt)
    except OddsError:
        return  # dealt more of a card than the shoe holds: refused, tested below
    if composition.total < 6:
        return
    p = analyse(composition).probabilities
    assert p["banker"] + p["player"] + p["tie"] == 1
    assert p["big"] + p["small"] == 1
    assert all(0 <= value <= 1 for value in p.values())
    assert p["any_pair"] <= p["player_pair"] + p["banker_pair"]
    assert max(p["player_pair"], p["banker_pair"]) <= p["any_pair"]
    player_dragon_wins = sum(p[f"player_dragon_margin_{m}"] for m in range(4, 10))
    assert player_dragon_wins + p["player_dragon_natural_win"] <= p["player"]
    assert p["lucky6_2cards"] + p["lucky6_3cards"] <= p["banker"]
    assert p["natural_tie"] <= p["tie"]
    counts, denominator = main_outcome_counts(composition.point_counts)
    assert int(counts.sum()) == denominator == math.perm(composition.total, 6)


@pytest.mark.parametrize("decks", [9, 12, 26])
def test_shoes_past_float_precision_stay_exact(decks):
    # Over 456 cards the counts leave float64's exact range and are summed in int64.
    composition = Composition.full_shoe(decks)
    counts, denominator = main_outcome_counts(composition.point_counts)
    assert int(counts.sum()) == denominator == math.perm(52 * decks, 6)
    banker = float(analyse(composition).probabilities["banker"])
    # Between 8 decks (0.458597) and an infinite shoe (0.458428, vegastrip.com), decreasing.
    assert 0.458428 < banker < 0.458597


def test_house_edge_covers_every_bet_and_ties_push_banker_and_player(eight_decks):
    assert set(eight_decks.house_edge) == {bet.value for bet in Bet}
    tie = eight_decks.probabilities["tie"]
    for bet in ("player", "banker", "banker_no_commission"):
        excluding = eight_decks.house_edge_excluding_ties[bet]
        assert excluding == eight_decks.house_edge[bet] / (1 - tie)
    # Banker at 0.95: 1.0579% per round, 1.1692% per decided round (R12 push).
    assert float(eight_decks.house_edge_excluding_ties["banker"]) == pytest.approx(
        0.011692, abs=1e-6
    )


# --- Compositions and --remaining ------------------------------------------------------------


def test_remaining_with_dealt_cards_equals_the_composition_built_by_hand():
    by_hand = [8] * 52
    for card in (Card(12, Suit.H), Card(3, Suit.S), Card(12, Suit.H), Card(10, Suit.D)):
        by_hand[card.index] -= 1
    parsed = parse_remaining("QH, 3s,QH 10D", decks=8)
    assert parsed == Composition(tuple(by_hand))
    assert parsed.suits_known
    assert analyse(parsed).probabilities == analyse(Composition(tuple(by_hand))).probabilities


def test_remaining_rank_counts_spread_suits_evenly():
    counts = [32] * 13
    counts[0] = 5  # five aces left: 2 spades, 1 of each other suit
    parsed = parse_remaining(" ".join(map(str, counts)), decks=8)
    assert not parsed.suits_known
    assert parsed.rank_counts == tuple(counts)
    assert [parsed.card_counts[Card(1, suit).index] for suit in Suit] == [2, 1, 1, 1]


def test_rank_counts_of_a_full_shoe_give_the_full_shoe_odds(eight_decks):
    assert analyse(Composition.from_rank_counts([32] * 13)).probabilities == (
        eight_decks.probabilities
    )


def test_suits_change_only_the_perfect_pair():
    # Eight kings, all spades, against eight kings spread over the suits (R13).
    all_spades = [4] * 52
    for suit in Suit:
        all_spades[Card(13, suit).index] = 8 if suit is Suit.S else 0
    known = analyse(Composition(tuple(all_spades))).probabilities
    spread = analyse(Composition.from_rank_counts([16] * 12 + [8])).probabilities
    assert known["perfect_pair"] > spread["perfect_pair"]
    assert {k: v for k, v in known.items() if k != "perfect_pair"} == {
        k: v for k, v in spread.items() if k != "perfect_pair"
    }


def test_the_composition_drives_the_draws():
    # Only aces, twos and kings left: two cards total at most 4, so no natural (R9.1) and the
    # Player always draws (R9.2): every round is Big.
    low = analyse(Composition.from_rank_counts([20, 20] + [0] * 10 + [20])).probabilities
    assert low["natural"] == 0
    assert low["small"] == 0
    assert low["big"] == 1
    # Without 6s, Lucky 6 needs the 6 made from other cards: rarer than in a full shoe.
    no_sixes = [Card(6, suit) for suit in Suit for _ in range(8)]
    fewer = analyse(Composition.after_dealt(8, no_sixes)).probabilities
    full = analyse(Composition.full_shoe(8)).probabilities
    assert 0 < fewer["lucky6_2cards"] < full["lucky6_2cards"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "is empty"),
        ("QX", "not a card: 'QX'"),
        ("QH, 7", "not a card: '7'"),
        ("1 2 3", "has 3 numbers"),
        ("33 " + "32 " * 12, "counts 33 of rank A"),
        ("AS " * 9, "AS is dealt 9 times, but 8 decks hold only 8 copies"),
        ("1 1 1 1 1 " + "0 " * 8, "a round can take 6 cards; the shoe holds 5"),
    ],
)
def test_bad_remaining_is_refused_with_a_clear_error(spec, message):
    with pytest.raises(OddsError, match=message.replace("(", r"\(")):
        analyse(parse_remaining(spec, decks=8))


def test_compositions_refuse_impossible_counts():
    with pytest.raises(OddsError, match=r"52 counts|counts 52"):
        Composition((1,) * 51)
    with pytest.raises(OddsError, match=">= 0"):
        Composition((-1,) + (1,) * 51)
    with pytest.raises(OddsError, match="decks"):
        Composition.full_shoe(0)
    with pytest.raises(OddsError, match="at most"):
        analyse(Composition.full_shoe(40))


# --- The command -----------------------------------------------------------------------------


def test_odds_command_prints_an_aligned_table():
    result = CliRunner().invoke(odds_command, ["--decks", "8"])
    assert result.exit_code == 0, result.output
    title, outcomes, bets, note = result.output.split("\n\n")
    assert "8 decks" in title
    assert note.startswith("house edge: ")  # labelled: `shoectl edge` shows the player's
    probabilities = {line.split()[0]: line for line in outcomes.splitlines()[1:]}
    edges = {line.split()[0]: line for line in bets.splitlines()[1:]}
    assert list(probabilities) == list(PROBABILITY_KEYS)
    assert set(probabilities) >= REQUIRED_KEYS
    assert list(edges) == [bet.value for bet in Bet]
    assert probabilities["banker"].split()[1] == "45.859742%"
    assert probabilities["tie"].split()[1] == "9.515597%"
    assert edges["banker"].split()[1:] == ["1.0579%", "1.1692%"]  # edge, then excluding ties
    assert edges["tie"].split()[1:] == ["14.3596%"]
    # Aligned: the numbers of each section end in the same column.
    assert len({len(line) for line in probabilities.values()}) == 1
    assert len({len(edges[bet]) for bet in ("tie", "big", "perfect_pair")}) == 1


def test_odds_command_prints_one_json_object():
    result = CliRunner().invoke(odds_command, ["--decks", "6", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= REQUIRED_KEYS
    assert set(data["house_edge"]) == {bet.value for bet in Bet}
    assert data["banker"] == pytest.approx(0.458653, abs=5e-7)
    assert data["house_edge"]["player"] == pytest.approx(0.012374, abs=5e-7)
    assert data["cards"] == 312
    assert data["suits"] == "known"


def test_odds_command_analyses_the_remaining_cards():
    dealt = "QH,3S,TD,9C,9C,AS"
    result = CliRunner().invoke(odds_command, ["--remaining", dealt, "--json"])
    assert result.exit_code == 0, result.output
    expected = analyse(Composition.after_dealt(8, [parse_card(c) for c in dealt.split(",")]))
    assert json.loads(result.output) == json.loads(expected.to_json())
    counts = CliRunner().invoke(odds_command, ["--remaining", "32 " * 13])
    assert "suits assumed evenly spread" in counts.output


@pytest.mark.parametrize(
    "arguments",
    [["--remaining", "QH,ZZ"], ["--remaining", "1,2"], ["--decks", "0"], ["--remaining", ""]],
)
def test_odds_command_bad_input_exits_2_with_one_error_line(arguments):
    result = CliRunner().invoke(odds_command, arguments)
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1
    assert "Traceback" not in result.output


def test_a_shoe_that_can_only_tie_has_no_edge_excluding_ties():
    analysis = analyse(shoe("KS*3 KH*3"))
    assert analysis.probabilities["tie"] == 1
    assert analysis.house_edge["tie"] == -8  # the Tie bet always wins 8 to 1
    assert analysis.house_edge["banker"] == 0  # always pushed
    assert dict(analysis.house_edge_excluding_ties) == {}
    assert "excl. ties" in format_analysis(analysis)


def test_format_analysis_names_the_suit_assumption():
    text = format_analysis(analyse(Composition.from_rank_counts([4] * 13)))
    assert "suits assumed evenly spread" in text
