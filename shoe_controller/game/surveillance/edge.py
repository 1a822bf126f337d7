"""The exact worth of every bet of the pay table on the next round, for the cards left.

For a composition (the cards not yet seen in a shoe, docs/surveillance.md) each bet of the
pay table (R14, the house's overrides included, R14.2) gets three exact numbers:
- `probability`: the chance that the bet wins on the next round;
- `payout`: what a winning unit stake is paid on average on these cards: the pay table's
  amount for a bet paid one way (Player 1, Banker 0.95, Tie 8 ...), the win-weighted mean of
  its amounts for Lucky 6 (12 / 20), the dragons (by margin, natural) and the no-commission
  Banker (1, or 0.5 on a winning six);
- `player_edge`: the player's expected return per unit staked, a push counting 0 (minus the
  house edge of `odds.analyse`; above 0 the player is favoured).
So `player_edge == probability * payout - P(the bet loses)` exactly. Big and Small are left
out once R14.1 closes them. The numbers come from `odds.analyse` (numpy): this module is for
the surveillance companion and the study, never for the daemon's process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from shoe_controller.game.odds import MARGINS, Composition, analyse
from shoe_controller.game.payouts import DEFAULT_PAY_TABLE, Bet
from shoe_controller.vocab.cards import RANK_LETTERS

BIG_SMALL = (Bet.BIG, Bet.SMALL)  # R14.1: not offered after the house's last round for them


@dataclass(frozen=True, slots=True)
class BetEdge:
    """One bet on the next round, exactly."""

    probability: Fraction  # the bet wins
    payout: Fraction  # what a winning unit stake is paid, on average over its wins
    player_edge: Fraction  # expected return per unit staked (negative: the house is favoured)

    def to_json(self) -> dict[str, float]:
        """The report's form: floats, each the double nearest the exact fraction."""
        return {
            "probability": float(self.probability),
            "payout": float(self.payout),
            "player_edge": float(self.player_edge),
        }


def _wins_and_pushes(p: Mapping[str, Fraction]) -> dict[Bet, tuple[Fraction, Fraction]]:
    """(P(win), P(push)) of every bet from the outcome probabilities of `odds` (R11-R14)."""
    lucky6 = p["lucky6_2cards"] + p["lucky6_3cards"]
    out = {
        Bet.PLAYER: (p["player"], p["tie"]),
        Bet.BANKER: (p["banker"], p["tie"]),
        Bet.BANKER_NO_COMMISSION: (p["banker"], p["tie"]),
        Bet.TIE: (p["tie"], Fraction(0)),
        Bet.BIG: (p["big"], Fraction(0)),
        Bet.SMALL: (p["small"], Fraction(0)),
        Bet.LUCKY6: (lucky6, Fraction(0)),
    }
    for bet in (Bet.PLAYER_PAIR, Bet.BANKER_PAIR, Bet.ANY_PAIR, Bet.PERFECT_PAIR):
        out[bet] = (p[bet.value], Fraction(0))
    for bet, side in ((Bet.PLAYER_DRAGON, "player"), (Bet.BANKER_DRAGON, "banker")):
        won = sum((p[f"{side}_dragon_margin_{m}"] for m in MARGINS), Fraction(0))
        out[bet] = (won + p[f"{side}_dragon_natural_win"], p["natural_tie"])  # R14 dragon
    return out


# The amount shown for a bet that cannot win on these cards (a tiny shoe): its first tier.
_FIRST_TIER = {
    Bet.LUCKY6: "lucky6_2cards",
    Bet.PLAYER_DRAGON: "dragon_margin_9",
    Bet.BANKER_DRAGON: "dragon_margin_9",
}


def bet_edges(
    composition: Composition,
    table: Mapping[str, Decimal] = DEFAULT_PAY_TABLE,
    *,
    big_small_open: bool = True,
) -> dict[str, BetEdge]:
    """Every bet of `table` on the next round dealt from `composition`, in `Bet` order;
    Big and Small only while `big_small_open` (R14.1). OddsError below 6 cards."""
    analysis = analyse(composition, table)
    odds = _wins_and_pushes(analysis.probabilities)
    edges: dict[str, BetEdge] = {}
    for bet in Bet:
        if bet in BIG_SMALL and not big_small_open:
            continue
        win, push = odds[bet]
        player_edge = -analysis.house_edge[bet.value]
        if win:
            payout = (player_edge + (1 - win - push)) / win
        else:
            payout = Fraction(table[_FIRST_TIER.get(bet, bet.value)])
        edges[bet.value] = BetEdge(win, payout, player_edge)
    return edges


def cards_left_by_rank(composition: Composition) -> dict[str, int]:
    """The report's `cards_left`: how many of each rank are left, ace to king (`A`..`K`)."""
    return dict(zip(RANK_LETTERS, composition.rank_counts, strict=True))
