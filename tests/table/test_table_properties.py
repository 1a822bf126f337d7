"""Properties of the table over random shoes and random procedures (hypothesis).

- A shuffled shoe dealt correctly to its end gives, round by round, the rules engine's
  outcomes, whatever the configuration.
- Any sequence of inputs (cards with any flags, device reports, supervisor commands with
  good or bad arguments) never raises and keeps the invariants: no card lost, one outcome
  per round, held exactly when holds exist, events as docs/spec-push-api.md defines them, a refused
  command is one `command_refused` alert, squeezed cards stay inside, and replaying the open
  shoe's inputs rebuilds the state.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shoe_testkit.perfect_dealer import deal_shoe
from shoe_testkit.table import PUSH_API_FIELDS, SHOE_END_REASONS, shuffled_shoe

from shoe_controller.table.action_specs import ACTIONS
from shoe_controller.table.alerts import ALERT_CODES
from shoe_controller.table.books import Draw
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import full_deck, parse_card
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import (
    Button,
    ButtonPressed,
    CardDrawn,
    CardsMissed,
    ControllerStarted,
    CutCardSeen,
    DeviceFault,
    DeviceFaultCleared,
    DeviceLost,
    Input,
    ShoeState,
    ShoeStateChanged,
    ShuffleDone,
    ShuffleStarted,
    SupervisorCommand,
)

configs = st.builds(
    TableConfig,
    decks=st.sampled_from([6, 8, 12]),
    burn=st.sampled_from(["first_card_value", "decks"]),
    burn_per_round=st.sampled_from([0, 0, 1, 2]),
    cut_card=st.sampled_from(["finish_current", "one_more"]),
    squeeze=st.booleans(),
    mode=st.sampled_from(["manual", "batch_shuffler", "shuffler_dealer"]),
    insurance=st.booleans(),
)


def check_event(event: Event) -> None:
    assert set(event.data) == PUSH_API_FIELDS[str(event.type)], event
    json.dumps(event.to_json())
    if event.type in (EventType.PROCEDURE_ALERT, EventType.SECURITY_ALERT):
        assert event.data["code"] in ALERT_CODES
    if event.type == EventType.PROCEDURE_ALERT:
        assert event.data["code"] != "internal_error", event.data["text"]
    if event.type == EventType.SHOE_ENDED:
        assert event.data["reason"] in SHOE_END_REASONS


@settings(max_examples=25, deadline=None)
@given(
    config=configs,
    seed=st.integers(0, 2**32 - 1),
    behind=st.integers(30, 80),
    trials=st.integers(0, 3),
    face_up=st.sets(st.integers(0, 300), max_size=3),
)
def test_a_shoe_dealt_correctly_gives_the_rules_engines_outcomes(
    config: TableConfig, seed: int, behind: int, trials: int, face_up: set[int]
) -> None:
    cards = shuffled_shoe(config.decks, seed)
    dealt = deal_shoe(
        cards, config, cut_after=len(cards) - behind, trial_rounds=trials, face_up=face_up
    )
    table = Table(config)
    events = [event for item in dealt.inputs for event in table.apply(item)]
    for event in events:
        check_event(event)
    results = [event.data for event in events if event.type == EventType.ROUND_RESULT]
    assert results == [result.result_data() for result in dealt.outcomes]
    started = [event.data["trial"] for event in events if event.type == EventType.ROUND_STARTED]
    assert started[: len(dealt.trial)] == dealt.trial
    alerts = [event.data["code"] for event in events if event.type == EventType.PROCEDURE_ALERT]
    assert set(alerts) <= {"face_up_card"}
    assert not [event for event in events if event.type == EventType.SECURITY_ALERT]
    if config.mode != "shuffler_dealer":
        assert dealt.ended
        ends = [event.data for event in events if event.type == EventType.SHOE_ENDED]
        assert ends == [
            {"rounds": len(dealt.rounds), "cards_dealt": dealt.cards_drawn, "reason": "cut_card"}
        ]
    if config.squeeze and config.mode != "shuffler_dealer":
        dealt_cards = [e.data for e in events if e.type == EventType.CARD_DEALT]
        assert all(data["card"] is None for data in dealt_cards if not data["face_up"])


# ---------------------------------------------------------------- random procedures

_CARDS = list(full_deck())
_POSITIONS = ["P1", "B1", "P2", "B2", "P3", "B3", "X9"]

card_names = st.sampled_from([str(card) for card in _CARDS])
supervisor_args = st.fixed_dictionaries(
    {},
    optional={
        "card": st.one_of(card_names, st.just("ZZ"), st.integers()),
        "position": st.sampled_from(_POSITIONS),
        "rounds": st.integers(-1, 4),
        "misdeal": st.one_of(st.booleans(), st.just("yes")),
    },
)
actions = st.one_of(
    st.tuples(
        st.just("card"),
        st.sampled_from([*_CARDS, None]),
        st.lists(
            st.sampled_from(["face_up", "low_confidence", "multi", "burn", "foreign", "duplicate"]),
            max_size=2,
        ),
        st.sampled_from([None, None, None, "U1", "U2"]),
    ),
    st.tuples(st.just("missed"), st.integers(0, 3)),
    st.tuples(st.just("cut"), st.sampled_from([None, 50, 300, 410])),
    st.tuples(st.just("shoe"), st.sampled_from(list(ShoeState))),
    st.tuples(st.just("button"), st.sampled_from(list(Button))),
    st.tuples(st.just("shuffle"), st.booleans(), st.booleans()),
    st.tuples(
        st.just("fault"),
        st.sampled_from([1, 3, 4, 0x0101, 0x0102, 0x8001]),
        st.integers(1, 3),
        st.booleans(),
    ),
    st.tuples(st.just("device"), st.sampled_from(["lost", "restart"])),
    st.tuples(
        st.just("supervisor"),
        st.sampled_from([*ACTIONS, "bogus"]),
        supervisor_args,
        st.sampled_from(["sup7", "sup7", ""]),
    ),
    st.tuples(st.just("help")),
)


def _helping_input(table: Table, at: float) -> Input:
    """What a supervisor does to get the table going again (so random runs reach deep)."""
    view = table.view()
    if view["holds"]:
        kind = view["holds"][0]["kind"]
        if kind == "plain":
            return SupervisorCommand(at, "resume", "sup7", "help", {})
        return SupervisorCommand(at, "confirm", "sup7", "help", {"card": "QH"})
    if not view["shoe_open"]:
        return SupervisorCommand(at, "start_shoe", "sup7", "help", {})
    return ButtonPressed(at, "scanner", Button.REVEAL)


def _input(action: tuple[Any, ...], table: Table, at: float) -> Input:
    kind = action[0]
    if kind == "card":
        _, card, flags, uid = action
        return CardDrawn(at, "scanner", card, uid=uid, **dict.fromkeys(flags, True))
    if kind == "missed":
        return CardsMissed(at, "scanner", action[1])
    if kind == "cut":
        return CutCardSeen(at, "scanner", action[1])
    if kind == "shoe":
        return ShoeStateChanged(at, "scanner", action[1])
    if kind == "button":
        return ButtonPressed(at, "scanner", action[1])
    if kind == "shuffle":
        _, done, ok = action
        if not done:
            return ShuffleStarted(at, "shuffler", 1, table.config.decks)
        return ShuffleDone(at, "shuffler", 1, ok, table.config.decks, table.config.cards_in_shoe)
    if kind == "fault":
        _, code, severity, cleared = action
        if cleared:
            return DeviceFaultCleared(at, "scanner", code)
        return DeviceFault(at, "scanner", code, severity, "fault")
    if kind == "device":
        if action[1] == "lost":
            return DeviceLost(at, "scanner")
        return ControllerStarted(at, "0.1.0", 2, True)
    if kind == "supervisor":
        _, name, args, by = action
        return SupervisorCommand(at, name, by, "because", args)
    return _helping_input(table, at)


def check_table(table: Table, item: Input, events: list[Event], outcomes: dict) -> None:
    for event in events:
        check_event(event)
        key = (event.shoe, event.round)
        if event.type == EventType.ROUND_STARTED:
            assert key not in outcomes, f"round {key} started twice"
            outcomes[key] = None
        withdrawn = (
            event.type == EventType.ROUND_VOIDED
            and event.data["reason"] == "extra_cards"
            and outcomes.get(key) == EventType.ROUND_RESULT
        )  # R10.4 after the result: the round is cancelled all the same
        if event.type in (EventType.ROUND_RESULT, EventType.ROUND_VOIDED) and not withdrawn:
            assert outcomes.get(key, "missing") is None, f"round {key}: second outcome or no start"
            outcomes[key] = event.type
        squeezed = table.config.squeeze and table.config.mode != "shuffler_dealer"
        if squeezed and event.type == EventType.CARD_DEALT and not event.data["face_up"]:
            assert event.data["card"] is None  # R15
    if isinstance(item, SupervisorCommand):
        refused = events and events[0].data.get("code") == "command_refused"
        if refused:
            assert len(events) == 1
        else:
            assert events[0].type == EventType.SUPERVISOR_ACTION
            assert events[0].data["action"] == item.action
    book = table.book  # the bookkeeping itself: nothing is lost
    placed = len(book.round.draws) if book.round else 0
    queued = sum(isinstance(item, Draw) for item in book.queue)
    accounted = book.burned + book.cards_in_rounds + len(book.discarded) + placed
    assert accounted + len(book.pending_burn) + queued == book.drawn
    assert (table.state == "held") == bool(book.holds)
    assert (book.round is not None) == (table.lifecycle in ("dealing", "insurance", "reveal"))
    json.dumps(table.view())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, script=st.lists(actions, min_size=20, max_size=200))
def test_random_procedures_never_raise_and_keep_the_invariants(
    config: TableConfig, script: list[tuple[Any, ...]]
) -> None:
    table = Table(config)
    journal: list[tuple[int, Input, list[Event]]] = []
    outcomes: dict = {}
    # Start with a shoe in play most of the time, so that the script reaches the rounds.
    prefix = [ShuffleDone(1.0, "shuffler", 1, True, config.decks, config.cards_in_shoe)]
    if config.mode != "shuffler_dealer":
        prefix.append(ShoeStateChanged(2.0, "scanner", ShoeState.LOADED))
    for index in range(len(prefix) + len(script)):
        if index < len(prefix):
            item = prefix[index]
        else:
            item = _input(script[index - len(prefix)], table, 10.0 + index)
        shoe = table.shoe_of(item)
        events = table.apply(item)
        journal.append((shoe, item, events))
        check_table(table, item, events, outcomes)
    # Recovery: the open shoe's inputs (and later ones) rebuild the state and give the very
    # events they gave live, whatever happened before the shoe (the journal compares them).
    replayed = Table(config, last_shoe=table.shoe - 1)
    for shoe, item, events in journal:
        if shoe >= table.shoe:
            assert replayed.apply(item) == events, item
    assert replayed.snapshot() == table.snapshot()


def _seen_from_outside(names: list[str]) -> str:
    """Everything a squeezed round shows before the reveal: events, status, lights."""
    table = Table(TableConfig(squeeze=True))
    items: list[Input] = [ShoeStateChanged(1.0, "scanner", ShoeState.LOADED)]
    items += [CardDrawn(2.0 + index, "scanner", parse_card(name))
              for index, name in enumerate(["AS", "4C", *names])]  # fmt: skip
    shown = [event.to_json() for item in items for event in table.apply(item)]
    return json.dumps([shown, table.view(), table.indicator])


hands = st.lists(st.sampled_from([str(card) for card in _CARDS]), min_size=5, max_size=5)


@settings(max_examples=40, deadline=None)
@given(first=hands, second=hands)
def test_squeezed_cards_do_not_show_before_the_reveal(first: list[str], second: list[str]) -> None:
    # Four squeezed cards and a fifth drawn too early: whatever they are, the room sees the
    # same events, status and lights until the reveal (R15).
    assert _seen_from_outside(first) == _seen_from_outside(second)
