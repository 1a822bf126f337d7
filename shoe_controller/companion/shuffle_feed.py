"""The companion's shuffle watch: each shoe's public cards in dealt order, read from the table's
events, held against the previous shoe's, and the findings to send (docs/shuffle.md).

`ShoeOrder` reads one shoe's events (docs/spec-push-api.md form, in seq order) and gives its cards
in
dealt order as they become public: the burn at `shoe.burned`, a round's cards at its end
(`round.result`, `round.voided`), in the order they left the shoe (its `card.dealt` and
`card.extra` events, R7, R10.3). In squeeze mode a card's identity is taken from its
`card.revealed` or the result's hands, never before (R15); a card never shown is None (it
keeps its place and matches nothing). A position the table lays out again (a correction, a
missed card put back, R10.1, R10.5) keeps its place with its new card; a card taken out of
the round as an extra keeps its place without a position, and one pulled with a round's last
card is placed before the next burn or round. An extra card is burned again by the next
round's `shoe.burned`: it is placed once, where it came out.

`ShuffleAnalyst` keeps, for every shoe whose previous shoe it read whole (from its
`shoe.shuffled`), a `ShuffleWatch` with the previous shoe's order as reference, feeds it each
batch, and says when findings are due: after a round, a burn, and at the shoe's end (`final`).
Its `request()` is the `shuffle_report` request: the slug notices not yet accepted and the
report as it stands. No I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.game.shoe_cards import hands, public_card
from shoe_controller.game.surveillance.shuffle_watch import (
    SLUG_ENDED,
    ShuffleWatch,
    Slug,
    SlugNotice,
)
from shoe_controller.vocab.cards import Card
from shoe_controller.vocab.events import EventType

ROUND_ENDS = (EventType.ROUND_RESULT, EventType.ROUND_VOIDED)


class ShoeOrder:
    """One shoe's public cards in the order they left the shoe (see the module)."""

    def __init__(self, shoe: int) -> None:
        self.shoe = shoe
        self.cards: list[Card | None] = []
        self.whole = False  # read from its shoe.shuffled: nothing before it missed
        self.ended = False
        self.last_round = 0  # the last round whose cards were placed
        self._round: list[list[Any]] = []  # [position, card] in the order they came out
        self._dealing = False  # a round started and not ended: its cards are in _round
        self.uids: list[str | None] = []  # each placed card's RFID tag, when the table said
        self._tags: dict[int, tuple[Card | None, str]] = {}  # place in the shoe -> card, tag
        self._extras: Counter[Card | None] = Counter()  # placed where they came out, not burned

    def feed(self, event: Mapping[str, Any]) -> list[Card | None]:
        """Take one event of this shoe; the cards it made public in dealt order (often none)."""
        kind, data = event.get("type"), event.get("data") or {}
        if kind == EventType.SURVEILLANCE_CARD_TAGS:
            self._tagged(data.get("cards") or ())
        elif kind == EventType.SHOE_SHUFFLED:
            self.whole = self.whole or not self.cards
        elif kind == EventType.SHOE_BURNED:
            before = [] if self._dealing else self._flush()  # extras pulled with the last card
            return before + self._place(self._burned(data))
        elif kind == EventType.ROUND_STARTED:
            self._dealing = True
            return self._flush()
        elif kind == EventType.CARD_DEALT:
            self._dealt(data.get("position"), public_card(data.get("card")))
        elif kind == EventType.CARD_REVEALED:
            self._reveal(data.get("position"), public_card(data.get("card")))
        elif kind == EventType.CARD_EXTRA:
            card = public_card(data.get("card"))
            self._extras[card] += 1  # unnamed too (R15): the burn names it no better
            self._taken_out(card)
        elif kind in ROUND_ENDS:
            if kind == EventType.ROUND_RESULT:
                self._from_hands(hands(data.get("player"), data.get("banker")))
            if isinstance(event.get("round"), int):
                self.last_round = event["round"]
            self._dealing = False
            return self._flush()
        elif kind == EventType.SHOE_ENDED:
            self.ended = True
            return self._flush()  # a round the shoe's end cut short
        return []

    def _burned(self, data: Mapping[str, Any]) -> list[Card | None]:
        named = [public_card(value) for value in data.get("cards") or ()]
        count = data.get("count")
        if isinstance(count, int) and count > len(named) and not self._extras:
            named += [None] * (count - len(named))  # burned face down: unseen
        burned = []
        for card in named:
            if self._extras[card]:
                self._extras[card] -= 1  # an extra card, placed where it came out
                continue
            burned.append(card)
        return burned

    def _dealt(self, position: Any, card: Card | None) -> None:
        """A card at its position; a position laid out again keeps its place (R10.1, R10.5:
        the table lays the round out again in dealing order)."""
        for entry in self._round:
            if entry[0] is not None and entry[0] == position:
                entry[1] = card
                return
        self._round.append([position, card])

    def _taken_out(self, card: Card | None) -> None:
        """`card.extra`: the round's last card of that name taken out of it (the supervisor's
        `extra`, or beyond the round once laid out again) keeps its place, without a position;
        else a card no position wanted, placed where it came out (R10.2, R10.3)."""
        if self._dealing:
            for entry in reversed(self._round):
                if entry[0] is not None and entry[1] == card:
                    entry[0] = None
                    return
        self._round.append([None, card])

    def _reveal(self, position: Any, card: Card | None) -> None:
        for entry in reversed(self._round):
            if entry[0] == position:
                entry[1] = card if card is not None else entry[1]
                return

    def _from_hands(self, final: Mapping[str, Card | None]) -> None:
        """A squeezed card never revealed: its identity from the result's hands (public)."""
        for position, card in final.items():
            for entry in self._round:
                if entry[0] == position and entry[1] is None:
                    entry[1] = card

    def _flush(self) -> list[Card | None]:
        cards, self._round = [card for _, card in self._round], []
        return self._place(cards)

    def _tagged(self, entries: Iterable[Any]) -> None:
        """`surveillance.card_tags`: tags of cards about to be placed, by place (seq)."""
        for entry in entries:
            if isinstance(entry, Mapping) and isinstance(entry.get("seq"), int):
                uid = entry.get("uid")
                if isinstance(uid, str):
                    self._tags[entry["seq"]] = (public_card(entry.get("card")), uid)

    def _place(self, cards: list[Card | None]) -> list[Card | None]:
        # A tag is taken only for the card the table named at that place: an order that went
        # out of step with the table's count loses its tags, never pairs them wrongly.
        for place, card in enumerate(cards, start=len(self.cards) + 1):
            tag = self._tags.pop(place, None)
            self.uids.append(tag[1] if tag is not None and tag[0] == card else None)
        self.cards += cards
        return cards


