"""Times as shoectl shows them: for a person in the machine's zone with its offset (TZ
honoured), or in UTC with `--utc`; in `--json` in UTC; from the daemon's two forms.

The daemon's answers carry times in two forms (docs/control.md): ISO 8601 UTC strings as
journaled (`2026-12-01T15:04:05.123456Z`, vocab/events.py) and unix epoch seconds for some
status fields (a sink's `last_error_at`, `next_attempt_at`, `fault.since`...). The
daemon's answers stay as they are (other programs read the socket); shoectl converts them.

Which fields are times (the one rule, `is_time_field`): a key named `at`, `now` or `since`,
or ending in `_at` (`started_at`, `oldest_waiting_at`, `last_error_at`, `last_delivered_at`,
`exported_at`...), at any depth of an answer, whose value is an ISO 8601 string or a number.
Durations (`oldest_waiting_age_s`, `delay_s`, `..._ms`) are not times and stay numbers;
`null` stays `null`; a string that is not a time is left as it is.

Forms:
- JSON: one form whatever the zone shown, UTC in the journal's own form,
  `2026-12-01T15:04:05.123456Z` (Z, never +00:00: the form of the journal, the push API,
  export and replay), so a program reads every time alike; the epoch numbers become it too;
- a person, in a column: `23:04:05.123` under a heading that says the zone,
  `TIME (+08:00)` (`column`); a row whose offset differs from the heading's (daylight saving
  changed between) carries its own, `23:04:05.123 -04:00` (`short`);
- a person, a full stamp: `2026-12-01 23:04:05.123 +08:00` (`stamp`; `--utc`: `+00:00`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

TIME_KEYS = frozenset({"at", "now", "since"})
TIME_SUFFIX = "_at"
# A time as the daemon writes it inside a text (a health problem's "since ..."), to be shown
# in the reader's zone too.
_ISO_IN_TEXT = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)")


def is_time_field(key: str) -> bool:
    """Whether a field of the daemon's answers holds a time (the module docstring's rule)."""
    return key in TIME_KEYS or key.endswith(TIME_SUFFIX)


def moment(value: Any) -> datetime | None:
    """The instant a time field denotes (an aware datetime), or None when it holds none:
    unix seconds (a number), or an ISO 8601 string (without a zone: UTC, the journal's)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    return None


@dataclass(frozen=True, slots=True)
class Times:
    """How one shoectl invocation shows times: in `zone`, or the machine's zone (None)."""

    zone: tzinfo | None = None

    @classmethod
    def chosen(cls, utc: bool) -> Times:
        """`--utc`: UTC; otherwise the machine's zone, TZ honoured (libc's localtime)."""
        return cls(UTC if utc else None)

    @property
    def utc(self) -> bool:
        return self.zone is UTC

    def here(self, value: Any) -> datetime | None:
        """The instant of `value` in the chosen zone, with that instant's offset (DST)."""
        instant = moment(value)
        return instant.astimezone(self.zone) if instant is not None else None

    def iso(self, value: Any) -> str | None:
        """The JSON form, whatever the zone shown: UTC with `Z`, as the journal, export and
        replay write it, so a program reads one form; None when `value` holds no time."""
        instant = moment(value)
        if instant is None:
            return None
        return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def zone_name(self) -> str:
        """The zone the columns are in: its offset now (`+08:00`; `--utc`: `+00:00`)."""
        return _offset(datetime.now(UTC).astimezone(self.zone))

    def column(self, title: str) -> str:
        """A column heading of times, saying their zone: `TIME (+08:00)`."""
        return f"{title} ({self.zone_name()})"

    def short(self, value: Any) -> str:
        """A time in a column: `23:04:05.123`, with its offset when it is not the column's
        (`column`); what is not a time is shown as it is."""
        shown = self.here(value)
        if shown is None:
            return "" if value is None else str(value)
        text = shown.strftime("%H:%M:%S.") + f"{shown.microsecond // 1000:03d}"
        own = _offset(shown)
        return text if own == self.zone_name() else f"{text} {own}"

    def clock(self, value: Any) -> str:
        """A time of today in a sentence: `23:04:05.123 +08:00` (its zone said)."""
        shown = self.here(value)
        if shown is None:
            return "" if value is None else str(value)
        zone = _offset(shown)
        return shown.strftime("%H:%M:%S.") + f"{shown.microsecond // 1000:03d} {zone}"

    def stamp(self, value: Any) -> str:
        """A full time for a person: `2026-12-01 23:04:05.123 +08:00`."""
        shown = self.here(value)
        if shown is None:
            return "" if value is None else str(value)
        zone = _offset(shown)
        return shown.strftime("%Y-%m-%d %H:%M:%S.") + f"{shown.microsecond // 1000:03d} {zone}"

    def in_text(self, text: str) -> str:
        """A daemon's text with every ISO time in it written as `stamp` does."""
        return _ISO_IN_TEXT.sub(lambda match: self.stamp(match[0]), text)

    def in_json(self, value: Any) -> Any:
        """A copy of an answer with every time field (`is_time_field`) in the JSON form."""
        if isinstance(value, Mapping):
            return {key: self._field(key, item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.in_json(item) for item in value]
        return value

    def _field(self, key: Any, value: Any) -> Any:
        if isinstance(key, str) and is_time_field(key):
            converted = self.iso(value)
            if converted is not None:
                return converted
        return self.in_json(value)


def _offset(shown: datetime) -> str:
    """`+08:00`, `-04:00`, `+00:00`: the instant's offset from UTC, to the minute."""
    delta = shown.utcoffset()
    minutes = round(delta.total_seconds() / 60) if delta is not None else 0
    sign = "-" if minutes < 0 else "+"
    hours, minutes = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{minutes:02d}"
