"""Times as a person types them (`--since`, `--until`): read in the zone shoectl shows.

One clock for reading and writing: shoectl shows every time in this machine's zone (TZ
honoured) or in UTC with `--utc` (times.py), so a time typed without a zone is read in that
same zone, never silently as UTC. A wall-clock time the clocks pass twice (the hour daylight
saving time ends) is refused, with the two offsets to choose from; one they skip (the hour it
begins) is refused too. A time with its offset (`+08:00`, `Z`) means what it says.

The forms are journalctl's (systemd.time(7)), so `--since` reads as a technician expects:

- `2026-11-30 03:18:48`, `2026-11-30T03:18:48.5`, `2026-11-30 03:18` (seconds left out: 0),
  `2026-11-30` (its midnight), `03:18` or `03:18:48` (today); any of these with an offset;
- `now`, `today`, `yesterday`, `tomorrow` (midnight of that day);
- `-1h`, `-30min`, `+2d`, `1h ago`, `30 min ago` (s, sec, m, min, h, hour, d, day, w, week);
- `@1764490000` or a plain number: unix seconds.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta, tzinfo

FORMS = (
    "'2026-11-30 03:18', '03:18' (today), 'yesterday', '-1h', '30 min ago', or with an"
    " offset ('2026-11-30T03:18+08:00')"
)
_UNITS = {
    "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
    "d": 86400, "day": 86400, "w": 604800, "week": 604800,
}  # fmt: skip
_RELATIVE = re.compile(r"(?:(?P<sign>[+-])\s*(?P<a>\d+(?:\.\d+)?)\s*(?P<ua>[a-z]+)"
                       r"|(?P<b>\d+(?:\.\d+)?)\s*(?P<ub>[a-z]+)\s+ago)")  # fmt: skip
_CLOCK = re.compile(r"\d{1,2}:\d\d(?::\d\d(?:\.\d{1,6})?)?")
_NUMBER = re.compile(r"@?\d+(?:\.\d+)?")
_DAYS = {"today": 0, "yesterday": -1, "tomorrow": 1}


class TimeTypedError(ValueError):
    """A typed time that cannot be read, or that names no single instant; says why."""


def read_time(text: str, *, utc: bool = False, now: datetime | None = None) -> datetime:
    """The instant `text` names (an aware datetime). Without a zone it is read in this
    machine's zone (TZ honoured), or in UTC when `utc`; `now` is the clock (tests)."""
    zone: tzinfo | None = UTC if utc else None
    clock = now if now is not None else datetime.now(UTC)
    typed = " ".join(text.strip().split())
    lowered = typed.lower()
    if not typed:
        raise TimeTypedError(f"an empty time: write {FORMS}")
    if lowered == "now":
        return clock
    if _NUMBER.fullmatch(lowered):
        return datetime.fromtimestamp(float(lowered.lstrip("@")), UTC)
    relative = _RELATIVE.fullmatch(lowered)
    if relative:
        return clock + _offset_of(relative)
    today = clock.astimezone(zone).date()
    if lowered in _DAYS:
        return _in_zone(datetime.combine(today + timedelta(days=_DAYS[lowered]), time()), zone)
    try:
        if _CLOCK.fullmatch(typed):  # a time of day: today's
            parsed = datetime.combine(today, time.fromisoformat(typed))
        else:
            parsed = datetime.fromisoformat(typed.replace(" ", "T", 1))
    except ValueError:
        raise TimeTypedError(f"{typed!r} is not a time: write {FORMS}") from None
    return parsed if parsed.tzinfo is not None else _in_zone(parsed, zone)


def typed_zone(text: str, *, utc: bool = False) -> tzinfo | None:
    """The zone to answer about a typed time in: the offset typed with it, else the zone it
    was read in (None: this machine's; `utc`: UTC)."""
    typed = " ".join(text.strip().split())
    if not (_CLOCK.fullmatch(typed) or _RELATIVE.fullmatch(typed.lower())):
        try:
            parsed = datetime.fromisoformat(typed.replace(" ", "T", 1))
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed.tzinfo
    return UTC if utc else None


def _offset_of(match: re.Match[str]) -> timedelta:
    amount = float(match["a"] or match["b"])
    unit = (match["ua"] or match["ub"]).removesuffix("s") or "s"
    if unit not in _UNITS:
        raise TimeTypedError(
            f"{match[0]!r}: unknown unit {unit!r} (s, min, h, d, w; e.g. -30min, 2h ago)"
        )
    seconds = amount * _UNITS[unit]
    return timedelta(seconds=seconds if match["sign"] == "+" else -seconds)


def _in_zone(wall: datetime, zone: tzinfo | None) -> datetime:
    """A wall-clock time in `zone` (None: this machine's), refused where the zone's clock
    shows it twice or never (daylight saving time)."""
    if zone is not None:
        return wall.replace(tzinfo=zone)
    earlier = wall.replace(fold=0).astimezone()
    later = wall.replace(fold=1).astimezone()
    if earlier.timestamp() == later.timestamp():
        return earlier
    shown = wall.isoformat(sep=" ", timespec="seconds")
    if earlier.replace(tzinfo=None) == wall and later.replace(tzinfo=None) == wall:
        first, second = _offset_text(earlier), _offset_text(later)
        raise TimeTypedError(
            f"{shown} happens twice on this machine's clock (the clocks go back, from"
            f" {first} to {second}): write the offset, {shown}{first} for the first or"
            f" {shown}{second} for the second"
        )
    raise TimeTypedError(
        f"{shown} never happens on this machine's clock (the clocks go forward over it):"
        " write a time outside that hour, or with its offset"
    )


def _offset_text(moment: datetime) -> str:
    delta = moment.utcoffset() or timedelta()
    minutes = round(delta.total_seconds() / 60)
    sign = "-" if minutes < 0 else "+"
    hours, minutes = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{minutes:02d}"
