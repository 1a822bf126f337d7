"""The control socket's shuffle-integrity requests: `shuffle_report` from the companion and
`shuffle` for shoectl (docs/shuffle.md).

Both are the surveillance group's (surveillance.py authorizes them and routes them here). The
findings are checked here first, so that stale ones (another shoe, a shoe that ended, not
newer than the last) are answered without touching the journal, then journaled as a
`ShuffleFindings` input with the sender's OS user; the table's `shuffle_reports` part makes the
events and keeps the shoe's latest report, which `shuffle` shows (the daemon computes none of
it: the statistics need numpy, which stays in the companion).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shoe_controller.service.control.kept_shoes import KeptShoes
from shoe_controller.service.control.requests import (
    ControlError,
    accepted,
    journaled,
    optional_int,
    whole_numbers,
)
from shoe_controller.service.peers import Peer, os_user_note
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import StoredEvent
from shoe_controller.table.shuffle_record import (
    ShuffleRecord,
    findings_of,
    findings_problem,
    freshness_problem,
)
from shoe_controller.vocab.inputs import Input, ShuffleFindings

COMMANDS = ("shuffle_report", "shuffle")


class ShuffleDesk:
    """Answers `shuffle_report` and `shuffle` (for an authorized peer)."""

    def __init__(
        self,
        controller: Controller,
        clock: Callable[[], float],
        submit: Callable[[Input], list[StoredEvent]],
    ) -> None:
        self._controller = controller
        self._clock = clock
        self._submit = submit
        # shoe -> its records: the book's, then its final findings if they came after its end
        self._kept: KeptShoes[list[ShuffleRecord]] = KeptShoes()

    def answer(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        if request.get("cmd") == "shuffle_report":
            return self._findings(request, peer)
        return self._shuffle(request)

    def _findings(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        values = whole_numbers(request, ("shoe", "against", "round", "after_seq"))
        final = request.get("final", False)
        if not isinstance(final, bool):
            raise ControlError("bad_request", "shuffle_report: final must be true or false")
        if not isinstance(request.get("report"), Mapping):
            raise ControlError("bad_request", "shuffle_report needs report: an object")
        item = ShuffleFindings(
            at=self._clock(),
            **values,
            findings=findings_of(request),
            final=final,
            os_user=os_user_note(peer),
        )
        problem = findings_problem(item)
        if problem is not None:
            raise ControlError("bad_request", f"shuffle_report: {problem}")
        book = self._controller.table.book
        stale = freshness_problem(book.number, book.open, book.shuffle, item)
        if stale is not None:
            raise ControlError("stale", stale)
        stored = journaled(self._submit, item, "the findings", plural=True)
        book = self._controller.table.book
        if book.number == item.shoe:
            self._keep(item.shoe, book.shuffle)
        elif book.shuffle.previous is not None and book.number == item.shoe + 1:
            self._keep(item.shoe, book.shuffle.previous)
        return accepted(stored, item.shoe, item.round)

    def _keep(self, shoe: int, record: ShuffleRecord) -> None:
        records = self._kept.get(shoe) or []
        if not any(kept is record for kept in records):
            records = [*records, record]
        self._kept.put(shoe, records)

    def _shuffle(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The latest findings of a shoe (default: the one in the book if it has any, else
        the last one with findings since the controller started)."""
        shoe = optional_int(request, "shoe", low=0)
        book = self._controller.table.book
        if book.shuffle.report is not None:
            self._keep(book.number, book.shuffle)
        shoe = self._kept.shoe_asked(shoe, book.number, book.shuffle.report is not None)
        records = [kept for kept in self._kept.get(shoe) or () if kept.report is not None]
        if not records:
            raise ControlError(
                "not_found",
                f"no shuffle report for shoe {shoe} (the first shoe has none to be held"
                " against; is shoe-controller surveillance running? reports of a shoe that"
                " ended before the controller restarted are only in the journal)",
            )
        latest = records[-1]
        assert latest.report is not None
        slugs = {key: value for kept in records for key, value in kept.slugs.items()}
        return {
            "shoe": shoe,
            "open": book.open and book.number == shoe,
            "report": dict(latest.report),
            **latest.to_json(),
            "slugs": list(slugs.values()),
        }
