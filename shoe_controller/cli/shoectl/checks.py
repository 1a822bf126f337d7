"""shoectl's arguments checked before anything is sent: a mistake is a usage error (exit 2)
that names the option, never a request the daemon journals as a refused command."""

from __future__ import annotations

from typing import Any

import click

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
                f"not a card: {value!r} (write the rank, A 2-9 T or 10 J Q K, then the suit,"
                " S H D C: QH, TD, 10D, AS)",
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
            f"unknown event type(s) {[text]}; a family: {', '.join(sorted(EVENT_FAMILIES))};"
            " or a full type such as card.dealt, round.result (PUSH_API.md)",
            param,
            ctx,
        )


def not_blank(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--by` and `--reason` say something: they are journaled with the action."""
    if value is not None and not value.strip():
        raise click.BadParameter("must not be empty: it is journaled with the action", param=param)
    return value.strip() if value is not None else None
