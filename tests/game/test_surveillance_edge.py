"""The exact worth of every bet on the cards left (game.surveillance.edge) and the cards seen in
a shoe (game.surveillance.sightings): against a plain enumeration, the odds CLI, and the dealer's
own cards (R14, R14.1, R15)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shoe_testkit.odds_reference import rounds
from shoe_testkit.perfect_dealer import deal_shoe

from shoe_controller.game.odds import CARD_KINDS, Composition
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE, Bet, Result, pay_table, settle
from shoe_controller.game.rules import outcome
from shoe_controller.game.surveillance.edge import bet_edges, cards_left_by_rank
from shoe_controller.game.surveillance.sightings import ShoeSightings
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import Card, Suit, parse_card

REPO = Path(__file__).resolve().parents[2]
HOUSE = pay_table({"tie": "9", "lucky6_3cards": "23", "banker": "0.9", "dragon_margin_7": "6"})


def reference(composition: Composition, table=DEFAULT_PAY_TABLE):
    """Per bet (P(win), average pay of a win or None, player edge) by dealing every round
    out of the shoe and settling every bet with payouts.settle: nothing of odds.py."""
    stake = 1000  # settle pays whole units: 1000 keeps every amount of these tables exact
    total = 0
    wins = Counter[str]()
    losses = Counter[str]()
    winnings = Counter[str]()
    for cards, ways in rounds(composition):
        total += ways
        result = outcome(cards)
        for bet in Bet:
            settlement = settle(bet, stake, result, round_number=1, table=table)
            if settlement.result is Result.WIN:
                wins[bet.value] += ways
                winnings[bet.value] += settlement.winnings * ways
            elif settlement.result is Result.LOSE:
                losses[bet.value] += ways
    out = {}
    for bet in Bet:
        name = bet.value
        pay = Fraction(winnings[name], wins[name] * stake) if wins[name] else None
        edge = Fraction(winnings[name] - losses[name] * stake, total * stake)
        out[name] = (Fraction(wins[name], total), pay, edge)
    return out


def _composition(kinds: dict[int, int]) -> Composition:
    counts = [0] * CARD_KINDS
    for index, count in kinds.items():
        counts[index] = count
    return Composition(tuple(counts))


# Few distinct cards (the reference's cost grows with their number to the sixth power), many
# copies: ranks that pair, suits that perfect-pair, shoes that run out, 6 to 60 cards.
partial_shoes = (
    st.dictionaries(st.integers(0, CARD_KINDS - 1), st.integers(1, 20), min_size=1, max_size=5)
    .filter(lambda kinds: 6 <= sum(kinds.values()) <= 60)
    .map(_composition)
)


def _assert_exact(composition: Composition, table) -> None:
    expected = reference(composition, table)
    found = bet_edges(composition, table)
    assert list(found) == [bet.value for bet in Bet]
    for name, edge in found.items():
        probability, pay, player_edge = expected[name]
        assert edge.probability == probability, name
        assert edge.player_edge == player_edge, name
        if pay is not None:
            assert edge.payout == pay, name


@settings(max_examples=40, deadline=None)
@given(partial_shoes)
def test_partial_shoes_equal_the_plain_enumeration_exactly(composition: Composition) -> None:
    _assert_exact(composition, DEFAULT_PAY_TABLE)


@settings(max_examples=15, deadline=None)
@given(partial_shoes)
def test_a_house_pay_table_is_used_exactly(composition: Composition) -> None:
    _assert_exact(composition, HOUSE)  # R14.2


def test_a_shoe_of_many_different_cards_equals_the_enumeration() -> None:
    # Nine single cards: every hand total, pairs only by rank, and every bet can win or lose.
    names = ("AS", "2H", "3D", "4C", "5S", "6H", "7D", "8C", "9S")
    kinds = Counter(parse_card(name).index for name in names)
    _assert_exact(_composition(dict(kinds)), DEFAULT_PAY_TABLE)


def _shuffled(seed: int, decks: int = 8) -> list[Card]:
    cards = [Card(rank, suit) for _ in range(decks) for rank in range(1, 14) for suit in Suit]
    random.Random(seed).shuffle(cards)
    return cards


@pytest.mark.parametrize(("seed", "seen"), [(5, 300), (11, 392)])
def test_deep_shoes_agree_with_odds_remaining(seed: int, seen: int) -> None:
    dealt = _shuffled(seed)[:seen]
    composition = Composition.after_dealt(8, dealt)
    result = subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.main", "odds", "--decks", "8",
         "--remaining", ",".join(map(str, dealt)), "--json"],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    cli = json.loads(result.stdout)
    assert cli["cards"] == 416 - seen
    edges = bet_edges(composition)
    for name, edge in edges.items():
        assert edge.to_json()["player_edge"] == -cli["house_edge"][name], name
    assert edges["player"].to_json()["probability"] == cli["player"]
    assert cards_left_by_rank(composition) == {
        rank: 32 - sum(card.rank == index + 1 for card in dealt)
        for index, rank in enumerate("A23456789TJQK")
    }


def test_each_bet_wins_pays_and_loses_consistently() -> None:
    composition = Composition.after_dealt(8, _shuffled(3)[:350])
    table = DEFAULT_PAY_TABLE
    for name, edge in bet_edges(composition, table).items():
        assert 0 <= edge.probability <= 1
        if name in ("player", "banker", "tie", "player_pair", "big", "small"):
            assert edge.payout == Fraction(table[name])  # paid one way
    lucky6 = bet_edges(composition)["lucky6"].payout
    assert Fraction(12) < lucky6 < Fraction(20)  # 12 on two cards, 20 on three (R14)


def test_big_and_small_are_left_out_once_closed() -> None:
    composition = Composition.full_shoe(8)
    assert "big" in bet_edges(composition)
    closed = bet_edges(composition, big_small_open=False)  # R14.1
    assert set(closed) == {bet.value for bet in Bet} - {"big", "small"}


def test_a_full_shoe_favours_the_house_on_every_bet() -> None:
    edges = bet_edges(Composition.full_shoe(8))
    assert all(edge.player_edge < 0 for edge in edges.values())
    assert round(float(edges["banker"].player_edge), 6) == -0.010579  # docs/odds.md


# ---------------------------------------------------------------------- sightings


def _event(kind: str, seq: int, data: dict, round_number: int | None = None) -> dict:
    return {"type": kind, "seq": seq, "shoe": 1, "round": round_number, "data": data}


def test_an_extra_card_counts_once_though_it_is_burned_later() -> None:
    sightings = ShoeSightings(1)
    assert sightings.feed(_event("shoe.shuffled", 1, {}))
    assert sightings.feed(_event("shoe.burned", 2, {"cards": ["5S", "KH", "2D", "9C", "TD", "3C"]}))
    sightings.feed(_event("round.started", 3, {"trial": False}, 1))
    assert not sightings.feed(_event("card.dealt", 4, {"position": "P1", "card": "AS"}, 1))
    sightings.feed(_event("card.extra", 5, {"card": "QH"}, 1))  # R10.3: out at once
    assert sightings.seen()[parse_card("QH")] == 1
    assert sightings.feed(
        _event("round.result", 6, {"player": ["AS", "8D"], "banker": ["4C", "3H"]}, 1)
    )
    assert sightings.feed(_event("shoe.burned", 7, {"cards": ["QH"]}))  # its burn
    seen = sightings.seen()
    assert seen[parse_card("QH")] == 1
    assert sum(seen.values()) == 6 + 1 + 4
    assert (sightings.next_round, sightings.last_seq) == (2, 7)


def test_hidden_and_withdrawn_cards() -> None:
    sightings = ShoeSightings(1)
    sightings.feed(_event("round.started", 1, {"trial": False}, 1))
    # R15: a squeezed card is null until its reveal; a void before it names none.
    sightings.feed(_event("round.voided", 2, {"reason": "supervisor", "cards": ["AS", None]}, 1))
    assert sightings.seen() == Counter({parse_card("AS"): 1})
    sightings.feed(_event("round.started", 3, {"trial": False}, 2))
    sightings.feed(_event("round.result", 4, {"player": ["2S", "3S"], "banker": ["4S", "TS"]}, 2))
    # R10.4: the result withdrawn by round.voided with the same cards: counted once.
    sightings.feed(
        _event("round.voided", 5, {"reason": "extra_cards", "cards": ["2S", "4S", "3S", "TS"]}, 2)
    )
    assert sum(sightings.seen().values()) == 5
    assert not sightings.feed(_event("shoe.ended", 6, {"reason": "misdeal"}))
    assert not sightings.feed(_event("round.result", 7, {"player": [], "banker": []}, 3))


def test_big_small_closes_after_the_last_real_round() -> None:
    sightings = ShoeSightings(1)
    result = {"player": [], "banker": []}
    sightings.feed(_event("round.started", 1, {"trial": True}, 1))  # R2.3 trials do not count
    for number in range(2, 21):
        sightings.feed(_event("round.started", number, {"trial": False}, number))
    assert sightings.feed(_event("round.result", 30, result, 20))
    basis = sightings.basis
    assert basis is not None
    assert (basis.real_rounds, basis.next_round, basis.seq) == (19, 21, 30)
    assert basis.big_small_open(20)  # the 20th real round is the next (R14.1)
    sightings.feed(_event("round.started", 31, {"trial": False}, 21))
    sightings.feed(_event("card.dealt", 32, {"position": "P1", "card": "4D"}, 21))
    assert sightings.basis is basis  # the analysis is of the moment the round ended
    sightings.feed(_event("round.result", 33, result, 21))
    assert sightings.basis is not None
    assert not sightings.basis.big_small_open(20)


@pytest.mark.parametrize(
    "config",
    [
        TableConfig(decks=8),
        TableConfig(decks=8, squeeze=True, burn_per_round=1),
        TableConfig(decks=6, burn="decks", cut_card="one_more"),
    ],
    ids=["plain", "squeeze-burn-per-round", "burn-decks"],
)
def test_what_is_seen_is_what_the_dealer_dealt_and_never_a_hidden_card(config) -> None:
    cards = _shuffled(7, config.decks)
    shoe = deal_shoe(cards, config, cut_after=config.cards_in_shoe - 14)
    table = Table(config)
    sightings = ShoeSightings(1)
    named = Counter[Card]()  # every card an event named so far
    seq = drawn = 0
    checked = 0
    for item in shoe.inputs:
        drawn += getattr(item, "card", None) is not None and item.TYPE == "card"
        events = table.apply(item)
        due = False
        for event in events:
            seq += 1
            wire = {**event.to_json(), "seq": seq}
            for value in _named_cards(wire):
                named[value] += 1
            due = sightings.feed(wire) or due
            # R15: only cards an event has named (so public) can be counted as seen.
            assert not sightings.seen() - named, wire
        if due:
            in_round = table.book.round.draws if table.book.round else []
            expected = Counter(cards[: drawn - len(in_round)])
            assert sightings.seen() == expected
            checked += 1
    assert checked > 50  # after every round and the burn


def _named_cards(event: dict) -> list[Card]:
    data = event["data"]
    values = [data.get("card"), *data.get("player", ()), *data.get("banker", ())]
    values += [*data.get("cards", ())] if isinstance(data.get("cards"), list) else []
    return [parse_card(value) for value in values if isinstance(value, str)]


def test_a_bet_that_cannot_win_on_these_cards_shows_its_pay_table_amount() -> None:
    # Six cards worth 0: every round is a tie of naturals-less zeros, no side wins.
    names = ("TS", "JS", "QS", "KS", "TH", "JH")
    composition = _composition(dict(Counter(parse_card(name).index for name in names)))
    edges = bet_edges(composition, HOUSE)
    for bet, tier in (("player", "player"), ("lucky6", "lucky6_2cards"),
                      ("banker_dragon", "dragon_margin_9")):  # fmt: skip
        assert edges[bet].probability == 0, bet
        assert edges[bet].payout == Fraction(HOUSE[tier]), bet
    assert edges["lucky6"].to_json() == {
        "probability": 0.0,
        "payout": float(HOUSE["lucky6_2cards"]),
        "player_edge": -1.0,
    }
    tie = edges["tie"]
    assert tie.to_json() == {"probability": 1.0, "payout": 9.0, "player_edge": 9.0}  # R14.2


def test_nothing_is_due_before_an_event_that_calls_for_it() -> None:
    sightings = ShoeSightings(1)
    assert sightings.last_seq == 0
    assert not sightings.feed(_event("round.started", 5, {"trial": True}, 1))
    assert sightings.basis is None
    unnumbered = {"type": "shoe.shuffled", "shoe": 1, "data": {}}  # no seq: after nothing
    fresh = ShoeSightings(1)
    assert fresh.feed(unnumbered)
    assert fresh.basis is not None
    assert fresh.basis.seq == 0


def test_a_card_not_named_or_damaged_hides_no_card_after_it() -> None:
    sightings = ShoeSightings(1)
    sightings.feed(_event("round.started", 1, {"trial": False}, 1))
    sightings.feed(_event("round.voided", 2, {"cards": [None, "AS", "ZZ", 7, "KD"]}, 1))
    assert sightings.seen() == Counter({parse_card("AS"): 1, parse_card("KD"): 1})


def test_a_result_with_a_hand_missing_counts_the_other() -> None:
    sightings = ShoeSightings(1)
    sightings.feed(_event("round.result", 1, {"banker": ["4C", "3H"]}, 1))
    sightings.feed(_event("round.result", 2, {"player": ["AS", "8D"]}, 2))
    assert sum(sightings.seen().values()) == 4


def test_two_extra_cards_alike_count_twice_when_one_is_burned() -> None:
    sightings = ShoeSightings(1)
    sightings.feed(_event("card.extra", 1, {"card": "QH"}, 1))
    sightings.feed(_event("card.extra", 2, {"card": "QH"}, 1))
    sightings.feed(_event("shoe.burned", 3, {"cards": ["QH"]}))  # one of them burned
    assert sightings.seen()[parse_card("QH")] == 2
    sightings.feed(_event("shoe.burned", 4, {"cards": ["QH"]}))  # the other
    assert sightings.seen()[parse_card("QH")] == 2
