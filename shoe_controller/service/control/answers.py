"""The answers to the seeing requests (`hello`, `status`, `check`, `devices`, `rounds`,
`round`, `export`, `road`, `events`, `outbox`), from the table and its journal
(docs/control.md). They only read: acting is actions.py's, surveillance's requests are
surveillance.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shoe_controller.game.board import Board
from shoe_controller.game.roads import RoadError
from shoe_controller.service.config import Config
from shoe_controller.service.control.requests import (
    EVENTS_LIMIT_MAX,
    PROTOCOL_VERSION,
    ControlError,
    event_types,
    optional_int,
)
from shoe_controller.service.control.scan import last_matching, matching_after
from shoe_controller.service.control.status import LiveStatus
from shoe_controller.service.health import check_line
from shoe_controller.service.round_summary import summarize_round
from shoe_controller.service.scoreboard.history import shoe_events
from shoe_controller.store.controller import Controller
from shoe_controller.store.export import Selection, export_records
from shoe_controller.store.journal import JournalError, StoredEvent
from shoe_controller.table.action_specs import ACTIONS
from shoe_controller.table.config import SHUFFLER_DEALER


class Answers:
    """Answers the seeing requests from the daemon's live objects."""

    def __init__(
        self,
        controller: Controller,
        config: Config,
        status: LiveStatus,
        clock: Callable[[], float],
        version: str,
    ) -> None:
        self._controller = controller
        self._config = config
        self._status = status
        self._clock = clock
        self._version = version
        self._handlers: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "hello": self._hello,
            "status": self._status_answer,
            "check": self._check,
            "devices": self._devices,
            "rounds": self._rounds,
            "round": self._round,
            "export": self._export,  # shoectl round N --export (issue 18)
            "road": self._road,
            "events": self._events,
            "outbox": self._outbox,
        }

    @property
    def _journal(self) -> Any:
        return self._controller.journal.reads

    def answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The result of a seeing command; ControlError for a bad request."""
        command = request.get("cmd")
        handler = self._handlers.get(command) if isinstance(command, str) else None
        if handler is None:
            raise ControlError(
                "unknown_command",
                f"unknown command {command!r}; commands: {', '.join([*self._handlers, 'act'])}",
            )
        try:
            return handler(request)
        except JournalError as error:
            raise ControlError("journal", f"the journal cannot be read: {error}") from None

    def _hello(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "version": self._version,
            "controller_id": self._config.controller_id,
            "table_id": self._config.table.id,
            "commands": [*self._handlers, "act"],
            "actions": {
                action.name: {
                    "summary": action.summary,
                    "rules": action.rules,
                    "args": [
                        {"name": arg.name, "kind": arg.kind, "help": arg.help}
                        | {"required": arg.required, "default": arg.default}
                        for arg in action.args
                    ],
                }
                for action in ACTIONS.values()
            },
        }

    def _status_answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return self._status.status()

    def _check(self, request: Mapping[str, Any]) -> dict[str, Any]:
        status = self._status.status()
        return {"line": check_line(status), **status["health"]}

    def _devices(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return {"devices": self._status.devices(self._controller.table.view())}

    def _rounds(self, request: Mapping[str, Any]) -> dict[str, Any]:
        shoe = self._shoe_of(request)
        last = optional_int(request, "last", low=1)
        infos = self._journal.rounds(shoe)
        total = len(infos)
        if last is not None:
            infos = infos[-last:]
        view = self._controller.table.view()
        rounds = [
            summarize_round(self._journal.round_events(shoe, info.round), _live(view, shoe))
            for info in infos
        ]
        return {"shoe": shoe, "total": total, "rounds": rounds}

    def _round(self, request: Mapping[str, Any]) -> dict[str, Any]:
        shoe, number, events = self._round_asked(request, "round needs its number")
        view = self._controller.table.view()
        return {
            "shoe": shoe,
            "round": number,
            "summary": summarize_round(events, _live(view, shoe)),
            "events": [event.to_wire() for event in events],
        }

    def _export(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """A round's dispute file (store/export.py): its shoe from the start through the
        round, with the hash chain. A round still dealt in squeeze mode is refused: its
        inputs name cards not revealed yet (R15)."""
        shoe, number, events = self._round_asked(request, "export needs a round number")
        procedures = self._config.procedures
        if procedures.squeeze and summarize_round(events, None)["status"] == "in_progress":
            raise ControlError(
                "refused",
                f"round {number} is still being dealt under the squeeze (R15): export it once"
                " it is over",
            )
        selection = Selection(round=(shoe, number))
        records = export_records(
            self._controller.journal, selection, procedures=procedures, now=self._clock()
        )
        return {"shoe": shoe, "round": number, "records": list(records)}

    def _road(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The shoe's board from its journaled events (docs/scoreboard.md, the same board the
        scoreboard page draws): results, the five roads, the ask road, the statistics."""
        shoe = self._shoe_of(request)
        procedures = self._config.procedures
        board = Board(None if procedures.mode == SHUFFLER_DEALER else procedures.cards_in_shoe)
        try:
            board.feed_all(shoe_events(self._journal, shoe))
        except RoadError as error:
            raise ControlError(
                "journal", f"a round result cannot go on the road: {error}"
            ) from None
        return {"table": self._config.table.id, **board.to_json(), "shoe": shoe}

    def _events(self, request: Mapping[str, Any]) -> dict[str, Any]:
        types = event_types(request)
        limit = optional_int(request, "limit", low=1, high=EVENTS_LIMIT_MAX) or 20
        after = optional_int(request, "after", low=0)
        if after is not None:
            events = matching_after(self._journal, after, types, limit)
        else:
            events = last_matching(self._journal, limit, types)
        return {"events": [event.to_wire() for event in events]}

    def _outbox(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return self._status.outbox(waiting=20)

    def _round_asked(
        self, request: Mapping[str, Any], missing: str
    ) -> tuple[int, int, list[StoredEvent]]:
        """The shoe, the round number and the round's journaled events a request names."""
        shoe = self._shoe_of(request)
        number = optional_int(request, "round", low=0)
        if number is None:
            raise ControlError("bad_request", f"{missing}: {{'round': N}}")
        events = self._journal.round_events(shoe, number)
        if not events:
            raise ControlError("not_found", f"shoe {shoe} has no round {number} in the journal")
        return shoe, number, events

    def _shoe_of(self, request: Mapping[str, Any]) -> int:
        shoe = optional_int(request, "shoe", low=0)
        if shoe is not None:
            return shoe
        table = self._controller.table
        if table.view()["shoe_open"]:
            return table.shoe
        # No shoe open: the latest shoe that dealt rounds (a shuffle for the next shoe may
        # already be journaled under the next number).
        for info in reversed(self._journal.shoes()):
            if self._journal.rounds(info.shoe):
                return int(info.shoe)
        return table.shoe


def _live(view: Mapping[str, Any], shoe: int) -> Mapping[str, Any] | None:
    """The table's view of its round in progress, when it belongs to `shoe`."""
    if view.get("shoe") == shoe and view.get("shoe_open"):
        return view.get("round")
    return None
