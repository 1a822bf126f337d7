"""The betting clock (table/betting.py): bets closed by the dealer's button or the
table server, a card before its time (R17, R10.1), the round's clock in the events, and the
recovery contract with betting inputs in the shoe."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.table import PUSH_API_FIELDS, ClockedTable, only, shuffled_shoe, types_of

from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.events import Event, EventType, iso_time
from shoe_controller.vocab.inputs import (
    BetsState,
    BettingChanged,
    Button,
    ButtonPressed,
    CardDrawn,
    ControllerStarted,
    PreviousShoe,
)

# What the round's clock adds to docs/spec-push-api.md's fields (docs/table.md "Betting").
CLOCK_FIELDS = {
    "round.started": {"bets_closed_at", "first_card_at", "server_round"},
    "round.result": {
        "bets_closed_at",
        "first_card_at",
        "last_card_at",
        "result_at",
        "server_round",
    },
    "round.voided": {"server_round"},
    "shoe.ended": {"opened_at", "first_round_at", "dealing_seconds"},
}
DOWNTIME_FIELDS = {"previous_shoe", "since", "opened_at", "until", "seconds", "shuffle_seconds"}
BETS_FIELDS = {"round", "server_round", "by", "source"}


def _no_more_bets(driver: ClockedTable) -> list[Event]:
    return driver.apply(ButtonPressed(driver.at(), "scanner", Button.NO_MORE_BETS))


def _server(driver: ClockedTable, state: str, shoe: int, number: int, nonce: str) -> list[Event]:
    return driver.apply(
        BettingChanged(driver.at(), BetsState(state), shoe, number, f"G-{number}", nonce, "srv")
    )


def _replayed(driver: ClockedTable, config: TableConfig) -> Table:
    """A fresh table given the journal's inputs of the open shoe (the recovery contract)."""
    shoe = min(shoe for shoe, _ in driver.inputs if shoe >= driver.table.shoe)
    table = Table(config, last_shoe=shoe - 1)
    for belongs, item in driver.inputs:
        if belongs >= shoe:
            table.apply(item)
    return table


def test_a_restart_between_bets_closed_and_the_first_card_deals_the_round() -> None:
    config = TableConfig(betting="server", insurance=False)
    driver = ClockedTable(config)
    driver.open_shoe()
    _server(driver, "closed", 1, 1, "n1")
    replayed = _replayed(driver, config)
    assert replayed.snapshot() == driver.table.snapshot()
    assert replayed.indicator == (5, 1)  # deal P1: the bets are closed
    replayed.apply(ControllerStarted(driver.at(), "0.1.0", 2, True))
    again = BettingChanged(driver.at(), BetsState.CLOSED, 1, 1, "G-1", "n1", "srv")
    assert [event.data["code"] for event in replayed.apply(again)] == ["repeated_message"]
    started = replayed.apply(CardDrawn(driver.at(), "scanner", parse_card("9H")))
    assert types_of(started) == ["round.started", "card.dealt"]
    assert started[0].data["bets_closed_at"] == "2027-01-15T08:00:04.000000Z"
    assert started[0].data["server_round"] == "G-1"


def test_a_replayed_shoe_gives_the_same_events_and_state() -> None:
    config = TableConfig(betting="server", early_card="hold", insurance=False)
    driver = ClockedTable(config)
    live: list[Event] = []
    live += driver.load() + driver.deal("AS 4C")
    live += _server(driver, "open", 1, 1, "n1")
    live += driver.card("9H")  # early: held
    live += _server(driver, "closed", 1, 1, "n2")  # late
    live += driver.sup("accept", reason="seen on the video")
    live += driver.deal("2C KD 5S")
    live += _server(driver, "closed", 1, 2, "n3") + _server(driver, "closed", 1, 2, "n3")
    table = Table(config)
    again = [event for _, item in driver.inputs for event in table.apply(item)]
    assert again == live
    assert table.snapshot() == driver.table.snapshot()
    assert "bets_closed_late" in [event.data.get("code") for event in live]
    assert live[-1].data["code"] == "repeated_message"


