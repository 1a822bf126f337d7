"""The scoreboard's board folded from a shoe's events (game/board.py) and the page's messages
(service/scoreboard/stream.py): against the table's own road and counts for whole shoes dealt
by the perfect dealer, hand-built edge cases, and R15: nothing on the board or its stream
changes with an unrevealed card's identity."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import count
from typing import Any

import pytest
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.table import shuffled_shoe

from shoe_controller.game.board import Board, Change
from shoe_controller.game.roads import RoadError
from shoe_controller.service.scoreboard.stream import BoardStream
from shoe_controller.store.journal import StoredEvent
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import RANK_LETTERS, Card
from shoe_controller.vocab.events import Event
from shoe_controller.vocab.inputs import CardDrawn

CARD_CODE = re.compile(r'"[A2-9TJQK][SHDC]"')


def stored(events: Sequence[Event], seqs: Iterator[int]) -> list[StoredEvent]:
    """The table's events as the journal would hand them on (numbered)."""
    result = []
    for event in events:
        seq = next(seqs)
        data = event.to_json()
        row = (data["type"], data["at"], event.shoe, event.round, data["data"], seq)
        result.append(StoredEvent(seq, f"t:{seq}", *row))
    return result


def played(cards: Sequence[Card], config: TableConfig) -> Iterator[tuple[Table, list[StoredEvent]]]:
    """Each input of a perfectly dealt shoe applied: the table, and that input's events."""
    table = Table(config)
    seqs = count(1)
    for item in deal_shoe(cards, config, cut_after=len(cards) - 30).inputs:
        yield table, stored(table.apply(item), seqs)


@pytest.mark.parametrize("squeeze", [False, True])
def test_a_whole_shoe_folds_to_the_tables_road_and_counts(squeeze: bool) -> None:
    config = TableConfig(squeeze=squeeze)
    cards = shuffled_shoe(8, seed=11)
    board = Board(config.cards_in_shoe)
    checked = 0
    for table, events in played(cards, config):
        board.feed_all(events)
        view = table.view()
        if not view["shoe_open"]:
            continue
        assert board.result_entries() == view["road"]
        if view["burn"]["in_progress"]:
            continue  # shoe.burned comes when the burn is done
        stats = board.stats()
        assert stats["cards_dealt"] == view["cards_dealt"]
        assert stats["cards_left"] == view["cards_left"]
        hidden = sum(
            card == "hidden" for card in ((view["round"] or {}).get("cards") or {}).values()
        )
        assert stats["cards_unknown"] == hidden
        # Only public cards are taken off their rank: the shoe's first cards, less hidden ones.
        out = cards[: view["cards_dealt"]]
        secret = Counter(str(card)[0] for card in out[len(out) - hidden :]) if hidden else Counter()
        left = {rank: 32 - sum(str(card)[0] == rank for card in out) for rank in RANK_LETTERS}
        assert stats["cards_left_by_rank"] == {r: left[r] + secret[r] for r in RANK_LETTERS}
        checked += 1
    assert board.ended
    assert board.stats()["rounds"] > 60
    assert checked > 300


def test_the_boards_round_shows_cards_as_dealt_and_hides_squeezed_ones() -> None:
    config = TableConfig(squeeze=True)
    board = Board(config.cards_in_shoe)
    seen_hidden = seen_revealed = False
    for table, events in played(shuffled_shoe(8, seed=3), config):
        board.feed_all(events)
        round_ = board.round_json()
        view = table.view()["round"]
        if round_ is None or view is None or view["number"] != round_["number"]:
            continue
        shown = {p: (c if c is not None else "hidden") for p, c in round_["cards"].items()}
        assert shown == view["cards"]
        if "hidden" in shown.values():
            seen_hidden = True
            assert round_["player_total"] is None or all(
                shown[p] != "hidden" for p in shown if p.startswith("P")
            )
        elif len(shown) >= 4:
            seen_revealed = True
    assert seen_hidden
    assert seen_revealed


