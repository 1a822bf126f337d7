"""A simulated dealing shoe (RFID or optical): loaded with a scripted or shuffled shoe, it deals
cards with their counter, flags and gaps, the cut card, and its SHOE states."""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from typing import Any

from drivers.sim.base import DEFAULT_CARDS_BEHIND_CUT, SimCard, SimConfig, SimDevice
from drivers.sim.uids import uid_for
from drivers.wire.messages import (
    Card,
    CardFlags,
    CutCard,
    DeviceKind,
    Shoe,
    ShoeState,
)


class ShoeSim(SimDevice):
    """A card-reading shoe (RFID kind 1 or optical kind 2); base of the shuffler-dealer."""

    def __init__(self, config: SimConfig) -> None:
        super().__init__(config)
        self.state = ShoeState.REMOVED
        self.cards: deque[SimCard] = deque()
        self.counter = 0
        self.dealt: list[Card] = []  # CARD messages of the current shoe
        self.shoes = 0
        self.paused = False
        self.cut_after: int | None = None
        self._physical = 0  # cards out of the current shoe (the counter may jump)
        self._budget = 0  # cards still to deal when not autodealing
        self._next_deal = 0.0
        self._empty_at: float | None = None
        self._next_flags = CardFlags.NONE
        self._next_skip = 0

    # -- requests -------------------------------------------------------------------------

    def load(self, cards: Iterable[Any] | None = None, cut_after: int | None = None) -> None:
        """Load a shoe: ``cards`` exactly in this order, or a seeded shuffled shoe.

        ``cut_after``: the cut card comes out after that many cards (0: no cut card). By
        default a shuffled shoe has it ``decks*52-14`` cards in and a scripted one has none.
        """
        self.shoes += 1
        if cards is None:
            sequence = self._shuffled_shoe()
            default_cut = self.config.cut_after
            if default_cut is None:
                default_cut = len(sequence) - DEFAULT_CARDS_BEHIND_CUT
        else:
            sequence = self._assign_decks([SimCard.parse(item) for item in cards])
            default_cut = 0
        self.cards = deque(sequence)
        self.cut_after = default_cut if cut_after is None else cut_after
        self.counter = 0
        self._physical = 0
        self.dealt = []
        self._empty_at = None
        self.state = ShoeState.LOADED
        self._next_deal = self.now + self.config.pace
        self.send(Shoe(ShoeState.LOADED))

    def remove(self) -> None:
        self.cards.clear()
        self.state = ShoeState.REMOVED
        self.send(Shoe(ShoeState.REMOVED))

    def cover(self, is_open: bool) -> None:
        self.send(Shoe(ShoeState.COVER_OPEN if is_open else ShoeState.COVER_CLOSED))

    def deal(self, count: int = 1) -> None:
        """Deal ``count`` more cards at the pace (when ``autodeal`` is off or paused)."""
        if self._budget == 0:
            self._next_deal = max(self._next_deal, self.now)
        self._budget += count

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        self._next_deal = max(self._next_deal, self.now)

    def flag_next(self, flags: CardFlags) -> None:
        """Put these flags on the next CARD (FACE_UP, LOW_CONFIDENCE, MULTI)."""
        self._next_flags |= CardFlags(flags)

    def skip_next(self, count: int = 1) -> None:
        """Leave ``count`` counter values out before the next CARD (a missed card, R10.5)."""
        self._next_skip += count

    def reread(self) -> None:
        """Send the last CARD again in a new frame: a reader reading one card twice."""
        if not self.dealt:
            raise ValueError("no card dealt yet to read again")
        self.send(self.dealt[-1])

    def count_back(self, count: int = 1) -> None:
        """The next CARD's counter goes back by ``count`` (a shoe that lost count)."""
        self._next_skip -= count + 1

    # -- behaviour ------------------------------------------------------------------------

    def on_start(self) -> None:
        if self.config.autoload:
            self.load()

    def shoe_state(self) -> ShoeState:
        return self.state

    def _may_deal(self) -> bool:
        if self.state != ShoeState.LOADED or not self.cards:
            return False
        if self._budget:
            return True
        return self.config.autodeal and not self.paused

    def next_behaviour(self) -> float | None:
        if self._may_deal():
            return self._next_deal
        if self._empty_at is not None and self.config.reload_after is not None:
            return self._empty_at + self.config.reload_after
        return None

    def behave(self, now: float) -> None:
        dealt_now = 0
        while self._may_deal() and now >= self._next_deal and dealt_now < 1000:
            self._deal_one()
            dealt_now += 1
            self._next_deal += self.config.pace
        if self._may_deal() and self._next_deal < now - 1.0:
            self._next_deal = now  # after a long stall, do not burst through the backlog
        reload_after = self.config.reload_after
        if (
            self._empty_at is not None
            and reload_after is not None
            and now >= self._empty_at + reload_after
        ):
            self.load()

    def _deal_one(self) -> None:
        card = self.cards.popleft()
        if self._budget:
            self._budget -= 1
        self._physical += 1
        self.counter += 1 + card.skip + self._next_skip
        flags = card.flags | self._next_flags | self._implicit_flags()
        self._next_flags = CardFlags.NONE
        self._next_skip = 0
        message = self._card_message(card, flags)
        self.dealt.append(message)
        self.send(message)
        if self.cut_after and self._physical == self.cut_after and self._uses_cut_card():
            self.send(CutCard(self.counter))
        if not self.cards:
            self.on_exhausted()

    def on_exhausted(self) -> None:
        self.state = ShoeState.EMPTY
        self._empty_at = self.now
        self.send(Shoe(ShoeState.EMPTY))

    def _implicit_flags(self) -> CardFlags:
        return CardFlags.NONE

    def _uses_cut_card(self) -> bool:
        return True

    def _card_message(self, card: SimCard, flags: CardFlags) -> Card:
        if card.uid is not None:
            return Card(self.counter, flags, uid=card.uid)
        if card.rank is None or card.suit is None:  # SimCard rejects this; for the types
            raise ValueError(f"{card} has neither rank/suit nor uid")
        if self.config.kind == DeviceKind.RFID_SHOE:
            serials = self.config.deck_serials
            serial = serials[(card.deck or 0) % len(serials)]
            return Card(self.counter, flags, uid=uid_for(serial, card.rank, card.suit))
        return Card(self.counter, flags, card.rank, card.suit)

    def _shuffled_shoe(self) -> list[SimCard]:
        cards = [
            SimCard(rank, suit, deck=deck)
            for deck in range(self.config.decks)
            for rank in range(1, 14)
            for suit in range(4)
        ]
        random.Random(f"{self.config.seed}:{self.shoes}").shuffle(cards)
        return cards

    def _assign_decks(self, cards: Sequence[SimCard]) -> list[SimCard]:
        """Give repeated (rank, suit) of a script distinct decks, so RFID tags differ."""
        used: Counter[tuple[int | None, int | None]] = Counter()
        result = []
        for card in cards:
            if card.uid is None and card.deck is None:
                key = (card.rank, card.suit)
                card = SimCard(card.rank, card.suit, None, used[key], card.flags, card.skip)  # noqa: PLW2901
                used[key] += 1
            result.append(card)
        return result

    def status(self) -> dict[str, Any]:
        status = super().status()
        status.update(
            counter=self.counter,
            cards_left=len(self.cards),
            dealt=len(self.dealt),
            shoes=self.shoes,
            paused=self.paused,
        )
        return status