@pytest.mark.parametrize(
    ("betting", "close"),
    [("button", _no_more_bets), ("server", lambda d: _server(d, "closed", 1, 2, "x"))],
)
def test_the_indicator_shows_bets_open_then_deal(betting: str, close: object) -> None:
    driver = ClockedTable(TableConfig(betting=betting, insurance=False))
    driver.load()
    assert driver.table.indicator == (2, 1)  # the burn comes first
    driver.deal("AS 4C")
    assert driver.table.indicator == (7, 0)
    if betting == "button":
        _no_more_bets(driver)
    else:
        _server(driver, "closed", 1, 1, "c1")
    assert driver.table.indicator == (5, 1)
    assert driver.table.view()["betting"]["closed"] is True
    driver.deal("9H 2C KD 5S")
    assert driver.table.indicator == (7, 0)  # round 2's bets are open
    view = driver.table.view()["betting"]
    assert view == {
        "by": betting,
        "round": 2,
        "closed": False,
        "opened_at": None,
        "closed_at": None,
        "server_round": None,
    }
    close(driver)  # type: ignore[operator]
    assert driver.table.indicator == (5, 1)


def test_a_table_without_betting_shows_what_it_showed_and_refuses_the_new_inputs() -> None:
    driver = ClockedTable(TableConfig(insurance=False))
    driver.open_shoe()
    assert driver.table.indicator == (1, 0)
    assert driver.table.view()["betting"] is None
    for events in (_no_more_bets(driver), _server(driver, "closed", 1, 1, "n")):
        assert [event.data["code"] for event in events] == ["betting_off"]
    for action in ("accept", "dealer"):
        (refusal,) = driver.sup(action, id="D1") if action == "dealer" else driver.sup(action)
        assert "keeps no round clock" in refusal.data["text"]
    (unknown,) = driver.sup("bogus")
    assert "accept" not in unknown.data["text"]
    assert "dealer" not in unknown.data["text"]
    events = driver.deal("9H 2C KD 5S")
    assert set(events[0].data) == PUSH_API_FIELDS["round.started"]
    assert set(events[-1].data) == PUSH_API_FIELDS["round.result"]


def test_a_clock_without_betting_times_the_rounds_and_takes_dealers() -> None:
    driver = ClockedTable(TableConfig(clock=True, insurance=False))
    driver.open_shoe()
    assert driver.table.indicator == (1, 0)  # no bets to wait for
    (signed,) = driver.sup("dealer", id="D-07")
    assert signed.data["details"] == {"dealer": "D-07", "signed": "in"}
    (out,) = driver.sup("dealer", out=True)
    assert out.data["details"] == {"dealer": None, "signed": "out"}
    (refused,) = driver.sup("dealer")
    assert "give the dealer's id" in refused.data["text"]
    (bad,) = driver.sup("dealer", id="two words")
    assert bad.data["code"] == "command_refused"
    assert "letters, digits" in bad.data["text"]
    events = driver.deal("9H 2C KD 5S")
    assert types_of(events)[0] == "round.started"  # not early: this table takes no bets
    assert events[0].data["bets_closed_at"] is None
    result = events[-1].data
    assert result["first_card_at"] == "2027-01-15T08:00:08.000000Z"  # 9H, the 8th input
    assert result["last_card_at"] == result["result_at"] == "2027-01-15T08:00:11.000000Z"


def test_an_early_squeezed_card_is_not_named() -> None:
    driver = ClockedTable(TableConfig(betting="button", squeeze=True, insurance=False))
    driver.open_shoe()
    events = driver.card("QH")
    assert types_of(events) == ["round.started", "card.dealt", "procedure.alert"]
    assert events[1].data["card"] is None
    assert "QH" not in events[2].data["text"]
    assert "card #3" in events[2].data["text"]


