"""The companion's shuffle feed (companion/shuffle_feed.py) reading a real table: the
order it records for a shoe is the order the cards left it, whatever the dealing went through
(a card corrected, a missed card put back, extra cards taken out or pulled with a round's
last card, squeezed cards named only at their reveal, RFID tags), and the `shuffle_report`
requests it makes of two short shoes, the second repeating a stretch of the first.

The table is the test kit's ClockedTable (the table's own inputs, one by one); the feed reads its
events in the PUSH_API form with a seq, as the companion reads the journal's. Events no table
sends (a burn that names fewer cards than its count, damaged fields) are written by hand."""

from __future__ import annotations

from typing import Any

import pytest
from shoe_testkit.table import ClockedTable

from shoe_controller.companion.shuffle_feed import ShoeOrder, ShuffleAnalyst
from shoe_controller.game.surveillance.shuffle_watch import ShuffleWatch
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.events import Event

PLAIN = TableConfig(insurance=False)
SQUEEZE = TableConfig(insurance=False, squeeze=True)


class Watched:
    """A table and the companion's shuffle analyst reading its events, requests answered."""

    def __init__(self, config: TableConfig = PLAIN) -> None:
        self.driver = ClockedTable(config)
        self.analyst = ShuffleAnalyst(8)
        self.seq = 0
        self.requests: list[dict[str, Any]] = []
        self.placed: list[list[str | None]] = []  # what each event made public, in order

    def feed(self, events: list[Event]) -> list[Event]:
        for event in events:
            self.seq += 1
            shoe = event.shoe
            before = len(self.analyst.orders[shoe].cards) if shoe in self.analyst.orders else 0
            self.analyst.feed({**event.to_json(), "seq": self.seq})
            order = self.analyst.orders.get(shoe)
            if order is not None and len(order.cards) > before:
                self.placed.append(_names(order.cards[before:]))
            if self.analyst.due is not None:
                request = self.analyst.request()
                if request is not None:
                    self.requests.append(request)
                    self.analyst.accepted(request)
        return events

    def __getattr__(self, name: str) -> Any:
        """The ClockedTable's calls (load, deal, card, sup, reveal), their events fed on."""
        call = getattr(self.driver, name)
        return lambda *args, **kwargs: self.feed(call(*args, **kwargs))

    def order(self, shoe: int = 1) -> list[str | None]:
        return _names(self.analyst.orders[shoe].cards)

    def drawn(self) -> int:
        return self.driver.table.book.drawn


def _names(cards: list[Any]) -> list[str | None]:
    return [None if card is None else str(card) for card in cards]


def _cards(text: str) -> list[str | None]:
    return [None if word == "-" else str(parse_card(word)) for word in text.split()]


# ---------------------------------------------------------------------- the order of a shoe


def test_the_burn_and_each_round_are_placed_when_they_are_public() -> None:
    watched = Watched()
    watched.load()
    order = watched.analyst.orders[1]
    assert (order.whole, order.cards, order.ended) == (True, [], False)
    watched.deal("AS 4C")
    assert watched.order() == _cards("AS 4C")
    watched.deal("9H 2C KD")
    assert watched.order() == _cards("AS 4C")  # a round in progress: nothing yet
    watched.deal("5S")
    assert watched.order() == _cards("AS 4C 9H 2C KD 5S")
    assert watched.placed == [_cards("AS 4C"), _cards("9H 2C KD 5S")]
    assert order.last_round == 1
    watched.deal("2H 3C KD 2S 4C 9D")  # P3 and B3: dealing order
    assert watched.order()[6:] == _cards("2H 3C KD 2S 4C 9D")
    assert order.last_round == 2
    assert len(order.cards) == watched.drawn() == 12
    watched.sup("change_shoe")
    assert order.ended is True
    assert len(order.cards) == 12


def test_a_corrected_card_keeps_its_place() -> None:
    watched = Watched()
    watched.load()
    watched.deal("AS 4C 9H 2C")
    watched.sup("correct", position="P1", card="8H")
    watched.deal("KD 5S")
    assert watched.order() == _cards("AS 4C 8H 2C KD 5S")
    assert len(watched.order()) == watched.drawn()


