"""Playing cards: identity, the notations of devices and the push API, values (R5, R2.2)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum


class CardError(ValueError):
    """A card notation or number that names no card."""


class Suit(IntEnum):
    """Suits in the protocol's numbering (docs/spec-protocol.md: 0 ♠ S, 1 ♥ H, 2 ♦ D, 3 ♣ C)."""

    S = 0
    H = 1
    D = 2
    C = 3

    @property
    def symbol(self) -> str:
        return "♠♥♦♣"[self.value]

    @property
    def letter(self) -> str:
        return self.name


# index + 1 is the rank (docs/spec-push-api.md "Cards and positions")
RANK_LETTERS = "A23456789TJQK"
ACE, JACK, QUEEN, KING = 1, 11, 12, 13

# Line codes name the suit by a letter of their own (A = spades) and the rank by two digits.
_LINE_CODE_SUITS = {"A": Suit.S, "H": Suit.H, "C": Suit.C, "D": Suit.D}
_LINE_CODE = re.compile(r"([AHCD])(0[1-9]|1[0-3])")
# Short notation (`TD`) and the field notation with a two-digit ten (`10H`).
_SHORT = re.compile(r"(10|[2-9TJQKA])([SHDC])")


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """One card of a 52-card deck; which physical deck it came from is not part of its identity."""

    rank: int
    suit: Suit

    def __post_init__(self) -> None:
        if not (isinstance(self.rank, int) and ACE <= self.rank <= KING):
            raise CardError(f"rank must be 1 (ace) to 13 (king), got {self.rank!r}")
        if not isinstance(self.suit, Suit):
            raise CardError(f"suit must be a Suit, got {self.suit!r}")

    def __str__(self) -> str:
        return RANK_LETTERS[self.rank - 1] + self.suit.letter

    def __repr__(self) -> str:
        return f"Card({self})"

    @property
    def pretty(self) -> str:
        """Rank and suit symbol as a person reads them: `10♦`, `Q♥`."""
        rank = "10" if self.rank == 10 else RANK_LETTERS[self.rank - 1]
        return rank + self.suit.symbol

    @property
    def index(self) -> int:
        """Position 0-51 in the protocol's deck-check order: (rank - 1) * 4 + suit."""
        return (self.rank - 1) * 4 + self.suit.value


def parse_card(text: str) -> Card:
    """Read the short notation (`TD`, `QH`) or the field notation (`10H`, `4S`)."""
    match = _SHORT.fullmatch(text.strip().upper()) if isinstance(text, str) else None
    if match is None:
        raise CardError(
            f"not a card: {text!r} (expected rank A 2-9 T/10 J Q K then suit S H D C, e.g. 'TD')"
        )
    rank_text, suit_text = match.groups()
    rank = 10 if rank_text == "10" else RANK_LETTERS.index(rank_text) + 1
    return Card(rank, Suit[suit_text])


def from_line_code(code: str) -> Card:
    """Read a line code: `A01`-`A13` spades, `H..` hearts, `C..` clubs, `D..` diamonds; 01 = ace."""
    match = _LINE_CODE.fullmatch(code.strip().upper()) if isinstance(code, str) else None
    if match is None:
        raise CardError(f"not a line code: {code!r} (expected A, H, C or D then 01-13, e.g. 'H12')")
    suit_letter, number = match.groups()
    return Card(int(number), _LINE_CODE_SUITS[suit_letter])


def from_protocol(rank: int, suit: int) -> Card:
    """Read the protocol's numbers: rank 1-13, suit 0-3 (docs/spec-protocol.md CARD encoding 1)."""
    try:
        suit_value = Suit(suit)
    except ValueError:
        raise CardError(f"suit number must be 0-3, got {suit!r}") from None
    return Card(rank, suit_value)


def from_index(index: int) -> Card:
    """The card at position 0-51 of the deck-check order (the inverse of `Card.index`)."""
    if not 0 <= index < 52:
        raise CardError(f"card index must be 0-51, got {index}")
    return Card(index // 4 + 1, Suit(index % 4))


def points(card: Card) -> int:
    """R5: tens and faces score 0, the ace 1, the others their face value."""
    return card.rank if card.rank < 10 else 0


def burn_value(card: Card) -> int:
    """R2.2 (b): how many cards the first card of a shoe burns; tens and faces burn 10."""
    return min(card.rank, 10)


def full_deck() -> tuple[Card, ...]:
    """The 52 cards of one deck in deck-check order."""
    return tuple(from_index(i) for i in range(52))