def test_the_server_may_close_the_next_round_while_one_is_dealt() -> None:
    driver = ClockedTable(TableConfig(betting="server", insurance=False))
    driver.open_shoe()
    _server(driver, "closed", 1, 1, "a")
    driver.deal("2S 4D")
    (closed,) = _server(driver, "closed", 1, 2, "b")
    assert closed.round == 1  # said during round 1 ...
    assert closed.data["round"] == 2  # ... about round 2
    driver.deal("3C 5H")
    events = driver.deal("9H 2C KD 5S")
    assert "procedure.alert" not in types_of(events)  # round 2 was closed in time


def _check_clocked_event(event: Event) -> None:
    kind = str(event.type)
    if kind in ("bets.opened", "bets.closed"):
        assert set(event.data) == BETS_FIELDS
    elif kind == "shoe.downtime":
        assert set(event.data) == DOWNTIME_FIELDS
    else:
        assert set(event.data) == PUSH_API_FIELDS[kind] | CLOCK_FIELDS.get(kind, set()), event
    json.dumps(event.to_json())
    if event.type == EventType.PROCEDURE_ALERT:
        assert event.data["code"] not in ("early_card", "internal_error"), event.data


@settings(max_examples=12, deadline=None)
@given(
    betting=st.sampled_from(["button", "server"]),
    seed=st.integers(0, 2**32 - 1),
    squeeze=st.booleans(),
    trials=st.integers(0, 2),
)
def test_a_shoe_dealt_with_its_bets_closed_in_time_gives_the_rules_outcomes(
    betting: str, seed: int, squeeze: bool, trials: int
) -> None:
    config = TableConfig(betting=betting, squeeze=squeeze)
    cards = shuffled_shoe(config.decks, seed)
    shoe = deal_shoe(cards, config, cut_after=random.Random(seed).randint(300, 380),
                     trial_rounds=trials)  # fmt: skip
    table = Table(config)
    results = []
    for item in shoe.inputs:
        for event in table.apply(item):
            _check_clocked_event(event)
            if event.type == EventType.ROUND_RESULT:
                results.append(event)
                assert event.data["first_card_at"] <= event.data["last_card_at"]
                assert event.data["last_card_at"] <= event.data["result_at"]
                real = event.data["bets_closed_at"] is not None
                assert real != (len(results) <= trials)  # trial rounds take no bets
                named = event.data["server_round"] is not None
                assert named == (real and betting == "server")
    assert [event.data["winner"] for event in results] == [
        outcome.winner.value for outcome in shoe.outcomes
    ]


def test_the_next_shoes_inputs_alone_give_its_downtime() -> None:
    config = TableConfig(clock=True, insurance=False)
    driver = ClockedTable(config)
    driver.open_shoe()
    driver.deal("9H 2C KD 5S")
    driver.clock += 600
    (*_, ended) = driver.sup("change_shoe")
    assert ended.type == EventType.SHOE_ENDED
    assert ended.data["dealing_seconds"] == 604.0  # the first card (9H) to the change
    belongs, carried = driver.inputs[-1]
    assert (belongs, type(carried).__name__, carried.at) == (2, "PreviousShoe", driver.clock)
    driver.clock += 300
    live = driver.load() + driver.deal("AS 4C 9H 2C KD 5S")
    (downtime,) = [event for event in live if event.type == EventType.SHOE_DOWNTIME]
    assert downtime.data["seconds"] == 304.0  # the end to the next shoe's first round
    assert downtime.data["shuffle_seconds"] == 301.0  # the end to SHOE loaded
    assert types_of(live).index("shoe.downtime") + 1 == types_of(live).index("round.started")
    fresh = Table(config, last_shoe=1)  # what recovery does: shoe 2's inputs only
    again = [event for shoe, item in driver.inputs if shoe == 2 for event in fresh.apply(item)]
    assert again == live
    assert fresh.snapshot() == driver.table.snapshot()
    # Without the clock, nothing is carried and the events are docs/spec-push-api.md's.
    plain = ClockedTable(TableConfig(insurance=False))
    plain.open_shoe()
    plain.sup("change_shoe")
    assert [type(item).__name__ for _, item in plain.inputs][-1] == "SupervisorCommand"