def _notice_json(notice: SlugNotice, live: Slug | None) -> dict[str, Any]:
    """A notice as sent: a slug still under way as it stands now (its next cards are then
    those after the last card dealt), else as it was."""
    slug = notice.slug
    if (
        notice.kind != SLUG_ENDED
        and live is not None
        and (live.this[0], live.previous[0])
        == (
            slug.this[0],
            slug.previous[0],
        )
    ):
        slug = live
    return {"kind": notice.kind, "card": notice.card, "slug": slug.to_json()}


@dataclass
class ShuffleAnalyst:
    """Events of the table in, `shuffle_report` requests out (no I/O, no clock)."""

    decks: int
    orders: dict[int, ShoeOrder] = field(default_factory=dict)
    watches: dict[int, ShuffleWatch] = field(default_factory=dict)
    pending: list[SlugNotice] = field(default_factory=list)  # not yet accepted
    due: int | None = None  # the shoe whose findings wait to be sent
    after_seq: int = 0
    final: bool = False

    def feed(self, event: Mapping[str, Any]) -> None:
        """One event of the stream (docs/spec-push-api.md form), in seq order."""
        shoe, kind = event.get("shoe"), str(event.get("type", ""))
        if not isinstance(shoe, int) or (
            kind.startswith("surveillance.") and kind != EventType.SURVEILLANCE_CARD_TAGS
        ):
            return
        order = self.orders.get(shoe)
        if order is None:
            order = self.orders[shoe] = ShoeOrder(shoe)
            for old in [number for number in self.orders if number < shoe - 1]:
                del self.orders[old]
                self.watches.pop(old, None)
        cards = order.feed(event)
        watch = self._watch(shoe) if cards or order.ended else None
        if watch is None:
            return
        if self.due is not None and self.due != shoe:
            self.pending, self.final = [], False  # the older shoe's findings: too late now
        self.pending += watch.feed_many(cards, order.uids[len(order.uids) - len(cards) :])
        self.due, self.final = shoe, order.ended
        seq = event.get("seq")
        self.after_seq = seq if isinstance(seq, int) else self.after_seq

    def _watch(self, shoe: int) -> ShuffleWatch | None:
        """This shoe's watch, made at its first cards from the previous shoe's whole order."""
        watch = self.watches.get(shoe)
        previous = self.orders.get(shoe - 1)
        if watch is None and previous is not None and previous.whole and previous.cards:
            tagged = any(uid is not None for uid in previous.uids)  # an RFID shoe's tags
            watch = self.watches[shoe] = ShuffleWatch(
                previous.cards, decks=self.decks, reference_uids=previous.uids if tagged else None
            )
        return watch

    def request(self) -> dict[str, Any] | None:
        """The `shuffle_report` request for the shoe that is due, or None. Clears what was
        due; the notices stay pending until `accepted`."""
        shoe, self.due = self.due, None
        watch = self.watches.get(shoe) if shoe is not None else None
        if shoe is None or watch is None:
            return None
        return {
            "cmd": "shuffle_report",
            "shoe": shoe,
            "against": shoe - 1,
            "round": self.orders[shoe].last_round,
            "after_seq": self.after_seq,
            "final": self.final,
            "notices": [_notice_json(notice, watch.live) for notice in self.pending],
            "report": watch.report(shoe, shoe - 1).to_json(),
            "live": None if watch.live is None else {"slug": watch.live.to_json()},
        }

    def accepted(self, request: Mapping[str, Any]) -> None:
        """The controller journaled `request`: its notices are sent."""
        self.pending = self.pending[len(request.get("notices", ())) :]
