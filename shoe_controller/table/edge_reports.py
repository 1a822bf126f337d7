"""The table's handler of a surveillance report input: checked, kept, its crossings emitted.

The report's own checks and the shoe's record of reports are edge_watch.py's (pure data, held by
the shoe's book); this is the one place a report meets the table's context.
"""

from __future__ import annotations

from shoe_controller.table.context import Context
from shoe_controller.table.edge_watch import report_problem
from shoe_controller.vocab.inputs import SurveillanceReport


def on_report(ctx: Context, report: SurveillanceReport) -> None:
    """A surveillance report for the open shoe: kept, and its threshold crossings emitted."""
    book = ctx.book
    if not book.open or report.shoe != book.number:
        where = f"shoe {book.number} is open" if book.open else "no shoe is open"
        ctx.refuse("invalid_input", f"surveillance report for shoe {report.shoe}: {where}")
        return
    problem = report_problem(report)
    if problem is not None:
        ctx.refuse("invalid_input", f"surveillance report refused: {problem}")
        return
    latest = book.surveillance.latest
    if latest is not None and report.after_seq <= latest.after_seq:
        ctx.refuse(
            "invalid_input",
            f"surveillance report after seq {report.after_seq} is not newer than the last"
            f" one (after seq {latest.after_seq})",
        )
        return
    for kind, data in book.surveillance.accept(report, ctx.at):
        ctx.emit(kind, data, round_number=None)  # about the next round, none in progress
