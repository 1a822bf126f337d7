"""Every text shoectl prints for a person is in words: no `snake_case` code, no Python repr, no
`None`, no word said twice in a row, no `1 decks`; `--json` keeps the codes. Real processes
against a live table (tests/support/shoe_testkit/control.py) in each state it passes through:
dealing, held, after a void and a shoe change, and every action refused; `shoe-controller
report` on its journal. `shoectl edge` and `shoectl shuffle` are here only as refusals (no
surveillance companion runs beside this table): their reports are checked the same way in
test_surveillance_live.py and test_shuffle_live.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from shoe_testkit.control import LiveTable, cli_env, open_shoe
from shoe_testkit.words import faults

from shoe_controller.table.action_specs import ACTIONS

COMMANDS = (
    ("status",), ("events", "-n", "200"), ("rounds",), ("round", "1"), ("outbox",),
    ("pace",), ("pace", "--since", "-10 min"), ("devices",), ("road",), ("check",), ("edge",),
    ("shuffle",),
)  # fmt: skip
ACTION_ARGS = {
    "confirm": ("--card", "QH"),
    "missed": ("--card", "QH"),
    "correct": ("--position", "P1", "--card", "QH"),
    "dealer": ("--id", "D-1"),
}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTable]:
    table = LiveTable(tmp_path_factory.mktemp("words"))
    try:
        yield table
    finally:
        table.close()


def shown(live: LiveTable, *args: str) -> str:
    result = live.shoectl(*args, env={"TZ": "Asia/Macau"})
    return result.stdout + result.stderr


def report(live: LiveTable) -> str:
    """`shoe-controller report` on the live table's journal, as a shift manager runs it."""
    result = subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.main", "report", "--journal",
         str(live.workdir / "journal.db"), "--since", "-1h"],
        env=cli_env(str(live.socket_path), {"TZ": "Asia/Macau"}), capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    return result.stdout + result.stderr


def every_view(live: LiveTable) -> Iterator[tuple[str, str]]:
    for command in COMMANDS:
        yield " ".join(command), shown(live, *command)
    yield "report", report(live)


def refusals(live: LiveTable) -> Iterator[tuple[str, str]]:
    for name in ACTIONS:
        command = (name.replace("_", "-"), "--by", "sup1", "--reason", "test",
                   *ACTION_ARGS.get(name, ()))  # fmt: skip
        result = live.shoectl(*command)
        if result.returncode != 0:
            yield " ".join(command), result.stdout + result.stderr


def test_every_state_and_every_refusal_is_said_in_words(live: LiveTable) -> None:
    texts: list[tuple[str, str]] = []
    texts += [("before a shoe: " + c, t) for c, t in every_view(live)]
    open_shoe(live)
    live.deal(4 + 5)
    texts += [("dealing: " + c, t) for c, t in every_view(live)]
    assert live.shoectl("hold", "--by", "sup1", "--reason", "dispute").returncode == 0
    texts += [("held: " + c, t) for c, t in every_view(live)]
    assert live.shoectl("resume", "--by", "sup1", "--reason", "settled").returncode == 0
    live.deal(2)
    assert live.shoectl("change-shoe", "--by", "sup1", "--reason", "bent card").returncode == 0
    texts += [("after a shoe: " + c, t) for c, t in every_view(live)]
    refused = list(refusals(live))  # last: an action accepted changes the table
    assert len(refused) >= len(ACTIONS) // 2
    texts += [("refused: " + c, t) for c, t in refused]
    found = [f"{where}: {fault}" for where, text in texts for fault in faults(text)]
    assert found == []
    events = "\n".join(t for c, t in texts if c == "after a shoe: events -n 200")
    assert "round.voided" in events
    assert "the shoe was changed" in events
    assert re.search(r"\d+ rounds, \d+ cards: a supervisor changed the shoe", events)


def test_json_keeps_the_codes(live: LiveTable) -> None:
    lines = live.shoectl("events", "-n", "200", "--json").stdout.splitlines()
    kinds = {json.loads(line)["data"].get("reason") for line in lines}
    assert "shoe_changed" in kinds  # round.voided's reason, as the push API has it
    assert "supervisor" in kinds  # shoe.ended's


def test_every_table_of_times_says_its_zone(live: LiveTable) -> None:
    for command in (("events", "-n", "3"), ("rounds",), ("status",), ("outbox",)):
        local = shown(live, *command)
        utc = shown(live, "--utc", *command)
        if "TIME" in local or "STARTED" in local or "AT" in local:
            assert re.search(r"\b(?:TIME|STARTED|AT) \(\+08:00\)", local), command
            assert re.search(r"\b(?:TIME|STARTED|AT) \(\+00:00\)", utc), command
