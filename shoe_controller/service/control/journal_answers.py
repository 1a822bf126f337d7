"""The seeing answers read from the journal (`rounds`, `round`, `export`, `road`, `events`,
`outbox`; docs/control.md), built from a journal and what the daemon's live objects said when
the request was taken (`Live`).

The same code answers in the reader process (reader.py, over a read-only connection of its
own: no read query on the loop that ACKs the cards) and in-process
(`ControlService.answer`, over the daemon's connection), so the two give the same bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from shoe_controller.game.board import Board
from shoe_controller.game.roads import RoadError
from shoe_controller.service.config import Config
from shoe_controller.service.control.backlogs import backlogs_of, sink_json
from shoe_controller.service.control.requests import (
    EVENTS_LIMIT_MAX,
    ControlError,
    event_types,
    optional_int,
)
from shoe_controller.service.control.scan import last_matching, matching_after
from shoe_controller.service.round_summary import summarize_round
from shoe_controller.service.scoreboard.history import shoe_events
from shoe_controller.store.controller import Controller
from shoe_controller.store.export import Selection, export_records
from shoe_controller.store.journal import Journal, JournalError, StoredEvent
from shoe_controller.table.config import SHUFFLER_DEALER

COMMANDS = ("rounds", "round", "export", "road", "events", "outbox")
OUTBOX_WAITING = 20  # the events each sink waits for that `outbox` lists


@dataclasses.dataclass(frozen=True, slots=True)
class Live:
    """What the daemon's live objects said when a journal answer was taken: the clock, the
    table's shoe and its round in progress (its view: squeeze-safe, R15), the sinks'
    statuses (`outbox` only)."""

    now: float
    shoe_open: bool = False
    view_shoe: int | None = None  # the view's `shoe`
    table_shoe: int = 0  # the table's shoe number (the view's, or the next one's)
    round: Mapping[str, Any] | None = None  # the view's `round`
    sinks: tuple[Mapping[str, Any], ...] = ()


def live_of(
    controller: Controller,
    sink_statuses: Callable[[], Iterable[Any]],
    clock: Callable[[], float],
    command: Any,
) -> Live:
    """What `command`'s answer needs of the live objects, taken now (on the daemon's loop:
    memory only, no read of the journal)."""
    if command == "outbox":
        return Live(clock(), sinks=tuple(sink_json(status) for status in sink_statuses()))
    if command == "events":
        return Live(clock())
    table = controller.table
    view = table.view()
    return Live(
        clock(), bool(view.get("shoe_open")), view.get("shoe"), table.shoe, view.get("round")
    )


class JournalAnswers:
    """Answers the requests that read the journal, from `journal` and a request's Live."""

    def __init__(self, journal: Journal, config: Config) -> None:
        self._journal = journal
        self._config = config
        self._handlers: dict[str, Callable[[Mapping[str, Any], Live], dict[str, Any]]] = {
            "rounds": self._rounds,
            "round": self._round,
            "export": self._export,  # shoectl round N --export
            "road": self._road,
            "events": self._events,
            "outbox": self._outbox,
        }

    @property
    def _reads(self) -> Any:
        return self._journal.reads

    def answer(self, request: Mapping[str, Any], live: Live) -> dict[str, Any]:
        """The result of a command of COMMANDS; ControlError for a bad request or a journal
        that cannot be read."""
        try:
            return self._handlers[request["cmd"]](request, live)
        except JournalError as error:
            raise ControlError("journal", f"the journal cannot be read: {error}") from None

    def _rounds(self, request: Mapping[str, Any], live: Live) -> dict[str, Any]:
        shoe = self._shoe_of(request, live)
        last = optional_int(request, "last", low=1)
        infos = self._reads.rounds(shoe)
        total = len(infos)
        if last is not None:
            infos = infos[-last:]
        rounds = [
            summarize_round(self._reads.round_events(shoe, info.round), _live_round(live, shoe))
            for info in infos
        ]
        return {"shoe": shoe, "total": total, "rounds": rounds}

    def _round(self, request: Mapping[str, Any], live: Live) -> dict[str, Any]:
        shoe, number, events = self._round_asked(request, live, "round needs its number")
        return {
            "shoe": shoe,
            "round": number,
            "summary": summarize_round(events, _live_round(live, shoe)),
            "events": [event.to_wire() for event in events],
        }

    def _export(self, request: Mapping[str, Any], live: Live) -> dict[str, Any]:
        """A round's dispute file (store/export.py): its shoe from the start through the
        round, with the hash chain. A round still dealt in squeeze mode is refused: its
        inputs name cards not revealed yet (R15)."""
        shoe, number, events = self._round_asked(request, live, "export needs a round number")
        procedures = self._config.procedures
        if procedures.squeeze and summarize_round(events, None)["status"] == "in_progress":
            raise ControlError(
                "refused",
                f"round {number} is still being dealt under the squeeze (R15): export it once"
                " it is over",
            )
        selection = Selection(round=(shoe, number))
        records = export_records(self._journal, selection, procedures=procedures, now=live.now)
        return {"shoe": shoe, "round": number, "records": list(records)}

    def _road(self, request: Mapping[str, Any], live: Live) -> dict[str, Any]:
        """The shoe's board from its journaled events (docs/scoreboard.md, the same board the
        scoreboard page draws): results, the five roads, the ask road, the statistics."""
        shoe = self._shoe_of(request, live)
        procedures = self._config.procedures
        board = Board(None if procedures.mode == SHUFFLER_DEALER else procedures.cards_in_shoe)
        try:
            board.feed_all(shoe_events(self._reads, shoe))
        except RoadError as error:
            raise ControlError(
                "journal", f"a round result cannot go on the road: {error}"
            ) from None
        return {"table": self._config.table.id, **board.to_json(), "shoe": shoe}

    def _events(self, request: Mapping[str, Any], live: Live) -> dict[str, Any]:
        types = event_types(request)
        limit = optional_int(request, "limit", low=1, high=EVENTS_LIMIT_MAX) or 20
        after = optional_int(request, "after", low=0)
        if after is not None:
            events = matching_after(self._reads, after, types, limit)
        else:
            events = last_matching(self._reads, limit, types)
        return {"events": [event.to_wire() for event in events]}

    def _outbox(self, request: Mapping[str, Any], live: Live) -> dict[str, Any]:
        return backlogs_of(self._journal, live.sinks, live.now, waiting=OUTBOX_WAITING)

    def _round_asked(
        self, request: Mapping[str, Any], live: Live, missing: str
    ) -> tuple[int, int, list[StoredEvent]]:
        """The shoe, the round number and the round's journaled events a request names."""
        shoe = self._shoe_of(request, live)
        number = optional_int(request, "round", low=0)
        if number is None:
            raise ControlError("bad_request", f"{missing}: {{'round': N}}")
        events = self._reads.round_events(shoe, number)
        if not events:
            raise ControlError("not_found", f"shoe {shoe} has no round {number} in the journal")
        return shoe, number, events

    def _shoe_of(self, request: Mapping[str, Any], live: Live) -> int:
        shoe = optional_int(request, "shoe", low=0)
        if shoe is not None:
            return shoe
        if live.shoe_open:
            return live.table_shoe
        # No shoe open: the latest shoe that dealt rounds (a shuffle for the next shoe may
        # already be journaled under the next number).
        for info in reversed(self._reads.shoes()):
            if self._reads.rounds(info.shoe):
                return int(info.shoe)
        return live.table_shoe


def _live_round(live: Live, shoe: int) -> Mapping[str, Any] | None:
    """The table's view of its round in progress, when it belongs to `shoe`."""
    if live.view_shoe == shoe and live.shoe_open:
        return live.round
    return None