def test_a_corrected_card_of_a_voided_round_is_placed_as_corrected() -> None:
    watched = Watched()
    watched.load()
    watched.deal("AS 4C 9H 2C KD")
    watched.sup("correct", position="P1", card="8H")
    watched.sup("void")
    assert watched.order() == _cards("AS 4C 8H 2C KD")


def test_a_missed_card_is_placed_where_it_belonged() -> None:
    """The scanner missed 3D between 9H and 2C: entered at B1, the round laid out again."""
    watched = Watched()
    watched.load()
    watched.deal("AS 4C 9H 2C KD")
    watched.sup("missed", card="3D", position="B1")
    watched.deal("5S 6S")
    assert watched.order() == _cards("AS 4C 9H 3D 2C KD 5S 6S")
    assert len(watched.order()) == watched.drawn()


def test_a_card_the_supervisor_takes_out_as_extra_is_placed_once_where_it_came_out() -> None:
    watched = Watched()
    watched.load()
    watched.deal("AS 4C 9H 2C KD 5S 7H")
    watched.sup("extra", reason="drawn by mistake after the result")
    watched.deal("KS 9S QS KH")  # round 2; 7H is round 3's burn
    watched.deal("2H 3H 4H 5H")
    assert watched.order() == _cards("AS 4C 9H 2C KD 5S 7H KS 9S QS KH 2H 3H 4H 5H")
    assert len(watched.order()) == watched.drawn()


def test_a_card_pulled_with_a_rounds_last_card_is_placed_before_the_next_burn() -> None:
    watched = Watched()
    watched.load()
    watched.deal("AS 4C 9H 2C KD 5S")
    watched.card("6S", multi=True)  # R10.2, R10.3: the next round's burn, done at once
    assert watched.order() == _cards("AS 4C 9H 2C KD 5S 6S")
    watched.deal("2H 3H 4H 5H")
    assert watched.order() == _cards("AS 4C 9H 2C KD 5S 6S 2H 3H 4H 5H")
    assert watched.placed[-3:] == [_cards("9H 2C KD 5S"), _cards("6S"), _cards("2H 3H 4H 5H")]
    assert len(watched.order()) == watched.drawn()


def test_an_extra_card_is_placed_once_and_the_rest_of_its_burn_after() -> None:
    """Two burn cards a round (R8): round 3's burn is round 2's extra 7H and one more, 6C."""
    watched = Watched(TableConfig(insurance=False, burn_per_round=2))
    watched.load()
    watched.deal("AS 4C 9H 2C KD 5S 8C 8D 7H")
    watched.sup("extra")
    watched.deal("KS 9S QS KH 6C 2H 3H 4H 5H")
    assert watched.order() == _cards("AS 4C 9H 2C KD 5S 8C 8D 7H KS 9S QS KH 6C 2H 3H 4H 5H")
    assert watched.placed[-2:] == [_cards("6C"), _cards("2H 3H 4H 5H")]
    assert len(watched.order()) == watched.drawn()


def test_an_order_read_from_a_rounds_end_places_an_extra_pulled_with_its_last_card() -> None:
    """Hand-written: the feed begins after round 7's result (a restart); 6S came out with its
    last card and is round 8's burn with 7C."""
    order = ShoeOrder(1)
    order.feed({"type": "card.extra", "round": 7, "data": {"card": "6S"}})
    burned = order.feed({"type": "shoe.burned", "data": {"count": 2, "cards": ["6S", "7C"]}})
    assert _names(burned) == _cards("6S 7C")
    assert order.whole is False


def test_a_burn_the_shoe_reports_during_a_round_leaves_the_round_whole() -> None:
    """The shoe's own burn word mid-round: the burned card is placed at once, the round's
    cards (squeezed, not public yet) at its end."""
    watched = Watched(SQUEEZE)
    watched.load()
    watched.deal("AS 4C 9H 2C")
    watched.card("8D", burn=True)
    assert watched.order() == _cards("AS 4C 8D")
    watched.deal("KD 5S")
    watched.reveal()
    assert watched.order() == _cards("AS 4C 8D 9H 2C KD 5S")


