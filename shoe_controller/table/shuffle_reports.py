"""The table's handler of a shuffle findings input: checked, kept, its events emitted.

The findings' checks and the shoe's record are shuffle_record.py's (pure data, held by the
shoe's book); this is the one place findings meet the table's context.
"""

from __future__ import annotations

from shoe_controller.table.context import Context
from shoe_controller.table.shuffle_record import findings_problem, freshness_problem
from shoe_controller.vocab.inputs import ShuffleFindings


def on_findings(ctx: Context, item: ShuffleFindings) -> None:
    """Shuffle findings for the shoe in the book (or the final ones of the shoe before it):
    kept, and their events emitted."""
    book = ctx.book
    problem = freshness_problem(book.number, book.open, book.shuffle, item)
    if problem is None:
        problem = findings_problem(item)
    if problem is not None:
        ctx.refuse("invalid_input", f"shuffle findings refused: {problem}")
        return
    record = book.shuffle
    accept = record.accept if item.shoe == book.number else record.accept_previous
    for kind, data in accept(item, ctx.at):  # about rounds that ended: none in progress
        ctx.emit(kind, data, round_number=None, shoe=item.shoe)
