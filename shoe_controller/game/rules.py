"""The rules of a round: dealing order, third-card rule, outcomes, insurance (R5-R16)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from shoe_controller.vocab.cards import Card, points


class RoundError(ValueError):
    """Cards that cannot form the round asked about (too few, too many)."""


class Position(StrEnum):
    """Where a card goes, in dealing order (R7)."""

    P1 = "P1"
    B1 = "B1"
    P2 = "P2"
    B2 = "B2"
    P3 = "P3"
    B3 = "B3"


class Side(StrEnum):
    PLAYER = "player"
    BANKER = "banker"
    TIE = "tie"


INITIAL_POSITIONS = (Position.P1, Position.B1, Position.P2, Position.B2)
NATURAL_TOTALS = (8, 9)


def hand_total(cards: Sequence[Card]) -> int:
    """R5: the sum of the cards' points modulo 10."""
    return sum(points(card) for card in cards) % 10


def is_natural(two_card_total: int) -> bool:
    """R9.1: 8 or 9 on the first two cards."""
    return two_card_total in NATURAL_TOTALS


def player_draws(player_total: int) -> bool:
    """R9.2, asked only when neither hand is a natural: draw on 0-5, stand on 6-7."""
    return player_total <= 5


def banker_draws(banker_total: int, player_third: int | None) -> bool:
    """R9.3 when the Player stood (player_third is None), else R9.4 with the third card's points."""
    if player_third is None:
        return banker_total <= 5
    match banker_total:
        case 0 | 1 | 2:
            return True
        case 3:
            return player_third != 8
        case 4:
            return 2 <= player_third <= 7
        case 5:
            return 4 <= player_third <= 7
        case 6:
            return player_third in (6, 7)
        case _:
            return False


def next_position(cards: Sequence[Card]) -> Position | None:
    """The position the next card goes to, given the round's cards in dealing order (R7, R9).

    None means the round is complete. The order alone decides: P1 B1 P2 B2, then P3 if the
    Player draws, then B3 if the Banker draws.
    """
    count = len(cards)
    if count < 4:
        return INITIAL_POSITIONS[count]
    player_two = hand_total(cards[0:4:2])
    banker_two = hand_total(cards[1:4:2])
    if is_natural(player_two) or is_natural(banker_two):
        due: list[Position] = []
    elif player_draws(player_two):
        due = [Position.P3]
        if count >= 5 and banker_draws(banker_two, points(cards[4])):
            due.append(Position.B3)
    elif banker_draws(banker_two, None):
        due = [Position.B3]
    else:
        due = []
    extra = count - 4
    if extra > len(due):
        raise RoundError(f"{count} cards are more than this round takes ({4 + len(due)})")
    return due[extra] if extra < len(due) else None


def positions_of(cards: Sequence[Card]) -> list[Position]:
    """The position of each card of a round given in dealing order."""
    positions = []
    for count in range(len(cards)):
        position = next_position(cards[:count])
        if position is None:
            raise RoundError(f"card {count + 1} ({cards[count]}) came after the round was complete")
        positions.append(position)
    return positions


def split_hands(cards: Sequence[Card]) -> tuple[list[Card], list[Card]]:
    """The Player's and the Banker's cards, each in dealing order."""
    player: list[Card] = []
    banker: list[Card] = []
    for card, position in zip(cards, positions_of(cards), strict=True):
        (player if position.startswith("P") else banker).append(card)
    return player, banker


def is_pair(hand: Sequence[Card]) -> bool:
    """R13: the first two cards have the same rank; suits do not matter."""
    return hand[0].rank == hand[1].rank


def is_perfect_pair(hand: Sequence[Card]) -> bool:
    """R13: the first two cards are the same rank and the same suit."""
    return hand[0] == hand[1]


@dataclass(frozen=True, slots=True)
class Outcome:
    """Everything a finished round decides, as `round.result` reports it (docs/spec-push-api.md)."""

    player: tuple[Card, ...]
    banker: tuple[Card, ...]
    player_total: int
    banker_total: int
    winner: Side
    natural: str | None  # "player", "banker", "both" or None (R9.1)
    player_pair: bool
    banker_pair: bool
    player_perfect_pair: bool
    banker_perfect_pair: bool

    @property
    def cards(self) -> int:
        return len(self.player) + len(self.banker)

    @property
    def any_pair(self) -> bool:
        return self.player_pair or self.banker_pair

    @property
    def perfect_pair(self) -> bool:
        return self.player_perfect_pair or self.banker_perfect_pair

    @property
    def big(self) -> bool:
        """R14 Big: five or six cards; Small is exactly four."""
        return self.cards >= 5

    @property
    def banker_six(self) -> bool:
        """Banker wins with a total of 6 (no-commission Banker pays half, R14)."""
        return self.winner is Side.BANKER and self.banker_total == 6

    @property
    def lucky6(self) -> int | None:
        """R14 Lucky 6: the Banker wins with 6 on two (2) or three (3) cards."""
        return len(self.banker) if self.banker_six else None

    @property
    def margin(self) -> int:
        return abs(self.player_total - self.banker_total)

    def result_data(self) -> dict[str, object]:
        """The `data` of a `round.result` event, every field docs/spec-push-api.md names."""
        return {
            "player": [str(card) for card in self.player],
            "banker": [str(card) for card in self.banker],
            "player_total": self.player_total,
            "banker_total": self.banker_total,
            "winner": self.winner.value,
            "natural": self.natural,
            "player_pair": self.player_pair,
            "banker_pair": self.banker_pair,
            "perfect_pair": self.perfect_pair,
            "any_pair": self.any_pair,
            "cards": self.cards,
            "big": self.big,
            "lucky6": self.lucky6,
            "banker_six": self.banker_six,
            "margin": self.margin,
        }