def test_an_extra_names_the_card_that_left_the_round() -> None:
    """Hand-written: the extra is the round's card of its name, wherever it lies; one the
    round never had is placed where it came out."""
    order = ShoeOrder(1)
    order.feed({"type": "round.started", "round": 1, "data": {}})
    order.feed({"type": "card.dealt", "data": {"position": "P1", "card": "9H"}})
    order.feed({"type": "card.dealt", "data": {"position": "B1", "card": "2C"}})
    order.feed({"type": "card.extra", "data": {"card": "9H"}})
    order.feed({"type": "card.extra", "data": {"card": "5D"}})
    order.feed({"type": "card.dealt", "data": {"position": "P1", "card": "KS"}})
    order.feed({"type": "card.dealt", "data": {"position": None, "card": "3S"}})
    order.feed({"type": "card.dealt", "data": {"position": None, "card": "4S"}})
    placed = order.feed({"type": "round.voided", "round": 1, "data": {}})
    assert _names(placed) == _cards("9H 2C 5D KS 3S 4S")
    # Two of one name out: each its own, and the positions dealt again are new cards.
    order.feed({"type": "round.started", "round": 2, "data": {}})
    for position in ("P1", "B1"):
        order.feed({"type": "card.dealt", "data": {"position": position, "card": "9H"}})
    for _ in range(2):
        order.feed({"type": "card.extra", "data": {"card": "9H"}})
    order.feed({"type": "card.dealt", "data": {"position": "P1", "card": "KS"}})
    order.feed({"type": "card.dealt", "data": {"position": "B1", "card": "2C"}})
    placed = order.feed({"type": "round.voided", "round": 2, "data": {}})
    assert _names(placed) == _cards("9H 9H KS 2C")
    # Round 3's burn is the two of them: placed already, neither again.
    assert order.feed({"type": "shoe.burned", "data": {"count": 2, "cards": ["9H", "9H"]}}) == []


def test_a_card_pulled_with_the_last_card_and_no_burn_after_is_placed_at_the_next_round() -> None:
    """Events of a table whose next round came without a burn (hand-written)."""
    order = ShoeOrder(1)
    order.feed({"type": "shoe.shuffled", "data": {}})
    order.feed({"type": "round.started", "round": 1, "data": {}})
    for position, card in (("P1", "9H"), ("B1", "2C"), ("P2", "KD"), ("B2", "5S")):
        order.feed({"type": "card.dealt", "data": {"position": position, "card": card}})
    order.feed({"type": "round.result", "round": 1, "data": {}})
    assert order.feed({"type": "card.extra", "round": 1, "data": {"card": "6S"}}) == []
    assert _names(order.feed({"type": "round.started", "round": 2, "data": {}})) == ["6S"]
    assert order.feed({"type": "shoe.ended", "data": {}}) == []
    assert _names(order.cards) == _cards("9H 2C KD 5S 6S")


def test_cards_beyond_a_round_laid_out_again_are_extras_in_their_place() -> None:
    """P1 corrected to 9H makes a natural: the P3 already dealt (4C) leaves the round."""
    watched = Watched()
    watched.load()
    watched.deal("AS 4C 2H 3C KD 2S 4C")
    watched.sup("correct", position="P1", card="9H")
    watched.deal("5H 6H 4H 2H")
    assert watched.order() == _cards("AS 4C 9H 3C KD 2S 4C 5H 6H 4H 2H")
    assert len(watched.order()) == watched.drawn()


def test_squeezed_cards_are_named_at_their_reveal_and_never_before() -> None:
    watched = Watched(SQUEEZE)
    watched.load()
    watched.deal("AS 4C 2H 3C KD 2S")
    watched.reveal()
    watched.deal("4C")
    assert watched.order() == _cards("AS 4C")
    watched.reveal()
    watched.deal("9D")
    watched.reveal()
    assert watched.order() == _cards("AS 4C 2H 3C KD 2S 4C 9D")


def test_a_squeezed_card_taken_out_unrevealed_is_placed_once_unnamed() -> None:
    """R15: the extra is never named, nor by its burn: one place, None."""
    watched = Watched(SQUEEZE)
    watched.load()
    watched.deal("AS 4C 2H 3C KD 2S 5C")  # 5C waits behind the squeeze
    watched.sup("extra")  # 2S, hidden, out: 5C is B2
    watched.reveal()
    watched.deal("4C 9D 5H 6H")
    watched.reveal()
    assert watched.order() == _cards("AS 4C 2H 3C KD - 5C 4C 9D 5H 6H")
    assert len(watched.order()) == watched.drawn()


