"""`shoectl road`: the shoe's five roads (bead plate, big road, big eye boy, small road,
cockroach pig), the ask road and the shoe's statistics, as the scoreboard draws them
(docs/scoreboard.md), or as an SVG picture or the board's JSON."""

from __future__ import annotations

import click

from shoe_controller.cli.output_file import OutputFile, open_output
from shoe_controller.cli.shoectl.checks import shoe_option
from shoe_controller.cli.shoectl.plumbing import ask, json_option, out, painter, print_json
from shoe_controller.cli.shoectl.recall import require_shoe
from shoe_controller.cli.shoectl.render import (
    BANKER,
    DERIVED_ROADS,
    PLAYER,
    TIE,
    ask_lines,
    bead_plate_lines,
    big_road_lines,
    derived_road_lines,
    stats_lines,
)
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