@settings(max_examples=30, deadline=None)
@given(
    steps=st.lists(
        st.sampled_from(["card", "card", "card", "bets", "accept", "void", "restart"]),
        min_size=10,
        max_size=80,
    ),
    early_card=st.sampled_from(["hold", "void"]),
    seed=st.integers(0, 2**16),
)
def test_cards_and_bets_in_any_order_never_break_the_table(
    steps: list[str], early_card: str, seed: int
) -> None:
    config = TableConfig(betting="button", early_card=early_card, insurance=False)
    driver = ClockedTable(config)
    driver.open_shoe()
    cards = iter(shuffled_shoe(8, seed)[2:])
    for step in steps:
        if step == "card":
            events = driver.card(str(next(cards)))
        elif step == "bets":
            events = _no_more_bets(driver)
        elif step == "restart":
            replayed = _replayed(driver, config)
            assert replayed.snapshot() == driver.table.snapshot()
            continue
        else:
            events = driver.sup(step)
        for event in events:
            if event.type == EventType.PROCEDURE_ALERT:
                assert event.data["code"] != "internal_error", event.data["text"]
            elif event.type not in (EventType.SUPERVISOR_ACTION, EventType.SECURITY_ALERT):
                _check_clocked_event(event)
        holds = [hold["code"] for hold in driver.table.view()["holds"]]
        assert holds in ([], ["early_card"])  # nothing else holds a correctly read shoe
        if early_card == "void":
            assert holds == []  # the studio's rule: never a supervisor asked
        if holds:
            assert driver.table.indicator == (3, 0)


def _at(driver: ClockedTable) -> str:
    return iso_time(driver.clock)


@pytest.mark.parametrize(
    ("opened_as", "closed_as", "kept"),
    [("G-1", "G-1", "G-1"), (None, "G-9", "G-9"), ("G-1", "G-2", "G-1")],
    ids=["same-name", "named-late", "first-name-kept"],
)
def test_bets_closed_after_the_first_card_are_noted_for_the_supervisor(
    opened_as: str | None, closed_as: str, kept: str
) -> None:
    """The server closes round 1's bets after its first card came (held, early_card = hold):
    the closing is journaled for round 1, the supervisor told, and the round keeps its time."""
    driver = ClockedTable(TableConfig(betting="server", early_card="hold", insurance=False))
    driver.open_shoe()
    if opened_as is not None:
        driver.apply(BettingChanged(driver.at(), BetsState.OPEN, 1, 1, opened_as, "n1", "srv"))
    early = driver.card("9H")
    assert types_of(early) == ["round.started", "card.dealt", "procedure.alert"]
    late = driver.apply(
        BettingChanged(driver.at(), BetsState.CLOSED, 1, 1, closed_as, "n2", "srv-2")
    )
    closed_at = _at(driver)
    assert [(str(event.type), event.round, event.data) for event in late] == [
        ("bets.closed", 1, {"round": 1, "server_round": kept, "by": "server", "source": "srv-2"}),
        (
            "procedure.alert",
            1,
            {
                "code": "bets_closed_late",
                "text": "the server closed the bets of round 1 after its first card",
                "needs_supervisor": False,
            },
        ),
    ]
    assert [hold["code"] for hold in driver.table.view()["holds"]] == ["early_card"]  # stays
    driver.sup("accept", reason="seen on the video")
    result = driver.deal("2C KD 5S")[-1]
    assert result.type == EventType.ROUND_RESULT
    assert (result.data["bets_closed_at"], result.data["server_round"]) == (closed_at, kept)