def test_a_result_names_a_squeezed_card_no_reveal_named() -> None:
    """Hand-written: the result's hands are public, so they name what no reveal did; a
    damaged or missing name stays unseen, and a reveal of nothing keeps what was known."""
    order = ShoeOrder(1)
    order.feed({"type": "round.started", "round": 4, "data": {}})
    for position in ("P1", "B1", "P2", "B2", "P3"):
        order.feed({"type": "card.dealt", "data": {"position": position, "card": None}})
    order.feed({"type": "card.revealed", "data": {"position": "B1", "card": "3C"}})
    order.feed({"type": "card.revealed", "data": {"position": "B1", "card": "ZZ"}})
    order.feed({"type": "card.revealed", "data": {"position": "B3", "card": "7C"}})
    placed = order.feed(
        {
            "type": "round.result",
            "round": 4,
            "data": {"player": ["9H", 7, "4C"], "banker": ["8D", "KD"]},
        }
    )
    assert _names(placed) == ["9H", "3C", None, "KD", "4C"]
    assert order.last_round == 4


def test_a_voided_round_is_placed_as_dealt_and_the_shoes_end_places_a_round_cut_short() -> None:
    order = ShoeOrder(3)
    order.feed({"type": "round.started", "round": 1, "data": {}})
    order.feed({"type": "card.dealt", "data": {"position": "P1", "card": "9H"}})
    order.feed({"type": "card.dealt", "data": {"position": "B1", "card": "bad"}})
    assert _names(order.feed({"type": "round.voided", "round": 1, "data": {}})) == ["9H", None]
    order.feed({"type": "round.started", "round": "2", "data": {}})
    order.feed({"type": "card.dealt", "data": {"position": "P1", "card": "2C"}})
    assert _names(order.feed({"type": "shoe.ended", "data": {}})) == ["2C"]
    assert (order.last_round, order.ended) == (1, True)


def test_a_burn_without_its_cards_named_places_them_unseen() -> None:
    """Hand-written: a burn that names fewer cards than its count was burned face down."""
    order = ShoeOrder(1)
    burned = order.feed({"type": "shoe.burned", "data": {"count": 3, "cards": ["AS"]}})
    assert _names(burned) == ["AS", None, None]
    assert _names(order.feed({"type": "shoe.burned", "data": {"count": 1, "cards": []}})) == [None]
    assert order.feed({"type": "shoe.burned", "data": {"count": "2"}}) == []
    assert _names(order.feed({"type": "shoe.burned", "data": {"count": 1, "cards": ["2D"]}})) == [
        "2D"
    ]
    assert _names(order.feed({"type": "shoe.burned"})) == []


def test_a_burn_of_an_extra_already_placed_is_not_padded() -> None:
    """The extra's burn names it: counted, not placed again, and no unseen card added."""
    order = ShoeOrder(1)
    order.feed({"type": "round.started", "round": 1, "data": {}})
    order.feed({"type": "card.dealt", "data": {"position": "P1", "card": "9H"}})
    order.feed({"type": "card.extra", "data": {"card": "9H"}})
    order.feed({"type": "round.voided", "round": 1, "data": {}})
    assert order.feed({"type": "shoe.burned", "data": {"count": 2, "cards": ["9H"]}}) == []
    assert _names(order.feed({"type": "shoe.burned", "data": {"count": 1, "cards": ["9H"]}})) == [
        "9H"
    ]
    assert _names(order.cards) == ["9H", "9H"]


def test_a_shoe_read_from_its_middle_is_not_whole() -> None:
    order = ShoeOrder(2)
    order.feed({"type": "shoe.burned", "data": {"count": 1, "cards": ["AS"]}})
    order.feed({"type": "shoe.shuffled", "data": {}})
    assert order.whole is False
    fresh = ShoeOrder(2)
    fresh.feed({"type": "shoe.shuffled", "data": {}})
    fresh.feed({"type": "shoe.shuffled", "data": {}})
    assert fresh.whole is True


# ---------------------------------------------------------------------------- RFID tags

TAGGED = "AS 4C 9H 2C KD 5S 7H KS 9S QS KH 2H 3H 4H 5H"


