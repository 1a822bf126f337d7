"""The slow, plainly correct twin of odds.py: every card sequence through rules and payouts.

It deals every possible sequence of cards out of the shoe, one card kind at a time, weighted
by how many physical cards of that kind are left, until `rules.next_position` says the round
is complete; then it asks `rules.outcome` what happened and `payouts.settle` what each bet
returns. Nothing is shared with odds.py's enumeration but the composition, so the tests and
the benchmark use it as the baseline. Its cost grows with the number of distinct cards to the
sixth power: use it on small shoes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from decimal import Decimal
from fractions import Fraction

from shoe_controller.game.odds import ROUND_CARDS_MAX, Composition, OddsError
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE, Bet, settle
from shoe_controller.game.rules import Outcome, Side, next_position, outcome
from shoe_controller.vocab.cards import Card, from_index


def rounds(composition: Composition) -> Iterator[tuple[tuple[Card, ...], int]]:
    """Every complete round the shoe can deal, with its number of ordered physical draws.

    Counts are scaled so that every round shares the denominator N(N-1)...(N-5): a round of
    k cards is followed by the (N-k)...(N-5) ways to draw the cards it leaves unused.
    """
    left = list(composition.card_counts)
    cards_left = sum(left)
    if cards_left < ROUND_CARDS_MAX:
        raise OddsError(f"a round can take {ROUND_CARDS_MAX} cards; the shoe holds {cards_left}")
    kinds = [from_index(index) for index in range(len(left))]

    def deal(so_far: tuple[Card, ...], ways: int) -> Iterator[tuple[tuple[Card, ...], int]]:
        if len(so_far) >= 4 and next_position(so_far) is None:
            unused = math.perm(cards_left - len(so_far), ROUND_CARDS_MAX - len(so_far))
            yield so_far, ways * unused
            return
        for index, card in enumerate(kinds):
            count = left[index]
            if count == 0:
                continue
            left[index] -= 1
            yield from deal((*so_far, card), ways * count)
            left[index] += 1

    yield from deal((), 1)


def events(result: Outcome) -> list[str]:
    """The probability keys of odds.PROBABILITY_KEYS that this round makes true."""
    happened = [result.winner.value]
    for key in ("player_pair", "banker_pair", "any_pair", "perfect_pair", "big", "natural"):
        if getattr(result, key):
            happened.append(key)
    if not result.big:
        happened.append("small")
    if result.lucky6 is not None:
        happened.append(f"lucky6_{result.lucky6}cards")
    if result.winner is Side.TIE:
        if result.natural == "both":
            happened.append("natural_tie")
    elif result.natural in (result.winner.value, "both"):
        happened.append(f"{result.winner.value}_dragon_natural_win")
    elif result.margin >= 4:
        happened.append(f"{result.winner.value}_dragon_margin_{result.margin}")
    return happened


def _exact_stake(table: Mapping[str, Decimal]) -> int:
    """A stake large enough that `settle` rounds no winnings down at any odds in the table."""
    places = max(0, *(-Decimal(value).as_tuple().exponent for value in table.values()))
    return 10**places


def reference_analysis(
    composition: Composition, table: Mapping[str, Decimal] = DEFAULT_PAY_TABLE
) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    """(probability of each event, house edge of each bet) by brute force, exactly."""
    stake = _exact_stake(table)
    event_ways: dict[str, int] = {}
    net_ways = dict.fromkeys((bet.value for bet in Bet), 0)
    total = 0
    for cards, ways in rounds(composition):
        total += ways
        result = outcome(cards)
        for event in events(result):
            event_ways[event] = event_ways.get(event, 0) + ways
        for bet in Bet:
            settlement = settle(bet, stake, result, round_number=1, table=table)
            net_ways[bet.value] += (settlement.returned - stake) * ways
    probabilities = {event: Fraction(ways, total) for event, ways in event_ways.items()}
    edges = {bet: -Fraction(net, total * stake) for bet, net in net_ways.items()}
    return probabilities, edges
