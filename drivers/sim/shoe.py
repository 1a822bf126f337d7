"""A simulated dealing shoe (RFID or optical): loaded with a scripted or shuffled shoe, it deals
cards with their counter, flags and gaps, the cut card, and its SHOE states.

`DealingShoe` is the mechanism (sans-I/O, speaking through its device); `ShoeSim` is the
device: a `SimDevice` holding one, with the shoe's requests (load, deal, flag the next card...).
A shuffler-dealer machine deals with a `DealingShoe` too (shufflers.py).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from drivers.sim.base import (
    DEFAULT_CARDS_BEHIND_CUT,
    DeviceVoice,
    Mechanism,
    SimCard,
    SimConfig,
    SimDevice,
)
from drivers.sim.uids import uid_for
from drivers.wire.messages import (
    Card,
    CardFlags,
    CutCard,
    DeviceKind,
    Shoe,
    ShoeState,
)


def shuffled_shoe(config: SimConfig, shoe_number: int) -> list[SimCard]:
    """`config.decks` decks in a seeded order: the same seed and shoe number, the same shoe."""
    cards = [
        SimCard(rank, suit, deck=deck)
        for deck in range(config.decks)
        for rank in range(1, 14)
        for suit in range(4)
    ]
    random.Random(f"{config.seed}:{shoe_number}").shuffle(cards)
    return cards


def assign_decks(cards: Sequence[SimCard]) -> list[SimCard]:
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


def card_message(config: SimConfig, card: SimCard, counter: int, flags: CardFlags) -> Card:
    """The CARD frame for a card: its tag's UID from an RFID shoe, else its rank and suit."""
    if card.uid is not None:
        return Card(counter, flags, uid=card.uid)
    if card.rank is None or card.suit is None:  # SimCard rejects this; for the types
        raise ValueError(f"{card} has neither rank/suit nor uid")
    if config.kind == DeviceKind.RFID_SHOE:
        serials = config.deck_serials
        serial = serials[(card.deck or 0) % len(serials)]
        return Card(counter, flags, uid=uid_for(serial, card.rank, card.suit))
    return Card(counter, flags, card.rank, card.suit)


