"""The table settings input: the settings in force from that input on, or refused as they are.

The daemon journals its `TableConfig` as an input at start-up and before each shoe's first
input (store/controller.py), so a replay of the journal, or of an export of it, deals with the
settings in force then (docs/journal.md "The table settings"). It yields no event: the
events, and so the golden scenario files, are as they were without it.
"""

from __future__ import annotations

from shoe_controller.table.config import TableConfig
from shoe_controller.table.context import Context
from shoe_controller.vocab.inputs import TableSettings


def on_settings(ctx: Context, item: TableSettings) -> None:
    """From now on the table deals by `item.settings`; settings it cannot take are refused
    (one alert) and those in force stay."""
    try:
        config = TableConfig.from_mapping(item.settings)
    except (TypeError, ValueError) as error:
        ctx.refuse("bad_settings", f"table settings refused, those in force stay: {error}")
        return
    ctx.config = config
