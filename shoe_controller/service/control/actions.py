"""The supervisor's actions (`act`): the request parsed, the `SupervisorCommand` stored through
the daemon's one submit, the answer read from the events it caused; a command sent again with
its key gets its first answer, never a second run (docs/control.md "act"), from the journal's
`command_outcome`.

Only the request's shape is this module's (JSON types, the key's form); whether it is a
command at all is the table's rule (`action_registry.screen`), asked before anything is
stored, so that such a request is answered `bad_request` and journals nothing.

The server authorized the peer first (peers.authorize); this module never decides who may act.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from shoe_controller.service.control.requests import ControlError, text_field
from shoe_controller.service.peers import Peer, os_user_note
from shoe_controller.store.controller import Controller
from shoe_controller.store.errors import JournalOutcomeUnknown
from shoe_controller.store.journal import JournalError, RecordInvalid, StoredEvent
from shoe_controller.table.action_specs import screen
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import SupervisorCommand

log = structlog.get_logger("control")


class SupervisorActions:
    """Carries out an authorized peer's `act` request."""

    def __init__(
        self,
        controller: Controller,
        submit: Callable[[SupervisorCommand], list[StoredEvent]],
        clock: Callable[[], float],
    ) -> None:
        self._controller = controller
        self._submit = submit
        self._clock = clock

    def act(self, request: Mapping[str, Any], peer: Peer) -> dict[str, Any]:
        """Submit a supervisor action for an authorized `peer` (the server checked it).

        Returns {"accepted": bool, "text": ..., "events": [...]}: a refusal by the table
        (wrong state) is journaled as its `procedure.alert` and returned with accepted false.
        """
        action = request.get("action")
        if not isinstance(action, str):
            raise ControlError("bad_request", "action is required: its name (shoectl --help)")
        by = text_field(request, "by", "the supervisor's id (--by)")
        reason = text_field(request, "reason", "why (--reason)")
        args = request.get("args", {})
        if not isinstance(args, Mapping):
            raise ControlError("bad_request", "args must be an object")
        key = _command_key(request)
        command = SupervisorCommand(
            at=self._clock(),
            action=action,
            by=by,
            reason=reason,
            args=dict(args),
            os_user=os_user_note(peer),
            key=key,
        )
        refusal = screen(command, clocked=self._controller.table.config.clocked)
        if refusal:
            raise ControlError("bad_request", refusal)
        first = self._controller.journal.reads.command_outcome(key) if key else None
        if first is not None:  # sent again (after an unknown outcome): its first answer
            return {**_acted(action, by, peer, first), "repeated": True}
        try:
            stored = self._submit(command)
        except JournalOutcomeUnknown as error:
            raise ControlError(
                "outcome_unknown",
                f"{action}: the disk failed while storing it, so whether it was stored is"
                " unknown until the journal is checked (the controller restarts to check"
                f" it); send it again with the same key: it is never done twice ({error})",
            ) from None
        except JournalError as error:
            raise ControlError(
                "not_stored", f"{action} was not stored, nothing changed: {error}"
            ) from None
        except RecordInvalid as error:
            raise ControlError(
                "bad_request", f"{action} was not stored, nothing changed: {error}"
            ) from None
        result = _acted(action, by, peer, stored)
        log.info("supervisor command", action=action, by=by, os_user=peer.user, uid=peer.uid,
                 accepted=result["accepted"])  # fmt: skip
        return result


def _acted(action: str, by: str, peer: Peer, stored: Sequence[StoredEvent]) -> dict[str, Any]:
    """The answer to an action, from the events it caused."""
    accepted = any(event.type == EventType.SUPERVISOR_ACTION for event in stored)
    refusal = next(
        (
            event.data.get("text", "")
            for event in stored
            if event.type == EventType.PROCEDURE_ALERT
            and event.data.get("code") == "command_refused"
        ),
        None,
    )
    return {
        "accepted": accepted,
        "action": action,
        "by": by,
        "os_user": peer.user,
        "uid": peer.uid,
        "text": "accepted" if accepted else (refusal or "refused"),
        "events": [event.to_wire() for event in stored],
    }


def _command_key(request: Mapping[str, Any]) -> str:
    """The request's idempotency key ("" without one): 1-100 printable characters."""
    key = request.get("key", "")
    if not isinstance(key, str) or len(key) > 100 or not key.isprintable():
        raise ControlError("bad_request", "key must be a text of at most 100 characters")
    return key
