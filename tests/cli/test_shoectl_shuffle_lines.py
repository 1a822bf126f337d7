"""What `shoectl shuffle` shows of a slug under way: where it is in both shoes, the
previous shoe's next cards, and what the next round pays if the slug goes on beside the plain
edge of each winning bet. The input is the control socket's `shuffle` answer (docs/shuffle.md):
its `under_way`, the slug as the latest findings left it."""

from __future__ import annotations

from typing import Any

from shoe_controller.cli.shoectl.render import Painter
from shoe_controller.cli.shoectl.shuffle import RULE, shuffle_lines
from shoe_controller.game.surveillance.shuffle_watch import ShuffleSettings


def _answer(next_round: dict[str, Any] | None) -> dict[str, Any]:
    slug: dict[str, Any] = {
        "length": 6,
        "this": [131, 136],
        "previous": [151, 156],
        "next": ["KH", "9S", "5D", "QC", "2H", "3S", "4D", "7C"],
    }
    under_way: dict[str, Any] = {"slug": slug}
    if next_round is not None:
        under_way["next_round"] = next_round
    report = {
        "shoe": 2,
        "against": 1,
        "cards_compared": 140,
        "tests": {"longest_run": {"value": 6, "p_value": 1e-6, "threshold": 7}},
        "runs": [{"length": 6, "this": [131, 136], "previous": [151, 156]}],
        "verdict": "suspect",
    }
    return {"shoe": 2, "open": True, "round": 30, "report": report, "under_way": under_way}


def test_a_live_slug_with_what_the_next_round_pays_if_it_goes_on() -> None:
    worth = {
        "edge": {"banker": -0.0106, "player": -0.0124, "small": -0.0528, "tie": -0.1436},
        "if_it_goes_on": {"banker": 0.95, "player": -1.0, "small": 1.5, "tie": -1.0},
    }
    lines = shuffle_lines(_answer(worth), Painter(enabled=False))
    text = "\n".join(lines)
    assert "slug under way: 6 cards, here 131-136, in shoe 1 151-156; next there: KH 9S 5D" in text
    (pays,) = [line for line in lines if "if it goes on" in line]
    assert pays == (
        "  if it goes on, the next round pays Banker +0.95 (plain edge -1.06 %),"
        " Small +1.5 (plain edge -5.28 %); every other bet loses"
    )


def test_a_tie_pushes_the_main_bets() -> None:
    worth = {
        "edge": None,
        "if_it_goes_on": {"banker": 0.0, "player": 0.0, "tie": 8.0, "small": -1.0},
    }
    (pays,) = [line for line in shuffle_lines(_answer(worth), Painter(enabled=False))
               if "if it goes on" in line]  # fmt: skip
    assert pays == (
        "  if it goes on, the next round pays Tie +8; pushes Banker, Player; every other bet loses"
    )


def test_no_slug_line_when_none_is_under_way() -> None:
    answer = _answer(None)
    answer["under_way"] = None
    assert not [line for line in shuffle_lines(answer, Painter(enabled=False)) if "slug" in line]


def test_no_line_when_the_next_cards_do_not_make_a_round() -> None:
    for worth in (None, {"edge": {"banker": -0.01}, "if_it_goes_on": None}):
        lines = shuffle_lines(_answer(worth), Painter(enabled=False))
        assert not [line for line in lines if "if it goes on" in line]
        assert any("slug under way" in line for line in lines)


def test_the_stated_rule_is_the_watchs() -> None:
    settings = ShuffleSettings()
    assert f"1 shoe in {round(1 / settings.alarm_rate):,}." in RULE
    assert f"below {settings.unshuffled_rate:g} " in RULE
