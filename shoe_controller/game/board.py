"""What a shoe's scoreboard shows, folded from its public events: the round results for the
roads, the round being dealt, and the shoe statistics of docs/spec-roads.md (docs/scoreboard.md).

`Board.feed(event)` takes the events in journal order (docs/spec-push-api.md form: `type`, `shoe`,
`round`, `data`) and says what changed; `Board.to_json()` is the whole board. It follows the
table from shoe to shoe (a batch shuffler's `shoe.shuffled` for the next shoe does not clear
a shoe still being dealt). No I/O, no clock.

Only what the events make public goes in (R15): in squeeze mode a card is known from its
`card.revealed`, a round's result from `round.result` (which comes after the reveal). The
cards left by rank count only cards whose identity is public; the cards that left the shoe
unnamed are counted apart (`cards_unknown`), so no count changes with an unrevealed card's
identity, only with how many there are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from shoe_controller.game.roads import ROWS, RoundResult, roads_json
from shoe_controller.game.shoe_cards import POSITIONS, RoundCards, ShoeCards
from shoe_controller.vocab.cards import RANK_LETTERS, Card, points
from shoe_controller.vocab.events import EventType


class Change(Enum):
    """What an event changed on the board, so a page redraws only what it must."""

    NOTHING = "nothing"
    ROUND = "round"  # the round being dealt, or the card counts
    ROADS = "roads"  # the results (so the roads), or the shoe shown


_BY_SIZE = (Change.ROADS, Change.ROUND)
# The events the board is drawn from (the others leave it as it is).
SHOWN = frozenset(
    {
        EventType.SHOE_SHUFFLED,
        EventType.SHOE_BURNED,
        EventType.SHOE_ENDED,
        EventType.ROUND_STARTED,
        EventType.CARD_DEALT,
        EventType.CARD_REVEALED,
        EventType.ROUND_RESULT,
        EventType.ROUND_VOIDED,
    }
)


class EventLike(Protocol):
    """What the board reads of an event (a journal's StoredEvent fits)."""

    @property
    def type(self) -> str: ...

    @property
    def shoe(self) -> int | None: ...

    @property
    def round(self) -> int | None: ...

    @property
    def data(self) -> Mapping[str, Any]: ...


@dataclass
class _Round:
    """A round as the events showed it; its cards hold None for a card not named (R15)."""

    number: int
    cards: RoundCards
    trial: bool = False
    result: Mapping[str, Any] | None = None
    voided: str | None = None

    def to_json(self) -> dict[str, Any]:
        taken = self.cards.taken()
        names = {key: None if card is None else str(card) for key, card in taken.items()}
        cards = {position: names[position] for position in POSITIONS if position in names}
        cards.update({key: card for key, card in names.items() if key not in POSITIONS})
        result = self.result
        return {
            "number": self.number,
            "trial": self.trial,
            "cards": cards,
            "player_total": result["player_total"] if result else _total(taken, "P"),
            "banker_total": result["banker_total"] if result else _total(taken, "B"),
            "winner": result.get("winner") if result else None,
            "natural": result.get("natural") if result else None,
            "voided": self.voided,
        }


def _total(cards: Mapping[str, Card | None], side: str) -> int | None:
    """A hand's points while it is dealt, when every one of its cards is public."""
    hand = [card for position, card in cards.items() if position.startswith(side)]
    if not hand or any(card is None for card in hand):
        return None
    return sum(points(card) for card in hand if card is not None) % 10


class Board:
    """One table's scoreboard, fed with its events in journal order."""

    def __init__(self, cards_in_shoe: int | None, rows: int = ROWS) -> None:
        """`cards_in_shoe`: the table's decks x 52 (a `shoe.shuffled` event's total wins), or
        None for a shuffler-dealer, which has no shoe to run down (R2.5)."""
        self._cards_in_shoe = cards_in_shoe
        self.rows = rows
        self.shoe: int | None = None
        self.seq = 0  # the last event fed that carried a seq
        self._reset(None)

    def _reset(self, shoe: int | None) -> None:
        self.shoe = shoe
        self.ended = False
        self._total = self._cards_in_shoe
        self._results: dict[int, RoundResult] = {}  # round number -> result (real rounds)
        self._rounds: dict[int, _Round] = {}
        self._current: _Round | None = None  # the round dealt last (shown until the next)
        self._cards = ShoeCards()
        self._dealt_at_end: int | None = None

    # ------------------------------------------------------------------ feeding

    def feed(self, event: EventLike) -> Change:
        """Take the next event; what it changed on the board."""
        seq = getattr(event, "seq", None)
        if isinstance(seq, int):
            self.seq = max(self.seq, seq)
        shoe, kind, data = event.shoe, event.type, event.data
        if kind not in SHOWN or shoe is None or (self.shoe is not None and shoe < self.shoe):
            # Device, controller, alert and insurance events carry the table's shoe number
            # too, but change nothing on the board (a restart between shoes must not clear
            # it); and a shoe the board left behind is gone.
            return Change.NOTHING
        if shoe != self.shoe:
            # A batch shuffler shuffles the next shoe while this one is dealt: only its
            # dealing (or this shoe's end) moves the board on.
            if kind == EventType.SHOE_SHUFFLED and self.shoe is not None and not self.ended:
                return Change.NOTHING
            self._reset(shoe)
            self._apply(kind, event.round, data)
            return Change.ROADS
        return self._apply(kind, event.round, data)

    def feed_all(self, events: Sequence[EventLike]) -> Change:
        """Several events; the largest change among them."""
        changes = {self.feed(event) for event in events}
        return next((change for change in _BY_SIZE if change in changes), Change.NOTHING)

    def _apply(self, kind: str, number: int | None, data: Mapping[str, Any]) -> Change:
        if kind == EventType.SHOE_SHUFFLED:
            total = data.get("total")
            if self._total is not None and isinstance(total, int) and total > 0:
                self._total = total
            return Change.ROUND
        if kind == EventType.SHOE_BURNED:
            self._cards.feed(kind, number, data)
            return Change.ROUND
        if kind == EventType.SHOE_ENDED:
            self.ended = True
            dealt = data.get("cards_dealt")
            self._dealt_at_end = dealt if isinstance(dealt, int) else None
            return Change.ROUND
        if number is None:
            return Change.NOTHING
        if kind == EventType.ROUND_STARTED:
            self._cards.feed(kind, number, data)
            self._current = self._rounds[number] = _Round(
                number, self._cards.round(number), trial=bool(data.get("trial"))
            )
            return Change.ROUND
        current = self._round(number)
        # A round's cards: by position, the result's final hands, a void's every card.
        self._cards.feed(kind, number, data)
        if kind in (EventType.CARD_DEALT, EventType.CARD_REVEALED):
            return Change.ROUND
        if kind == EventType.ROUND_RESULT:
            current.result = dict(data)
            if current.trial:
                return Change.ROUND  # a trial round is not on the road (R2.3)
            self._results[number] = RoundResult.from_mapping({**data, "round": number})
            return Change.ROADS
        if kind == EventType.ROUND_VOIDED:  # the last of SHOWN
            current.voided = str(data.get("reason"))
            current.result = None
            # A round voided after its result (R10.4) leaves the road.
            return Change.ROADS if self._results.pop(number, None) else Change.ROUND
        return Change.NOTHING

    def _round(self, number: int) -> _Round:
        found = self._rounds.get(number)
        if found is None:  # its round.started was before what was read
            found = self._rounds[number] = _Round(number, self._cards.round(number))
            self._current = found
        return found

    # ------------------------------------------------------------------ reading

    @property
    def results(self) -> list[RoundResult]:
        return [self._results[number] for number in sorted(self._results)]

    def result_entries(self) -> list[dict[str, Any]]:
        """The road's entries as `table.view()["road"]` has them."""
        return [
            {
                "round": result.round,
                "winner": result.winner,
                "player_pair": result.player_pair,
                "banker_pair": result.banker_pair,
                "natural": result.natural,
            }
            for result in self.results
        ]

    def round_json(self) -> dict[str, Any] | None:
        """The round dealt last, as far as it is public; None before the shoe's first."""
        return self._current.to_json() if self._current is not None else None

    def stats(self) -> dict[str, Any]:
        """docs/spec-roads.md's shoe statistics: results, pairs, naturals, and the cards."""
        results = self.results
        counts: Counter[Card] = Counter(self._cards.burned)
        for round_ in self._rounds.values():
            counts.update(round_.cards.named())
        known: Counter[str] = Counter()
        for card, count in counts.items():
            known[RANK_LETTERS[card.rank - 1]] += count
        in_rounds = sum(len(round_.cards.taken()) for round_ in self._rounds.values())
        dealt = self._cards.burned_count + in_rounds
        if self._dealt_at_end is not None:
            dealt = self._dealt_at_end  # the table's own count, when the shoe ended
        total = self._total
        per_rank = total // len(RANK_LETTERS) if total is not None else None
        return {
            "rounds": len(results),
            "banker": sum(result.winner == "banker" for result in results),
            "player": sum(result.winner == "player" for result in results),
            "tie": sum(result.winner == "tie" for result in results),
            "banker_pair": sum(result.banker_pair for result in results),
            "player_pair": sum(result.player_pair for result in results),
            "naturals": sum(result.natural is not None for result in results),
            "cards_in_shoe": total,
            "cards_dealt": dealt,
            "cards_left": None if total is None else max(total - dealt, 0),
            "cards_unknown": max(dealt - sum(known.values()), 0),
            "cards_left_by_rank": None
            if per_rank is None
            else {rank: max(per_rank - known[rank], 0) for rank in RANK_LETTERS},
        }

    def roads(self) -> dict[str, Any]:
        """The results and what is drawn from them: the five roads and the ask road."""
        return {"results": self.result_entries(), **roads_json(self.results, self.rows)}

    def to_json(self) -> dict[str, Any]:
        """The whole board (docs/scoreboard.md): the shoe, its results, the five roads, the ask
        road, the statistics and the round dealt last."""
        return {
            "shoe": self.shoe,
            "seq": self.seq,
            "ended": self.ended,
            **self.roads(),
            "stats": self.stats(),
            "round": self.round_json(),
        }
