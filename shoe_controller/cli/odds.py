"""`shoe-controller odds`: print the exact odds and house edges of a shoe's composition."""

from __future__ import annotations

import click

from shoe_controller.game.odds import (
    MAX_DECKS,
    Composition,
    OddsError,
    analyse,
    format_analysis,
    parse_remaining,
)


@click.command("odds")
@click.option(
    "--decks",
    type=click.IntRange(1, MAX_DECKS),
    default=8,
    show_default=True,
    help="Decks in the full shoe.",
)
@click.option(
    "--remaining",
    metavar="SPEC",
    help="What is left: 13 rank counts A..K ('32,32,...,32') or the cards already dealt "
    "('QH,3S,TD'). Rank counts assume suits evenly spread.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead.")
def odds_command(decks: int, remaining: str | None, as_json: bool) -> None:
    """Exact odds of every outcome and house edge of every bet, by full enumeration."""
    try:
        if remaining is None:
            composition = Composition.full_shoe(decks)
            title = f"Exact odds for a full shoe of {decks} decks ({composition.total} cards)"
        else:
            composition = parse_remaining(remaining, decks)
            title = None
        analysis = analyse(composition)
    except OddsError as error:
        raise click.BadParameter(str(error), param_hint="'--remaining'") from None
    if as_json:
        click.echo(analysis.to_json())
        return
    click.echo(format_analysis(analysis, title))
    click.echo(f"\n{HOUSE_EDGE_NOTE}")


HOUSE_EDGE_NOTE = (
    "house edge: what the house keeps of each unit staked, positive when the house is"
    " favoured. `shoectl edge` shows the player edge, the same number with the opposite sign."
)
