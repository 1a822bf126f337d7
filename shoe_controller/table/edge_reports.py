"""The table's handler of a surveillance report input: checked, kept, its crossings emitted.

The report's own checks and the shoe's record of reports are edge_watch.py's (pure data, held by
the shoe's book); this is the one place a report meets the table's context.
"""

from __future__ import annotations

from shoe_controller.table.context import Context
from shoe_controller.table.edge_watch import not_newer, report_problem, wrong_shoe
from shoe_controller.vocab.inputs import SurveillanceReport


def on_report(ctx: Context, report: SurveillanceReport) -> None:
    """A surveillance report for the open shoe: kept, and its threshold crossings emitted."""
    book = ctx.book
    problem = wrong_shoe(book.number, book.open, report)
    if problem is None and (unusable := report_problem(report)) is not None:
        problem = f"surveillance report refused: {unusable}"
    if problem is None:
        problem = not_newer(book.surveillance, report)
    if problem is not None:
        ctx.refuse("invalid_input", problem)
        return
    for kind, data in book.surveillance.accept(report, ctx.at):
        ctx.emit(kind, data, round_number=None)  # about the next round, none in progress
