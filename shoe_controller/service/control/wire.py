"""JSON lines on the control socket: a request line read into an object, an answer written as
one line, the error answer's form (docs/control.md "Answers")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from shoe_controller.service.control.requests import ControlError


def parse_line(line: bytes) -> dict[str, Any]:
    """The request on a line; ControlError for anything else, so that every line gets one
    answer whatever it holds (deep nesting, numbers of thousands of digits, not UTF-8)."""
    try:
        request = json.loads(line)
    except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
        reason = "nested too deep" if isinstance(error, RecursionError) else str(error)
        raise ControlError("bad_request", f"not a JSON line: {reason}") from None
    if not isinstance(request, dict):
        raise ControlError("bad_request", "a request is a JSON object")
    return request


def encode(answer: Mapping[str, Any]) -> bytes:
    """An answer as its line, UTF-8 and newline-terminated."""
    return json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n"


async def send(writer: asyncio.StreamWriter, answer: Mapping[str, Any]) -> None:
    writer.write(encode(answer))
    await writer.drain()


def error_answer(code: str, text: str, command: Any = None) -> dict[str, Any]:
    return {"ok": False, "cmd": command, "error": {"code": code, "text": text}}