def test_a_betting_input_the_table_does_not_take_says_which_mode_it_is_in() -> None:
    texts = {}
    for betting in ("none", "button", "server"):
        driver = ClockedTable(TableConfig(betting=betting, insurance=False))
        driver.open_shoe()
        for events in (_no_more_bets(driver), _server(driver, "closed", 1, 1, "n")):
            texts.update({
                (betting, event.data["text"].split(" refused")[0]): event.data["text"]
                for event in events
                if event.data.get("code") == "betting_off"
            })  # fmt: skip
    assert texts == {
        ("none", "the dealer's NO_MORE_BETS button"): "the dealer's NO_MORE_BETS button refused:"
        " this table's betting = 'none' (docs/table.md 'Betting')",
        ("none", "the table server's betting messages"): "the table server's betting messages"
        " refused: this table's betting = 'none' (docs/table.md 'Betting')",
        ("button", "the table server's betting messages"): "the table server's betting messages"
        " refused: this table's betting = 'button' (docs/table.md 'Betting')",
        ("server", "the dealer's NO_MORE_BETS button"): "the dealer's NO_MORE_BETS button refused:"
        " this table's betting = 'server' (docs/table.md 'Betting')",
    }


def test_the_dealers_button_closes_the_next_round_once_and_never_mid_round() -> None:
    driver = ClockedTable(TableConfig(betting="button", insurance=False))
    driver.open_shoe()
    closed = _no_more_bets(driver)
    again = _no_more_bets(driver)
    driver.card("9H")
    mid_round = _no_more_bets(driver)
    assert [(str(e.type), e.data) for e in closed + again + mid_round] == [
        ("bets.closed", {"round": 1, "server_round": None, "by": "button", "source": "scanner"}),
        (
            "procedure.alert",
            {
                "code": "bets_already_closed",
                "text": "bets on round 1 are closed already",
                "needs_supervisor": False,
            },
        ),
        (
            "procedure.alert",
            {
                "code": "bets_already_closed",
                "text": "NO_MORE_BETS while round 1 is dealt: its bets closed before its first"
                " card; the next round's open once it is over",
                "needs_supervisor": False,
            },
        ),
    ]


@pytest.mark.parametrize("early_card", ["hold", "void"])
def test_an_early_card_tells_the_supervisor_what_to_do_or_what_was_done(early_card: str) -> None:
    driver = ClockedTable(TableConfig(betting="button", early_card=early_card, insurance=False))
    driver.open_shoe()
    (alert,) = only(driver.card("9H"), EventType.PROCEDURE_ALERT)
    opened = "card #3 opened round 1 while its bets were open (R17):"
    if early_card == "hold":
        assert alert.data == {
            "code": "early_card",
            "text": f"{opened} supervisor: void the round (bets returned), or accept it with a"
            " reason",
            "needs_supervisor": True,
        }
        (held,) = driver.table.view()["holds"]
        assert (held["kind"], held["actions"]) == ("early", ["void", "accept", "change_shoe"])
    else:
        assert alert.data == {
            "code": "early_card",
            "text": f"{opened} the round is void, bets are returned (early_card = void)",
            "needs_supervisor": False,
        }
        assert driver.table.view()["holds"] == []


def test_the_status_speaks_of_the_next_round_only() -> None:
    driver = ClockedTable(TableConfig(betting="server", insurance=False))
    driver.open_shoe()
    _server(driver, "open", 1, 1, "n1")
    opened_at = _at(driver)
    assert driver.table.view()["betting"] == {
        "by": "server",
        "round": 1,
        "closed": False,
        "opened_at": opened_at,
        "closed_at": None,
        "server_round": "G-1",
    }
    _server(driver, "closed", 1, 1, "n2")
    assert driver.table.view()["betting"] == {
        "by": "server",
        "round": 1,
        "closed": True,
        "opened_at": opened_at,
        "closed_at": _at(driver),
        "server_round": "G-1",
    }
    driver.deal("9H 2C KD 5S")
    assert driver.table.view()["betting"] == {  # round 1's times are not round 2's
        "by": "server",
        "round": 2,
        "closed": False,
        "opened_at": None,
        "closed_at": None,
        "server_round": None,
    }


