"""The cards seen in one shoe, read from its public events, and when the next round's odds are due.

`ShoeSightings` is fed a shoe's events in seq order, as the journal and the control socket
give them (docs/spec-push-api.md form: `type`, `seq`, `round`, `data`), and keeps what left the shoe
with a known identity (docs/surveillance.md "What counts as seen"):
- a round's cards once it ends: `round.result` (its hands) or `round.voided` (the cards it
  names; null for a card never revealed);
- burned cards, `shoe.burned` (R2.2, R8);
- an extra card, `card.extra`, at once (R10.3); the later `shoe.burned` that burns it for the
  next round does not count it twice.
The cards of a round in progress do not count: the next round's bets are placed before its
first card. Only public identities are used: in squeeze mode an event names a card only after
its reveal (R15), so nothing here is learnt from an unrevealed card. A card that left the
shoe unidentified (unreadable, missed, hidden, behind the cut card) is simply unseen: by
symmetry the next round is then a random draw from everything not seen.

`feed` says when an event calls for a fresh analysis (`DUE_AFTER`: a round's end, a burn, a
shoe opened in manual mode, its `shoe.shuffled`), and keeps the shoe as it stood then
(`Basis`): the analysis may run later (the companion catching up), but it is of that moment,
named by that event's seq. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shoe_controller.game.shoe_cards import ShoeCards
from shoe_controller.vocab.cards import Card
from shoe_controller.vocab.events import EventType

# After these the next round is analysed again (after every round, after the
# burn, and when a shoe opens).
DUE_AFTER = frozenset(
    {EventType.ROUND_RESULT, EventType.ROUND_VOIDED, EventType.SHOE_BURNED, EventType.SHOE_SHUFFLED}
)


@dataclass(frozen=True, slots=True)
class Basis:
    """The shoe just after an event that calls for an analysis: what the report is of."""

    seq: int  # the event's
    next_round: int  # the number the next round will have (trial rounds count, as the table's)
    real_rounds: int  # real rounds started so far (R14.1 counts these; R2.3 trials do not)
    seen: Counter[Card]  # every card out with a public identity, with its count

    def big_small_open(self, last_round: int) -> bool:
        """Whether Big and Small may be bet on the next real round (R14.1)."""
        return self.real_rounds + 1 <= last_round


class ShoeSightings:
    """What one shoe's public events showed: the cards out, the rounds started."""

    def __init__(self, shoe: int) -> None:
        self.shoe = shoe
        self._cards = ShoeCards()
        self.rounds_started = 0
        self.real_rounds_started = 0  # R14.1 counts the real rounds (R2.3: trials aside)
        self.last_seq = 0  # the last event fed
        self.ended = False
        self.basis: Basis | None = None  # the shoe after the last event that was due

    def feed(self, event: Mapping[str, Any]) -> bool:
        """Take one event of this shoe; True when the next round's odds are due after it."""
        kind, data = event.get("type"), event.get("data") or {}
        seq = event.get("seq")
        if isinstance(seq, int):
            self.last_seq = max(self.last_seq, seq)
        self._cards.feed(kind, event.get("round"), data)
        if kind == EventType.ROUND_STARTED:
            self.rounds_started += 1
            self.real_rounds_started += not data.get("trial", False)
        elif kind == EventType.SHOE_ENDED:
            self.ended = True
        if kind not in DUE_AFTER or self.ended:
            return False
        self.basis = Basis(self.last_seq, self.next_round, self.real_rounds_started, self.seen())
        return True

    def seen(self) -> Counter[Card]:
        """Every card out of the shoe with a public identity, with its count."""
        return self._cards.seen()

    @property
    def next_round(self) -> int:
        """The number the next round will have (trial rounds count, as the table numbers)."""
        return self.rounds_started + 1
