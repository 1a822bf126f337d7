"""shoectl's times in the machine's zone with the offset, `--utc` for UTC, and `--json` in
ISO 8601 with the offset everywhere: real shoectl processes under TZ=Asia/Macau
and TZ=UTC against a live control socket (tests/support/shoe_testkit/control.py), the expected times
computed from the journal with zoneinfo, not with shoectl's code.

A recording relay sits between shoectl and the daemon's socket (a real Unix socket both
ways): each `--json` output is checked against the very answer shoectl received, leaf by
leaf: equal, or a time of the answer (ISO UTC string or epoch seconds) written as ISO 8601
with the chosen offset and denoting the same instant. No epoch number may be left.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pytest
from shoe_testkit.control import GUARD_S, REPO, SHOE, LiveTable, cli_env

from shoe_controller.cli.shoectl.times import Times, is_time_field

try:
    MACAU = ZoneInfo("Asia/Macau")
except ZoneInfoNotFoundError:  # pragma: no cover - the machine has no tz database
    pytest.skip("needs the tz database (tzdata) for Asia/Macau", allow_module_level=True)
if not Path("/usr/share/zoneinfo/Asia/Macau").exists():  # libc's, which TZ= goes through
    pytest.skip("needs /usr/share/zoneinfo (tzdata) for TZ=Asia/Macau", allow_module_level=True)

IN_MACAU = {"TZ": "Asia/Macau"}
IN_UTC = {"TZ": "UTC"}
EIGHT_HOURS = timedelta(hours=8)
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
EPOCH_FLOOR = 1e9  # 2001: a number above it in an answer is unix seconds


# ---------------------------------------------------------------------- the rule, pure


def test_a_pit_boss_at_3_am_in_macau_reads_3_am() -> None:
    at = datetime(2026, 12, 1, 19, 4, 5, 123456, UTC)  # 03:04 on 2 December in Macau
    macau, utc = Times(MACAU), Times.chosen(utc=True)
    for value in (at.timestamp(), at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")):
        assert macau.short(value) == "03:04:05.123"
        assert macau.stamp(value) == "2026-12-02 03:04:05.123 +08:00"
        assert macau.iso(value) == "2026-12-01T19:04:05.123456Z"  # JSON: one form, UTC
        assert utc.short(value) == "19:04:05.123"
        assert utc.stamp(value) == "2026-12-01 19:04:05.123 +00:00"
        assert utc.iso(value) == "2026-12-01T19:04:05.123456Z"  # the journal's own form
        assert datetime.fromisoformat(utc.iso(value) or "") == at


def test_each_instant_gets_its_own_offset_across_daylight_saving() -> None:
    new_york = Times(ZoneInfo("America/New_York"))
    assert new_york.stamp("2026-01-15T12:00:00.000000Z") == "2026-01-15 07:00:00.000 -05:00"
    assert new_york.iso("2026-07-15T12:00:00.000000+00:00") == "2026-07-15T12:00:00.000000Z"
    assert new_york.stamp("2026-07-15T12:00:00Z") == "2026-07-15 08:00:00.000 -04:00"


def test_the_time_fields_are_named_at_now_since_or_end_in_at() -> None:
    assert all(map(is_time_field, ("at", "now", "since", "started_at", "last_error_at")))
    assert not any(map(is_time_field, ("oldest_waiting_age_s", "since_round", "attempts")))
    epoch = datetime(2026, 12, 1, 15, 4, 5, tzinfo=UTC).timestamp()
    answer = {
        "at": "2026-12-01T15:04:05.000000Z",
        "oldest_waiting_age_s": 1.5,  # a duration: stays seconds
        "publisher": {"next_attempt_at": epoch, "fault": {"since": epoch, "code": 422}},
        "last_ack_at": None,
        "waiting": [{"seq": 1, "at": epoch}],
        "flag_at": True,  # not a time, whatever its name
        "label_at": "not a time",
        "text": "since 2026-12-01T15:04:05.000000Z",  # a text: JSON keeps the daemon's words
    }
    stamp = "2026-12-01T15:04:05.000000Z"  # JSON in UTC, whatever the zone shown
    assert Times(MACAU).in_json(answer) == {
        **answer,
        "at": stamp,
        "publisher": {"next_attempt_at": stamp, "fault": {"since": stamp, "code": 422}},
        "waiting": [{"seq": 1, "at": stamp}],
    }
    assert Times(MACAU).in_text(answer["text"]) == "since 2026-12-01 23:04:05.000 +08:00"


# ---------------------------------------------------------------------- a live table


class RecordingRelay:
    """A Unix socket that passes everything to the daemon's and back, keeping the daemon's
    answer lines: what shoectl was told, to check its output against."""

    def __init__(self, upstream: Path) -> None:
        self.upstream = upstream
        self.directory = Path(tempfile.mkdtemp(prefix="shoectl-relay-", dir="/tmp"))
        self.path = self.directory / "relay.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        self._listener.listen()
        self._lock = threading.Lock()
        self._answers: list[bytes] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            daemon = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            daemon.connect(str(self.upstream))
            threading.Thread(target=self._pass, args=(client, daemon, None), daemon=True).start()
            kept = bytearray()
            with self._lock:
                self._answers.append(b"")
                slot = len(self._answers) - 1
            threading.Thread(
                target=self._pass, args=(daemon, client, (slot, kept)), daemon=True
            ).start()

    def _pass(
        self, source: socket.socket, sink: socket.socket, keep: tuple[int, bytearray] | None
    ) -> None:
        with source, sink:
            while chunk := _read(source):
                if keep is not None:
                    keep[1].extend(chunk)
                    with self._lock:
                        self._answers[keep[0]] = bytes(keep[1])
                try:
                    sink.sendall(chunk)
                except OSError:
                    return
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def take(self) -> list[dict[str, Any]]:
        """The daemon's answer lines since the last take, every connection in order."""
        with self._lock:
            kept, self._answers = self._answers, []
        return [json.loads(line) for data in kept for line in data.splitlines() if line]

    def close(self) -> None:
        self._listener.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _read(source: socket.socket) -> bytes:
    try:
        return source.recv(65536)
    except OSError:
        return b""


