"""The next round's worth of every bet if a slug goes on (docs/shuffle.md).

A team that wrote the previous shoe down and sees a run of it come out again bets that the
run goes on: that the next round is dealt from the previous shoe's next cards. The round those
cards make is decided by the rules alone (R9, R10: P1 B1 P2 B2, then the third cards), so if
the slug goes on every bet's result is known: a win nets its odds, a loss -1, a push 0
(`if_it_goes_on`). Beside it, the plain `player_edge` of `edge.bet_edges` on the cards left:
what the bet is worth to a player who does not know the slug. The gap between the two is what
the slug is worth to the team, bet by bet. Pure; numpy through `edge` (the companion's process).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from shoe_controller.game.odds import Composition, OddsError
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE, returns_per_unit
from shoe_controller.game.rules import Outcome, next_position, outcome
from shoe_controller.game.surveillance.edge import BIG_SMALL, bet_edges
from shoe_controller.vocab.cards import Card


def round_from(cards: Sequence[Card | None]) -> Outcome | None:
    """The round dealt from `cards` in order, or None: they run out, or a card the round
    needs was never shown (None), before the round is complete."""
    dealt: list[Card] = []
    for card in cards:
        if next_position(dealt) is None:
            break
        if card is None:
            return None
        dealt.append(card)
    if next_position(dealt) is not None:
        return None
    return outcome(dealt)


def next_round_worth(
    composition: Composition | None,
    next_cards: Sequence[Card | None],
    table: Mapping[str, Decimal] = DEFAULT_PAY_TABLE,
    *,
    big_small_open: bool = True,
) -> dict[str, Any]:
    """`{"edge": {bet: player_edge}, "if_it_goes_on": {bet: return} | null}` for the next
    round (floats, the doubles nearest the exact fractions); `edge` is null below the 6
    cards a round can take or without a `composition` (the cards left are not known), and
    `if_it_goes_on` when `next_cards` do not make a whole round. Big and Small are left out
    once R14.1 closes them."""
    plain = None
    if composition is not None:
        with contextlib.suppress(OddsError):
            edges = bet_edges(composition, table, big_small_open=big_small_open)
            plain = {bet: float(worth.player_edge) for bet, worth in edges.items()}
    dealt = round_from(next_cards)
    known = None
    if dealt is not None:
        closed = () if big_small_open else BIG_SMALL
        known = {
            bet: float(value)
            for bet, value in returns_per_unit(dealt, table).items()
            if bet not in closed
        }
    return {"edge": plain, "if_it_goes_on": known}