def test_each_placed_card_gets_its_tag_and_an_extra_keeps_the_order_in_step() -> None:
    watched = Watched(TableConfig(insurance=False, card_tags=True))
    watched.load()
    names = TAGGED.split()
    for index, name in enumerate(names):
        watched.card(name, uid=f"T{index:02d}")
        if name == "7H":
            watched.sup("extra")
    order = watched.analyst.orders[1]
    assert _names(order.cards) == _cards(" ".join(names))
    assert order.uids == [f"T{index:02d}" for index in range(len(names))]


def test_a_tag_is_taken_only_for_the_card_the_table_named_at_that_place() -> None:
    order = ShoeOrder(1)
    tags = [
        {"seq": 1, "card": "AS", "uid": "T01"},
        {"seq": 2, "card": "5D", "uid": "T02"},  # the order has 4C there
        {"seq": 3, "card": "KD", "uid": 3},  # no uid: not a tag
        {"seq": "4", "card": "QS", "uid": "T04"},
        "T05",
        {"seq": 5, "card": "JH", "uid": "T05"},
    ]
    order.feed({"type": "surveillance.card_tags", "data": {"cards": tags}})
    order.feed({"type": "shoe.burned", "data": {"count": 5, "cards": ["AS", "4C", "KD", "QS"]}})
    assert order.uids == ["T01", None, None, None, None]
    order.feed({"type": "surveillance.card_tags", "data": {}})
    order.feed({"type": "surveillance.card_tags", "data": {"cards": [{"seq": 6, "uid": "T6"}]}})
    order.feed({"type": "shoe.burned", "data": {"count": 1, "cards": [None]}})
    assert order.uids[5:] == ["T6"]  # an unseen card, tagged as unseen


# ------------------------------------------------------------------ the analyst's requests

FIRST = "AS 4C 9H 2C KD 5S 7H 8C 3D 6S QH JD 2D 4S 5H 6C 7D 8D 9C TH"
SECOND = "AS 4C 2H 3H 9H 2C KD 5S 7H 8C 3D 6S QH JD 2S 3S 4D 5D"


@pytest.fixture
def two_shoes() -> Watched:
    watched = Watched()
    watched.load()
    watched.deal(FIRST)
    watched.sup("change_shoe")
    watched.load()
    watched.deal(SECOND)
    watched.sup("change_shoe")
    return watched


def test_findings_are_due_after_each_burn_and_round_of_a_shoe_after_one_read_whole(
    two_shoes: Watched,
) -> None:
    """None for the first shoe (nothing to hold it against); the second's after its burn,
    each round and at its end, each request naming its shoe, round and seq."""
    heads = [
        {key: request[key] for key in ("cmd", "shoe", "against", "round", "after_seq", "final")}
        for request in two_shoes.requests
    ]
    assert heads == [
        {"cmd": "shuffle_report", "shoe": 2, "against": 1, "round": round_number,
         "after_seq": seq, "final": final}
        for round_number, seq, final in ((0, 32, False), (1, 39, False), (2, 47, False),
                                         (3, 54, False), (3, 56, True))
    ]  # fmt: skip
    reports = [request["report"] for request in two_shoes.requests]
    assert [report["cards_compared"] for report in reports] == [2, 7, 13, 18, 18]
    assert [report["verdict"] for report in reports] == ["fair", "fair"] + ["unshuffled"] * 3
    assert all((report["shoe"], report["against"]) == (2, 1) for report in reports)


def test_each_request_sends_a_slug_as_it_stands_and_its_end_once(two_shoes: Watched) -> None:
    """9H .. JD repeat the first shoe's cards 3 .. 12 at the second's 5 .. 14."""
    notices = [request["notices"] for request in two_shoes.requests]
    following = _cards("JD 2D 4S 5H 6C 7D 8D 9C")
    slug = {"length": 9, "this": [5, 13], "previous": [3, 11], "next": following}
    assert notices[:2] == [[], []]
    assert notices[2] == [{"kind": "slug", "card": 8, "slug": slug}]
    ended = {**slug, "length": 10, "this": [5, 14], "previous": [3, 12]}
    ended["next"] = _cards("2D 4S 5H 6C 7D 8D 9C TH")
    assert notices[3] == [{"kind": "slug_ended", "card": 15, "slug": ended}]
    assert notices[4] == []
    lives = [request["live"] for request in two_shoes.requests]
    assert lives == [None, None, {"slug": slug}, None, None]


