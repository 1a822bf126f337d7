"""The journal's checkpoint input: echoed as a `journal.checkpoint` event, nothing else.

The daemon signs where the journal's hash chain stands and journals it as an input
(store/checkpoint.py, service/checkpoints.py), so that it is chained, replayed and delivered
like any other: the table turns it into its event, the input's fields but `at` as the data,
unchanged, so a replay gives the same event. It changes nothing of the table, names no card
(R15) and belongs to no shoe and no round.
"""

from __future__ import annotations

import dataclasses

from shoe_controller.table.context import Context
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import JournalCheckpoint


def on_checkpoint(ctx: Context, item: JournalCheckpoint) -> None:
    data = {spec.name: getattr(item, spec.name) for spec in dataclasses.fields(item)}
    del data["at"]
    ctx.events.append(Event(EventType.JOURNAL_CHECKPOINT, ctx.at, None, None, data))
