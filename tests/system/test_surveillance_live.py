"""Surveillance with real processes, as its users see it: the daemon, the simulated
shoe and the table server of TableRig, and `shoe-controller surveillance` beside them. A shoe
is dealt; every report is the exact analysis of the cards the shoe had dealt, the edge events
are in the journal, `shoectl edge` works for the surveillance group and is refused to others,
who do not see the surveillance events either."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.control import REPO, cli_env
from shoe_testkit.groups import can_make_groups, temporary_group
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import check_delivery
from shoe_testkit.users import as_nobody, can_switch_user
from shoe_testkit.words import faults

from shoe_controller.game.odds import Composition
from shoe_controller.game.surveillance.edge import bet_edges, cards_left_by_rank
from shoe_controller.vocab.cards import Card
from shoe_controller.vocab.events import EventType

THRESHOLD = -0.0115  # the banker's -1.06 % is above it from the first report, the player's not
DUE = (EventType.ROUND_RESULT, EventType.ROUND_VOIDED, EventType.SHOE_BURNED)
OPENED = EventType.SHOE_SHUFFLED  # a manual shoe opened: a report is due too


@dataclass
class Watched:
    """The table after one shoe with the companion beside it."""

    rig: TableRig
    socket_path: Path
    dealt: list[Card]
    steps: list[Any]  # the journal's replay steps: inputs with their events
    groups: tuple[tuple[str, int], tuple[str, int]] | None  # (viewer, surveillance)
    waited: list[int]  # the due events whose reports the dealer waited for


def _companion(rig: TableRig, log_name: str) -> subprocess.Popen[bytes]:
    log = (rig.directory / log_name).open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.main", "surveillance",
         "--config", str(rig.config_path)],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip


def _reports(rig: TableRig) -> list[dict[str, Any]]:
    return [item for item in rig.records.journal_inputs() if item["type"] == "surveillance_report"]


def _due(events: Sequence[Any]) -> list[int]:
    """The seqs of the events a report is due after (not those that came with shoe.ended)."""
    ended = {event.input_no for event in events if event.type == EventType.SHOE_ENDED}
    return [e.seq for e in events if e.type in DUE and e.input_no not in ended]


def _deal(rig: TableRig, cards: int, waited: list[int] | None) -> None:
    """Deal up to `cards` cards (until the shoe ends); with `waited`, in step with the
    companion too: each round's report is journaled before the next card (the seqs of the
    events waited for are added to `waited`)."""
    for _ in range(cards):
        due = _due(rig.dealer.deal(1))
        if due and waited is not None:
            rig.wait_until(
                lambda last=due[-1]: (
                    max((r["after_seq"] for r in _reports(rig)), default=0) >= last
                ),
                "the companion's report of the round",
            )
            waited.append(due[-1])
        if rig.records.shoes_ended:
            return


@contextlib.contextmanager
def _groups() -> Iterator[tuple[tuple[str, int], tuple[str, int]] | None]:
    if not can_switch_user() or not can_make_groups():
        yield None
        return
    with temporary_group() as viewer, temporary_group() as watchers:
        yield viewer, watchers


@pytest.fixture(scope="module")
def watched() -> Iterator[Watched]:
    directory = Path(tempfile.mkdtemp(prefix="svl-", dir="/tmp"))  # short: socket paths
    directory.chmod(0o755)  # nobody reaches the socket in it, as in /run/shoe-controller
    socket_path = directory / "control.sock"
    with _groups() as groups:
        control = {"socket": str(socket_path)}
        surveillance: dict[str, Any] = {"threshold": THRESHOLD}
        if groups is not None:
            control["viewer_group"] = groups[0][0]
            surveillance["group"] = groups[1][0]
        rig = TableRig(directory / "rig", RigOptions(cut_after=402, control=control))
        companion = None
        try:
            rig.directory.mkdir()
            rig.key_file.write_text(secrets.token_hex(32) + "\n")
            rig.key_file.chmod(0o600)
            rig.start_receiver()
            rig.start_simulators()
            rig.write_config(surveillance=surveillance)
            rig.start_daemon()
            companion = _companion(rig, "surveillance-1.log")
            rig.dealer.load_shoe()
            waited: list[int] = []
            _deal(rig, 150, waited)  # some 30 rounds
            companion.send_signal(signal.SIGKILL)  # it dies, as in a power cut
            companion.wait()
            _deal(rig, 40, None)
            companion = _companion(rig, "surveillance-2.log")  # it catches up from the journal
            _deal(rig, 1000, waited)
            assert rig.records.shoes_ended == 1
            dealt = [item.card for item in rig.dealer.dealt_cards()]
            journal = rig.records.journal()
            assert journal is not None
            yield Watched(rig, socket_path, dealt, journal.reads.replay_steps(1), groups, waited)
        finally:
            if companion is not None and companion.poll() is None:
                companion.terminate()
                companion.wait(10)
            rig.close()
            shutil.rmtree(directory, ignore_errors=True)


def test_every_report_is_the_exact_analysis_of_the_cards_dealt(watched: Watched) -> None:
    counted = 0  # cards the shoe had sent when each event was stored
    cards_at: dict[int, int] = {}
    reports = []
    for step in watched.steps:
        if step.input["type"] == "card" and step.input.get("counter"):
            counted = step.input["counter"]
        for event in step.events:
            cards_at[event.seq] = counted
        if step.input["type"] == "surveillance_report":
            reports.append(step.input)
    assert len(reports) > 60
    assert [r["after_seq"] for r in reports] == sorted({r["after_seq"] for r in reports})
    # After every round and burn (the dealer waited for each), of no other moment.
    events = [event for step in watched.steps for event in step.events]
    due = set(_due(events)) | {event.seq for event in events if event.type == OPENED}
    reported = {r["after_seq"] for r in reports}
    assert reported <= due
    assert set(watched.waited) <= reported
    assert len(watched.waited) > 60
    missed = due - reported  # while the companion was down: 40 cards, some 8 rounds
    assert 3 <= len(missed) <= 12
    for item in reports:
        # After a round's end or a burn no round is in progress: every card sent is out.
        composition = Composition.after_dealt(8, watched.dealt[: cards_at[item["after_seq"]]])
        assert item["cards_left"] == cards_left_by_rank(composition)
        open_big_small = item["round"] <= 20  # R14.1 (no trial rounds at this table)
        expected = bet_edges(composition, big_small_open=open_big_small)
        assert item["bets"] == {name: edge.to_json() for name, edge in expected.items()}
        assert item["threshold"] == THRESHOLD
        assert item["os_user"].startswith("root (uid 0)")


def test_the_edge_events_are_in_the_journal_and_follow_the_reports(watched: Watched) -> None:
    events = [e for step in watched.steps for e in step.events if e.type.startswith("surv")]
    assert events[0].type == EventType.SURVEILLANCE_EDGE
    assert (events[0].data["bet"], events[0].data["round"]) == ("banker", 1)
    assert events[0].data["player_edge"] > THRESHOLD
    for event in events:
        step = next(s for s in watched.steps if event in s.events)
        assert step.input["type"] == "surveillance_report"
        assert (
            step.input["bets"].get(event.data["bet"], {}).get("player_edge")
            == (event.data["player_edge"])
        )


def test_the_pits_table_server_gets_every_event_but_surveillances(watched: Watched) -> None:
    """A live "hot shoe" feed in the pit invites preferential shuffling; the
    sinks' filters keep surveillance.* from the table server, which still sees its seqs gap-free."""
    received = check_delivery(watched.rig)
    journaled = [event for step in watched.steps for event in step.events]
    assert any(event.type.startswith("surveillance.") for event in journaled)
    assert not any(event["type"].startswith("surveillance.") for event in received)
    others = [event for event in journaled if not event.type.startswith("surveillance.")]
    assert [event["id"] for event in received] == [event.id for event in others]


