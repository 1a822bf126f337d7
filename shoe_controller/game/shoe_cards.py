"""A shoe's cards as its public events name them: the one fold the scoreboard, the surveillance
companion's sightings and shuffle watch, and shoectl's round lines read them with.

Events come in docs/spec-push-api.md form (`type`, `round`, `data`), in journal order. Only what an
event makes public counts (R15): in squeeze mode `card.dealt` names no card (null) and its
`card.revealed` does; a round's result names its hands, final after corrections or a
re-arrangement; `round.voided` names every card the round took (null for one never
revealed). A card an event does not name, or names in a way that is not a card (a damaged
event), is None: it left the shoe unseen. No I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.vocab.cards import Card, CardError, parse_card
from shoe_controller.vocab.events import EventType

POSITIONS = ("P1", "B1", "P2", "B2", "P3", "B3")


def public_card(value: Any) -> Card | None:
    """The card an event names, or None (not named, R15; or not a card: unseen)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_card(value)
    except CardError:
        return None


def public_cards(values: Iterable[Any]) -> list[Card]:
    """The cards a list of an event names, the unnamed ones left out."""
    return [card for card in map(public_card, values) if card is not None]


def hands(player: Any, banker: Any) -> dict[str, Card | None]:
    """A result's hands by position, in dealing order (P1, B1, P2, B2, P3, B3)."""
    cards: dict[str, Card | None] = {}
    for prefix, hand in (("P", player), ("B", banker)):
        for index, value in enumerate(hand if isinstance(hand, list | tuple) else [], start=1):
            cards[f"{prefix}{index}"] = public_card(value)
    return {position: cards[position] for position in POSITIONS if position in cards}


@dataclass
class RoundCards:
    """One round's cards: by position while dealt, its hands once it has a result, and every
    card it took once voided (which withdraws a result, R10.4)."""

    positions: dict[str, Card | None] = field(default_factory=dict)
    voided: list[Card | None] | None = None
    ended: bool = False  # a result or a void came: the round's cards are out of the shoe

    def feed(self, kind: Any, data: Mapping[str, Any]) -> None:
        if kind in (EventType.CARD_DEALT, EventType.CARD_REVEALED):
            self.positions[str(data.get("position"))] = public_card(data.get("card"))
        elif kind == EventType.ROUND_RESULT:
            self.positions = hands(data.get("player"), data.get("banker"))
            self.voided, self.ended = None, True
        elif kind == EventType.ROUND_VOIDED:
            cards = data.get("cards")
            self.voided = [public_card(card) for card in cards] if isinstance(cards, list) else []
            self.ended = True

    def taken(self) -> dict[str, Card | None]:
        """The round's cards: by position, or once voided each card it took as `#1`, `#2`..."""
        if self.voided is None:
            return dict(self.positions)
        return {f"#{index}": card for index, card in enumerate(self.voided, 1)}

    def named(self) -> list[Card]:
        return [card for card in self.taken().values() if card is not None]


@dataclass
class ShoeCards:
    """One shoe's cards out of it, as its public events named them (see the module)."""

    rounds: dict[int, RoundCards] = field(default_factory=dict)
    burned: list[Card] = field(default_factory=list)  # every named card burned (R2.2, R8)
    burned_count: int = 0  # every card burned, named or not
    extras: Counter[Card] = field(default_factory=Counter)  # extra cards not burned yet (R10.3)

    def feed(self, kind: Any, number: Any, data: Mapping[str, Any]) -> None:
        """Take one event of this shoe (`number`: its round, or None)."""
        if kind == EventType.SHOE_BURNED:
            cards = data.get("cards") or []
            count = data.get("count")
            self.burned_count += count if isinstance(count, int) and count >= 0 else len(cards)
            for card in public_cards(cards):
                if self.extras[card]:
                    self.extras[card] -= 1  # the extra card burned now: counted once
                self.burned.append(card)
        elif kind == EventType.CARD_EXTRA:
            self.extras.update(public_cards([data.get("card")]))
        elif not isinstance(number, int):
            return
        elif kind == EventType.ROUND_STARTED:
            self.rounds[number] = RoundCards()
        else:
            self.round(number).feed(kind, data)

    def round(self, number: int) -> RoundCards:
        """A round's cards (an empty record for a round not seen yet)."""
        found = self.rounds.get(number)
        if found is None:
            found = self.rounds[number] = RoundCards()
        return found

    def seen(self) -> Counter[Card]:
        """Every card out of the shoe with a public identity, with its count: the burned, the
        extra cards, and the cards of every round that ended (a round in progress not yet)."""
        seen: Counter[Card] = Counter(self.burned)
        seen.update(+self.extras)
        for cards in self.rounds.values():
            if cards.ended:
                seen.update(cards.named())
        return seen