def squeezed_shoe(swap: bool) -> list[Card]:
    """A shoe; with `swap`, round 3's first card (squeezed) changes identity with a card that
    is never dealt (beyond the cut card), so the rounds before its reveal are the same."""
    cards = shuffled_shoe(8, seed=21)
    config = TableConfig(squeeze=True)
    table = Table(config)
    drawn = 0  # index in `cards` of the next card to leave the shoe
    for item in deal_shoe(cards, config, cut_after=len(cards) - 30).inputs:
        events = table.apply(item)
        if any(e.type == "card.dealt" and e.round == 3 for e in events):
            break
        drawn += isinstance(item, CardDrawn)
    if swap:
        last = next(i for i in range(len(cards) - 1, 0, -1) if cards[i].rank != cards[drawn].rank)
        cards[drawn], cards[last] = cards[last], cards[drawn]
    return cards


def messages_until_reveal(cards: list[Card]) -> list[dict[str, Any]]:
    """Every stream message of the shoe until round 3's cards are revealed, decoded."""
    config = TableConfig(squeeze=True)
    stream = BoardStream(Board(config.cards_in_shoe), "07")
    messages = [stream.snapshot()]
    for _, events in played(cards, config):
        if any(e.type == "card.revealed" and e.round == 3 for e in events):
            break
        message = stream.feed(events)
        if message is not None:
            messages.append(message)
    decoded = []
    for message in messages:
        lines = dict(line.split(": ", 1) for line in message.decode().strip().splitlines())
        decoded.append(json.loads(lines["data"]))
    return decoded


def test_r15_nothing_on_the_stream_changes_with_an_unrevealed_cards_identity() -> None:
    plain, swapped = squeezed_shoe(swap=False), squeezed_shoe(swap=True)
    assert plain != swapped
    one, other = messages_until_reveal(plain), messages_until_reveal(swapped)
    assert len(one) > 15
    # The same bytes but for the inputs' times (both shoes were dealt at the same times).
    assert one == other
    for message in one:
        cards = (message.get("round") or {}).get("cards") or {}
        rest = json.dumps({**message, "round": {**(message.get("round") or {}), "cards": {}}})
        assert not CARD_CODE.search(rest)  # no card anywhere but the round's own cards
        if message["round"] and message["round"]["number"] == 3:
            assert all(card is None for card in cards.values())


def event(seq: int, type_: str, shoe: int | None, round_: int | None, **data: Any) -> StoredEvent:
    return StoredEvent(seq, f"t:{seq}", type_, "2027-01-15T08:00:00.000000Z", shoe, round_,
                       data, seq)  # fmt: skip


def result(seq: int, shoe: int, number: int, winner: str, **extra: Any) -> StoredEvent:
    player = extra.pop("player", ["9H", "TC"])
    banker = extra.pop("banker", ["2S", "3D"])
    data = {"winner": winner, "player": player, "banker": banker, "player_total": 9,
            "banker_total": 5, "natural": "player", "player_pair": False, "banker_pair": False,
            **extra}  # fmt: skip
    return event(seq, "round.result", shoe, number, **data)


def test_trial_rounds_stay_off_the_road_but_their_cards_count() -> None:
    board = Board(416)
    burned = event(1, "shoe.burned", 1, None, first_card="3C", count=4,
                   cards=["3C", "4C", "5C", "6C"])  # fmt: skip
    assert board.feed(burned) == Change.ROADS  # the board's first shoe: drawn whole
    assert board.feed(event(2, "round.started", 1, 1, trial=True)) == Change.ROUND
    assert board.feed(event(3, "card.dealt", 1, 1, position="P1", card="9H")) == Change.ROUND
    assert board.feed(result(4, 1, 1, "player", player=["9H", "TC"])) == Change.ROUND
    assert board.results == []
    shown = board.round_json()
    assert shown is not None
    assert shown["trial"] is True
    stats = board.stats()
    assert (stats["rounds"], stats["cards_dealt"], stats["cards_left"]) == (0, 8, 408)
    assert stats["cards_left_by_rank"]["3"] == 30  # 3♣ burned, 3♦ in the banker's hand
    assert stats["cards_left_by_rank"]["T"] == 31
    assert board.feed(event(5, "round.started", 1, 2, trial=False)) == Change.ROUND
    assert board.feed(result(6, 1, 2, "banker")) == Change.ROADS
    assert [r.round for r in board.results] == [2]