def _shoectl(
    watched: Watched, *args: str, user: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*user, sys.executable, "-m", "shoe_controller.cli.shoectl", *args],
        cwd=REPO, env=cli_env(str(watched.socket_path), env), capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def test_shoectl_edge_shows_the_last_report_the_shoe_and_its_summary(watched: Watched) -> None:
    shown = _shoectl(watched, "edge", "--json")
    assert shown.returncode == 0, shown.stderr
    result = json.loads(shown.stdout)
    assert set(result) == {"shoe", "round", "cards_left", "bets"}
    last = next(s.input for s in reversed(watched.steps) if s.input["type"].startswith("surv"))
    assert result == {key: last[key] for key in ("shoe", "round", "cards_left")} | {
        "bets": last["bets"]
    }
    text = _shoectl(watched, "edge")
    assert text.returncode == 0, text.stderr
    assert f"Shoe 1 (ended), next round {last['round']}" in text.stdout
    assert "Perfect pair" in text.stdout
    assert "not offered any more after round 20: Big, Small" in text.stdout
    assert faults(text.stdout) == []  # in words (tests/system/test_shoectl_words.py)
    summary_text = _shoectl(watched, "edge", "--summary")
    assert summary_text.returncode == 0, summary_text.stderr
    assert faults(summary_text.stdout) == []
    summary = json.loads(_shoectl(watched, "edge", "--summary", "--json").stdout)["summary"]
    assert summary["banker"]["rounds_above_threshold"] >= 1
    assert summary["big"]["rounds"] == 20


def test_others_get_neither_the_edges_nor_the_events(
    watched: Watched, nobody_env: dict[str, str]
) -> None:
    if watched.groups is None:
        pytest.skip("needs root, setpriv and groupadd to run shoectl as another user")
    (_, viewer), (_, watchers) = watched.groups
    outsider = as_nobody(viewer)
    refused = _shoectl(watched, "edge", user=outsider, env=nobody_env)
    assert refused.returncode == 4, refused.stderr
    assert "not in the surveillance group" in refused.stderr
    seen = _shoectl(watched, "events", "--last", "50", "--json", user=outsider, env=nobody_env)
    assert seen.returncode == 0, seen.stderr
    assert "round.result" in seen.stdout  # a viewer sees the table's events ...
    hidden = _shoectl(
        watched, "events", "--type", "surveillance", "--json", user=outsider, env=nobody_env
    )
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout == ""  # ... but none of the surveillance events
    member = as_nobody(viewer, watchers)
    allowed = _shoectl(watched, "edge", "--json", user=member, env=nobody_env)
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["shoe"] == 1
    theirs = _shoectl(
        watched, "events", "--type", "surveillance", "--json", user=member, env=nobody_env
    )
    assert theirs.stdout.count('"surveillance.edge') >= 1
    # A report from outside the group is refused and stored nowhere.
    before = len(_reports(watched.rig))
    sent = subprocess.run(
        [*outsider, sys.executable, "-c", SEND, str(watched.socket_path)],
        capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, **nobody_env},
    )  # fmt: skip
    assert json.loads(sent.stdout)["error"]["code"] == "not_authorized"
    assert len(_reports(watched.rig)) == before


SEND = """
import json, socket, sys
with socket.socket(socket.AF_UNIX) as sock:
    sock.connect(sys.argv[1])
    report = {"cmd": "report", "shoe": 1, "round": 99, "after_seq": 10**6,
              "cards_left": {}, "bets": {}}
    sock.sendall(json.dumps(report).encode() + b"\\n")
    print(sock.makefile("rb").readline().decode())
"""
