"""`shoectl edge`: every bet's exact probability, payout and player edge on the next round, from
the cards not yet seen, and how each moved over the shoe (docs/surveillance.md).

For the surveillance group only: the controller refuses others (`not_authorized`, exit 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from shoe_controller.cli.shoectl.checks import shoe_option
from shoe_controller.cli.shoectl.client import AnswerError, Client, UnreachableError
from shoe_controller.cli.shoectl.plumbing import (
    EXIT_NOT_AUTHORIZED,
    fail,
    fail_answer,
    json_option,
    out,
    painter,
    print_json,
)
from shoe_controller.cli.shoectl.render import Painter, render_table
from shoe_controller.vocab import words

# The issue's `--json` object: exactly these keys, each bet with exactly BET_KEYS.
JSON_KEYS = ("shoe", "round", "cards_left", "bets")
BET_KEYS = ("probability", "payout", "player_edge")
SPARKS = "▁▂▃▄▅▆▇█"
HISTORY_WIDTH = 40  # the last reports drawn in "over the shoe"


def _ask(request: Mapping[str, Any]) -> dict[str, Any]:
    socket_path = click.get_current_context().obj
    try:
        with Client(socket_path) as client:
            return client.request(request)
    except UnreachableError as error:
        fail(str(error))
    except AnswerError as error:
        code = EXIT_NOT_AUTHORIZED if error.code == "not_authorized" else 2
        fail_answer(error, code)


def edge_json(result: Mapping[str, Any]) -> dict[str, Any]:
    """The `--json` object: {"shoe", "round", "cards_left", "bets": {NAME: {...}}}."""
    bets = {name: {key: values[key] for key in BET_KEYS} for name, values in result["bets"].items()}
    return {
        "shoe": result["shoe"],
        "round": result["round"],
        "cards_left": result["cards_left"],
        "bets": bets,
    }


def percent(value: float | None, places: int = 3) -> str:
    return "" if value is None else f"{value * 100:+.{places}f} %"


def sparkline(values: Sequence[float]) -> str:
    """The edges of a bet over the shoe, low to high, one block a report (the last 40)."""
    values = list(values)[-HISTORY_WIDTH:]
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return SPARKS[0] * len(values)
    steps = len(SPARKS) - 1
    return "".join(SPARKS[round((value - low) / (high - low) * steps)] for value in values)


def edge_lines(result: Mapping[str, Any], paint: Painter) -> list[str]:
    """The table of bets for a person: positive edges highlighted."""
    cards = result["cards_left"]
    state = "open" if result.get("open") else "ended"
    head = (
        f"Shoe {result['shoe']} ({state}), next round {result['round']}: "
        f"{sum(cards.values())} cards not seen; threshold {percent(result['threshold'])}"
    )
    lines = [paint(head, "head"), "  ".join(f"{rank} {count}" for rank, count in cards.items())]
    summary, history = result.get("summary", {}), result.get("history", [])
    rows = []
    for name, values in result["bets"].items():
        edge = values["player_edge"]
        above = name in result.get("raised", {})
        role = "crit" if above else ("warn" if edge > 0 else None)
        seen = summary.get(name, {})
        largest = seen.get("largest_edge")
        moves = [entry["player_edge"][name] for entry in history if name in entry["player_edge"]]
        rows.append(
            [
                (words.bet(name), role),
                f"{values['probability'] * 100:.4f} %",
                f"{values['payout']:.4g}",
                (percent(edge), role),
                str(seen.get("rounds_favoured", 0)),
                f"{percent(largest)} (round {seen.get('largest_edge_round')})" if seen else "",
                sparkline(moves),
            ]
        )
    headers = ("BET", "WINS", "PAYS", "PLAYER EDGE", "ROUNDS > 0", "LARGEST", "OVER THE SHOE")
    lines += ["", render_table(headers, rows, paint), paint(PLAYER_EDGE_NOTE, "dim")]
    closed = sorted({"big", "small"} - set(result["bets"]))
    if closed:
        shut = ", ".join(words.bet(name) for name in closed)
        lines.append(paint(f"not offered any more after round 20: {shut}", "dim"))
    return lines


PLAYER_EDGE_NOTE = (
    "player edge: what a player gains on average per unit staked, negative when the house is"
    " favoured (shoe-controller odds shows the house edge: the same number, sign turned)"
)


def covered_text(result: Mapping[str, Any]) -> str:
    """Which of the shoe's rounds the summary covers: the companion reports from when it
    started, so a companion started mid-shoe has no report of the rounds before."""
    reported = sorted({entry["round"] for entry in result.get("history") or []})
    dealt = int(result["round"]) if result.get("open") else max(reported, default=0)
    if not reported or dealt <= 0:
        return "no round reported yet"
    if reported[0] <= 1:
        return f"rounds 1 to {reported[-1]}, every one reported"
    return (
        f"rounds {reported[0]} to {reported[-1]}: the companion was not running for rounds 1"
        f" to {reported[0] - 1}, which have no report"
    )


def summary_lines(result: Mapping[str, Any], paint: Painter) -> list[str]:
    rows = [
        [
            words.bet(name),
            str(entry["rounds"]),
            str(entry["rounds_favoured"]),
            str(entry["rounds_above_threshold"]),
            str(entry["first_favoured_round"] or "never"),
            (percent(entry["largest_edge"]), "warn" if entry["largest_edge"] > 0 else None),
            str(entry["largest_edge_round"]),
        ]
        for name, entry in result["summary"].items()
    ]
    headers = ("BET", "ROUNDS", "FAVOURED", "ABOVE", "FIRST", "LARGEST PLAYER EDGE", "IN ROUND")
    title = f"Shoe {result['shoe']}: the player's edge per round, {covered_text(result)}"
    legend = (
        "FAVOURED: rounds with a player edge above 0; ABOVE: above the threshold; FIRST: the"
        " first favoured round"
    )
    return [
        paint(title, "head"),
        render_table(headers, rows, paint),
        paint(legend, "dim"),
        paint(PLAYER_EDGE_NOTE, "dim"),
    ]


@click.command("edge", short_help="Every bet's exact edge on the cards left (surveillance).")
@shoe_option
@click.option("--summary", "only_summary", is_flag=True, help="Only the shoe's summary.")
@json_option
def edge_command(shoe: int | None, only_summary: bool, as_json: bool) -> None:
    """Every bet's probability, payout and player edge on the next round, from the cards not
    yet seen (exact), and how each moved over the shoe; for the surveillance group."""
    result = _ask({"cmd": "edge", "shoe": shoe})
    if only_summary:
        if as_json:
            print_json({"shoe": result["shoe"], "summary": result["summary"]})
        else:
            for line in summary_lines(result, painter()):
                out(line)
        return
    if as_json:
        print_json(edge_json(result))
        return
    for line in edge_lines(result, painter()):
        out(line)
