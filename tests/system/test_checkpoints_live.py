"""Signed checkpoints on a live table: the real daemon, the simulated shoe and the
reference table server as processes, in squeeze mode. The daemon checkpoints its journal at
start-up and at the shoe's end; the checkpoints reach the table server, which gives them out
as a CP file; a regulator's commands (`shoe-controller key --public`, `export`, `verify
--checkpoints --public-key`) hold the journal and a shoe's dispute file to them; a copy of
the journal rewritten as the insider would (a card changed, every link and the head
recomputed, its own checkpoints signed again with the table's key) verifies alone and fails
against the table server's copies. No checkpoint names a card (R15)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.checkpoints import card_inputs, rewrite_card, write_lines
from shoe_testkit.rig import TABLE_ID, RigOptions, TableRig

from shoe_controller.store.checkpoint import FIELDS, Checkpoint
from shoe_controller.store.checkpoint_keys import load_signer
from shoe_controller.vocab.cards import CardError, parse_card

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 120.0
CHECKPOINT = "journal.checkpoint"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli", *args],
        cwd=REPO, capture_output=True, text=True, timeout=GUARD_S, check=False,
    )  # fmt: skip


@pytest.fixture
def rig() -> Iterator[TableRig]:
    # Not tmp_path: the simulators' control sockets need a path under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="cp-") as name:
        made = TableRig(Path(name), RigOptions(checkpoints=True, squeeze=True, cut_after=60))
        made.start()
        try:
            yield made
        finally:
            made.close()


def journal_checkpoints(rig: TableRig) -> list:
    return [event for event in rig.records.journal_events() if event.type == CHECKPOINT]


def test_checkpoints_reach_the_table_server_and_hold_the_journal_to_them(rig: TableRig) -> None:
    rig.wait_until(lambda: len(journal_checkpoints(rig)) == 1, "the start-up checkpoint")
    [started] = [e for e in rig.records.journal_events() if e.type == "controller.started"]
    assert journal_checkpoints(rig)[0].seq > started.seq  # after controller.started
    rig.dealer.deal_until_shoe_ends()
    rig.wait_until(lambda: len(journal_checkpoints(rig)) == 2, "the shoe's end checkpoint")
    ended = next(e for e in rig.records.journal_events() if e.type == "shoe.ended")
    taken = journal_checkpoints(rig)
    assert Checkpoint.from_json(taken[1].data).seq >= ended.seq  # it covers the shoe's end
    rig.wait_delivered()

    # The table server kept them as it received them, and gives them out as a CP file.
    url = f"{rig.receiver_url}/v1/tables/{TABLE_ID}/checkpoints"
    with urllib.request.urlopen(url, timeout=GUARD_S) as answer:
        body = answer.read().decode("utf-8")
    copies = [json.loads(line) for line in body.splitlines()]
    assert [line["id"] for line in copies] == [f"tbl-{TABLE_ID}-shoe:{e.seq}" for e in taken]
    assert [line["data"] for line in copies] == [e.data for e in taken]
    for line in copies:  # the squeeze rule: no card, no shoe, no round (R15)
        assert (line["type"], line["shoe"], line["round"]) == (CHECKPOINT, None, None)
        assert set(line["data"]) == set(FIELDS)  # the server keeps its keys sorted
        for value in line["data"].values():
            with pytest.raises((CardError, TypeError, ValueError)):
                parse_card(value)
    directory = rig.directory
    cp = write_lines(directory / "cp.jsonl", copies)

    # The regulator's commands: the public key from the daemon's own configuration...
    public = cli("key", "--public", "--config", str(rig.config_path))
    assert public.returncode == 0, public.stderr
    key = load_signer(rig.checkpoint_key).key
    assert public.stderr == f"key: {rig.checkpoint_key}: key {key}\n"
    pem = directory / "table-07.pub"
    pem.write_text(public.stdout)
    # ...the journal copied as an operator copies a live one, then held to the copies.
    copy = directory / "copy.db"
    source, target = sqlite3.connect(rig.records.journal_path), sqlite3.connect(copy)
    source.backup(target)
    source.close()
    target.close()
    journal = cli("verify", "--journal", str(copy), "--checkpoints", str(cp),
                  "--public-key", str(pem))  # fmt: skip
    assert journal.returncode == 0, journal.stdout
    assert f"agree: the chain passes through all 2 checkpoint(s) of {cp}" in journal.stdout
    shoe = directory / "shoe-1.jsonl"
    exported = cli("export", "--journal", str(copy), "--config", str(rig.config_path),
                   "--shoe", "1", "-o", str(shoe))  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    checked = cli("verify", str(shoe), "--checkpoints", str(cp), "--public-key", str(pem))
    assert checked.returncode == 0, checked.stdout
    assert "agree: the chain passes through all 2 checkpoint(s)" in checked.stdout

    # The insider's rewrite of the copy: a card changed after the start-up checkpoint.
    input_no, card = next(card_inputs(copy))
    other = "2S" if card != "2S" else "3S"
    assert rewrite_card(copy, input_no, other, load_signer(rig.checkpoint_key)) == 1
    alone = cli("verify", "--journal", str(copy))
    assert alone.returncode == 0, alone.stdout
    held = cli("verify", "--journal", str(copy), "--checkpoints", str(cp), "--public-key", str(pem))
    assert held.returncode == 1, held.stdout
    shoe_end = copies[1]
    assert (
        f"REWRITTEN: the journal was rewritten after checkpoint {shoe_end['id']} of" in held.stdout
    )
    assert f"the table server holds {shoe_end['data']['head']}" in held.stdout

    # A restart: a new start-up checkpoint, after the new controller.started.
    assert rig.stop_daemon() == 0
    before = rig.records.last_seq()
    rig.start_daemon()
    rig.wait_until(lambda: len(journal_checkpoints(rig)) == 3, "the second start-up checkpoint")
    assert journal_checkpoints(rig)[2].seq > before
