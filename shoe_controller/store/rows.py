"""What may be stored: inputs, events and link states checked and encoded as rows.

Every check runs before the journal touches the file, so a caller bug raises RecordInvalid
with nothing stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from shoe_controller.store.errors import RecordInvalid

AT_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")


def _encode_json(value: Any, what: str) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        # A lone surrogate (json.loads of "\udcff", argv bytes that are not UTF-8) passes
        # json.dumps but not SQLite, which would raise a UnicodeEncodeError mid-transaction.
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RecordInvalid(f"{what} holds text that is not valid Unicode: {exc.reason}") from None
    except (TypeError, ValueError) as exc:
        raise RecordInvalid(f"{what} is not JSON-able: {exc}") from None
    return text


def input_row(input: Mapping[str, Any]) -> tuple[str, str]:
    if not isinstance(input, Mapping):
        raise RecordInvalid(
            f"input must be a JSON dict (input_to_json), not {type(input).__name__}"
        )
    input_type = input.get("type")
    if not isinstance(input_type, str) or not input_type:
        raise RecordInvalid("input has no 'type' string")
    return input_type, _encode_json(dict(input), "input")


def event_row(event: Any) -> tuple[str, str, int | None, int | None, str]:
    """(type, at, shoe, round, data JSON) of an Event object or an event dict, validated."""
    if isinstance(event, Mapping):
        missing = {"type", "at", "shoe", "round", "data"} - set(event)
        if missing:
            raise RecordInvalid(f"event lacks {sorted(missing)}")
        type_, at, shoe, round_, data = (event[k] for k in ("type", "at", "shoe", "round", "data"))
    else:
        try:
            type_, at, shoe, round_, data = (
                getattr(event, name) for name in ("type", "at", "shoe", "round", "data")
            )
        except AttributeError as exc:
            raise RecordInvalid(f"not an event: {exc}") from None
    if not isinstance(type_, str) or not type_:
        raise RecordInvalid(f"event type must be a non-empty string, not {type_!r}")
    type_ = str(type_)  # an EventType member stores as its plain value
    if isinstance(at, datetime):
        if at.utcoffset() is None:
            raise RecordInvalid(f"event {type_}: 'at' datetime has no time zone")
        at = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if not isinstance(at, str) or not AT_PATTERN.fullmatch(at):
        raise RecordInvalid(
            f"event {type_}: 'at' must be ISO-8601 UTC with microseconds and Z, not {at!r}"
        )
    check_optional_int(f"event {type_}: shoe", shoe)
    check_optional_int(f"event {type_}: round", round_)
    if not isinstance(data, Mapping):
        raise RecordInvalid(f"event {type_}: data must be a dict, not {type(data).__name__}")
    return type_, at, shoe, round_, _encode_json(dict(data), f"event {type_} data")


def link_rows(link_state: Mapping[str, Mapping[str, Any]] | None) -> list[tuple[str, str]]:
    if link_state is None:
        return []
    if not isinstance(link_state, Mapping):
        raise RecordInvalid("link_state must map device names to dicts")
    rows = []
    for device, state in link_state.items():
        if not isinstance(device, str) or not device:
            raise RecordInvalid(f"link_state device name must be a string, not {device!r}")
        if not isinstance(state, Mapping):
            raise RecordInvalid(f"link_state of {device} must be a dict")
        rows.append((device, _encode_json(dict(state), f"link_state of {device}")))
    return rows


def check_optional_int(what: str, value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise RecordInvalid(f"{what} must be an int or None, not {value!r}")
