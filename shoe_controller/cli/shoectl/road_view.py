"""`shoectl road`: the shoe's five roads (bead plate, big road, big eye boy, small road,
cockroach pig), the ask road and the shoe's statistics, as the scoreboard draws them
(docs/scoreboard.md), or as an SVG picture or the board's JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from shoe_controller.cli.output_file import OutputFile, open_output
from shoe_controller.cli.shoectl.checks import shoe_option
from shoe_controller.cli.shoectl.plumbing import ask, json_option, out, painter, print_json
from shoe_controller.cli.shoectl.recall import require_shoe
from shoe_controller.cli.shoectl.render import BANKER, PLAYER, TIE, Painter
from shoe_controller.service.scoreboard.svg import board_svg


@click.command("road", short_help="The shoe's five roads, the ask road and its statistics.")
@shoe_option
@click.option(
    "--svg",
    "svg_file",
    type=OutputFile(),
    help="Write the board as an SVG picture to this file ('-': standard output).",
)
@json_option
def road_command(shoe: int | None, svg_file: str | None, as_json: bool) -> None:
    """The shoe's roads as the display board draws them: bead plate, big road, big eye boy,
    small road, cockroach pig, and the ask road (docs/scoreboard.md)."""
    result = ask({"cmd": "road", "shoe": shoe})
    if shoe is not None and not result["summary"]["rounds"]:
        require_shoe(shoe, ask({"cmd": "rounds", "shoe": shoe, "last": 1})["total"])
    if svg_file is not None:
        picture = board_svg(result, result.get("table"))
        with open_output(svg_file) as file:
            file.write(picture + "\n")
        return
    if as_json:
        print_json(result)
        return
    paint = painter()
    counts = result["summary"]
    rows = result["rows"]
    out(
        paint(f"Shoe {result['shoe']}", "head")
        + f"  {counts['rounds']} rounds: "
        + paint(f"Banker {counts['banker']}", BANKER)
        + "  "
        + paint(f"Player {counts['player']}", PLAYER)
        + "  "
        + paint(f"Tie {counts['tie']}", TIE)
        + f"  banker pairs {counts['banker_pair']}  player pairs {counts['player_pair']}"
    )
    out()
    out(paint("Bead plate", "head") + paint("  (•B: banker pair, B•: player pair)", "dim"))
    for line in bead_plate_lines(result["bead_plate"], rows, paint):
        out(line)
    out()
    legend = "  (•B: banker pair, B•: player pair, B2: two ties after it)"
    out(paint("Big road", "head") + paint(legend, "dim"))
    for line in big_road_lines(result["big_road"], rows, paint):
        out(line)
    for name, title in DERIVED_ROADS:
        out()
        legend = "  (● red: the pattern repeats, ○ blue: it breaks; colours, not winners)"
        out(paint(title, "head") + paint(legend, "dim"))
        for line in derived_road_lines(result[name], rows, paint):
            out(line)
    out()
    out(paint("Ask road", "head"))
    for line in ask_lines(result["ask"], paint):
        out(line)
    out()
    for line in stats_lines(result["stats"], paint):
        out(line)


def bead_plate_lines(cells: Sequence[Mapping[str, Any]], rows: int, paint: Painter) -> list[str]:
    """Six rows of cells `•B•`: a banker pair marks the left, a player pair the right."""
    columns = max((cell["column"] for cell in cells), default=-1) + 1
    grid = [["   "] * columns for _ in range(rows)]
    for cell in cells:
        letter = cell["winner"][0].upper()
        left = paint("•", BANKER) if cell["banker_pair"] else " "
        right = paint("•", PLAYER) if cell["player_pair"] else " "
        grid[cell["row"]][cell["column"]] = f"{left}{paint(letter, cell['winner'])}{right}"
    return ["|" + "".join(row) + "|" for row in grid] if columns else ["(no rounds yet)"]


def big_road_lines(cells: Sequence[Mapping[str, Any]], rows: int, paint: Painter) -> list[str]:
    """Columns of wins, cells `•B2•`: banker pair, winner, ties after it, player pair."""
    columns = max((cell["column"] for cell in cells), default=-1) + 1
    grid = [["    "] * columns for _ in range(rows)]
    for cell in cells:
        winner = cell["winner"]
        letter = paint(winner[0].upper(), winner) if winner else " "
        ties = cell["ties"]
        tie_mark = paint(str(ties) if ties < 10 else "+", TIE) if ties else " "
        left = paint("•", BANKER) if cell["banker_pair"] else " "
        right = paint("•", PLAYER) if cell["player_pair"] else " "
        grid[cell["row"]][cell["column"]] = f"{left}{letter}{tie_mark}{right}"
    return ["|" + "".join(row) + "|" for row in grid] if columns else ["(no rounds yet)"]


DERIVED_ROADS = (
    ("big_eye_boy", "Big eye boy"),
    ("small_road", "Small road"),
    ("cockroach_pig", "Cockroach pig"),
)
# Filled red, hollow blue: a mark apart from B (Banker) and P, readable without colour.
COLOUR_LETTER = {"red": "●", "blue": "○"}


def derived_road_lines(road: Mapping[str, Any], rows: int, paint: Painter) -> list[str]:
    """A derived road as drawn, `●` red and `○` blue, dragon tails turned right."""
    cells = road.get("cells") or []
    columns = max((cell["column"] for cell in cells), default=-1) + 1
    grid = [["  "] * columns for _ in range(rows)]
    for cell in cells:
        colour = cell["colour"]
        grid[cell["row"]][cell["column"]] = paint(COLOUR_LETTER[colour], colour) + " "
    return ["|" + "".join(row) + "|" for row in grid] if columns else ["(not started yet)"]


def ask_lines(ask: Mapping[str, Mapping[str, str | None]], paint: Painter) -> list[str]:
    """What each derived road would add after a Banker win, and after a Player win."""
    lines = []
    for side, role in (("banker", BANKER), ("player", PLAYER)):
        entries = []
        for name, title in DERIVED_ROADS:
            colour = (ask.get(side) or {}).get(name)
            shown = paint(COLOUR_LETTER[colour], colour) if colour else "-"
            entries.append(f"{title.lower()} {shown}")
        lines.append(f"{paint(side.capitalize().ljust(6), role)} next: " + "  ".join(entries))
    return lines


def stats_lines(stats: Mapping[str, Any], paint: Painter) -> list[str]:
    """The cards of the shoe: dealt, left, and left by rank (only cards already shown)."""
    line = f"naturals {stats.get('naturals', 0)}  cards dealt {stats.get('cards_dealt', 0)}"
    if stats.get("cards_left") is not None:
        line += f"  cards left {stats['cards_left']}"
    lines = [line]
    by_rank = stats.get("cards_left_by_rank")
    if by_rank:
        ranks = "  ".join(
            f"{'10' if rank == 'T' else rank} {left}" for rank, left in by_rank.items()
        )
        lines.append(paint("Left by rank ", "head") + ranks)
    if stats.get("cards_unknown"):
        lines.append(paint(f"({stats['cards_unknown']} card(s) out not shown yet)", "dim"))
    return lines
