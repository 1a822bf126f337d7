"""shoectl as a pit boss runs it: a real process against a live control socket over a real
Controller, journal and simulated shoe (tests/support/shoe_testkit/control.py)."""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pty
import queue
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.control import (
    GUARD_S,
    REPO,
    SHOE,
    LiveTable,
    cli_env,
    open_shoe,
)
from shoe_testkit.groups import NO_SUPERVISORS, can_make_groups, temporary_group
from shoe_testkit.users import NOBODY, as_nobody, run_cli

from shoe_controller.table.action_specs import ACTIONS

ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---------------------------------------------------------------------- no daemon


def test_no_daemon_is_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.sock")
    for command in (["status"], ["devices"], ["rounds"], ["road"], ["events"], ["outbox"]):
        result = run_cli(missing, *command)
        assert result.returncode == 2, command
        assert result.stdout == ""
        assert result.stderr == (
            f"shoectl: cannot reach the controller: no socket at {missing}"
            " (is shoe-controller running?)\n"
        )
    check = run_cli(missing, "check")
    assert check.returncode == 3  # Nagios UNKNOWN
    assert check.stdout.startswith("SHOE UNKNOWN - cannot reach the controller")
    dead = tmp_path / "dead.sock"
    leftover = socket.socket(socket.AF_UNIX)
    leftover.bind(str(dead))
    leftover.close()  # a socket file nobody listens on: a stopped daemon
    result = run_cli(str(dead), "void", "--by", "s", "--reason", "x")
    assert result.returncode == 2
    assert "nobody listens on" in result.stderr


def test_socket_option_wins_over_the_environment(live: LiveTable, tmp_path: Path) -> None:
    result = live.shoectl("--socket", str(live.socket_path), "check", socket_path="/nonexistent")
    assert result.returncode == 0
    assert result.stdout.startswith("SHOE OK - ")


# ---------------------------------------------------------------------- seeing


