"""Times as a person types them (cli/shoectl/typed_times.py): journalctl's forms,
read in UTC here (`utc=True`: no machine zone involved); the machine's zone, folds and gaps
are tested with real processes under TZ= in tests/system/test_one_clock.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from shoe_controller.cli.shoectl.typed_times import TimeTypedError, read_time, typed_zone

NOW = datetime(2026, 11, 30, 19, 18, 48, 523000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("2026-11-30 03:18:48", datetime(2026, 11, 30, 3, 18, 48, tzinfo=UTC)),
        ("2026-11-30T03:18:48.5", datetime(2026, 11, 30, 3, 18, 48, 500000, tzinfo=UTC)),
        ("2026-11-30 03:18", datetime(2026, 11, 30, 3, 18, tzinfo=UTC)),
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
        ("03:18", datetime(2026, 11, 30, 3, 18, tzinfo=UTC)),
        ("  03:18:48  ", datetime(2026, 11, 30, 3, 18, 48, tzinfo=UTC)),
        ("now", NOW),
        ("today", datetime(2026, 11, 30, tzinfo=UTC)),
        ("Yesterday", datetime(2026, 11, 29, tzinfo=UTC)),
        ("tomorrow", datetime(2026, 12, 1, tzinfo=UTC)),
        ("-1h", NOW - timedelta(hours=1)),
        ("-30min", NOW - timedelta(minutes=30)),
        ("+2d", NOW + timedelta(days=2)),
        ("30 min ago", NOW - timedelta(minutes=30)),
        ("2 hours ago", NOW - timedelta(hours=2)),
        ("@1764530328", datetime.fromtimestamp(1764530328, UTC)),
        ("1764530328.5", datetime.fromtimestamp(1764530328.5, UTC)),
    ],
)
def test_journalctls_forms(typed: str, expected: datetime) -> None:
    assert read_time(typed, utc=True, now=NOW) == expected


def test_an_offset_means_what_it_says_whatever_the_zone() -> None:
    for utc in (True, False):
        assert read_time("2026-11-30T03:18+08:00", utc=utc) == datetime(
            2026, 11, 29, 19, 18, tzinfo=UTC
        )
        assert read_time("2026-11-30 03:18Z", utc=utc) == datetime(2026, 11, 30, 3, 18, tzinfo=UTC)


@pytest.mark.parametrize("typed", ["", "soon", "5 parsecs ago", "2026-13-01", "25:00"])
def test_what_is_not_a_time_is_refused_with_the_forms(typed: str) -> None:
    with pytest.raises(TimeTypedError) as refused:
        read_time(typed, utc=True, now=NOW)
    text = str(refused.value)
    assert "['" not in text
    assert "'-1h'" in text or "unknown unit" in text


def test_an_answer_about_a_typed_time_is_in_the_zone_it_was_typed_in() -> None:
    assert typed_zone("2026-11-30T03:18+05:00") == timezone(timedelta(hours=5))
    assert typed_zone("2026-11-30 03:18Z") == UTC
    for typed in ("tomorrow", "03:18", "-1h", "2026-11-30 03:18", "now"):
        assert typed_zone(typed) is None  # this machine's zone
        assert typed_zone(typed, utc=True) is UTC
