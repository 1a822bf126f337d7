"""shoectl's arguments checked before anything is sent: a mistake is a usage error (exit 2)
that names the option, never a request the daemon journals as a refused command."""

from __future__ import annotations

from typing import Any

import click

from shoe_controller.table.action_specs import POSITION_NAMES, said
from shoe_controller.vocab.cards import CardError, parse_card
from shoe_controller.vocab.events import EventType

EVENT_TYPES = frozenset(str(kind) for kind in EventType)
EVENT_FAMILIES = frozenset(name.split(".", 1)[0] for name in EVENT_TYPES)


class CardParam(click.ParamType):
    """A card as the table reads it (vocab.cards.parse_card): `QH`, `TD` or `10D`, `AS`."""

    name = "card"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return str(parse_card(str(value)))
        except CardError:
            self.fail(
                f"{value} is not a card (write the rank, A 2-9 T or 10 J Q K, then the suit,"
                " S H D C: QH, TD, 10D, AS)",
                param,
                ctx,
            )


class PositionParam(click.ParamType):
    """A position as the docs write it, P1 B1 P2 B2 P3 B3 (p1 will do too)."""

    name = "position"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip().upper()
        if text in POSITION_NAMES:
            return text
        self.fail(
            f"{value} is not a position: {', '.join(POSITION_NAMES)} (R7's dealing order)",
            param,
            ctx,
        )


class EventTypeParam(click.ParamType):
    """An event type (`card.dealt`) or a family of them (`card`)."""

    name = "type"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        if text in EVENT_TYPES or text in EVENT_FAMILIES:
            return text
        self.fail(
            f"unknown event type {text}; a family: {', '.join(sorted(EVENT_FAMILIES))};"
            " or a full type such as card.dealt, round.result (docs/spec-push-api.md)",
            param,
            ctx,
        )


def not_blank(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--by` and `--reason` say something (the table's rule, `action_specs.said`): they
    are journaled with the action."""
    if value is not None and not said(value):
        raise click.BadParameter("must not be empty: it is journaled with the action", param=param)
    return value.strip() if value is not None else None


# Shoes and rounds are numbered from 1: a 0 is a usage error, as for every command alike.
shoe_option = click.option(
    "--shoe",
    type=click.IntRange(min=1),
    metavar="N",
    help="Which shoe, numbered from 1 (default: the one in play, else the last dealt).",
)
