"""A table event as one short, canonical scenario line; and when two such lines match."""

from __future__ import annotations

from typing import Any

from shoe_controller.vocab.events import Event, EventType


def render_value(value: Any) -> str:
    """A value as scenario lines write it: `-` for none, lists comma-joined, spaced text quoted."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(render_value(item) for item in value) or "none"
    if isinstance(value, dict):
        return (
            ",".join(f"{key}:{render_value(item)}" for key, item in sorted(value.items())) or "none"
        )
    text = str(value)
    return f'"{text}"' if (" " in text or not text) else text


def _pairs(data: dict[str, Any], skip: tuple[str, ...] = ()) -> str:
    return " ".join(f"{key}={render_value(data[key])}" for key in sorted(data) if key not in skip)


def _cards(cards: list[str | None]) -> str:
    return ",".join(card or "hidden" for card in cards) or "none"


# The round's clock fields (a table with `betting` set), shown short: the time of
# day, whole seconds unless the fraction says more.
_CLOCK = (
    ("bets_closed_at", "bets_closed"),
    ("first_card_at", "first"),
    ("last_card_at", "last"),
    ("result_at", "result"),
    ("server_round", "server_round"),
)


def _clock(data: dict[str, Any]) -> list[str]:
    words = []
    for key, short in _CLOCK:
        if key in data:
            value = data[key]
            if key.endswith("_at") and isinstance(value, str):
                value = value[11:].removesuffix("Z").removesuffix(".000000")
            words.append(f"{short}={render_value(value)}")
    return words


def render_event(event: Event) -> str:
    """The event as one short, canonical line."""
    data = event.data
    kind = event.type
    if kind == EventType.CARD_DEALT:
        face = " face_up" if data["face_up"] else ""
        return f"card.dealt {data['position']} {data['card'] or 'hidden'}{face}"
    if kind == EventType.CARD_REVEALED:
        return f"card.revealed {data['position']} {data['card']}"
    if kind == EventType.CARD_EXTRA:
        return f"card.extra {data['card'] or '?'}"
    if kind == EventType.ROUND_STARTED:
        words = [f"round.started {event.round}"]
        if data["trial"]:
            words.append("trial")
        if not data["big_small_open"]:
            words.append("big_small_closed")
        return " ".join(words + _clock(data))
    if kind == EventType.ROUND_RESULT:
        words = [
            f"round.result {event.round} {data['winner']}",
            f"P:{','.join(data['player'])}={data['player_total']}",
            f"B:{','.join(data['banker'])}={data['banker_total']}",
        ]
        if data["natural"]:
            words.append(f"natural={data['natural']}")
        words += [name for name in ("player_pair", "banker_pair", "perfect_pair") if data[name]]
        if data["lucky6"]:
            words.append(f"lucky6={data['lucky6']}")
        return " ".join(words + _clock(data))
    if kind == EventType.ROUND_VOIDED:
        line = f"round.voided {event.round} reason={data['reason']} cards={_cards(data['cards'])}"
        return " ".join([line, *_clock(data)])
    if kind == EventType.INSURANCE_OFFERED:
        return (
            f"insurance.offered {data['side']} stage={data['stage']} odds={data['odds']}"
            f" B={data['banker_total']} P={data['player_total']}"
        )
    if kind in (EventType.INSURANCE_CLOSED, EventType.INSURANCE_VOIDED):
        return f"{kind} {data['side']} stage={data['stage']} reason={data['reason']}"
    if kind == EventType.SHOE_BURNED:
        first = f" first={data['first_card']}" if data["first_card"] else ""
        return (
            f"shoe.burned {event.shoe} count={data['count']}{first} cards={_cards(data['cards'])}"
        )
    if kind == EventType.SHOE_SHUFFLED:
        verdict = "ok" if data["ok"] else f"failed problems={render_value(data['problems'])}"
        return f"shoe.shuffled {event.shoe} decks={data['decks']} total={data['total']} {verdict}"
    if kind in (EventType.SHOE_CUT, EventType.SHOE_CUT_CARD, EventType.SHOE_ENDED):
        return f"{kind} {event.shoe} {_pairs(data)}"
    if kind == EventType.PROCEDURE_ALERT:
        who = " supervisor" if data["needs_supervisor"] else ""
        return f'procedure.alert {data["code"]}{who} "{data["text"]}"'
    if kind == EventType.SECURITY_ALERT:
        details = _pairs(data["details"])
        return f"security.alert {data['code']}" + (f" {details}" if details else "")
    if kind == EventType.SURVEILLANCE_CARD_TAGS:  # place:card=tag
        tags = (f"{entry['seq']}:{entry['card']}={entry['uid']}" for entry in data["cards"])
        return " ".join([kind, *tags])
    if kind == EventType.SUPERVISOR_ACTION:
        details = _pairs(data["details"])
        return f"supervisor.action {data['action']} by={data['by']}" + (
            f" {details}" if details else ""
        )
    return f"{kind} {_pairs(data)}".rstrip()


def without_text(line: str) -> str:
    """An alert line without its quoted text: expected lines may leave the text out."""
    if line.startswith("procedure.alert ") and line.endswith('"') and ' "' in line:
        return line[: line.index(' "')]
    return line


def lines_match(expected: str, actual: str) -> bool:
    expected, actual = " ".join(expected.split()), " ".join(actual.split())
    if expected == actual:
        return True
    return without_text(expected) == expected and without_text(actual) == expected