def test_a_round_voided_after_its_result_leaves_the_road() -> None:
    board = Board(416)
    board.feed_all([event(1, "round.started", 1, 1), result(2, 1, 1, "banker")])
    assert len(board.results) == 1
    # R10.4: too many extra cards after the result; the round is withdrawn with its cards.
    change = board.feed(event(3, "round.voided", 1, 1, reason="extra_cards",
                              cards=["9H", "2S", "TC", "3D"]))  # fmt: skip
    assert change == Change.ROADS
    assert board.results == []
    assert board.stats()["cards_dealt"] == 4
    assert board.round_json()["voided"] == "extra_cards"
    # A void before any result changes no road.
    board.feed(event(4, "round.started", 1, 2))
    assert (
        board.feed(event(5, "round.voided", 1, 2, reason="misdeal", cards=[None])) == Change.ROUND
    )
    assert board.stats()["cards_unknown"] == 1


def test_the_board_follows_the_table_from_shoe_to_shoe() -> None:
    board = Board(416)
    assert board.feed(event(1, "controller.started", None, None, version="x")) == Change.NOTHING
    board.feed_all([event(2, "round.started", 4, 1), result(3, 4, 1, "tie")])
    assert (board.shoe, len(board.results)) == (4, 1)
    # A batch shuffler shuffles shoe 5 while 4 is dealt: the board stays on shoe 4.
    assert board.feed(event(4, "shoe.shuffled", 5, None, total=416, ok=True)) == Change.NOTHING
    assert board.shoe == 4
    # Other events carry the table's shoe number too (a restart between two shoes says
    # controller.started for the next one): they move nothing.
    for kind in ("controller.started", "device.connected", "procedure.alert", "shoe.cut_card"):
        assert board.feed(event(4, kind, 5, None)) == Change.NOTHING
    assert (board.shoe, len(board.results)) == (4, 1)
    assert board.feed(event(5, "shoe.ended", 4, None, cards_dealt=330, rounds=1)) == Change.ROUND
    assert board.ended
    assert board.stats()["cards_dealt"] == 330  # the table's own count
    # After the end, the next shoe's shuffle moves the board on, empty.
    assert board.feed(event(6, "shoe.shuffled", 5, None, total=312)) == Change.ROADS
    assert (board.shoe, board.ended, board.results) == (5, False, [])
    assert board.stats()["cards_in_shoe"] == 312
    assert board.feed(event(7, "round.started", 4, 9)) == Change.NOTHING  # an older shoe
    # Dealing of a later shoe moves it on even without a shuffle seen.
    assert board.feed(event(8, "shoe.burned", 6, None, count=2, cards=[None, "AS"])) == Change.ROADS
    assert board.shoe == 6
    assert board.stats()["cards_unknown"] == 1
    assert board.seq == 8


def test_a_shuffler_dealer_has_no_cards_left_to_show() -> None:
    board = Board(None)
    board.feed_all([event(1, "round.started", 1, 1), result(2, 1, 1, "player")])
    stats = board.stats()
    assert (stats["cards_left"], stats["cards_left_by_rank"], stats["cards_in_shoe"]) == (
        None, None, None,
    )  # fmt: skip
    board.feed(event(3, "shoe.shuffled", 1, None, total=416))
    assert board.stats()["cards_in_shoe"] is None


def test_a_stored_result_the_road_cannot_take_is_a_clear_error() -> None:
    board = Board(416)
    with pytest.raises(RoadError, match="banker_pair must be true or false"):
        board.feed(result(1, 1, 1, "banker", banker_pair="false"))


def test_to_json_is_the_documented_board() -> None:
    board = Board(416)
    board.feed_all([event(1, "round.started", 2, 1), result(2, 2, 1, "banker")])
    data = board.to_json()
    assert list(data) == [
        "shoe", "seq", "ended", "results", "rows", "summary", "bead_plate", "big_road",
        "big_eye_boy", "small_road", "cockroach_pig", "ask", "stats", "round",
    ]  # fmt: skip
    assert data["results"] == [{"round": 1, "winner": "banker", "player_pair": False,
                                "banker_pair": False, "natural": "player"}]  # fmt: skip
    assert list(data["stats"]) == [
        "rounds", "banker", "player", "tie", "banker_pair", "player_pair", "naturals",
        "cards_in_shoe", "cards_dealt", "cards_left", "cards_unknown", "cards_left_by_rank",
    ]  # fmt: skip
    assert data["round"] == {
        "number": 1, "trial": False, "cards": {"P1": "9H", "B1": "2S", "P2": "TC", "B2": "3D"},
        "player_total": 9, "banker_total": 5, "winner": "banker", "natural": "player",
        "voided": None,
    }  # fmt: skip


