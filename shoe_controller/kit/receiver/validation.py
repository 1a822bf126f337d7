"""What a push API request may be (docs/spec-push-api.md): its path and its batch, checked."""

from __future__ import annotations

from typing import Any

from shoe_controller.delivery import pushapi


class BadRequest(ValueError):  # noqa: N818 - an HTTP answer, not a crash
    """The request is malformed; answered with `status` and `text`, nothing stored."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


def route(path: str) -> tuple[str, str]:
    """(table_id, "events" | "ack" | "checkpoints") of a push API path; "checkpoints" is this
    server's own (docs/delivery.md "Checkpoints at the table server"), not the push API's
    (docs/spec-push-api.md)."""
    parts = path.split("/")
    if (
        len(parts) == 5
        and parts[0] == ""
        and parts[1:3] == [pushapi.API_VERSION, "tables"]
        and parts[3]
        and parts[4] in ("events", "ack", "checkpoints")
    ):
        return parts[3], parts[4]
    raise BadRequest(404, "not found")


def validated_batch(document: Any, table_id: str, controller_id: str) -> list[dict[str, Any]]:
    """The batch's events if the body is as docs/spec-push-api.md describes; BadRequest
    otherwise."""
    if not isinstance(document, dict):
        raise BadRequest(400, "body must be a JSON object")
    if document.get("controller_id") != controller_id or not controller_id:
        raise BadRequest(400, "controller_id differs from the X-Shoe-Controller header")
    if document.get("table_id") != table_id:
        raise BadRequest(400, "table_id differs from the URL")
    events = document.get("events")
    if not isinstance(events, list):
        raise BadRequest(400, "events must be a list")
    if len(events) > pushapi.MAX_BATCH:
        raise BadRequest(413, f"at most {pushapi.MAX_BATCH} events a request")
    for index, event in enumerate(events):
        if not isinstance(event, dict) or set(event) != set(pushapi.EVENT_FIELDS):
            raise BadRequest(400, f"event {index} must have exactly {pushapi.EVENT_FIELDS}")
        seq = event["seq"]
        if not _is_int(seq) or seq < 1:
            raise BadRequest(400, f"event {index}: seq must be a positive integer")
        if index and seq != events[index - 1]["seq"] + 1:
            raise BadRequest(400, "events must have consecutive seqs in order")
        if not isinstance(event["id"], str) or not isinstance(event["type"], str):
            raise BadRequest(400, f"event {index}: id and type must be strings")
        if not isinstance(event["at"], str):
            raise BadRequest(400, f"event {index}: at must be a string")
        for name in ("shoe", "round"):
            if event[name] is not None and not _is_int(event[name]):
                raise BadRequest(400, f"event {index}: {name} must be an integer or null")
        if not isinstance(event["data"], dict):
            raise BadRequest(400, f"event {index}: data must be an object")
    return events


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
