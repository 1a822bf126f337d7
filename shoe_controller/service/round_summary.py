"""One round in a line's worth of data, from its journaled events (shoectl's rounds, round
and road)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shoe_controller.game.shoe_cards import RoundCards, hands
from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.events import EventType

ALERT_TYPES = (str(EventType.PROCEDURE_ALERT), str(EventType.SECURITY_ALERT))


def summarize_round(
    events: Sequence[StoredEvent], live: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One round in a line's worth of data, from its journaled events (already squeeze-safe).

    `live` is the table's view of its round in progress (used when this is that round)."""
    first = events[0] if events else None
    summary: dict[str, Any] = {
        "shoe": first.shoe if first else None,
        "round": first.round if first else None,
        "trial": False,
        "status": "in_progress",
        "started_at": first.at if first else None,
        "ended_at": None,
        "cards": {},
        "winner": None,
        "player": None,
        "banker": None,
        "player_total": None,
        "banker_total": None,
        "natural": None,
        "player_pair": False,
        "banker_pair": False,
        "perfect_pair": False,
        "lucky6": None,
        "voided_reason": None,
        "insurance_offers": 0,
        "alerts": 0,  # the round's alerts, the refused supervisor commands apart
        "refused_commands": 0,
        "supervisor_actions": [],
    }
    dealt = RoundCards()  # the cards by position as they were dealt and revealed
    for event in events:
        data = event.data
        if event.type in (EventType.CARD_DEALT, EventType.CARD_REVEALED):
            dealt.feed(event.type, data)
        elif event.type == EventType.ROUND_STARTED:
            summary["trial"] = bool(data.get("trial"))
        elif event.type == EventType.ROUND_RESULT:
            summary["status"] = "result"
            summary["ended_at"] = event.at
            for key in ("winner", "player", "banker", "player_total", "banker_total"):
                summary[key] = data.get(key)
            for key in ("natural", "player_pair", "banker_pair", "perfect_pair", "lucky6"):
                summary[key] = data.get(key, summary[key])
        elif event.type == EventType.ROUND_VOIDED:
            summary["status"] = "voided"
            summary["ended_at"] = event.at
            summary["voided_reason"] = data.get("reason")
        elif event.type == EventType.INSURANCE_OFFERED:
            summary["insurance_offers"] += 1
        elif event.type in ALERT_TYPES:
            refused = data.get("code") == "command_refused"  # a person's command, not play
            summary["refused_commands" if refused else "alerts"] += 1
        elif event.type == EventType.SUPERVISOR_ACTION:
            summary["supervisor_actions"].append(data.get("action"))
    # The result's hands are final (after corrections or re-arrangement).
    final = summary["status"] == "result"
    cards = hands(summary["player"], summary["banker"]) if final else dealt.positions
    summary["cards"] = {
        position: None if card is None else str(card) for position, card in cards.items()
    }
    if (
        summary["status"] == "in_progress"
        and live is not None
        and live.get("number") == summary["round"]
    ):
        summary["cards"] = {
            position: (None if card == "hidden" else card)
            for position, card in (live.get("cards") or {}).items()
        }
    return summary
