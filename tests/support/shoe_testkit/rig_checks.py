"""Checks on a running table rig, shared by the system tests: delivery complete, a shoe dealt
right, a round under way."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from shoe_controller.game.rules import outcome, positions_of
from shoe_controller.vocab.cards import burn_value
from shoe_testkit.control import cli_env
from shoe_testkit.rig import Dealt, TableRig

CARD_TEXT = re.compile(r'"[A2-9TJQK][SHDC]"')  # a card identity, as JSON writes it


TROUBLE = ("round.voided", "procedure.alert", "security.alert", "card.extra")


def check_delivery(rig: TableRig) -> list[dict[str, Any]]:
    """Every event stored for the table server reached it once, in seq order, unchanged."""
    last = rig.wait_delivered()
    received = rig.records.received_events()
    assert [event["seq"] for event in received] == list(range(1, last + 1))
    assert received == rig.records.server_events()
    return received


def check_card_inputs(rig: TableRig, loads: Sequence[Sequence[Dealt]]) -> None:
    """The journal holds each CARD frame the shoe sent exactly once, in order."""
    stored = [
        (item["counter"], item["card"])
        for item in rig.records.journal_inputs()
        if item["type"] == "card"
    ]
    sent = [(dealt.counter, str(dealt.card)) for load in loads for dealt in load]
    assert stored == sent


def check_shoe(
    events: Sequence[dict[str, Any]],
    dealt: Sequence[Dealt],
    *,
    ended: bool,
    alerts: Sequence[str] = (),
    squeeze: bool = False,
) -> int:
    """One shoe's received events against the cards dealt from it; returns its rounds.

    `alerts`: the procedure.alert codes the shoe must show, in order (and no other trouble).
    """
    cards = [item.card for item in dealt]
    trouble = [event for event in events if event["type"] in TROUBLE]
    assert [(event["type"], event["data"].get("code")) for event in trouble] == [
        ("procedure.alert", code) for code in alerts
    ]
    (burned,) = [event["data"] for event in events if event["type"] == "shoe.burned"]
    burn = 1 + burn_value(cards[0])  # R2.2 (b): the first card face up, then its value
    assert burned == {
        "first_card": str(cards[0]),
        "count": burn,
        "cards": [str(card) for card in cards[:burn]],
    }
    rounds: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        if event["round"] is not None:
            rounds[event["round"]].append(event)
    assert sorted(rounds) == list(range(1, len(rounds) + 1))
    used = burn
    for number in sorted(rounds):
        types = [event["type"] for event in rounds[number]]
        assert types.count("round.started") == 1, f"round {number}: {types}"
        placed = [event["data"] for event in rounds[number] if event["type"] == "card.dealt"]
        revealed = {
            event["data"]["position"]: event["data"]["card"]
            for event in rounds[number]
            if event["type"] == "card.revealed"
        }
        if squeeze:  # R15: no identity before the reveal, then each card once, after it
            assert all(data["card"] is None for data in placed)
            types_positions = [(e["type"], e["data"].get("position")) for e in rounds[number]]
            for data in placed:
                dealt_at = types_positions.index(("card.dealt", data["position"]))
                assert types_positions.index(("card.revealed", data["position"])) > dealt_at
            placed = [{**data, "card": revealed[data["position"]]} for data in placed]
        else:
            assert revealed == {}
        hand = cards[used : used + len(placed)]
        used += len(placed)
        assert [(data["position"], data["card"]) for data in placed] == [
            (str(position), str(card))
            for position, card in zip(positions_of(hand), hand, strict=True)
        ], f"round {number}"
        results = [event["data"] for event in rounds[number] if event["type"] == "round.result"]
        if results:
            assert results == [outcome(hand).result_data()], f"round {number}"
        else:  # only the round being dealt when we looked may lack its result
            assert not ended
            assert number == max(rounds)
    assert used == len(cards), "every card dealt is in the burn or a round, once"
    end = [event["data"] for event in events if event["type"] == "shoe.ended"]
    if ended:
        assert end == [{"rounds": len(rounds), "cards_dealt": len(cards), "reason": "cut_card"}]
        (cut,) = [event["data"] for event in events if event["type"] == "shoe.cut_card"]
        assert cut == {"after_card": 400}  # R3.1: the round in progress was the last
    else:
        assert end == []
    return len(rounds)


def shoe_events(received: Sequence[dict[str, Any]], shoe: int) -> list[dict[str, Any]]:
    return [event for event in received if event["shoe"] == shoe]


def started_events(rig: TableRig) -> list[dict[str, Any]]:
    return [e.data for e in rig.records.journal_events() if e.type == "controller.started"]


def last_started_seq(rig: TableRig) -> int:
    return max(e.seq for e in rig.records.journal_events() if e.type == "controller.started")


def deal_into_round(rig: TableRig, cards_in: int) -> None:
    """Deal until the round being dealt has `cards_in` cards (1-4: it cannot be complete)."""
    for _ in range(40):
        rig.dealer.deal(1)
        events = rig.records.journal_events()
        last = events[-1]
        if last.type == "card.dealt" and last.round is not None:
            placed = [e for e in events if e.round == last.round and e.type == "card.dealt"]
            if len(placed) == cards_in:
                return
    raise AssertionError(f"no round with {cards_in} cards in 40 cards")


def shoectl(rig: TableRig, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", *args],
        env=cli_env(str(rig.directory / "control.sock")),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