def outcome(cards: Sequence[Card]) -> Outcome:
    """The outcome of a complete round given its cards in dealing order (R9, R11-R13)."""
    if len(cards) < 4 or next_position(cards) is not None:
        raise RoundError(f"the round is not complete after {len(cards)} cards")
    player, banker = split_hands(cards)
    player_total, banker_total = hand_total(player), hand_total(banker)
    naturals = [
        side
        for side, hand in (("player", player), ("banker", banker))
        if is_natural(hand_total(hand[:2]))
    ]
    if player_total > banker_total:
        winner = Side.PLAYER
    elif banker_total > player_total:
        winner = Side.BANKER
    else:
        winner = Side.TIE
    return Outcome(
        player=tuple(player),
        banker=tuple(banker),
        player_total=player_total,
        banker_total=banker_total,
        winner=winner,
        natural="both" if len(naturals) == 2 else (naturals[0] if naturals else None),
        player_pair=is_pair(player),
        banker_pair=is_pair(banker),
        player_perfect_pair=is_perfect_pair(player),
        banker_perfect_pair=is_perfect_pair(banker),
    )


# R16.3 and R16.4: (stage, banker totals, player totals, odds) per insured side.
_BANKER_INSURANCE = (
    (1, range(4, 5), range(0, 4), Fraction(3, 2)),
    (1, range(5, 6), range(0, 5), Fraction(2)),
    (1, range(6, 7), range(0, 6), Fraction(3)),
    (1, range(7, 8), range(0, 6), Fraction(4)),
    (2, range(1, 2), range(1, 2), Fraction(7)),
    (2, range(1, 4), range(0, 1), Fraction(10)),
)
_PLAYER_INSURANCE = (
    (1, range(0, 6), range(6, 7), Fraction(3)),
    (1, range(0, 6), range(7, 8), Fraction(4)),
    (2, range(0, 4), range(4, 5), Fraction(3, 2)),
    (2, range(0, 5), range(5, 6), Fraction(2)),
    (2, range(0, 6), range(6, 7), Fraction(3)),
    (2, range(0, 7), range(7, 8), Fraction(4)),
    (2, range(0, 7), range(8, 9), Fraction(8)),
    (2, range(0, 7), range(9, 10), Fraction(10)),
)


@dataclass(frozen=True, slots=True)
class InsuranceOffer:
    """An insurance trigger that fired: the insured side pays when the other side wins (R16)."""

    side: Side  # BANKER insures Banker bettors against a Player win, and vice versa
    stage: int
    odds: Fraction
    banker_total: int
    player_total: int

    def event_data(self) -> dict[str, object]:
        odds = self.odds.numerator if self.odds.denominator == 1 else float(self.odds)
        return {
            "side": self.side.value,
            "stage": self.stage,
            "odds": odds,
            "banker_total": self.banker_total,
            "player_total": self.player_total,
        }


def insurance_stage(cards: Sequence[Card]) -> int | None:
    """Which insurance stage these cards stand at: 1 after the first four, 2 after P3 (R16.2)."""
    if len(cards) == 4:
        return 1
    if len(cards) == 5 and positions_of(cards)[4] is Position.P3:
        return 2
    return None


def insurance_offers(cards: Sequence[Card]) -> list[InsuranceOffer]:
    """The insurance triggers that fire now, given the round's cards so far (R16.1-R16.5).

    None fire on a natural (R16.1) or when no more card will be drawn (R16.5).
    """
    stage = insurance_stage(cards)
    if stage is None or next_position(cards) is None:
        return []
    player, banker = split_hands(cards)
    if is_natural(hand_total(player[:2])) or is_natural(hand_total(banker[:2])):
        return []
    banker_total, player_total = hand_total(banker), hand_total(player)
    offers = []
    for side, table in ((Side.BANKER, _BANKER_INSURANCE), (Side.PLAYER, _PLAYER_INSURANCE)):
        for row_stage, banker_totals, player_totals, odds in table:
            if (
                row_stage == stage
                and banker_total in banker_totals
                and player_total in player_totals
            ):
                offers.append(InsuranceOffer(side, stage, odds, banker_total, player_total))
    return offers


class InsuranceResult(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"  # the stake is returned


def settle_insurance(offer: InsuranceOffer, result: Outcome) -> InsuranceResult:
    """R16.3/R16.4: wins when the other side wins; a tie returns the stake, except after a
    stage-2 trigger a tie at 0 wins Banker insurance and a tie at 9 wins Player insurance.

    API for integrators: the table server settles insurance stakes; the controller itself never
    sees money."""
    if result.winner is Side.TIE:
        winning_tie_total = 0 if offer.side is Side.BANKER else 9
        if offer.stage == 2 and result.player_total == winning_tie_total:
            return InsuranceResult.WIN
        return InsuranceResult.PUSH
    insured_against = Side.PLAYER if offer.side is Side.BANKER else Side.BANKER
    return InsuranceResult.WIN if result.winner is insured_against else InsuranceResult.LOSE


def insurance_limits(table_minimum: int, main_bet: int, odds: Fraction) -> tuple[int, int]:
    """R16.7: (minimum, maximum) insurance stake in the smallest money unit (API for integrators:
    the table server takes the stakes; the controller only opens and closes the window).

    minimum = floor(table minimum / odds); maximum = floor(main bet / odds) - 1; when the
    maximum falls below the minimum only the minimum may be bet.
    """
    minimum = int(Fraction(table_minimum) / odds)
    maximum = int(Fraction(main_bet) / odds) - 1
    return minimum, max(minimum, maximum)
