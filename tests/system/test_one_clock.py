"""One clock: every time a person types is read in the zone shoectl shows, or
refused when the clocks pass it twice; `shoectl events --since/--until` as journalctl has
them, `-n` beyond the socket's 1000 in pages. Real processes (shoectl, `shoe-controller
export`) against a live control socket over a real controller and journal
(tests/support/shoe_testkit/control.py); the expected instants computed with zoneinfo, not
with shoectl's code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from shoe_testkit.control import GUARD_S, REPO, SHOE, LiveTable, cli_env

from shoe_controller.vocab.inputs import SupervisorCommand

if not Path("/usr/share/zoneinfo/Asia/Macau").exists():  # libc's, which TZ= goes through
    pytest.skip("needs /usr/share/zoneinfo (tzdata) for TZ=Asia/Macau", allow_module_level=True)

MACAU, NEW_YORK = ZoneInfo("Asia/Macau"), ZoneInfo("America/New_York")
IN_MACAU, IN_NEW_YORK = {"TZ": "Asia/Macau"}, {"TZ": "America/New_York"}
HEADER = re.compile(r"^ +SEQ  TIME \(\+08:00\) +SHOE/RND  TYPE +DETAILS$")
EXTRA_EVENTS = 1600  # more than one answer of the socket holds (1000)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTable]:
    table = LiveTable(tmp_path_factory.mktemp("clock"))
    try:
        table.load(SHOE)
        table.deal(2 + 4 + 5)  # the burn, round 1, round 2
        # Refused commands: one procedure.alert each, so the journal outgrows one answer.
        refused = [
            SupervisorCommand(time.time(), "resume", "sup-test", "test", {})
            for _ in range(EXTRA_EVENTS)
        ]
        table.call(table.controller.submit_many, refused)
        yield table
    finally:
        table.close()


def shoe_controller(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli", *args], cwd=REPO,
        env=cli_env("/nonexistent", env), capture_output=True, text=True, timeout=GUARD_S,
        check=False,
    )  # fmt: skip


def typed_in(zone: ZoneInfo, at: str) -> str:
    """A journal time as a person in `zone` types what shoectl showed: no offset, ms."""
    local = datetime.fromisoformat(at).astimezone(zone)
    return local.strftime("%Y-%m-%d %H:%M:%S.") + f"{local.microsecond // 1000:03d}"


def seqs(output: str) -> list[int]:
    return [int(line.split()[0]) for line in output.splitlines()[1:]]


def test_events_since_and_until_are_read_in_the_zone_shoectl_shows(live: LiveTable) -> None:
    events = live.events()
    round_two = [event for event in events if event.shoe == 1 and event.round == 2]
    since, until = typed_in(MACAU, round_two[0].at), typed_in(MACAU, round_two[-1].at)
    shown = live.shoectl("events", "--since", since, "--until", until, env=IN_MACAU)
    assert shown.returncode == 0, shown.stderr
    assert HEADER.match(shown.stdout.splitlines()[0])
    low = datetime.fromisoformat(since).replace(tzinfo=MACAU)  # the typed ms, read in Macau
    high = datetime.fromisoformat(until).replace(tzinfo=MACAU)
    expected = [e.seq for e in events if low <= datetime.fromisoformat(e.at) <= high]
    assert round_two[0].seq in expected
    assert seqs(shown.stdout) == expected
    # The same instants typed with --utc are read in UTC; with an offset, as written.
    as_utc = live.shoectl(
        "--utc", "events", "-S", typed_in(ZoneInfo("UTC"), round_two[0].at),
        "-U", typed_in(ZoneInfo("UTC"), round_two[-1].at), env=IN_MACAU,
    )  # fmt: skip
    assert seqs(as_utc.stdout) == expected
    with_offset = live.shoectl("events", "-S", since + "+08:00", "-U", until + "+08:00")
    assert seqs(with_offset.stdout) == expected
    # -n with a stretch: its last N.
    counted = live.shoectl("events", "-S", since, "-U", until, "-n", "2", env=IN_MACAU)
    assert seqs(counted.stdout) == expected[-2:]


def test_a_time_the_clocks_pass_twice_is_refused_and_help_says_how_times_are_read(
    live: LiveTable,
) -> None:
    ambiguous = "2026-11-01 01:30"  # New York's clocks go back from 02:00 EDT to 01:00 EST
    assert (
        datetime(2026, 11, 1, 1, 30, tzinfo=NEW_YORK).utcoffset()
        != datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=NEW_YORK).utcoffset()
    )
    refused = live.shoectl("events", "--since", ambiguous, env=IN_NEW_YORK)
    assert refused.returncode == 2
    assert "2026-11-01 01:30:00 happens twice on this machine's clock" in refused.stderr
    assert "2026-11-01 01:30:00-04:00 for the first or 2026-11-01 01:30:00-05:00" in (
        refused.stderr
    )
    skipped = live.shoectl("events", "--since", "2026-03-08 02:30", env=IN_NEW_YORK)
    assert skipped.returncode == 2
    assert "never happens on this machine's clock" in skipped.stderr
    journal = str(live.workdir / "journal.db")
    export = shoe_controller("export", "--journal", journal, "--since", ambiguous,
                             env=IN_NEW_YORK)  # fmt: skip
    assert export.returncode == 2
    assert "happens twice on this machine's clock" in export.stderr
    for help_text in (
        live.shoectl("events", "--help").stdout,
        shoe_controller("export", "--help", env=IN_MACAU).stdout,
    ):
        flat = " ".join(help_text.split())
        assert "read in this machine's zone, as shoectl shows times" in flat
        assert "(daylight saving) is refused" in flat


def test_export_since_reads_the_time_shoectl_shows(live: LiveTable, tmp_path: Path) -> None:
    """The bug: a time typed without a zone was read as UTC, so in Macau the time shoectl
    showed was 8 hours ahead: 'nothing was recorded since ...'."""
    first = live.events()[0]
    typed = typed_in(MACAU, first.at)[:19]  # to the second, as a person types it
    config = tmp_path / "table.toml"
    config.write_text(f'[table]\nid = "07"\n[journal]\npath = "{live.workdir / "journal.db"}"\n')
    out = tmp_path / "since.jsonl"
    done = shoe_controller("export", "--config", str(config), "--since", typed, "-o", str(out),
                           env=IN_MACAU)  # fmt: skip
    assert done.returncode == 0, done.stderr
    header = json.loads(out.read_text().splitlines()[0])
    assert header["inputs"][0] == 1  # from the shoe in play then: the first input on
    in_utc = shoe_controller("export", "--config", str(config), "--since", typed, "--utc",
                             "-o", str(tmp_path / "utc.jsonl"), env=IN_MACAU)  # fmt: skip
    assert in_utc.returncode == 1  # the same wall time in UTC is 8 hours later: nothing then
    assert "nothing" in in_utc.stderr


def test_export_answers_in_the_zone_the_time_was_typed_in(live: LiveTable, tmp_path: Path) -> None:
    """The bug: `--since tomorrow` in Macau was answered 'nothing was recorded since
    ...T16:00:00.000000Z', a time the person never typed."""
    config = tmp_path / "table.toml"
    config.write_text(f'[table]\nid = "07"\n[journal]\npath = "{live.workdir / "journal.db"}"\n')
    tomorrow = (datetime.now(MACAU) + timedelta(days=1)).date().isoformat()
    answers = {}
    for typed, env in (("tomorrow", IN_MACAU), ("tomorrow", IN_NEW_YORK),
                       (f"{tomorrow}T09:30+05:00", IN_MACAU)):  # fmt: skip
        done = shoe_controller("export", "--config", str(config), "--since", typed,
                               "-o", str(tmp_path / "none.jsonl"), env=env)  # fmt: skip
        assert done.returncode == 1
        answers[typed, env["TZ"]] = done.stderr.strip().splitlines()[-1]
    assert answers["tomorrow", "Asia/Macau"] == (
        f"Error: nothing was recorded since {tomorrow} 00:00:00.000 +08:00 (--since tomorrow)"
    )
    assert re.fullmatch(r"Error: nothing was recorded since \d{4}-\d\d-\d\d 00:00:00\.000"
                        r" -0[45]:00 \(--since tomorrow\)",
                        answers["tomorrow", "America/New_York"])  # fmt: skip
    assert answers[f"{tomorrow}T09:30+05:00", "Asia/Macau"] == (
        f"Error: nothing was recorded since {tomorrow} 09:30:00.000 +05:00"
        f" (--since {tomorrow}T09:30+05:00)"
    )


def test_more_than_a_thousand_events_come_in_pages(live: LiveTable) -> None:
    events = live.events()
    assert len(events) > 1500
    shown = live.shoectl("events", "-n", "1500")
    assert shown.returncode == 0, shown.stderr
    assert seqs(shown.stdout) == [event.seq for event in events][-1500:]
    alerts = live.shoectl("events", "-n", "1200", "-t", "procedure")
    expected = [event.seq for event in events if event.type.startswith("procedure.")][-1200:]
    assert len(expected) == 1200
    assert seqs(alerts.stdout) == expected
    few = live.shoectl("events", "-n", "1200", "-t", "round.result")  # fewer than asked
    assert seqs(few.stdout) == [event.seq for event in events if event.type == "round.result"]
    lines = live.shoectl("events", "-n", "1001", "--json").stdout.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [e.seq for e in events][-1001:]
