"""shoectl for the technician, the dispute and the regulator, as a real process
against a live control socket (shoe_testkit/control.py): game recall across the shoe change
while held and with the device lost, the dispute file, --version, --json before the command,
--timeout against a hung daemon, `events --follow` across a daemon restart, arguments checked
before they are sent, refusals in shoectl's words."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.control import (
    GUARD_S,
    REPO,
    LiveTable,
    cli_env,
    open_shoe,
)
from shoe_testkit.users import run_cli as shoectl

from shoe_controller import __version__
from shoe_controller.service.control import ControlServer

# ---------------------------------------------------------------------- global options


def test_version_and_json_before_the_command(live: LiveTable) -> None:
    version = live.shoectl("--version")
    assert (version.returncode, version.stdout) == (0, f"shoectl, version {__version__}\n")
    before = live.shoectl("--json", "devices")
    after = live.shoectl("devices", "--json")
    assert before.returncode == after.returncode == 0
    assert json.loads(before.stdout)["devices"][0]["device"] == "scanner"
    assert json.loads(before.stdout).keys() == json.loads(after.stdout).keys()
    assert json.loads(live.shoectl("--json", "rounds").stdout)["shoe"] == 1


@pytest.fixture
def hung_socket() -> Iterator[str]:
    """A control socket whose daemon is hung: it accepts the connection, never answers."""
    directory = tempfile.mkdtemp(prefix="hung-", dir="/tmp")
    path = f"{directory}/control.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)  # the kernel takes the connections; nobody reads them
    try:
        yield path
    finally:
        server.close()
        Path(path).unlink()
        Path(directory).rmdir()


def test_a_hung_daemon_is_said_within_the_timeout(hung_socket: str) -> None:
    status = shoectl(hung_socket, "--timeout", "0.5", "status")
    assert status.returncode == 2
    assert status.stderr == (
        "shoectl: the controller did not answer within 0.5 s (is it hung? shoectl --timeout"
        " SECONDS waits longer)\n"
    )
    check = shoectl(hung_socket, "--timeout", "0.3", "check")
    assert check.returncode == 3
    assert check.stdout.startswith("SHOE UNKNOWN - the controller did not answer within 0.3 s")
    assert shoectl(hung_socket, "--timeout", "0", "status").returncode == 2  # usage: > 0.1


# ---------------------------------------------------------------------- checked locally


def test_arguments_are_checked_before_anything_is_sent(live: LiveTable) -> None:
    open_shoe(live)
    live.deal(1)  # P1 of round 1
    before = live.call(live.journal.reads.last_seq)
    bad_card = live.shoectl("confirm", "--by", "sup7", "--reason", "x", "--card", "ZZ")
    assert bad_card.returncode == 2
    assert "Invalid value for '--card': ZZ is not a card (write the rank" in bad_card.stderr
    blank = live.shoectl("void", "--by", "  ", "--reason", "dropped")
    assert blank.returncode == 2
    assert "Invalid value for '--by': must not be empty" in blank.stderr
    bad_type = live.shoectl("events", "--type", "cards")
    assert bad_type.returncode == 2
    assert "unknown event type cards; a family: " in bad_type.stderr
    assert " card, controller, device, " in bad_type.stderr
    assert live.call(live.journal.reads.last_seq) == before  # nothing journaled, no refusal alert
    ten = live.shoectl("missed", "--by", "sup7", "--reason", "x", "--card", "10d")
    assert ten.returncode == 1  # sent (as TD) and refused by the table: there is no gap
    assert ten.stderr == (
        "refused: the shoe reported no gap: say where the card belonged with --position P1..B3\n"
    )
    command = live.call(live.journal.reads.replay_steps)[-1].input
    assert (command["action"], command["args"]) == ("missed", {"card": "TD"})


def test_the_tables_texts_name_the_shoectl_command(live: LiveTable) -> None:
    from shoe_controller.cli.shoectl.wording import in_shoectl_words  # noqa: PLC0415

    assert in_shoectl_words("enter it with confirm card=.. (R10.5)") == (
        "enter it with shoectl confirm --card CARD (R10.5)"
    )
    assert in_shoectl_words("discard it, missed card=.. position=.. or change_shoe") == (
        "discard it, shoectl missed --card CARD --position P1..B3 or shoectl change-shoe"
    )
    assert in_shoectl_words("end_trial refused: start_shoe first") == (
        "end_trial refused: shoectl start-shoe first"
    )
    assert in_shoectl_words("held by sup7: change_shoe_soon, card.dealt") == (
        "held by sup7: change_shoe_soon, card.dealt"
    )


# ---------------------------------------------------------------------- game recall


def test_the_last_games_are_recalled_across_the_shoe_change_held_and_device_lost(
    live: LiveTable, tmp_path: Path
) -> None:
    open_shoe(live)
    live.deal(4 + 5)  # shoe 1: rounds 1 and 2
    live.supervisor("change_shoe")
    open_shoe(live)  # shoe 2: the same cards again
    live.deal(4 + 1)  # round 1, and P1 of round 2
    live.supervisor("hold")
    assert live.view()["state"] == "held"
    recalled = live.shoectl("rounds")
    assert recalled.returncode == 0, recalled.stderr
    lines = recalled.stdout.splitlines()
    assert lines[0] == "Shoe 1: 2 round(s)"
    assert lines[2].split()[:3] == ["1", lines[2].split()[1], "Player"]
    assert lines[4] == ""
    assert lines[5] == "Shoe 2: 2 round(s)"
    assert lines[8].split()[2] == "dealing"
    assert "supervisor: hold" in lines[8]  # the hold is journaled with its round
    data = json.loads(live.shoectl("rounds", "--json").stdout)
    assert (data["shoe"], [r["round"] for r in data["rounds"]]) == (2, [1, 2])
    assert [(e["shoe"], [r["round"] for r in e["rounds"]]) for e in data["earlier"]] == [
        (1, [1, 2])
    ]
    live.sim.stop()  # the shoe's cable pulled
    live.wait_for(lambda: not live.view()["devices"]["scanner"]["connected"])
    one = live.shoectl("round", "2", "--shoe", "1")
    assert one.returncode == 0, one.stderr
    assert "Cards    P1 Q♥ B1 5♦ P2 A♥ B2 A♦ P3 3♣" in one.stdout
    assert "insurance.offered" in one.stdout
    dispute = tmp_path / "round-1-2.jsonl"
    written = live.shoectl("round", "2", "--shoe", "1", "--export", str(dispute))
    assert written.returncode == 0, written.stderr
    assert written.stderr.startswith(f"written to {dispute}: shoe 1 from its start through round 2")
    lines = [json.loads(line) for line in dispute.read_text().splitlines()]
    assert lines[0]["selection"] == {"shoe": 1, "round": 2}
    verified = subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli", "verify", str(dispute)],
        cwd=REPO, capture_output=True, text=True, timeout=GUARD_S, check=False,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout
    assert verified.stdout.endswith("VERIFIED\n")
    missing = live.shoectl("round", "7", "--shoe", "1", "--export", str(tmp_path / "no.jsonl"))
    assert missing.returncode == 2
    assert not (tmp_path / "no.jsonl").exists()


# ---------------------------------------------------------------------- events --follow


def lines_of(stream: object) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def restart_control(live: LiveTable) -> None:
    """The daemon's control socket goes away and comes back (a restart, as shoectl sees it)."""
    live.run(live.server.close())
    live.server = ControlServer(live.socket_path, live.service, live.config.control)
    live.run(live.server.start())


