"""`shoectl shuffle`: how this shoe's order holds against the previous shoe's, live while it is
dealt, and the report of an ended shoe (docs/shuffle.md).

The controller keeps the companion's latest report (it computes none of it: the statistics
need numpy, which neither the daemon nor shoectl loads); an ended shoe's report is also its
`surveillance.shuffle_report` event, which is asked for when the controller no longer keeps
the shoe (it restarted since). For the surveillance group only (`not_authorized`, exit 4).
"""

from __future__ import annotations

from collections.abc import Mapping
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
from shoe_controller.game.surveillance.shuffle_rates import ALARM_RATE, UNSHUFFLED_RATE
from shoe_controller.vocab import words

REPORT_KEYS = ("shoe", "against", "cards_compared", "tests", "runs", "verdict")
REPORTS_ASKED = 20  # the latest shoe reports looked through for an older shoe's
VERDICT_STYLE = {"fair": None, "suspect": "warn", "unshuffled": "crit"}
RULE = (
    "Each test alarms at its threshold (ALARM AT), set so that a fairly shuffled shoe reaches"
    f" it in at most 1 shoe in {round(1 / ALARM_RATE):,}. The verdict is unshuffled when a"
    f" p-value is below {UNSHUFFLED_RATE:g} (1 shoe in {round(1 / UNSHUFFLED_RATE):,}),"
    " suspect when a test reaches its threshold, else fair. A p-value is how often a fair"
    " shuffle shows a value at least as far out; a small one alone is no alarm."
)
VERDICT_MEANING = {
    "fair": "fair: no test reached its alarm threshold",
    "suspect": "suspect: a test reached its alarm threshold; watch this shoe and the shuffle",
    "unshuffled": "unshuffled: an order a fair shuffle gives in fewer than 1 shoe in a million",
}


def _ask(request: Mapping[str, Any]) -> dict[str, Any]:
    socket_path = click.get_current_context().obj
    with Client(socket_path) as client:
        return client.request(request)


def _failed(error: AnswerError) -> None:
    code = EXIT_NOT_AUTHORIZED if error.code == "not_authorized" else 2
    fail_answer(error, code)


def findings(shoe: int | None) -> dict[str, Any]:
    """The controller's answer for the shoe; for an ended shoe it no longer keeps, its
    report event (`final`) from the journal."""
    try:
        try:
            return _ask({"cmd": "shuffle", "shoe": shoe})
        except AnswerError as error:
            if error.code != "not_found" or shoe is None:
                raise
            events = _ask(
                {
                    "cmd": "events",
                    "types": ["surveillance.shuffle_report"],
                    "limit": REPORTS_ASKED,
                }
            ).get("events", ())
            for event in reversed(list(events)):
                if event.get("shoe") == shoe:
                    return {"shoe": shoe, "open": False, "final": True, "report": event["data"]}
            raise
    except UnreachableError as error:
        fail(str(error))
    except AnswerError as error:
        _failed(error)


def report_json(result: Mapping[str, Any]) -> dict[str, Any]:
    """The issue's `--json` object: exactly REPORT_KEYS."""
    report = result["report"]
    return {key: report[key] for key in REPORT_KEYS}


def _span(span: Any) -> str:
    return f"{span[0]}-{span[1]}"


def _number(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.3g}"
    return str(int(value)) if isinstance(value, float) else str(value)


def _meaning(verdict: str) -> str:
    return VERDICT_MEANING.get(verdict) or words.shuffle_verdict(verdict)


def shuffle_lines(result: Mapping[str, Any], paint: Painter) -> list[str]:
    report = result["report"]
    state = "open" if result.get("open") else "ended"
    where = f"after round {result['round']}" if "round" in result else "at its end"
    verdict = report["verdict"]
    lines = [
        paint(
            f"Shoe {report['shoe']} against shoe {report['against']} ({state}, {where}):"
            f" {report['cards_compared']} cards compared",
            "head",
        ),
        "Verdict: " + paint(_meaning(verdict), VERDICT_STYLE.get(verdict)),
        "",
    ]
    rows = []
    for name, test in report["tests"].items():
        alarmed = (
            test["value"] <= test["threshold"]
            if name == "rising_sequences"
            else test["value"] >= test["threshold"]
        )
        rows.append(
            [
                words.shuffle_test(name),
                _number(test["value"]),
                f"{test['p_value']:.3g}",
                (_number(test["threshold"]), "warn" if alarmed else None),
            ]
        )
    lines.append(render_table(("TEST", "VALUE", "P-VALUE", "ALARM AT"), rows, paint))
    lines.append(paint(RULE, "dim"))
    if report["runs"]:
        runs = [
            [str(run["length"]), _span(run["this"]), _span(run["previous"])]
            for run in report["runs"]
        ]
        lines += ["", render_table(("RUN", "THIS SHOE", "PREVIOUS SHOE"), runs, paint)]
    under_way = result.get("under_way")  # the slug as the latest findings left it
    if under_way:
        slug = under_way["slug"]
        lines.append(
            paint(
                f"slug under way: {slug['length']} cards, here {_span(slug['this'])}, in shoe"
                f" {report['against']} {_span(slug['previous'])}; next there:"
                f" {' '.join(str(card) for card in slug['next'])}",
                "crit",
            )
        )
        worth = under_way.get("next_round") or {}
        if worth.get("if_it_goes_on"):
            lines.append(paint(_if_it_goes_on(worth), "crit"))
    return lines


def _if_it_goes_on(worth: Mapping[str, Any]) -> str:
    """What the next round pays if the slug goes on, beside each winning bet's plain edge."""
    known, plain = worth["if_it_goes_on"], worth.get("edge") or {}
    wins = []
    for bet, value in known.items():
        if value > 0:
            edge = f" (plain edge {plain[bet] * 100:+.2f} %)" if bet in plain else ""
            wins.append(f"{words.bet(bet)} +{_number(value)}{edge}")
    pushes = [words.bet(bet) for bet, value in known.items() if value == 0]
    text = "  if it goes on, the next round pays " + (", ".join(wins) or "no bet")
    if pushes:
        text += f"; pushes {', '.join(pushes)}"
    return text + "; every other bet loses"


@click.command("shuffle", short_help="This shoe's order against the last shoe's (surveillance).")
@shoe_option
@json_option
def shuffle_command(shoe: int | None, as_json: bool) -> None:
    """How the shoe's order holds against the previous shoe's: each test's value, p-value
    and threshold, the longest common runs and the verdict, live while the shoe is dealt;
    for the surveillance group."""
    result = findings(shoe)
    if as_json:
        print_json(report_json(result))
        return
    for line in shuffle_lines(result, painter()):
        out(line)