def test_the_analyst_forgets_shoes_before_the_previous_one(two_shoes: Watched) -> None:
    analyst = two_shoes.analyst
    assert (sorted(analyst.orders), sorted(analyst.watches)) == ([1, 2], [2])
    assert analyst.request() is None  # nothing due
    analyst.feed({"type": "shoe.shuffled", "shoe": 3, "seq": 57, "data": {}})
    assert (sorted(analyst.orders), sorted(analyst.watches)) == ([2, 3], [2])
    analyst.feed({"type": "shoe.shuffled", "shoe": 5, "seq": 58, "data": {}})
    assert (sorted(analyst.orders), sorted(analyst.watches)) == ([5], [])


def _events(shoe: int, cards: str, first_seq: int) -> list[dict[str, Any]]:
    """A shoe's events as a table sends them: shuffled, a burn of every card, ended."""
    names = cards.split()
    return [
        {"type": "shoe.shuffled", "shoe": shoe, "seq": first_seq, "data": {}},
        {"type": "shoe.burned", "shoe": shoe, "seq": first_seq + 1,
         "data": {"count": len(names), "cards": names}},
        {"type": "shoe.ended", "shoe": shoe, "seq": first_seq + 2, "data": {}},
    ]  # fmt: skip


def test_findings_not_sent_when_a_newer_shoe_is_due_are_dropped() -> None:
    analyst = ShuffleAnalyst(8)
    for event in _events(1, FIRST, 1) + _events(2, FIRST, 4)[:2]:
        analyst.feed(event)
    assert analyst.due == 2
    pending = list(analyst.pending)
    assert pending  # the repeated first shoe: a slug
    for event in _events(2, FIRST, 4)[2:] + _events(3, SECOND, 7)[:2]:
        analyst.feed(event)
    request = analyst.request()
    assert request is not None
    assert (request["shoe"], request["final"], request["after_seq"]) == (3, False, 8)
    # Shoe 2's slug (its first four cards) is too late now: only shoe 3's, raised and ended
    # in its burn of every card.
    assert [(notice["kind"], notice["slug"]["this"]) for notice in request["notices"]] == [
        ("slug", [5, 8]),
        ("slug_ended", [5, 14]),
    ]
    assert [notice.slug.this for notice in pending] == [(1, 4)]
    assert request["live"] is None


def test_events_of_no_shoe_and_the_tables_own_surveillance_events_are_not_read() -> None:
    analyst = ShuffleAnalyst(8)
    analyst.feed({"type": "shoe.burned", "shoe": None, "data": {"count": 1, "cards": ["AS"]}})
    analyst.feed({"type": "shoe.burned", "shoe": "1", "data": {"count": 1, "cards": ["AS"]}})
    assert analyst.orders == {}
    analyst.feed({"type": "surveillance.slug", "shoe": 1, "data": {}})
    assert analyst.orders == {}
    analyst.feed({"shoe": 1, "data": {}})  # no type: read, nothing placed
    analyst.feed({"type": "surveillance.card_tags", "shoe": 1,
                  "data": {"cards": [{"seq": 1, "card": "AS", "uid": "T1"}]}})  # fmt: skip
    analyst.feed({"type": "shoe.burned", "shoe": 1, "seq": 3,
                  "data": {"count": 1, "cards": ["AS"]}})  # fmt: skip
    assert analyst.orders[1].uids == ["T1"]
    assert analyst.due is None  # no shoe before it: nothing to hold it against


def test_findings_due_for_a_shoe_forgotten_since_are_not_sent() -> None:
    """The companion missed shoe 3 (a restart): shoe 4 has nothing to be held against, and
    shoe 2's findings, not asked for yet, are gone with it."""
    analyst = ShuffleAnalyst(8)
    for event in _events(1, FIRST, 1) + _events(2, FIRST, 4)[:2]:
        analyst.feed(event)
    assert analyst.due == 2
    analyst.feed(_events(4, SECOND, 20)[0])
    assert (sorted(analyst.orders), analyst.watches) == ([4], {})
    assert analyst.request() is None