def test_the_stream_sends_the_board_on_a_result_and_the_round_on_a_card() -> None:
    stream = BoardStream(Board(416), "07")
    first = stream.snapshot().decode()
    assert first.startswith("id: 0\nevent: board\ndata: {")
    assert stream.feed([event(1, "controller.started", None, None)]) is None
    shoe = stream.feed([event(2, "shoe.shuffled", 1, None, total=416)])  # a new shoe: all
    assert shoe is not None
    assert shoe.startswith(b"id: 2\nevent: board\n")
    card = stream.feed([event(3, "round.started", 1, 1), event(4, "card.dealt", 1, 1,
                        position="P1", card="9H")])  # fmt: skip
    assert card is not None
    assert card.startswith(b"id: 4\nevent: round\n")
    assert stream.feed([event(4, "card.dealt", 1, 1, position="P1", card="9H")]) is None  # seen
    board = stream.feed([result(5, 1, 1, "player")])
    assert board is not None
    assert board.startswith(b"id: 5\nevent: board\n")
    data = json.loads(board.decode().split("data: ", 1)[1])
    assert set(data["svg"]) == {"bead_plate", "big_road", "big_eye_boy", "small_road",
                                "cockroach_pig", "ask"}  # fmt: skip
    assert data["cells"] == {"bead_plate": 1, "big_road": 1, "big_eye_boy": 0, "small_road": 0,
                             "cockroach_pig": 0}  # fmt: skip
    assert data["svg"]["bead_plate"].count('class="cell ') == 1
    assert (data["table"], data["shoe"], data["seq"]) == ("07", 1, 5)
    assert stream.board_json()["results"][0]["winner"] == "player"
    assert stream.board_svg().startswith("<svg ")


def test_the_round_being_dealt_shows_each_hands_points_so_far() -> None:
    board = Board(416)
    board.feed_all([event(1, "round.started", 1, 1),
                    event(2, "card.dealt", 1, 1, position="P1", card="7H"),
                    event(3, "card.dealt", 1, 1, position="B1", card="9S"),
                    event(4, "card.dealt", 1, 1, position="P2", card="8C")])  # fmt: skip
    shown = board.round_json()
    assert shown is not None
    assert (shown["player_total"], shown["banker_total"]) == (5, 9)  # 15 and 9 points
    assert (shown["winner"], shown["natural"], shown["voided"]) == (None, None, None)
    # A hand not dealt yet, or with a card not named (R15), has no points to show.
    board.feed(event(5, "card.dealt", 1, 1, position="B2", card=None))
    shown = board.round_json()
    assert shown is not None
    assert (shown["player_total"], shown["banker_total"]) == (5, None)
    board.feed(event(6, "round.started", 1, 2))
    shown = board.round_json()
    assert shown is not None
    assert (shown["cards"], shown["player_total"], shown["banker_total"]) == ({}, None, None)


def test_a_voided_round_shows_every_card_it_took_in_order() -> None:
    board = Board(416)
    voided = event(3, "round.voided", 1, 1, reason="supervisor", cards=["7H", None, "KD"])
    board.feed_all([event(1, "round.started", 1, 1),
                    event(2, "card.dealt", 1, 1, position="P1", card="7H"), voided])  # fmt: skip
    shown = board.round_json()
    assert shown is not None
    assert shown["cards"] == {"#1": "7H", "#2": None, "#3": "KD"}
    assert (shown["voided"], shown["player_total"]) == ("supervisor", None)