def test_a_round_voided_on_a_table_without_a_clock_has_push_apis_fields_only() -> None:
    driver = ClockedTable(TableConfig(insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C")
    (voided,) = only(driver.sup("change_shoe"), EventType.ROUND_VOIDED)
    assert voided.data == {"reason": "shoe_changed", "cards": ["9H", "2C"]}


def test_the_servers_messages_for_another_round_or_said_twice_are_refused_saying_why() -> None:
    driver = ClockedTable(TableConfig(betting="server", insurance=False))
    driver.open_shoe()
    _server(driver, "open", 1, 1, "n1")  # round 1 is the server's G-1
    refusals = [
        _server(driver, "closed", 2, 1, "n2"),  # another shoe
        _server(driver, "closed", 1, 2, "n3"),  # another round
        driver.apply(BettingChanged(driver.at(), BetsState.CLOSED, 1, 1, "G-7", "n4", "srv")),
        _server(driver, "open", 1, 1, "n1"),  # said again
    ]
    closed = driver.apply(BettingChanged(driver.at(), BetsState.CLOSED, 1, 1, "", "n5", "srv"))
    refusals.append(_server(driver, "closed", 1, 1, "n6"))
    assert [[(e.data["code"], e.data["text"]) for e in events] for events in refusals] == [
        [("wrong_round", "bets closed for shoe 2 round 1: the next round is shoe 1 round 1;"
          " refused, nothing changed")],
        [("wrong_round", "bets closed for shoe 1 round 2: the next round is shoe 1 round 1;"
          " refused, nothing changed")],
        [("wrong_round", "bets closed for the server's round G-7, but round 1 is its round G-1;"
          " refused, nothing changed")],
        [("repeated_message", "the betting message n1 was taken before: refused")],
        [("bets_already_closed", "bets on round 1 are closed already")],
    ]  # fmt: skip
    # Closed without the server's name for the round: the name it gave on opening stays.
    assert [(str(e.type), e.data["server_round"]) for e in closed] == [("bets.closed", "G-1")]
    assert driver.table.view()["betting"]["server_round"] == "G-1"


def test_a_shoe_changed_before_its_first_round_has_no_dealing_time() -> None:
    driver = ClockedTable(TableConfig(clock=True, insurance=False))
    driver.load()
    opened_at = _at(driver)
    driver.deal("AS 4C")
    ended = only(driver.sup("change_shoe"), EventType.SHOE_ENDED)[0]
    assert (ended.data["opened_at"], ended.data["first_round_at"]) == (opened_at, None)
    assert ended.data["dealing_seconds"] is None


def test_the_clocks_seconds_keep_their_fractions() -> None:
    driver = ClockedTable(TableConfig(clock=True, insurance=False))
    driver.clock += 0.25
    driver.open_shoe()
    driver.deal("9H 2C KD 5S")
    driver.clock += 0.5
    ended = only(driver.sup("change_shoe"), EventType.SHOE_ENDED)[0]
    assert ended.data["dealing_seconds"] == 4.5  # the first card (9H) to the change
    driver.clock += 0.125
    live = driver.load() + driver.deal("AS 4C 9H")
    (downtime,) = only(live, EventType.SHOE_DOWNTIME)
    assert (downtime.data["shuffle_seconds"], downtime.data["seconds"]) == (1.125, 4.125)


def test_a_previous_shoes_end_is_taken_once_before_the_first_round_only() -> None:
    def refusals(driver: ClockedTable, shoe: int) -> list[tuple[str, str]]:
        events = driver.apply(PreviousShoe(driver.at(), shoe))
        return [(e.data["code"], e.data["text"]) for e in events]

    driver = ClockedTable(TableConfig(clock=True, insurance=False))
    assert refusals(driver, 5) == [("invalid_input", "previous_shoe 5: this is shoe 1")]
    assert refusals(driver, 0) == []  # shoe 0 ended: shoe 1's downtime begins
    ended = iso_time(driver.clock)
    assert refusals(driver, 0) == [
        ("invalid_input", "previous_shoe 0: this is shoe 1, its downtime began already")
    ]
    driver.open_shoe()
    (downtime,) = only(driver.card("9H"), EventType.SHOE_DOWNTIME)
    assert (downtime.data["previous_shoe"], downtime.data["since"]) == (0, ended)
    fresh = ClockedTable(TableConfig(clock=True, insurance=False))
    fresh.open_shoe()
    fresh.card("9H")
    assert refusals(fresh, 0) == [
        ("invalid_input", "previous_shoe 0: this is shoe 1, its rounds started")
    ]


def test_the_servers_bets_events_say_for_which_round_by_whom_and_from_where() -> None:
    driver = ClockedTable(TableConfig(betting="server", insurance=False))
    driver.open_shoe()
    events = _server(driver, "open", 1, 1, "n1") + _server(driver, "closed", 1, 1, "n2")
    assert [(str(e.type), e.data) for e in events] == [
        ("bets.opened", {"round": 1, "server_round": "G-1", "by": "server", "source": "srv"}),
        ("bets.closed", {"round": 1, "server_round": "G-1", "by": "server", "source": "srv"}),
    ]
    driver.deal("9H 2C KD 5S")
    # Round 2's bets closed without a name: not round 1's name.
    (closed,) = driver.apply(BettingChanged(driver.at(), BetsState.CLOSED, 1, 2, "", "n3", "s2"))
    assert closed.data == {"round": 2, "server_round": None, "by": "server", "source": "s2"}


def test_a_round_is_timed_from_its_first_card_read_not_one_entered_by_hand() -> None:
    driver = ClockedTable(TableConfig(clock=True, insurance=False))
    driver.load()
    for counter, name in ((1, "AS"), (2, "4C"), (4, "9H")):  # the counter skips card #3
        driver.apply(CardDrawn(driver.at(), "scanner", parse_card(name), counter=counter))
    read_at = _at(driver)  # 9H's time
    started = only(driver.sup("missed", card="QH"), EventType.ROUND_STARTED)[0]
    assert started.data["first_card_at"] is None  # QH, the round's first, entered by hand
    for counter, name in ((5, "2C"), (6, "KD")):
        events = driver.apply(CardDrawn(driver.at(), "scanner", parse_card(name), counter=counter))
    result = only(events, EventType.ROUND_RESULT)[0]
    assert (result.data["first_card_at"], result.data["last_card_at"]) == (read_at, _at(driver))
    (started,) = only(driver.deal("9S 2D KC 5H"), EventType.ROUND_STARTED)
    assert started.data["first_card_at"] == iso_time(driver.clock - 3)  # 9S's


def test_the_downtime_comes_once_and_the_dealing_time_counts_from_the_first_round() -> None:
    driver = ClockedTable(TableConfig(clock=True, insurance=False))
    driver.open_shoe()
    driver.deal("9H 2C KD 5S")
    driver.sup("change_shoe")
    ended_at = _at(driver)
    driver.load()
    opened_at = _at(driver)
    live = driver.deal("AS 4C 9H 2C KD 5S")
    first_at = iso_time(driver.clock - 3)  # shoe 2's first round: its first card, 9H
    live += driver.deal("3C 4D 6H 2S")
    (downtime,) = only(live, EventType.SHOE_DOWNTIME)
    assert downtime.round is None
    assert downtime.data == {
        "previous_shoe": 1,
        "since": ended_at,
        "opened_at": opened_at,
        "until": first_at,
        "seconds": 4.0,
        "shuffle_seconds": 1.0,
    }
    driver.clock += 100
    (ended,) = only(driver.sup("change_shoe"), EventType.SHOE_ENDED)
    assert (ended.data["first_round_at"], ended.data["dealing_seconds"]) == (first_at, 108.0)


def test_bets_closed_without_being_opened_show_no_opening() -> None:
    driver = ClockedTable(TableConfig(betting="server", insurance=False))
    driver.open_shoe()
    _server(driver, "closed", 1, 1, "n1")
    view = driver.table.view()["betting"]
    assert (view["closed"], view["opened_at"], view["closed_at"]) == (True, None, _at(driver))
