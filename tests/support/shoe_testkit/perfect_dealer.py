"""A dealer who makes no mistakes: the inputs a correctly dealt shoe produces (tests, bench).

Given the cards in shoe order and a table config, `deal_shoe` plays the normal flow the way
the devices report it (docs/architecture.md "What the devices report"): load (or shuffle), burn
(R2.2),
rounds in dealing order (R7, R9), per-round burns (R8), the REVEAL button in squeeze mode
(R15) and to close insurance windows (R16.8), the cut card and the last round (R3.1). It is
written from docs/rules.md independently of the procedures machine (`shoe_controller/table/`),
so that the table can be checked against it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from shoe_controller.game.rules import Outcome, insurance_offers, next_position, outcome
from shoe_controller.table.config import (
    BATCH_SHUFFLER,
    BETTING_BUTTON,
    BETTING_SERVER,
    BURN_DECKS,
    FINISH_CURRENT,
    SHUFFLER_DEALER,
    TableConfig,
)
from shoe_controller.vocab.cards import Card, burn_value
from shoe_controller.vocab.inputs import (
    BetsState,
    BettingChanged,
    Button,
    ButtonPressed,
    CardDrawn,
    CutCardSeen,
    Input,
    ShoeState,
    ShoeStateChanged,
    ShuffleDone,
    ShuffleStarted,
    SupervisorCommand,
)

START_TIME = 1_800_000_000.0  # 2027-01-15: any fixed time will do; inputs carry their own


@dataclass
class DealtShoe:
    """The inputs of a correctly dealt shoe and what its rounds should give."""

    inputs: list[Input] = field(default_factory=list)
    rounds: list[list[Card]] = field(default_factory=list)  # complete rounds, dealing order
    trial: list[bool] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    burned: int = 0
    ended: bool = False  # the last round (R3.1) was dealt
    cards_drawn: int = 0


class _OutOfCardsError(Exception):
    pass


class _Dealer:
    def __init__(
        self,
        cards: Sequence[Card],
        config: TableConfig,
        *,
        cut_after: int | None,
        face_up: Collection[int],
        start: float,
        device: str,
        shoe_number: int = 1,
    ) -> None:
        self.shoe_number = shoe_number  # the table's number of the shoe (betting messages)
        self.cards = cards
        self.config = config
        self.cut_after = cut_after
        self.face_up = face_up
        self.start = start
        self.device = device
        self.shoe = DealtShoe()
        self.ticks = 0
        self.last_round: int | None = None
        self.continuous = config.mode == SHUFFLER_DEALER

    def at(self) -> float:
        self.ticks += 1
        return self.start + self.ticks * 0.25

    def add(self, item: Input) -> None:
        self.shoe.inputs.append(item)

    def draw(self) -> tuple[Card, bool]:
        """Draw the next card; returns it and whether it came out face up."""
        index = self.shoe.cards_drawn
        if index >= len(self.cards):
            raise _OutOfCardsError
        card = self.cards[index]
        face_up = self.continuous or index in self.face_up
        self.shoe.cards_drawn += 1
        self.add(CardDrawn(self.at(), self.device, card, counter=index + 1, face_up=face_up))
        return card, face_up

    def after_draw(self, current_round: int) -> None:
        """The cut card sits behind card `cut_after` (R3.1)."""
        if self.continuous:
            return  # R2.5: a shuffler-dealer machine has no cut card
        if self.cut_after is not None and self.shoe.cards_drawn == self.cut_after:
            self.add(CutCardSeen(self.at(), self.device, counter=self.cut_after))
            rule_one_more = self.config.cut_card != FINISH_CURRENT
            self.last_round = current_round + (1 if rule_one_more else 0)

    def press_reveal(self) -> None:
        self.add(ButtonPressed(self.at(), self.device, Button.REVEAL))

    def burn(self, count: int, upcoming_round: int) -> None:
        for _ in range(count):
            self.draw()
            self.shoe.burned += 1
            self.after_draw(upcoming_round)

    def deal(self, trial_rounds: int) -> DealtShoe:
        config = self.config
        if config.mode == BATCH_SHUFFLER:
            self.add(ShuffleStarted(self.at(), "shuffler", 1, config.decks))
            self.add(
                ShuffleDone(self.at(), "shuffler", 1, True, config.decks, config.cards_in_shoe)
            )
        if self.continuous:
            self.add(
                ShuffleDone(self.at(), self.device, 1, True, config.decks, config.cards_in_shoe)
            )
        else:
            self.add(ShoeStateChanged(self.at(), self.device, ShoeState.LOADED))
        if trial_rounds:
            self.add(
                SupervisorCommand(
                    self.at(), "trial", "sup1", "the players ask (R2.3)", {"rounds": trial_rounds}
                )
            )
        try:
            if not self.continuous:
                if config.burn == BURN_DECKS:
                    self.burn(config.decks, 1)
                else:
                    first, _ = self.draw()
                    self.shoe.burned += 1
                    self.after_draw(1)
                    self.burn(burn_value(first), 1)
            number = 0
            while self.last_round is None or number < self.last_round:
                number += 1
                if number > 1 and not self.continuous:
                    self.burn(config.burn_per_round, number)
                self.deal_round(number, trial=number <= trial_rounds)
            self.shoe.ended = True
        except _OutOfCardsError:
            pass
        return self.shoe

    def close_bets(self, number: int) -> None:
        """Betting closes before the round's first card: the dealer's button, or
        the table server's open and close for the round (trial rounds take no bets)."""
        if self.config.betting == BETTING_BUTTON:
            self.add(ButtonPressed(self.at(), self.device, Button.NO_MORE_BETS))
        elif self.config.betting == BETTING_SERVER:
            server_round = f"S{self.shoe_number}-{number}"
            for state in (BetsState.OPEN, BetsState.CLOSED):
                nonce = f"{server_round}-{state}"
                self.add(
                    BettingChanged(
                        self.at(), state, self.shoe_number, number, server_round, nonce, "server"
                    )
                )

    def deal_round(self, number: int, *, trial: bool) -> None:
        config = self.config
        if not trial:
            self.close_bets(number)
        cards: list[Card] = []
        hidden = False
        insurance_void = False
        while next_position(cards) is not None:
            card, face_up = self.draw()
            cards.append(card)
            complete = next_position(cards) is None
            self.after_draw(number if not complete else number + 1)
            if face_up and not self.continuous:
                insurance_void = True  # R4, R16.9
            if config.squeeze and not face_up:
                hidden = True
            if config.squeeze and hidden and len(cards) >= 4:
                self.press_reveal()  # R15: the table waits for the squeezed cards
                hidden = False
            if config.insurance and not trial and not insurance_void and insurance_offers(cards):
                self.press_reveal()  # the dealer closes the window before the next card
        self.shoe.rounds.append(cards)
        self.shoe.trial.append(trial)
        self.shoe.outcomes.append(outcome(cards))


def deal_shoe(
    cards: Sequence[Card],
    config: TableConfig,
    *,
    cut_after: int | None = None,
    trial_rounds: int = 0,
    face_up: Collection[int] = (),
    start: float = START_TIME,
    device: str = "scanner",
    shoe_number: int = 1,
) -> DealtShoe:
    """Deal `cards` (shoe order) correctly to the end of the shoe, or until they run out.

    `cut_after`: the cut card comes out after that many cards (None: never). `face_up`:
    indexes (0-based, in shoe order) of cards that leave the shoe face up (R4). With
    `betting` set, the bets close before every real round (`shoe_number` names the shoe in
    the server's messages).
    """
    dealer = _Dealer(
        cards,
        config,
        cut_after=cut_after,
        face_up=frozenset(face_up),
        start=start,
        device=device,
        shoe_number=shoe_number,
    )
    return dealer.deal(trial_rounds)