def test_a_round_seen_only_from_its_cards_is_shown_with_its_number() -> None:
    # The board started reading after the round's round.started (a restart, a late page).
    board = Board(416)
    board.feed(event(1, "card.dealt", 1, 5, position="P1", card="7H"))
    shown = board.round_json()
    assert shown is not None
    assert (shown["number"], shown["cards"]) == (5, {"P1": "7H"})


def test_the_board_takes_the_tables_own_events_without_a_seq() -> None:
    config = TableConfig()
    table = Table(config)
    board = Board(config.cards_in_shoe)
    for item in deal_shoe(shuffled_shoe(8, seed=5), config, cut_after=300).inputs[:12]:
        board.feed_all(table.apply(item))
    assert board.seq == 0
    assert board.stats()["cards_dealt"] == table.view()["cards_dealt"]


def test_the_shoe_statistics_count_each_outcome() -> None:
    board = Board(416)
    winners = ["banker", "player", "player", "tie", "tie"]
    for number, winner in enumerate(winners, 1):
        natural = "player" if number == 2 else None
        board.feed_all([event(2 * number, "round.started", 1, number),
                        result(2 * number + 1, 1, number, winner, natural=natural)])  # fmt: skip
    stats = board.stats()
    assert (stats["rounds"], stats["banker"], stats["player"], stats["tie"]) == (5, 1, 2, 2)
    assert stats["naturals"] == 1
    assert board.to_json()["summary"] == board.roads()["summary"]


def test_the_cards_left_by_rank_are_whole_numbers_and_never_below_zero() -> None:
    board = Board(416)
    board.feed(event(1, "shoe.ended", 1, None, cards_dealt=416, rounds=70))
    stats = board.stats()
    assert (stats["cards_dealt"], stats["cards_left"]) == (416, 0)
    text = json.dumps(board.to_json()["stats"]["cards_left_by_rank"])
    assert text.startswith('{"A": 32, "2": 32')


def test_a_shoe_end_without_a_count_leaves_the_boards_own() -> None:
    board = Board(416)
    board.feed(event(1, "shoe.burned", 1, None, count=2, cards=["AS", "4C"]))
    board.feed(event(2, "shoe.ended", 1, None, cards_dealt="many", rounds=0))
    assert board.stats()["cards_dealt"] == 2


def test_the_burn_count_is_the_events_and_each_burn_adds_to_it() -> None:
    board = Board(416)
    # Burn cards the scanner missed are counted but not named; the count wins over the list.
    board.feed(event(1, "shoe.burned", 1, None, count=4, cards=["2S", "3S"]))
    assert board.stats()["cards_dealt"] == 4
    board.feed(event(2, "shoe.burned", 1, None, cards=["5H"]))  # no count: the cards listed
    assert board.stats()["cards_dealt"] == 5
    board.feed(event(3, "shoe.burned", 1, None, count=-1, cards=["6H", "7H"]))
    board.feed(event(4, "shoe.burned", 1, None, count=0, cards=["8H"]))
    stats = board.stats()
    assert (stats["cards_dealt"], stats["cards_unknown"]) == (7, 1)


def test_a_shuffle_gives_the_cards_in_the_shoe_when_it_has_any() -> None:
    board = Board(416)
    board.feed(event(1, "shoe.shuffled", 1, None, total=0, ok=True))
    assert board.stats()["cards_in_shoe"] == 416
    board = Board(416)
    board.feed(event(1, "shoe.shuffled", 1, None, total=1, ok=True))
    assert board.stats()["cards_in_shoe"] == 1


def test_a_result_with_a_hand_missing_shows_the_other() -> None:
    board = Board(416)
    board.feed_all([event(1, "round.started", 1, 1), result(2, 1, 1, "player", banker=None)])
    shown = board.round_json()
    assert shown is not None
    assert shown["cards"] == {"P1": "9H", "P2": "TC"}


def test_the_roads_are_drawn_with_the_boards_rows() -> None:
    board = Board(416, rows=3)
    for number in range(1, 6):
        board.feed_all([event(2 * number, "round.started", 1, number),
                        result(2 * number + 1, 1, number, "banker")])  # fmt: skip
    data = board.to_json()
    assert data["rows"] == 3
    assert max(cell["row"] for cell in data["big_road"]) == 2  # a dragon tail after 3 rows
