"""The daemon's answers drawn for a person: aligned tables, colour only on a terminal, suits
as symbols, times in the reader's zone (times.py); the text of statuses, rounds and events
(the roads' lines are road_view.py's)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import click

from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.shoectl.wording import details_text, in_shoectl_words
from shoe_controller.vocab import words
from shoe_controller.vocab.cards import CardError, parse_card

BANKER, PLAYER, TIE = "banker", "player", "tie"
STYLES: dict[str, dict[str, Any]] = {
    BANKER: {"fg": "red", "bold": True},
    PLAYER: {"fg": "blue", "bold": True},
    TIE: {"fg": "green", "bold": True},
    "ok": {"fg": "green"},
    "warn": {"fg": "yellow", "bold": True},
    "crit": {"fg": "red", "bold": True},
    "dim": {"dim": True},
    "head": {"bold": True},
    "red_suit": {"fg": "red"},
    "red": {"fg": "red", "bold": True},  # the derived roads' colours (docs/spec-roads.md)
    "blue": {"fg": "blue", "bold": True},
}
LEVEL_STYLE = {0: "ok", 1: "warn", 2: "crit", 3: "warn"}
HIDDEN = "??"  # a card the table may not show yet (R15) or does not know


class Painter:
    """Colour only when it goes to a terminal and NO_COLOR is not set (no-color.org)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: Any) -> Painter:
        tty = bool(getattr(stream, "isatty", lambda: False)())
        return cls(tty and not os.environ.get("NO_COLOR"))

    def __call__(self, text: str, role: str | None) -> str:
        if not self.enabled or role is None or not text:
            return text
        return click.style(text, **STYLES[role])