def test_the_deck_count_sets_the_thresholds() -> None:
    """Six decks: the reports of a 6-deck watch, not of the 8-deck default."""
    events = _events(1, FIRST, 1) + _events(2, FIRST, 4)
    reports = {}
    for decks in (6, 8):
        analyst = ShuffleAnalyst(decks)
        for event in events:
            analyst.feed(event)
        request = analyst.request()
        assert request is not None
        reports[decks] = request["report"]
    watch = ShuffleWatch([parse_card(name) for name in FIRST.split()], decks=6)
    watch.feed_many([parse_card(name) for name in FIRST.split()])
    assert reports[6] == watch.report(2, 1).to_json()
    assert reports[6]["tests"] != reports[8]["tests"]


def test_a_shoe_whose_previous_was_not_read_whole_gets_no_findings() -> None:
    analyst = ShuffleAnalyst(8)
    events = _events(1, FIRST, 1)
    for event in [events[1], events[0], events[2], *_events(2, FIRST, 4)]:
        analyst.feed(event)
    assert analyst.watches == {}
    assert analyst.request() is None
    empty = ShuffleAnalyst(8)  # read whole, but no card: nothing to hold against
    for event in [events[0], events[2], *_events(2, FIRST, 4)]:
        empty.feed(event)
    assert empty.watches == {}


def test_an_event_without_a_seq_keeps_the_last_one() -> None:
    analyst = ShuffleAnalyst(8)
    for event in _events(1, FIRST, 1) + _events(2, SECOND, 4)[:2]:
        analyst.feed(event)
    analyst.feed({"type": "shoe.ended", "shoe": 2, "data": {}})
    request = analyst.request()
    assert request is not None
    assert (request["after_seq"], request["final"]) == (5, True)


def test_tags_of_the_previous_shoe_make_the_identity_tests() -> None:
    analyst = ShuffleAnalyst(8)
    names = FIRST.split()
    tags = [{"seq": n + 1, "card": name, "uid": f"T{n}"} for n, name in enumerate(names)]
    analyst.feed({"type": "shoe.shuffled", "shoe": 1, "seq": 1, "data": {}})
    analyst.feed({"type": "surveillance.card_tags", "shoe": 1, "seq": 2, "data": {"cards": tags}})
    for event in _events(1, FIRST, 2)[1:] + _events(2, FIRST, 5)[:2]:
        analyst.feed(event)
    request = analyst.request()
    assert request is not None
    assert "successions" in request["report"]["tests"]
    untagged = ShuffleAnalyst(8)
    for event in _events(1, FIRST, 1) + _events(2, FIRST, 4)[:2]:
        untagged.feed(event)
    request = untagged.request()
    assert request is not None
    assert "successions" not in request["report"]["tests"]


def test_notices_wait_in_every_request_until_accepted() -> None:
    """The slug of shoe 2's first burn, the end of it at its second, not asked for between:
    both go in the next request, and again in the one after until accepted."""
    analyst = ShuffleAnalyst(8)
    for event in _events(1, FIRST, 1) + _events(2, FIRST, 4)[:2]:
        analyst.feed(event)
    analyst.feed({"type": "shoe.burned", "shoe": 2, "seq": 6, "data": {"cards": ["AS"]}})
    first = analyst.request()
    assert first is not None
    assert [notice["kind"] for notice in first["notices"]] == ["slug", "slug_ended"]
    assert (first["live"], first["final"], first["after_seq"]) == (None, False, 6)
    analyst.feed({"type": "shoe.ended", "shoe": 2, "seq": 7, "data": {}})
    last = analyst.request()
    assert last is not None
    assert (last["notices"], last["final"], last["after_seq"]) == (first["notices"], True, 7)
    assert analyst.request() is None  # nothing new is due


def test_accepted_drops_only_the_notices_sent() -> None:
    analyst = ShuffleAnalyst(8)
    for event in _events(1, FIRST, 1) + _events(2, FIRST, 4)[:2]:
        analyst.feed(event)
    pending = list(analyst.pending)
    assert len(pending) >= 1
    analyst.accepted({"notices": [{}]})
    assert analyst.pending == pending[1:]
    analyst.accepted({})
    assert analyst.pending == pending[1:]
