"""The control socket's surveillance requests: `report` from the companion, `edge` for shoectl,
and who may see the surveillance events (docs/surveillance.md).

Only root, the daemon's own user and members of `[surveillance] group` may send a report or
ask for the edges; everyone else also has the `surveillance.*` events taken out of the
answers they get (`events`, `round`, `outbox`, the followed stream): a live "hot shoe" feed
in the pit invites preferential shuffling. A report is checked here first, so that a stale
one (another shoe, or not newer than the last) is answered without touching the journal,
then journaled as a `SurveillanceReport` input with the house's threshold and the sender's
OS user, like any input (the table's `edge_reports` part makes the events).
"""

from __future__ import annotations

import grp
import os
from collections.abc import Callable, Mapping
from typing import Any

from shoe_controller.service.config import Config
from shoe_controller.service.control.kept_shoes import KeptShoes
from shoe_controller.service.control.requests import (
    ControlError,
    accepted,
    journaled,
    optional_int,
    whole_numbers,
)
from shoe_controller.service.control.shuffle_desk import COMMANDS as SHUFFLE_COMMANDS
from shoe_controller.service.control.shuffle_desk import ShuffleDesk
from shoe_controller.service.peers import Peer, group_refusal, os_user_note
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import StoredEvent
from shoe_controller.table.edge_watch import (
    EdgeWatch,
    freshness_problem,
    history,
    report_problem,
    summary,
)
from shoe_controller.vocab.events import SURVEILLANCE_FAMILY
from shoe_controller.vocab.inputs import Input, SurveillanceReport

COMMANDS = ("report", "edge", *SHUFFLE_COMMANDS)  # shuffle_desk.py answers the shuffle watch's
# The answers that carry events, and where: what a peer outside the group does not see.
_EVENT_LISTS = {"events": "events", "round": "events", "outbox": "sinks"}


def is_surveillance(event_type: Any) -> bool:
    return isinstance(event_type, str) and event_type.split(".")[0] == SURVEILLANCE_FAMILY


def without_surveillance(command: Any, result: dict[str, Any]) -> dict[str, Any]:
    """An answer's `result` with the surveillance events taken out of the list it carries
    (for a peer outside the group; only the answers that list events have one)."""
    key = _EVENT_LISTS.get(command) if isinstance(command, str) else None
    if key is None or key not in result:
        return result
    if key == "sinks":  # the outbox: each sink's first waiting events
        return {**result, "sinks": [_sink_without_surveillance(sink) for sink in result["sinks"]]}
    kept = [entry for entry in result[key] if not is_surveillance(entry.get("type"))]
    return {**result, key: kept}


def _sink_without_surveillance(sink: dict[str, Any]) -> dict[str, Any]:
    if "waiting" not in sink:
        return sink
    kept = [entry for entry in sink["waiting"] if not is_surveillance(entry.get("type"))]
    return {**sink, "waiting": kept}


class SurveillanceDesk:
    """Answers `report` and `edge`, and says who may see the surveillance events."""

    def __init__(
        self,
        controller: Controller,
        config: Config,
        clock: Callable[[], float],
        submit: Callable[[Input], list[StoredEvent]],
        lookup: Callable[[str], Any] = grp.getgrnam,
    ) -> None:
        self._controller = controller
        self._settings = config.surveillance
        self._clock = clock
        self._submit = submit
        self._lookup = lookup
        self._kept: KeptShoes[EdgeWatch] = KeptShoes()  # shoe -> its reports
        self._shuffle = ShuffleDesk(controller, clock, submit)  # docs/shuffle.md

    # ------------------------------------------------------------------ who

    def authorize(self, peer: Peer) -> str | None:
        """None when `peer` may report and see the edges, else why not: root, the daemon's
        own user (the companion runs as it), members of the surveillance group."""
        if peer.uid in (0, os.geteuid()):
            return None
        return group_refusal(
            peer,
            self._settings.group,
            "surveillance",
            "only root and the controller's own user see the edges",
            self._lookup,
        )

    def hidden_from(self, peer: Peer) -> bool:
        """True when `peer` may not see the surveillance events."""
        return self.authorize(peer) is not None

    def hides_events(self, peer: Peer, command: Any) -> bool:
        """True when `command`'s answer must leave the surveillance events out for `peer`."""
        return isinstance(command, str) and command in _EVENT_LISTS and self.hidden_from(peer)

    def as_seen_by(self, peer: Peer, command: Any, result: dict[str, Any]) -> dict[str, Any]:
        """An answer's `result` as `peer` may see it: without the surveillance events unless
        it is of the group (only the answers that list events are looked at)."""
        key = _EVENT_LISTS.get(command) if isinstance(command, str) else None
        if key is None or key not in result or not self.hidden_from(peer):
            return result
        return without_surveillance(command, result)

    # ------------------------------------------------------------------ requests

    def answer(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        """The result of `report` or `edge` for an authorized peer; ControlError otherwise."""
        if request.get("cmd") == "report":
            return self._report(request, peer)
        if request.get("cmd") in SHUFFLE_COMMANDS:
            return self._shuffle.answer(request, peer)
        return self._edge(request)

    def _report(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        values = whole_numbers(request, ("shoe", "round", "after_seq"))
        for name in ("cards_left", "bets"):
            if not isinstance(request.get(name), Mapping):
                raise ControlError("bad_request", f"report needs {name}: an object")
        report = SurveillanceReport(
            at=self._clock(),
            shoe=values["shoe"],
            round=values["round"],
            after_seq=values["after_seq"],
            cards_left=dict(request["cards_left"]),
            bets={
                name: dict(bet) if isinstance(bet, Mapping) else bet
                for name, bet in request["bets"].items()
            },
            threshold=self._settings.threshold,
            os_user=os_user_note(peer),
        )
        problem = report_problem(report)
        if problem is not None:
            raise ControlError("bad_request", f"report: {problem}")
        # A stale report is answered without touching the journal: the companion catching up
        # sends such reports, and they say nothing.
        book = self._controller.table.book
        stale = freshness_problem(book.number, book.open, book.surveillance, report)
        if stale is not None:
            raise ControlError("stale", stale)
        stored = journaled(self._submit, report, "the report")
        book = self._controller.table.book
        if book.number == report.shoe:
            self._kept.put(report.shoe, book.surveillance)
        return accepted(stored, report.shoe, report.round, threshold=report.threshold)

    def _edge(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The latest report of a shoe (default: the open one, else the last reported),
        with the bets above the threshold, the shoe's summary and history."""
        shoe = optional_int(request, "shoe", low=0)
        book = self._controller.table.book
        if book.surveillance.reports:
            self._kept.put(book.number, book.surveillance)
        shoe = self._kept.shoe_asked(shoe, book.number, bool(book.surveillance.reports))
        watch = self._kept.get(shoe)
        latest = watch.latest if watch is not None else None
        if watch is None or latest is None:
            raise ControlError(
                "not_found",
                f"no surveillance report for shoe {shoe} (is shoe-controller surveillance"
                " running? reports of a shoe that ended before the controller restarted are"
                " only in the journal)",
            )
        return {
            "shoe": shoe,
            "open": book.open and book.number == shoe,
            "round": latest.round,
            "at": latest.at,
            "after_seq": latest.after_seq,
            "threshold": latest.threshold,
            "cards_left": dict(latest.cards_left),
            "bets": {name: dict(values) for name, values in latest.bets.items()},
            "raised": {
                name: {"since_round": raised.since_round, "largest_edge": raised.largest_edge}
                for name, raised in watch.raised.items()
            },
            "summary": summary(watch),
            "history": history(watch),
        }
