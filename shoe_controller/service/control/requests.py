"""What a control request may say: its fields checked, the event-type filter, and the error
answer (`ControlError`) for a request that says something else (docs/control.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shoe_controller.store.errors import JournalOutcomeUnknown
from shoe_controller.store.journal import JournalError, RecordInvalid, StoredEvent
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import Input

PROTOCOL_VERSION = 1
EVENTS_LIMIT_MAX = 1000


class ControlError(Exception):
    """A request that gets an error answer: `code` for programs, `text` for people."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


def text_field(request: Mapping[str, Any], name: str, meaning: str) -> str:
    """The request's text `name`, stripped; whether it says enough is for its reader."""
    value = request.get(name)
    if not isinstance(value, str):
        raise ControlError("bad_request", f"{name} is required: {meaning}")
    return value.strip()


def optional_int(
    request: Mapping[str, Any], name: str, *, low: int = 0, high: int | None = None
) -> int | None:
    value = request.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ControlError("bad_request", f"{name} must be a whole number >= {low}, got {value!r}")
    if high is not None and value > high:
        raise ControlError("bad_request", f"{name} must be at most {high}, got {value}")
    return value


def whole_numbers(request: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, int]:
    """The named fields of a request that needs each, as whole numbers >= 0 (a report's and
    shuffle findings' shoe, round, seq ...)."""
    values = {}
    for name in names:
        value = optional_int(request, name, low=0)
        if value is None:
            raise ControlError("bad_request", f"{request.get('cmd')} needs {name}: a whole number")
        values[name] = value
    return values


def event_types(request: Mapping[str, Any]) -> tuple[str, ...]:
    """The `types` filter of an events request: full names or families (`round`)."""
    types = request.get("types") or []
    if isinstance(types, str):
        types = [types]
    if not isinstance(types, list) or not all(isinstance(t, str) and t for t in types):
        raise ControlError("bad_request", "types must be a list of event types")
    known = {str(kind) for kind in EventType}
    families = {name.split(".")[0] for name in known}
    unknown = [t for t in types if t not in known and t not in families]
    if unknown:
        raise ControlError(
            "bad_request",
            f"unknown event type(s) {', '.join(map(str, unknown))}; types are"
            f" {', '.join(sorted(known))}"
            f" or a family: {', '.join(sorted(families))}",
        )
    return tuple(types)


def type_matches(event_type: str, types: tuple[str, ...]) -> bool:
    if not types:
        return True
    family = event_type.split(".", maxsplit=1)[0]
    return event_type in types or family in types


def journaled(
    submit: Callable[[Input], list[StoredEvent]], item: Input, what: str, *, plural: bool = False
) -> list[StoredEvent]:
    """`submit(item)`, a journal that could not store it answered as a ControlError naming
    `what` was sent ("the report", "the findings")."""
    try:
        return submit(item)
    except JournalOutcomeUnknown as error:
        raise ControlError(
            "outcome_unknown", f"the disk failed while storing {what}: {error}"
        ) from None
    except (JournalError, RecordInvalid) as error:
        verb = "were" if plural else "was"
        raise ControlError("not_stored", f"{what} {verb} not stored: {error}") from None


def accepted(stored: list[StoredEvent], shoe: int, round_: int, **more: Any) -> dict[str, Any]:
    """The answer to a surveillance submission the table took: `shoe`, `round`, `more` and the
    events it stored; ControlError if the table's own check refused it (the checks before
    submitting should leave none)."""
    refused = [event for event in stored if event.type == "procedure.alert"]
    if refused:
        raise ControlError("refused", str(refused[0].data.get("text")))
    return {
        "accepted": True,
        "shoe": shoe,
        "round": round_,
        **more,
        "events": [event.to_wire() for event in stored],
    }
