"""Which events a sink takes: type patterns in, type patterns out (`round.*`, `surveillance.*`)."""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import re

# The table server is sent everything but what surveillance alone may see.
HTTP_EXCLUDES_BY_DEFAULT = ("surveillance.*",)

_PATTERN = re.compile(r"[a-z0-9_.*?\[\]!-]{1,100}")


@dataclasses.dataclass(frozen=True)
class EventFilter:
    """Takes an event type matching one of `events` and none of `exclude` (shell patterns,
    matched case-sensitively against the whole type: `round.*`, `card.dealt`, `*`)."""

    events: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for pattern in (*self.events, *self.exclude):
            problem = pattern_problem(pattern)
            if problem:
                raise ValueError(problem)

    def __call__(self, event_type: str) -> bool:
        if self._taken is None or not self._taken.match(event_type):
            return False
        return self._left is None or not self._left.match(event_type)

    # compiled once: the journal asks for every event of every commit
    @functools.cached_property
    def _taken(self) -> re.Pattern[str] | None:
        return _compiled(self.events)

    @functools.cached_property
    def _left(self) -> re.Pattern[str] | None:
        return _compiled(self.exclude)


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be an event type pattern, or None."""
    if _PATTERN.fullmatch(pattern):
        return None
    return (
        f"pattern {pattern!r} may have lower-case letters, digits, '.', '_', '-'"
        " and the wildcards * ? [ ] only"
    )


def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))