class DealingShoe:
    """A shoe's dealing mechanism: its cards, the counter, the pace, the cut card, SHOE states.

    With `reshuffle` it is a shuffler-dealer's dealing side (R2.5): every card leaves face up,
    there is no cut card and no SHOE frame, and when its batch runs out it calls `reshuffle`.
    """

    def __init__(
        self,
        config: SimConfig,
        voice: DeviceVoice,
        *,
        reshuffle: Callable[[], None] | None = None,
    ) -> None:
        self._config = config
        self._voice = voice
        self._reshuffle = reshuffle
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

    @property
    def _machine(self) -> bool:
        return self._reshuffle is not None

    # -- requests -------------------------------------------------------------------------

    def load(self, cards: Iterable[Any] | None = None, cut_after: int | None = None) -> None:
        """Load a shoe: ``cards`` exactly in this order, or a seeded shuffled shoe.

        ``cut_after``: the cut card comes out after that many cards (0: no cut card). By
        default a shuffled shoe has it ``decks*52-14`` cards in and a scripted one has none.
        A shuffler-dealer's batch (scripted in tests) is dealt alike: no SHOE frame, no cut card.
        """
        self.shoes += 1
        if cards is None:
            sequence = shuffled_shoe(self._config, self.shoes)
            default_cut = self._config.cut_after
            if default_cut is None:
                default_cut = len(sequence) - DEFAULT_CARDS_BEHIND_CUT
        else:
            sequence = assign_decks([SimCard.parse(item) for item in cards])
            default_cut = 0
        self.cards = deque(sequence)
        if self._machine:
            self.cut_after = 0
        else:
            self.cut_after = default_cut if cut_after is None else cut_after
        self.counter = 0
        self._physical = 0
        self.dealt = []
        self._empty_at = None
        self.state = ShoeState.LOADED
        self._next_deal = self._voice.now + self._config.pace
        if not self._machine:
            self._voice.send(Shoe(ShoeState.LOADED))

    def remove(self) -> None:
        self.cards.clear()
        self.state = ShoeState.REMOVED
        self._voice.send(Shoe(ShoeState.REMOVED))

    def take_back(self) -> None:
        """A shuffler-dealer takes its batch back to shuffle: nothing to deal until it is done."""
        self.state = ShoeState.EMPTY
        self.cards.clear()

    def cover(self, is_open: bool) -> None:
        self._voice.send(Shoe(ShoeState.COVER_OPEN if is_open else ShoeState.COVER_CLOSED))

    def deal(self, count: int = 1) -> None:
        """Deal ``count`` more cards at the pace (when ``autodeal`` is off or paused)."""
        if self._budget == 0:
            self._next_deal = max(self._next_deal, self._voice.now)
        self._budget += count

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        self._next_deal = max(self._next_deal, self._voice.now)

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
        self._voice.send(self.dealt[-1])

    def count_back(self, count: int = 1) -> None:
        """The next CARD's counter goes back by ``count`` (a shoe that lost count)."""
        self._next_skip -= count + 1

    # -- the mechanism ----------------------------------------------------------------------

    def start(self) -> None:
        if self._config.autoload:
            self.load()

    def shoe_state(self) -> ShoeState:
        return self.state

    def shuffle(self, decks: int) -> None:
        """A shoe does not shuffle: SHUFFLE is ignored."""

    def next_behaviour(self) -> float | None:
        if self._may_deal():
            return self._next_deal
        if self._empty_at is not None and self._config.reload_after is not None:
            return self._empty_at + self._config.reload_after
        return None

    def behave(self, now: float) -> None:
        dealt_now = 0
        while self._may_deal() and now >= self._next_deal and dealt_now < 1000:
            self._deal_one()
            dealt_now += 1
            self._next_deal += self._config.pace
        if self._may_deal() and self._next_deal < now - 1.0:
            self._next_deal = now  # after a long stall, do not burst through the backlog
        reload_after = self._config.reload_after
        if (
            self._empty_at is not None
            and reload_after is not None
            and now >= self._empty_at + reload_after
        ):
            self.load()

    def status(self) -> dict[str, Any]:
        return {
            "counter": self.counter,
            "cards_left": len(self.cards),
            "dealt": len(self.dealt),
            "shoes": self.shoes,
            "paused": self.paused,
        }

    def _may_deal(self) -> bool:
        if self.state != ShoeState.LOADED or not self.cards:
            return False
        if self._budget:
            return True
        return self._config.autodeal and not self.paused

    def _deal_one(self) -> None:
        card = self.cards.popleft()
        if self._budget:
            self._budget -= 1
        self._physical += 1
        self.counter += 1 + card.skip + self._next_skip
        flags = card.flags | self._next_flags
        if self._machine:
            flags |= CardFlags.FACE_UP  # a shuffler-dealer's cards leave it face up
        self._next_flags = CardFlags.NONE
        self._next_skip = 0
        message = card_message(self._config, card, self.counter, flags)
        self.dealt.append(message)
        self._voice.send(message)
        if self.cut_after and self._physical == self.cut_after:  # a machine's cut_after is 0
            self._voice.send(CutCard(self.counter))
        if not self.cards:
            self._exhausted()

    def _exhausted(self) -> None:
        if self._reshuffle is not None:
            self._reshuffle()
            return
        self.state = ShoeState.EMPTY
        self._empty_at = self._voice.now
        self._voice.send(Shoe(ShoeState.EMPTY))


class ShoeSim(SimDevice):
    """A card-reading shoe (RFID kind 1 or optical kind 2): a `SimDevice` dealing with its
    `shoe`; base of the shuffler-dealer, whose mechanism holds the shoe and a shuffle unit."""

    def __init__(
        self,
        config: SimConfig,
        *,
        shoe: DealingShoe | None = None,
        mechanism: Mechanism | None = None,
    ) -> None:
        self.shoe = shoe if shoe is not None else DealingShoe(config, self)
        super().__init__(config, mechanism if mechanism is not None else self.shoe)

    @property
    def cards(self) -> deque[SimCard]:
        """The cards still in the shoe."""
        return self.shoe.cards

    # -- the shoe's requests ----------------------------------------------------------------

    def load(self, cards: Iterable[Any] | None = None, cut_after: int | None = None) -> None:
        """Load a shoe (see `DealingShoe.load`)."""
        self.shoe.load(cards, cut_after)

    def remove(self) -> None:
        self.shoe.remove()

    def cover(self, is_open: bool) -> None:
        self.shoe.cover(is_open)

    def deal(self, count: int = 1) -> None:
        """Deal ``count`` more cards at the pace (when ``autodeal`` is off or paused)."""
        self.shoe.deal(count)

    def pause(self) -> None:
        self.shoe.pause()

    def resume(self) -> None:
        self.shoe.resume()

    def flag_next(self, flags: CardFlags) -> None:
        """Put these flags on the next CARD (FACE_UP, LOW_CONFIDENCE, MULTI)."""
        self.shoe.flag_next(flags)

    def skip_next(self, count: int = 1) -> None:
        """Leave ``count`` counter values out before the next CARD (a missed card, R10.5)."""
        self.shoe.skip_next(count)

    def reread(self) -> None:
        """Send the last CARD again in a new frame; ValueError before the first card."""
        self.shoe.reread()

    def count_back(self, count: int = 1) -> None:
        """The next CARD's counter goes back by ``count`` (a shoe that lost count)."""
        self.shoe.count_back(count)