def test_status_reads_at_a_glance_and_as_json(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(5)  # round 1 (2♠ 4♦ 7♥ 9♣, natural) and P1 Q♥ of round 2
    result = live.shoectl("status")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert not ANSI.search(text)  # not a terminal: no colour
    assert re.search(r"^Health +OK$", text, re.M)
    assert re.search(r"^State +dealing +\[manual\]$", text, re.M)
    assert re.search(r"^Shoe +1 open, 7 cards dealt, 409 left, cut card not seen", text, re.M)
    assert re.search(r"^Round +2, P1 Q♥, next B1$", text, re.M)
    assert re.search(r"^Devices +scanner connected \(Acme Gaming OS-9\)$", text, re.M)
    assert re.search(r"^Holds +none$", text, re.M)
    as_json = live.shoectl("status", "--json")
    assert as_json.returncode == 0
    data = json.loads(as_json.stdout)
    assert data["table"] == live.view()
    assert data["health"]["status"] == "OK"


def test_status_and_check_exit_non_zero_when_a_person_is_needed(live: LiveTable) -> None:
    open_shoe(live)
    assert live.shoectl("hold", "--by", "sup7", "--reason", "dispute").returncode == 0
    status = live.shoectl("status")
    assert status.returncode == 1
    assert "Needs a person:" in status.stdout
    assert re.search(r"CRITICAL +table held \(supervisor's hold\): held by sup7", status.stdout)
    check = live.shoectl("check")
    assert check.returncode == 2
    assert check.stdout.startswith("SHOE CRITICAL - table held (supervisor's hold)")
    assert check.stdout.count("\n") == 1
    check_json = json.loads(live.shoectl("check", "--json").stdout)
    assert check_json["level"] == 2
    assert live.shoectl("resume", "--by", "sup7", "--reason", "settled").returncode == 0
    assert live.shoectl("check").returncode == 0


def test_check_warns_while_delivery_to_the_table_server_fails(live: LiveTable) -> None:
    live.wait_connected()  # the scanner's device.connected is stored before the outbox is read
    live.start_publisher()  # towards a port nobody listens on
    live.wait_for(lambda: live.call(live.publisher.status).consecutive_failures >= 1)
    check = live.shoectl("check")
    assert check.returncode == 1
    assert check.stdout.startswith("SHOE WARNING - delivery to the table server failing")
    outbox = live.shoectl("outbox")
    assert outbox.returncode == 0
    assert re.search(r"^Why +delivery failing \(\d+ attempt\(s\)\): ", outbox.stdout, re.M)
    assert re.search(r"^Last error +.+ failure\(s\) in a row, [^)]+\)$", outbox.stdout, re.M)
    assert re.search(r"^Sink +server \(http\) http://127\.0\.0\.1:\d+$", outbox.stdout, re.M)
    assert re.search(r"^1 +1 +\S+ +1 +controller\.started$", outbox.stdout, re.M)
    data = json.loads(live.shoectl("outbox", "--json").stdout)
    (server,) = data["sinks"]
    assert server["state"] in ("backoff", "sending")
    assert server["backlog"] == data["backlog"] == live.call(live.journal.reads.last_seq)
    assert [entry["seq"] for entry in server["waiting"]] == list(range(1, server["backlog"] + 1))


def test_devices_shows_link_statistics_and_identity(live: LiveTable) -> None:
    open_shoe(live)
    # heartbeats go on arriving: the table's count lies between the two JSON reads around it
    before = json.loads(live.shoectl("devices", "--json").stdout)["devices"][0]["link"]
    result = live.shoectl("devices")
    after = json.loads(live.shoectl("devices", "--json").stdout)["devices"][0]["link"]
    assert result.returncode == 0
    header, row = result.stdout.splitlines()
    assert header.split() == [
        "DEVICE", "STATUS", "KIND", "VENDOR", "MODEL", "SERIAL", "FIRMWARE",
        "FRAMES", "CRC", "ERRORS", "RESENT", "RECONNECTS", "FAULTS,", "LAST", "ERROR",
    ]  # fmt: skip
    assert before["frames_in"] >= 4
    columns = re.split(r"\s{2,}", row.strip())
    assert columns[:7] == [
        "scanner", "connected", "optical", "Acme Gaming", "OS-9", "SN-4711", "2.3.1",
    ]  # fmt: skip
    assert before["frames_in"] <= int(columns[7]) <= after["frames_in"]
    assert header.index("VENDOR") == row.index("Acme Gaming")  # aligned


def test_rounds_and_round_show_cards_with_suits(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(4 + 5 + 1)  # rounds 1, 2 and P1 of round 3
    result = live.shoectl("rounds")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "Shoe 1: 3 round(s)"
    assert lines[1].split() == [
        "ROUND", "STARTED", "(+00:00)", "RESULT", "P-B", "PLAYER", "BANKER", "NOTES",
    ]  # fmt: skip
    assert re.match(r"1 +\S+ +Player +9-3 +2♠ 7♥ +4♦ 9♣ +natural player$", lines[2])
    assert re.match(r"2 +\S+ +Banker +4-6 +Q♥ A♥ 3♣ +5♦ A♦ +lucky 6 .*insurance x1$", lines[3])
    assert re.match(r"3 +\S+ +dealing +3♥$", lines[4])
    last = live.shoectl("rounds", "--last", "1", "--json", "--utc")  # the journal's time form
    data = json.loads(last.stdout)
    assert [r["round"] for r in data["rounds"]] == [3]
    assert data == live.request({"cmd": "rounds", "last": 1})["result"]
    assert live.request({"cmd": "rounds", "shoe": 9})["result"]["total"] == 0  # the socket's
    missing = live.shoectl("rounds", "--shoe", "9", "--json")  # shoectl: an error
    assert missing.returncode == 2
    error = json.loads(missing.stdout)  # under --json the error is JSON too, on stdout
    assert error["error"] == "not_found"
    assert "shoe 9 has not been dealt yet" in error["message"]
    assert "shoe 9 has not been dealt yet" in live.shoectl("rounds", "--shoe", "9").stderr

    one = live.shoectl("round", "2")
    assert one.returncode == 0
    assert re.search(r"^Result +Banker wins \(4-6\): P Q♥ A♥ 3♣ = 4, B 5♦ A♦ = 6", one.stdout, re.M)
    assert re.search(r"^Cards +P1 Q♥ B1 5♦ P2 A♥ B2 A♦ P3 3♣$", one.stdout, re.M)
    assert re.search(
        r"^\d+ +\S+ +1/2 +insurance\.offered +banker insurance stage 1", one.stdout, re.M
    )
    assert re.search(r"^\d+ +\S+ +1/2 +card\.dealt +P3 3♣$", one.stdout, re.M)
    full = json.loads(live.shoectl("round", "2", "--json").stdout)
    assert [event["seq"] for event in full["events"]] == [
        event.seq for event in live.events() if event.round == 2
    ]
    missing = live.shoectl("round", "42")
    assert missing.returncode == 2
    assert missing.stderr == "shoectl: shoe 1 has no round 42 in the journal\n"


def test_road_draws_the_bead_plate_and_big_road(live: LiveTable) -> None:
    # After the burn: Player 9-3, Banker 6-4, Banker natural 8-3, Banker natural 9-2,
    # a natural tie 8-8 with a banker pair (4♠ 4♣), Player natural 8-5 with a pair (9♥ 9♦).
    live.load(SHOE.replace(" JC JS", "") + " JC JS 5H 4S 3D 4C 9H 2C 9D 3C")
    live.deal(2 + 4 + 5 + 4 + 4 + 4 + 4)
    result = live.shoectl("road")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "Shoe 1  6 rounds: Banker 3  Player 2  Tie 1  banker pairs 1  player pairs 1"
    )
    bead = lines[lines.index(next(x for x in lines if x.startswith("Bead plate"))) + 1 :][:6]
    assert bead == ["| P |", "| B |", "| B |", "| B |", "|•T |", "| P•|"]
    big = lines[lines.index(next(x for x in lines if x.startswith("Big road"))) + 1 :][:6]
    assert big[:4] == ["| P   B   P •|", "|     B      |", "|     B1     |", "|            |"]
    data = json.loads(live.shoectl("road", "--json").stdout)
    assert [cell["winner"] for cell in data["bead_plate"]] == [
        "player", "banker", "banker", "banker", "tie", "player",
    ]  # fmt: skip
    assert [(c["column"], c["row"], c["ties"]) for c in data["big_road"]] == [
        (0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 2, 1), (2, 0, 0),
    ]  # fmt: skip


def run_on_terminal(live: LiveTable, *args: str, env: dict[str, str] | None = None) -> str:
    """Run shoectl with its stdout on a real pseudo-terminal; what the terminal got."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "shoe_controller.cli.shoectl", *args],
            cwd=REPO,
            env=cli_env(str(live.socket_path), env),
            stdout=terminal,
            stderr=subprocess.PIPE,
        )
        os.close(terminal)
        chunks = []
        while True:
            ready, _, _ = select.select([controller], [], [], GUARD_S)
            if not ready:
                break
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(GUARD_S)
    finally:
        os.close(controller)
    return b"".join(chunks).decode("utf-8")


def test_colour_only_on_a_terminal_and_never_with_no_color(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(4 + 5)
    coloured = run_on_terminal(live, "road")
    assert "\x1b[31m\x1b[1mB" in coloured  # Banker in bold red
    assert "\x1b[34m\x1b[1mP" in coloured  # Player in bold blue
    plain_terminal = run_on_terminal(live, "road", env={"NO_COLOR": "1"})
    assert not ANSI.search(plain_terminal)
    assert ANSI.sub("", coloured).replace("\r\n", "\n") == plain_terminal.replace("\r\n", "\n")
    assert not ANSI.search(live.shoectl("road").stdout)
    rounds = run_on_terminal(live, "rounds")
    assert "\x1b[31m5♦\x1b[0m" in rounds  # a red suit in red
    # Colour does not break alignment: the columns line up as without it.
    plain_rounds = ANSI.sub("", rounds).replace("\r\n", "\n")
    assert plain_rounds == live.shoectl("rounds").stdout


def test_events_filtered_and_as_json_lines(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(4)
    result = live.shoectl("events", "--type", "card.dealt", "--type", "shoe")
    assert result.returncode == 0
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["SEQ", "TIME", "(+00:00)", "SHOE/RND", "TYPE", "DETAILS"]
    details = [re.split(r"\s{2,}", line.strip())[3:] for line in rows]
    assert details == [
        ["shoe.shuffled", "8 decks, 416 cards, deck check ok"],
        ["shoe.burned", "first A♠, 2 cards: A♠ 4♣"],
        ["card.dealt", "P1 2♠"],
        ["card.dealt", "B1 4♦"],
        ["card.dealt", "P2 7♥"],
        ["card.dealt", "B2 9♣"],
    ]
    # --utc: times in the journal's own form, so each line is the push API's (docs/shoectl.md)
    lines = live.shoectl("events", "-n", "3", "--json", "--utc").stdout.splitlines()
    assert [json.loads(line) for line in lines] == [e.to_wire() for e in live.events()[-3:]]
    bad = live.shoectl("events", "--type", "card.flipped")
    assert bad.returncode == 2
    assert "unknown event type card.flipped; a family:" in bad.stderr


def test_output_cut_short_by_a_closed_pipe_ends_quietly(live: LiveTable) -> None:
    live.wait_connected()
    live.sim.call(lambda device: device.load())  # a shuffled shoe
    live.wait_for(lambda: live.view()["shoe_open"])
    live.deal(300)  # some 450 events: more than a pipe holds as JSON lines
    if shutil.which("bash") is None:
        pytest.skip("needs bash for the exit status inside a pipeline (PIPESTATUS)")
    pipeline = subprocess.run(
        [
            "bash",
            "-c",
            f"{sys.executable} -m shoe_controller.cli.shoectl events -n 1000 --json | head -1;"
            " echo shoectl exit ${PIPESTATUS[0]}",
        ],
        cwd=REPO,
        env=cli_env(str(live.socket_path)),
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    first, status = pipeline.stdout.splitlines()
    assert json.loads(first)["type"] == "controller.started"
    assert status == "shoectl exit 0"  # not 1 ("needs a person", "refused")
    assert pipeline.stderr == ""  # no BrokenPipeError traceback


@contextlib.contextmanager
def ctrl_c_reaches_children() -> Iterator[None]:
    """Children started inside get Ctrl-C (SIGINT) as a terminal gives it, whatever the
    test run inherited.

    A test run started in the background (a shell job without job control, `nohup`, some CI
    runners) ignores SIGINT, and an ignored signal stays ignored across exec: Python then
    installs no KeyboardInterrupt handler, the child never sees Ctrl-C and the test waits
    out its guard (a test that passed alone and failed after 88 s under load). A signal
    the parent *handles* is reset to the default at exec, so the child gets Python's own.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_reaches_children_even_when_the_run_ignores_it() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a background job
    try:
        with ctrl_c_reaches_children():
            child = subprocess.Popen(
                [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
                stdout=subprocess.PIPE,
                text=True,
            )
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # put back as it was
    finally:
        signal.signal(signal.SIGINT, previous)
    out, _ = child.communicate(timeout=GUARD_S)
    assert "default_int_handler" in out


def test_events_follow_sees_a_round_live(live: LiveTable) -> None:
    open_shoe(live)
    with ctrl_c_reaches_children():
        process = subprocess.Popen(
            [sys.executable, "-m", "shoe_controller.cli.shoectl", "events", "--follow", "-n", "1"],
            cwd=REPO,
            env=cli_env(str(live.socket_path)),
            stdout=subprocess.PIPE,
            text=True,
        )
    lines = line_queue(process)
    try:
        assert lines.get(timeout=GUARD_S).split()[:2] == ["SEQ", "TIME"]  # the header row
        first = lines.get(timeout=GUARD_S)
        assert "shoe.burned" in first  # the last event so far comes first
        live.wait_for(lambda: live.service.followers == 1)
        live.deal(4)
        seen = [lines.get(timeout=GUARD_S) for _ in range(6)]
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        code = process.wait(GUARD_S)
    assert code == 0
    kinds = [re.split(r"\s{2,}", line.strip())[3] for line in seen]
    assert kinds == ["round.started"] + ["card.dealt"] * 4 + ["round.result"]
    assert seen[-1].rstrip().endswith("Player wins (9-3): P 2♠ 7♥ = 9, B 4♦ 9♣ = 3; natural player")


def line_queue(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's output lines as they come (a thread reads; the test waits on the queue)."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


# ---------------------------------------------------------------------- acting


def test_actions_are_accepted_or_refused_with_the_tables_reason(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(2)  # P1 2♠, B1 4♦
    correct = live.shoectl(
        "correct", "--by", "sup7", "--reason", "camera shows Q♥", "--position", "p1",
        "--card", "QH",
    )  # fmt: skip
    assert correct.returncode == 0, correct.stderr
    assert correct.stdout == (
        "accepted: correct by sup7 (as root), journaled and sent as supervisor.action\n"
    )
    action = next(e for e in reversed(live.events()) if e.type == "supervisor.action")
    assert action.data["action"] == "correct"
    assert action.data["reason"] == "camera shows Q♥"
    assert action.data["details"]["os_user"] == "root (uid 0)"
    assert live.view()["round"]["cards"]["P1"] == "QH"

    refused = live.shoectl("end-trial", "--by", "sup7", "--reason", "no trials")
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("refused: ")  # the table's words, once
    assert "end_trial" not in refused.stderr
    as_json = live.shoectl("resume", "--by", "sup7", "--reason", "x", "--json")
    assert as_json.returncode == 1
    answer = json.loads(as_json.stdout)
    assert answer["error"] == {"code": "refused", "text": "resume refused: nothing to resume"}

    last_seq = live.call(live.journal.reads.last_seq)
    usage = live.shoectl("void", "--by", "sup7")  # no --reason
    assert usage.returncode == 2
    assert "Missing option '--reason'" in usage.stderr
    bad_card = live.shoectl("confirm", "--by", "s", "--reason", "x", "--card", "ZZ")
    assert bad_card.returncode == 2  # a usage error, checked before it is sent
    assert "ZZ is not a card" in bad_card.stderr
    assert live.call(live.journal.reads.last_seq) == last_seq  # nothing journaled

    void = live.shoectl("void", "--by", "sup7", "--reason", "misdeal")
    assert void.returncode == 0
    change = live.shoectl("change-shoe", "--by", "sup7", "--reason", "bent card", "--misdeal")
    assert change.returncode == 0
    ended = next(e for e in reversed(live.events()) if e.type == "shoe.ended")
    assert ended.data["reason"] == "misdeal"
    assert not live.view()["shoe_open"]


def test_every_supervisor_action_has_a_command(live: LiveTable) -> None:
    help_text = live.shoectl("--help").stdout
    for name in ACTIONS:
        assert re.search(rf"^  {name.replace('_', '-')} ", help_text, re.M), name
    correct = live.shoectl("correct", "--help").stdout
    assert "--position P1..B3" in correct
    assert "P1, B1, P2, B2, P3, B3 (R7's dealing order)" in " ".join(correct.split())
    assert "--by ID" in correct


@pytest.mark.parametrize(
    ("group", "refusal"),
    [
        (
            "root",  # exists everywhere; nobody is not in it
            "refused: user nobody (uid 65534) is not in the supervisor group 'root'; an"
            " administrator can add it (usermod -aG root nobody), then log in again\n",
        ),
        (
            NO_SUPERVISORS,  # this run's name, that no group here has (shoe_testkit.groups)
            f"refused: the supervisor group '{NO_SUPERVISORS}' does not exist on this"
            " machine; only root may act until it is created\n",
        ),
    ],
    ids=["not-a-member", "no-such-group"],  # the same every run, whatever the name
)
def test_a_user_outside_the_supervisor_group_is_refused(
    tmp_path: Path, nobody_env: dict[str, str], group: str, refusal: str
) -> None:
    if not can_make_groups():
        pytest.skip("needs groupadd to make a viewer group for the test")
    with temporary_group() as (viewers, viewer_gid):
        live = LiveTable(tmp_path, supervisor_group=group, viewer_group=viewers)
        try:
            open_shoe(live)
            live.deal(2)
            last_seq = live.call(live.journal.reads.last_seq)
            refused = live.shoectl(
                "void", "--by", "sup7", "--reason", "x", user=as_nobody(viewer_gid),
                env=nobody_env,
            )  # fmt: skip
            assert refused.returncode == 4
            assert refused.stderr == refusal
            assert live.call(live.journal.reads.last_seq) == last_seq  # nothing submitted
            # A viewer looks without authority to act.
            looking = live.shoectl("status", "--json", user=as_nobody(viewer_gid), env=nobody_env)
            assert looking.returncode == 0
            assert json.loads(looking.stdout)["table"]["round"]["number"] == 1
            # Root may act whatever the group.
            assert live.shoectl("void", "--by", "sup7", "--reason", "x").returncode == 0
        finally:
            live.close()


def test_a_user_in_neither_group_cannot_even_look(
    tmp_path: Path, nobody_env: dict[str, str]
) -> None:
    if not can_make_groups():
        pytest.skip("needs groupadd to make a viewer group for the test")
    with temporary_group() as (viewers, _):
        live = LiveTable(tmp_path, viewer_group=viewers)
        try:
            mode = live.socket_path.stat()
            assert stat.S_IMODE(mode.st_mode) == 0o660  # not world: the viewer group's
            assert mode.st_gid == grp.getgrnam(viewers).gr_gid
            looking = live.shoectl("status", user=as_nobody(), env=nobody_env)
            assert looking.returncode == 2
            assert "permission denied" in looking.stderr
            assert "viewer and supervisor groups" in looking.stderr
        finally:
            live.close()


def test_a_member_of_the_supervisor_group_acts_and_is_recorded(
    tmp_path: Path, nobody_env: dict[str, str]
) -> None:
    if not can_make_groups():
        pytest.skip("needs groupadd to make a supervisor group for the test")
    with temporary_group() as (name, gid):
        live = LiveTable(tmp_path, supervisor_group=name)
        try:
            open_shoe(live)
            live.deal(2)
            outsider = live.shoectl(
                "hold", "--by", "s", "--reason", "x", user=as_nobody(), env=nobody_env
            )
            assert outsider.returncode == 2  # cannot reach the socket: its group is not his
            assert "permission denied" in outsider.stderr
            member = live.shoectl(
                "void", "--by", "sup9", "--reason", "dealer error", user=as_nobody(gid),
                env=nobody_env,
            )  # fmt: skip
            assert member.returncode == 0, member.stderr
            assert "(as nobody)" in member.stdout
            action = next(e for e in reversed(live.events()) if e.type == "supervisor.action")
            assert action.data["by"] == "sup9"
            assert action.data["reason"] == "dealer error"
            assert action.data["details"]["os_user"] == f"nobody (uid {NOBODY})"
        finally:
            live.close()


# ---------------------------------------------------------------------- squeeze (R15)


SECRET = {"2S": "2♠", "4D": "4♦", "7H": "7♥", "9C": "9♣"}


def everything_shown(live: LiveTable) -> str:
    commands = [["status"], ["rounds"], ["round", "1"], ["events", "-n", "100"], ["road"]]
    commands += [["check"], ["outbox"], ["devices"]]
    shown = []
    for command in commands:
        for variant in (command, [*command, "--json"]):
            result = live.shoectl(*variant)
            assert result.returncode == 0, (variant, result.stderr)
            shown.append(result.stdout)
    return "\n".join(shown)


def test_squeeze_no_command_shows_a_card_before_its_reveal(tmp_path: Path) -> None:
    live = LiveTable(tmp_path, procedures={"squeeze": True})
    try:
        open_shoe(live)
        live.deal(4)
        before = everything_shown(live)
        assert re.search(
            r"^Round +1, P1 \?\? B1 \?\? P2 \?\? B2 \?\?, waiting for the reveal", before, re.M
        )
        for code, pretty in SECRET.items():
            assert f'"{code}"' not in before
            assert pretty not in before
        live.press_reveal()
        after = everything_shown(live)
        for code, pretty in SECRET.items():  # once revealed they show: the check can fail
            assert f'"{code}"' in after
            assert pretty in after
    finally:
        live.close()


def test_the_console_script_is_installed(live: LiveTable) -> None:
    script = Path(sys.executable).parent / "shoectl"
    if not script.exists():
        pytest.skip(f"the package's console scripts are not installed next to {sys.executable}")
    result = subprocess.run(
        [str(script), "check"],
        env=cli_env(str(live.socket_path)),
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout.startswith("SHOE OK - ")