class Setting:
    """The module's table: a shoe dealt over three rounds, held by shoectl (its answer kept),
    the publisher failing (its status carries epoch seconds), a relay in front."""

    def __init__(self, live: LiveTable) -> None:
        self.live = live
        self.relay = RecordingRelay(live.socket_path)
        live.load(SHOE)
        live.deal(2 + 4 + 5)  # the burn, round 1 (natural), round 2 (three cards each)
        live.start_publisher()
        live.wait_for(lambda: epochs(live.request({"cmd": "outbox"})))
        self.hold = self.shoectl("hold", "--by", "sup7", "--reason", "dispute", "--json")
        self.hold_answers = self.relay.take()

    def shoectl(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.live.shoectl(*args, env=env or IN_MACAU, socket_path=str(self.relay.path))

    def json_and_answer(self, *args: str, env: dict[str, str] | None = None) -> tuple[Any, Any]:
        """shoectl's JSON output and the one answer it was given (`events`: one event a
        line, gathered as the answer's {"events": [...]})."""
        self.relay.take()
        result = self.shoectl(*args, env=env)
        assert result.stderr == ""  # its exit code says the health: status 1, check 2 (held)
        [answer] = self.relay.take()
        assert answer["ok"], answer
        if "events" in args:
            return {"events": [json.loads(line) for line in result.stdout.splitlines()]}, (
                answer["result"]
            )
        return json.loads(result.stdout), answer["result"]


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setting]:
    live = LiveTable(tmp_path_factory.mktemp("time"))
    made: Setting | None = None
    try:
        made = Setting(live)
        yield made
    finally:
        if made is not None:
            made.relay.close()
        live.close()


def epochs(value: Any) -> list[float]:
    """Every number in a JSON value that reads as unix seconds."""
    if isinstance(value, dict):
        return [found for item in value.values() for found in epochs(item)]
    if isinstance(value, list):
        return [found for item in value for found in epochs(item)]
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return [float(value)] if is_number and value > EPOCH_FLOOR else []


def looks_like_a_time(value: Any) -> bool:
    return (isinstance(value, str) and ISO.fullmatch(value) is not None) or bool(epochs(value))