def test_events_follow_goes_on_after_a_restart_from_the_last_seq(live: LiveTable) -> None:
    open_shoe(live)
    process = subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", "events", "-f", "--json",
         "--type", "card", "-n", "0"],
        cwd=REPO, env=cli_env(str(live.socket_path)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = lines_of(process.stdout), lines_of(process.stderr)
    try:
        live.wait_for(lambda: live.service.followers == 1)
        live.deal(1)
        first = json.loads(out.get(timeout=GUARD_S))
        live.run(live.server.close())  # the daemon stops...
        live.deal(2)  # ... the shoe deals on (the journal keeps them) ...
        assert "reconnecting, then going on after seq" in err.get(timeout=GUARD_S)
        live.server = ControlServer(live.socket_path, live.service, live.config.control)
        live.run(live.server.start())  # ... and it is back
        assert (
            err.get(timeout=GUARD_S) == f"shoectl: reconnected; going on after seq {first['seq']}\n"
        )
        caught_up = [json.loads(out.get(timeout=GUARD_S)) for _ in range(2)]
        live.wait_for(lambda: live.service.followers == 1)
        restart_control(live)  # once more, with nothing missed meanwhile
        live.wait_for(lambda: live.service.followers == 1)
        live.deal(1)
        last = json.loads(out.get(timeout=GUARD_S))
    finally:
        process.terminate()
        process.wait(GUARD_S)
    cards = [e.seq for e in live.events() if e.type.startswith("card.")]
    assert [first["seq"], *(e["seq"] for e in caught_up), last["seq"]] == cards[-4:]
    assert out.empty()  # nothing printed twice
