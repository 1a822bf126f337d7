"""The lines of a JSON-lines file a person gave a command, each parsed, a bad one named by its
line (`verify`'s export files and checkpoint copies)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


def numbered_json(
    lines: Iterable[str], name: str, error: type[Exception]
) -> Iterator[tuple[str, Any]]:
    """(`NAME line N`, the parsed line) for each line that is not blank; `error` with that
    place and why for a line that is not JSON."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name} line {number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as problem:
            raise error(f"{where}: not JSON: {problem.msg}") from None