def same_but_times(shown: Any, raw: Any, offset: timedelta, path: str = "") -> list[str]:
    """Compare shoectl's JSON with the daemon's answer: equal leaf by leaf, except each time
    (ISO string or epoch seconds), which must be ISO 8601 with `offset` and the same instant
    (`Z` with --utc, offset zero). The paths of the times converted."""
    if isinstance(raw, dict):
        assert isinstance(shown, dict), path
        assert shown.keys() == raw.keys(), path
        return [
            p for key in raw for p in same_but_times(shown[key], raw[key], offset, f"{path}.{key}")
        ]
    if isinstance(raw, list):
        assert isinstance(shown, list), path
        assert len(shown) == len(raw), path
        return [
            p
            for i, item in enumerate(raw)
            for p in same_but_times(shown[i], item, offset, f"{path}[]")
        ]
    if not looks_like_a_time(raw):
        assert shown == raw, path
        return []
    assert isinstance(shown, str), (path, shown)
    assert ISO.fullmatch(shown), (path, shown)
    when = datetime.fromisoformat(shown)
    assert when.utcoffset() == offset, (path, shown)
    if offset == timedelta(0):
        assert shown.endswith("Z"), (path, shown)  # --utc: the journal's form, Z
    else:
        assert re.search(r"\.\d{6}[+-]\d\d:\d\d$", shown), (path, shown)  # microseconds kept
    if isinstance(raw, str):
        assert when == datetime.fromisoformat(raw), path
    else:
        assert abs(when.timestamp() - raw) <= 1e-6, path  # to the microsecond
    return [path]


def macau_short(at: str) -> str:
    """The journal's `at` as a Macau clock shows it, to the millisecond (computed here)."""
    local = datetime.fromisoformat(at).astimezone(MACAU)
    return local.strftime("%H:%M:%S.") + f"{local.microsecond // 1000:03d}"


def utc_short(at: str) -> str:
    moment = datetime.fromisoformat(at).astimezone(UTC)
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def macau_stamp(at: str) -> str:
    local = datetime.fromisoformat(at).astimezone(MACAU)
    return local.strftime("%Y-%m-%d %H:%M:%S.") + f"{local.microsecond // 1000:03d} +08:00"


# ---------------------------------------------------------------------- --json


@pytest.mark.parametrize(
    "command",
    [
        ["status", "--json"],
        ["outbox", "--json"],
        ["round", "2", "--json"],
        ["rounds", "--last", "3", "--json"],
        ["events", "-n", "40", "--json"],
        ["devices", "--json"],
        ["check", "--json"],
        ["road", "--json"],
    ],
)
def test_json_has_iso_times_in_utc_and_no_epoch_numbers(
    setting: Setting, command: list[str]
) -> None:
    shown, raw = setting.json_and_answer(*command)  # in Macau: JSON in UTC all the same
    converted = same_but_times(shown, raw, timedelta(0))
    assert epochs(shown) == []
    if command[0] in ("status", "outbox"):  # the publisher's status: epoch seconds, converted
        assert epochs(raw)
        assert any(path.endswith("_at") for path in converted)
    if command[0] in ("status", "round", "rounds", "events", "outbox"):
        assert converted  # these answers carry times


def test_json_with_utc_is_the_same_z_form(setting: Setting) -> None:
    for command in (["--utc", "status", "--json"], ["outbox", "--json", "--utc"]):
        shown, raw = setting.json_and_answer(*command, env=IN_MACAU)
        converted = same_but_times(shown, raw, timedelta(0))
        assert converted
        assert epochs(shown) == []


def test_an_actions_json_answer_carries_iso_times_too(setting: Setting) -> None:
    assert setting.hold.returncode == 0, setting.hold.stderr
    [answer] = setting.hold_answers
    shown = json.loads(setting.hold.stdout)
    converted = same_but_times(shown, answer, timedelta(0))
    assert any(path.startswith(".result.events[]") for path in converted)


# ---------------------------------------------------------------------- for a person


def test_events_show_the_local_clock_or_utc(setting: Setting) -> None:
    journal = {event.seq: event.at for event in setting.live.events()}
    for env, argv, expected in (
        (IN_MACAU, ["events", "-n", "100"], macau_short),
        (IN_UTC, ["events", "-n", "100"], utc_short),
        (IN_MACAU, ["--utc", "events", "-n", "100"], utc_short),
        (IN_MACAU, ["events", "-n", "100", "--utc"], utc_short),  # after the command too
    ):
        result = setting.shoectl(*argv, env=env)
        assert result.returncode == 0, result.stderr
        header, *lines = result.stdout.splitlines()
        assert header.split()[:2] == ["SEQ", "TIME"]  # the header row
        rows = [line.split() for line in lines]
        assert len(rows) == len(journal)
        assert [row[1] for row in rows] == [expected(journal[int(row[0])]) for row in rows]