Cell = str | tuple[str, str | None]


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], paint: Painter) -> str:
    """Columns aligned on the visible text (cells may already hold colour), colour after."""
    cells = [[(cell, None) if isinstance(cell, str) else cell for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        for index, (text, _) in enumerate(row):
            widths[index] = max(widths[index], plain_len(text))
    head = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    lines = [paint(head, "head")]
    for row in cells:
        shown = []
        for index, (text, role) in enumerate(row):
            pad = "" if index == len(row) - 1 else " " * (widths[index] - plain_len(text))
            shown.append(paint(text, role) + pad)
        lines.append("  ".join(shown).rstrip())
    return "\n".join(lines)


def render_pairs(pairs: Sequence[tuple[str, str]], paint: Painter) -> str:
    """`key  value` lines with the keys aligned."""
    width = max((len(key) for key, _ in pairs), default=0)
    return "\n".join(f"{paint(key.ljust(width), 'head')}  {value}" for key, value in pairs)


def card_text(code: str | None, paint: Painter) -> str:
    """`QH` -> `Q♥` (red suits in red); None or "hidden" -> ?? (R15)."""
    if not code or code == "hidden":
        return paint(HIDDEN, "dim")
    try:
        card = parse_card(code)
    except CardError:
        return code
    return paint(card.pretty, "red_suit" if card.suit.name in "HD" else None)


def cards_text(codes: Sequence[str | None] | None, paint: Painter) -> str:
    return " ".join(card_text(code, paint) for code in codes or [])


def plain_len(text: str) -> int:
    return len(click.unstyle(text))


def winner_cell(winner: str | None, paint: Painter) -> str:
    if winner is None:
        return ""
    return paint(winner.capitalize(), winner)


def event_details(event: Mapping[str, Any], paint: Painter) -> str:
    """What an event says, for a person."""
    kind, data = event.get("type"), event.get("data") or {}
    if kind in ("card.dealt", "card.revealed"):
        extra = " face up" if data.get("face_up") else ""
        return f"{data.get('position')} {card_text(data.get('card'), paint)}{extra}"
    if kind == "card.extra":
        return f"{card_text(data.get('card'), paint)} becomes the next round's burn"
    if kind == "round.started":
        notes = ["trial" if data.get("trial") else "real"]
        if not data.get("big_small_open", True):
            notes.append("big/small closed")
        return ", ".join(notes)
    if kind == "round.result":
        return result_text(data, paint)
    if kind == "round.voided":
        cards = cards_text(data.get("cards"), paint) or "none"
        return f"{words.void_reason(data.get('reason'))}; cards {cards}"
    if kind == "insurance.offered":
        return (
            f"{data.get('side')} insurance stage {data.get('stage')} pays {data.get('odds')}"
            f" (Banker {data.get('banker_total')}, Player {data.get('player_total')})"
        )
    if kind in ("insurance.closed", "insurance.voided"):
        reason = words.insurance_reason(data.get("reason"))
        return f"{data.get('side')} insurance stage {data.get('stage')}: {reason}"
    if kind == "shoe.burned":
        first = data.get("first_card")
        lead = f"first {card_text(first, paint)}, " if first else ""
        count = words.counted(int(data.get("count") or 0), "card")
        return f"{lead}{count}: {cards_text(data.get('cards'), paint)}"
    if kind == "shoe.cut":
        return (
            f"{words.counted(int(data.get('cards_behind_cut') or 0), 'card')} behind the cut card"
        )
    if kind == "shoe.cut_card":
        return f"cut card after card {data.get('after_card')}"
    if kind == "shoe.ended":
        rounds = words.counted(int(data.get("rounds") or 0), "round")
        cards = words.counted(int(data.get("cards_dealt") or 0), "card")
        return f"{rounds}, {cards}: {words.shoe_end_reason(data.get('reason'))}"
    if kind == "shoe.shuffled":
        check = "deck check ok" if data.get("ok") else paint("deck check FAILED", "crit")
        problems = f": {', '.join(data.get('problems') or [])}" if data.get("problems") else ""
        decks = words.counted(int(data.get("decks") or 0), "deck")
        return f"{decks}, {words.counted(int(data.get('total') or 0), 'card')}, {check}{problems}"
    if kind == "procedure.alert":
        role = "warn" if data.get("needs_supervisor") else None
        return paint(alert_text(data.get("code"), data.get("text")), role)
    if kind == "security.alert":
        details = details_text(data.get("details"))
        label = paint(words.alert(data.get("code")), "crit")
        return f"{label}: {details}" if details else label
    if kind == "supervisor.action":
        details = details_text(data.get("details"))
        action = str(data.get("action")).replace("_", "-")  # as the command is typed
        text = f"{action} by {data.get('by')}: {data.get('reason')}"
        return f"{text} ({details})" if details else text
    if kind in ("device.connected", "device.lost"):
        identity = " ".join(
            str(data.get(key)) for key in ("kind", "vendor", "model") if data.get(key)
        )
        serial = f" #{data['serial']}" if data.get("serial") else ""
        firmware = f" fw {data['firmware']}" if data.get("firmware") else ""
        return f"{data.get('device')} {identity}{serial}{firmware}".rstrip()
    if kind in ("device.fault", "device.fault_cleared"):
        fault = words.fault(data.get("code"))
        if kind == "device.fault_cleared":
            return f"{data.get('device')}: {fault} cleared"
        severity = words.severity(data.get("severity"))
        return f"{data.get('device')}: {fault}, {severity}: {data.get('text')}"
    if kind == "controller.started":
        recovered = ", recovered from the journal" if data.get("recovered") else ""
        return f"version {data.get('version')}, boot {data.get('boot')}{recovered}"
    if kind == "journal.checkpoint":  # docs/journal.md "Checkpoints"
        return (
            f"{data.get('records')} records signed, through input {data.get('input_no')}:"
            f" head {str(data.get('head'))[:16]}..., key {str(data.get('key'))[:16]}..."
        )
    return json.dumps(data, ensure_ascii=False)


def alert_text(code: Any, text: Any) -> str:
    """A procedure alert for a person: the table's text, with the command to type; the
    alert's words first when the text is not already about them (`--json` has the code)."""
    said = in_shoectl_words(str(text or "")).strip()
    label = words.alert(code)
    if not said:
        return label
    if set(label.lower().split()) - set(said.lower().replace(":", " ").split()):
        return f"{label}: {said}"
    return said


def result_text(data: Mapping[str, Any], paint: Painter) -> str:
    winner = data.get("winner")
    score = f"{data.get('player_total')}-{data.get('banker_total')}"
    words = [
        winner_cell(winner, paint) + (" wins" if winner != TIE else ""),
        f"P {cards_text(data.get('player'), paint)} = {data.get('player_total')}",
        f"B {cards_text(data.get('banker'), paint)} = {data.get('banker_total')}",
    ]
    notes = round_notes(data)
    text = f"{words[0]} ({score}): {words[1]}, {words[2]}"
    return f"{text}; {', '.join(notes)}" if notes else text


def round_notes(data: Mapping[str, Any]) -> list[str]:
    notes = []
    if data.get("natural"):
        notes.append(f"natural {data['natural']}")
    if data.get("player_pair"):
        notes.append("player pair")
    if data.get("banker_pair"):
        notes.append("banker pair")
    if data.get("perfect_pair"):
        notes.append("perfect pair")
    if data.get("lucky6"):
        notes.append(f"lucky 6 ({data['lucky6']} cards)")
    return notes


def event_row(event: Mapping[str, Any], paint: Painter, times: Times) -> list[Cell]:
    where = f"{event.get('shoe') if event.get('shoe') is not None else '-'}"
    if event.get("round") is not None:
        where += f"/{event['round']}"
    kind = str(event.get("type"))
    role = {"procedure.alert": "warn", "security.alert": "crit"}.get(kind)
    if kind == "round.result":
        role = (event.get("data") or {}).get("winner")
    return [
        str(event.get("seq")),
        times.short(event.get("at")),
        where,
        (kind, role),
        times.in_text(event_details(event, paint)),
    ]


def event_headers(times: Times) -> tuple[str, ...]:
    return ("SEQ", times.column("TIME"), "SHOE/RND", "TYPE", "DETAILS")


def through_text(sink: Mapping[str, Any]) -> str:
    """What a sink's consumer has confirmed, of the last seq it was given, for a person."""
    through, last = sink["delivered_through"], sink["last_seq"]
    if through is None:
        return f"none confirmed yet, of its seq {last}"
    return f"through its seq {through} of {last}"


def sink_line(sink: Mapping[str, Any]) -> str:
    """One sink's place: `why; backlog 3, delivered through its seq 41 of 44`."""
    return f"{sink['why']}; backlog {sink['backlog']}, delivered {through_text(sink)}"


def node_pairs(sink: Mapping[str, Any], times: Times) -> list[tuple[str, str]]:
    """A broker sink's nodes for `shoectl outbox`: the one in use, then each recent failover
    (docs/amqp.md "A cluster"); nothing for a kind without nodes."""
    endpoint = sink.get("endpoint")
    if not endpoint:
        return []
    nodes = endpoint["nodes"]
    in_use = endpoint["in_use"] or "none (not connected)"
    pairs = [("Node", in_use + (f" (of {', '.join(nodes)})" if len(nodes) > 1 else ""))]
    if len(nodes) > 1 or endpoint["failovers"]:
        pairs.append(("Failovers", str(endpoint["failovers"])))
    for failover in endpoint["recent_failovers"]:
        pairs.append(
            (
                "",
                f"{times.stamp(failover['at'])} {failover['from']} -> {failover['to']} after"
                f" {failover['after_failures']} failed attempt(s): {failover['reason']}",
            )
        )
    return pairs


def render_status(result: Mapping[str, Any], paint: Painter, times: Times) -> str:
    """The status for a person; every time in it (the daemon's texts' too) in `times`."""
    controller, table = result["controller"], result["table"]
    health, outbox = result["health"], result["outbox"]
    pairs: list[tuple[str, str]] = []
    pairs.append(
        (
            "Table",
            f"{controller['table_id']} ({controller['controller_id']}),"
            f" shoe-controller {controller['version']}, {times.stamp(controller['now'])}",
        )
    )
    pairs.append(("Health", paint(health["status"], LEVEL_STYLE[health["level"]])))
    state = words.table_state(table["state"])
    if table.get("resumes_to"):
        state += f" (then {words.table_state(table['resumes_to'])})"
    mode = words.mode(table["mode"]) + (", squeeze" if table.get("squeeze") else "")
    pairs.append(("State", f"{paint(state, 'crit' if table.get('holds') else None)}  [{mode}]"))
    pairs.append(("Shoe", shoe_text(table, paint)))
    pairs.append(("Round", round_text(table, paint)))
    if table.get("insurance"):
        offers = [f"{o['side']} stage {o['stage']} pays {o['odds']}" for o in table["insurance"]]
        pairs.append(("Insurance", paint("open: " + "; ".join(offers), "warn")))
    holds = table.get("holds") or []
    pairs.append(("Holds", "; ".join(hold_text(h, paint, times) for h in holds) or "none"))
    refusing = table.get("refusing_cards")
    if refusing:
        pairs.append(
            ("Refusing", paint(f"{refusing['count']} card input(s): {refusing['text']}", "crit"))
        )
    devices = result.get("devices") or []
    pairs.append(("Devices", "; ".join(device_text(d, paint) for d in devices) or "none"))
    for sink in outbox["sinks"]:
        pairs.append((f"Outbox {sink['name']}", sink_line(sink)))
    lag = controller.get("loop_lag") or {}
    if "recent_worst_ms" in lag:
        pairs.append(
            (
                "Loop",
                f"worst stall {lag['recent_worst_ms']:g} ms in the last minute,"
                f" {lag['worst_ms']:g} ms since start",
            )
        )
    lines = [render_pairs(pairs, paint)]
    if health["problems"]:
        lines += ["", paint("Needs a person:", "head")]
        width = max(len(p["status"]) for p in health["problems"])  # WARNING, CRITICAL
        for p in health["problems"]:
            text = times.in_text(p["text"])  # e.g. "refuses the shoe's cards (... since T)"
            status = paint(p["status"], LEVEL_STYLE[p["level"]]) + " " * (width - len(p["status"]))
            lines.append(f"  {status}  {text}")
            if p.get("action"):
                lines.append(f"  {' ' * width}  -> {p['action']}")
    alerts = result.get("alerts") or []
    refused = [a for a in alerts if a.get("code") == "command_refused"]  # a person's, apart
    for title, group in (("Recent alerts:", [a for a in alerts if a not in refused]),
                         ("Recent refused commands:", refused)):  # fmt: skip
        if not group:
            continue
        rows = [
            [
                str(a["seq"]),
                times.short(a["at"]),
                f"{a['shoe']}/{a['round']}" if a.get("round") is not None else str(a["shoe"]),
                (
                    words.alert(a["code"]) if a["code"] else "",
                    "warn" if a["needs_supervisor"] else None,
                ),
                times.in_text(a["text"] or ""),
            ]
            for a in group
        ]
        lines += ["", paint(title, "head")]
        headers = ("SEQ", times.column("TIME"), "SHOE/RND", "ALERT", "TEXT")
        lines.append(render_table(headers, rows, paint))
    return "\n".join(lines)


def hold_text(hold: Mapping[str, Any], paint: Painter, times: Times | None = None) -> str:
    """A hold, since when (given `times`), and the actions that end it (docs/table.md
    "Holds and their ways out")."""
    ways = ", ".join(action.replace("_", "-") for action in hold.get("actions") or [])
    waiting = f"; first {hold['waiting_for']}" if hold.get("waiting_for") else ""
    since = f" since {times.clock(hold['since'])}" if times and hold.get("since") else ""
    text = hold["text"] if times is None else times.in_text(hold["text"])
    return paint(alert_text(hold["code"], text), "crit") + f"{since} (ways out: {ways}{waiting})"


def shoe_text(table: Mapping[str, Any], paint: Painter) -> str:
    if not table.get("shoe_open"):
        deck = table.get("deck_check")  # none before a shuffler's first report
        return f"no shoe open (next: shoe {table['shoe']}" + (
            f", deck check {words.deck_check(deck)})" if deck else ")"
        )
    parts = [f"{table['shoe']} open", f"{table['cards_dealt']} cards dealt"]
    if table.get("cards_left") is not None:
        parts.append(f"{table['cards_left']} left")
    if table.get("cut_card_seen"):
        last = table.get("last_round")
        parts.append(
            paint(f"cut card seen after card {table.get('cut_card_after')}", "warn")
            + (f", last round {last}" if last is not None else "")
        )
    else:
        parts.append("cut card not seen")
    burn = table.get("burn") or {}
    if burn.get("in_progress"):
        first = burn.get("first_card")
        lead = f"first {card_text(first, paint)}, " if first else ""
        parts.append(
            paint(f"burning: {lead}{burn['burned']} burned, {burn['to_burn']} to go", "warn")
        )
    else:
        parts.append(f"{table.get('cards_burned', 0)} burned")
    parts.append(f"{table.get('real_rounds', 0)} round(s)")
    trials = table.get("trial_rounds") or {}
    if trials.get("dealt") or trials.get("pending"):
        parts.append(f"trials {trials.get('dealt')} dealt, {trials.get('pending')} pending")
    return ", ".join(parts)


def round_text(table: Mapping[str, Any], paint: Painter) -> str:
    current = table.get("round")
    due = table.get("next_position")
    if current is None:
        last = table.get("last_result")
        tail = f"; last result {winner_cell(last, paint)}" if last else ""
        return f"none in progress{'; next card ' + due if due else ''}{tail}"
    cards = " ".join(
        f"{position} {card_text(card, paint)}" for position, card in current["cards"].items()
    )
    parts = [f"{current['number']}{' (trial)' if current.get('trial') else ''}"]
    parts.append(cards or "no card yet")
    if table.get("state") == "reveal":
        parts.append("waiting for the reveal (R15)")
    else:
        parts.append(f"next {due}" if due else "no card due")
    if current.get("insurance_void"):
        parts.append("insurance void")
    if table.get("queued_cards"):
        parts.append(f"{table['queued_cards']} card(s) waiting")
    return ", ".join(parts)


def device_text(device: Mapping[str, Any], paint: Painter) -> str:
    state = device.get("status") or "unknown"
    role = "ok" if state == "connected" else "crit"
    state = words.device_state(state)
    identity = device.get("identity") or {}
    who = " ".join(str(identity[k]) for k in ("vendor", "model") if identity.get(k))
    return f"{device['device']} {paint(state, role)}" + (f" ({who})" if who else "")
