"""One sink's outbox in the journal: its events in its own seq order, and its mark."""

from __future__ import annotations

from shoe_controller.store.journal import Journal, OutboxEvent


class JournalOutbox:
    """What a sink (sink.Outbox) needs of the journal, for the sink named `sink`."""

    def __init__(self, journal: Journal, sink: str) -> None:
        self._journal = journal
        self.sink = sink

    def last_seq(self) -> int:
        return self._mark()[0]

    def delivered_through(self) -> int:
        return self._mark()[1]

    def events_after(self, seq: int, limit: int) -> list[OutboxEvent]:
        return self._journal.sink_events_after(self.sink, seq, limit)

    def mark_delivered(self, through: int) -> None:
        self._journal.mark_delivered(self.sink, through)

    def _mark(self) -> tuple[int, int]:
        mark = self._journal.sink_marks().get(self.sink)
        return (0, 0) if mark is None else (mark.last_seq, mark.delivered_through)