def test_round_shows_full_stamps_with_the_offset(setting: Setting) -> None:
    events = [event for event in setting.live.events() if event.shoe == 1 and event.round == 2]
    result = setting.shoectl("round", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"Started  {macau_stamp(events[0].at)}" in lines
    assert f"Ended    {macau_stamp(events[-1].at)}" in lines
    times = {line.split()[0]: line.split()[1] for line in lines if re.match(r"\d+  ", line)}
    assert times == {str(event.seq): macau_short(event.at) for event in events}
    utc = setting.shoectl("--utc", "round", "2").stdout
    start = datetime.fromisoformat(events[0].at).astimezone(UTC)
    assert f"Started  {start:%Y-%m-%d %H:%M:%S}.{start.microsecond // 1000:03d} +00:00" in utc


def test_rounds_started_in_local_time(setting: Setting) -> None:
    started = {
        event.round: event.at for event in setting.live.events() if event.type == "round.started"
    }
    result = setting.shoectl("rounds", "--last", "3")
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert [(row[0], row[1]) for row in rows] == [
        (str(number), macau_short(started[number])) for number in sorted(started)[-3:]
    ]


def test_status_says_when_in_local_time(setting: Setting) -> None:
    before = datetime.now(UTC)
    result = setting.shoectl("status")
    after = datetime.now(UTC)
    assert result.returncode == 1  # held: a person is needed
    table_line = next(line for line in result.stdout.splitlines() if line.startswith("Table"))
    stamp = re.search(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d{3}) \+08:00$", table_line)
    assert stamp, table_line
    now = datetime.fromisoformat(f"{stamp[1]}T{stamp[2]}+08:00")
    assert before - timedelta(seconds=1) <= now <= after  # the daemon's clock, read in Macau
    [hold] = setting.live.view()["holds"]
    assert f"since {macau_short(hold['since'])} +08:00 (ways out:" in result.stdout
    alert = next(e for e in reversed(setting.live.events()) if e.type == "procedure.alert")
    alert_row = next(
        line for line in result.stdout.splitlines() if line.startswith(f"{alert.seq} ")
    )
    assert alert_row.split()[1] == macau_short(alert.at)


def test_follow_prints_each_new_event_in_local_time(tmp_path: Path) -> None:
    live = LiveTable(tmp_path)
    try:
        live.load(SHOE)
        process = subprocess.Popen(
            [sys.executable, "-m", "shoe_controller.cli.shoectl", "events", "-f", "-n", "0"],
            cwd=REPO,
            env=cli_env(str(live.socket_path), IN_MACAU),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            live.wait_for(lambda: live.service.followers == 1)
            live.deal(2)  # the burn
            assert process.stdout is not None
            assert process.stdout.readline().split()[:2] == ["SEQ", "TIME"]  # the header
            line = process.stdout.readline()
        finally:
            process.kill()
            process.wait(GUARD_S)
            if process.stdout is not None:
                process.stdout.close()
        seq, shown = line.split()[:2]
        [event] = [event for event in live.events() if event.seq == int(seq)]
        assert shown == macau_short(event.at)
    finally:
        live.close()


def test_verify_says_when_the_file_was_exported_in_local_time(
    setting: Setting, tmp_path: Path
) -> None:
    export = tmp_path / "round1.jsonl"
    written = setting.shoectl("round", "1", "--export", str(export))
    assert written.returncode == 0, written.stderr
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    exported_at = lines[0]["exported_at"]
    assert exported_at.endswith("Z")  # the dispute file keeps the journal's forms (its chain)
    assert isinstance(lines[1]["recorded_at"], float)
    in_utc = datetime.fromisoformat(exported_at)
    for env, args, expected in (
        (IN_MACAU, (), macau_stamp(exported_at)),
        (
            IN_MACAU,
            ("--utc",),
            f"{in_utc:%Y-%m-%d %H:%M:%S}.{in_utc.microsecond // 1000:03d} +00:00",
        ),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "shoe_controller.cli", "verify", str(export), *args],
            cwd=REPO,
            env=cli_env("/nonexistent", env),
            capture_output=True,
            text=True,
            timeout=GUARD_S,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"exported {expected}\n" in result.stdout
