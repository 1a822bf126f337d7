"""`shoe-controller verify --checkpoints CP --public-key FILE` and `shoe-controller key`, as
the processes a regulator and a technician run: a journal rewritten on the table PC
(a card changed, every link after it and the head recomputed, its own checkpoints signed
again with the table's key) verifies without the copies and fails with them, naming the
checkpoint; a forged checkpoint and another table's are refused.

The journals are dealt in this process through the controller and the daemon's own
checkpoints (shoe_testkit.checkpoints); the CP file is what the table server's sink sent.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.checkpoints import (
    CONTROLLER,
    CheckpointedTable,
    card_inputs,
    checkpoint_of,
    rewrite_card,
    shoe_inputs,
    write_lines,
)

from shoe_controller.cli.shoectl.times import Times
from shoe_controller.store.checkpoint import Checkpoint
from shoe_controller.store.checkpoint_keys import load_signer
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import Card, Suit, parse_card
from shoe_controller.vocab.inputs import CardDrawn

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 120.0
CONFIG = TableConfig(decks=6)
SEEDS = (40, 41)
UTC = Times.chosen(True)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )


@dataclasses.dataclass
class Dealt:
    directory: Path
    key: Path  # the table's signing key (root's, on the table PC)
    public: Path  # what `key --public` printed: the regulator's
    journal: Path
    copies: Path  # the CP file: the table server's copies
    lines: list[dict[str, Any]]


@pytest.fixture(scope="module")
def dealt(tmp_path_factory: pytest.TempPathFactory) -> Dealt:
    directory = tmp_path_factory.mktemp("checkpointed")
    key = directory / "checkpoint.key"
    made = cli("key", "--new", str(key))
    assert made.returncode == 0, made.stderr
    signer = load_signer(key)
    assert made.stderr == f"key: made {key}: key {signer.key}\n"
    printed = cli("key", "--public", "--key-file", str(key))
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("-----BEGIN PUBLIC KEY-----\n")
    public = directory / "table-07.pub"
    public.write_text(printed.stdout)
    table = CheckpointedTable(directory / "journal.db", signer, shoe_inputs(CONFIG, SEEDS), CONFIG)
    lines = table.copies()
    table.close()
    return Dealt(directory, key, public, directory / "journal.db",
                write_lines(directory / "cp.jsonl", lines), lines)  # fmt: skip


def verify(*args: str) -> subprocess.CompletedProcess[str]:
    return cli("verify", *args, "--utc")


def line_of(result: subprocess.CompletedProcess[str], label: str) -> str:
    found = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0] == label]
    assert len(found) == 1, result.stdout
    return found[0].split(" ", 1)[1].strip()


def copy_of(journal: Path, target: Path) -> Path:
    shutil.copy(journal, target)
    for suffix in ("-wal", "-shm"):
        if Path(f"{journal}{suffix}").exists():
            shutil.copy(f"{journal}{suffix}", f"{target}{suffix}")
    return target


def test_the_journal_and_its_shoe_agree_with_every_copy(dealt: Dealt, tmp_path: Path) -> None:
    assert len(dealt.lines) >= 6  # start-up, periodic ones, two shoes' ends
    result = verify("--journal", str(dealt.journal), "--checkpoints", str(dealt.copies),
                    "--public-key", str(dealt.public))  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    key = load_signer(dealt.key).key
    count = len(dealt.lines)
    assert line_of(result, "signed") == (
        f"{2 * count} of {2 * count} checkpoint(s) by the key(s) of --public-key"
        f" {dealt.public} ({key[:16]}...)"
    )
    last = max((checkpoint_of(line) for line in dealt.lines), key=lambda cp: cp.records)
    assert line_of(result, "checkpoints") == (
        f"agree: the chain passes through all {count} checkpoint(s) of {dealt.copies} that fall"
        f" in the file (the last at record {last.records}, of {UTC.stamp(last.time)});"
        f" the file's own {count} agree with its chain"
    )
    assert result.stdout.endswith("VERIFIED\n")
    # A shoe's dispute file: held to the checkpoints that fall inside its stretch.
    shoe = tmp_path / "shoe-1.jsonl"
    exported = cli("export", "--journal", str(dealt.journal), "--shoe", "1", "-o", str(shoe))
    assert exported.returncode == 0, exported.stderr
    header = json.loads(shoe.read_text().splitlines()[0])
    first, last_input = header["inputs"]
    inside = [
        line for line in dealt.lines if first - 1 <= checkpoint_of(line).input_no <= last_input
    ]
    assert 2 <= len(inside) < count
    checked = verify(
        str(shoe), "--checkpoints", str(dealt.copies), "--public-key", str(dealt.public)
    )
    assert checked.returncode == 0, checked.stdout
    assert line_of(checked, "checkpoints").startswith(
        f"agree: the chain passes through all {len(inside)} checkpoint(s) of {dealt.copies}"
    )
    assert f"; {count - len(inside)} outside the file, not compared" in checked.stdout


def test_a_rewritten_journal_verifies_alone_and_fails_against_the_copies(
    dealt: Dealt, tmp_path: Path
) -> None:
    copy = copy_of(dealt.journal, tmp_path / "rewritten.db")
    checkpoints = [checkpoint_of(line) for line in dealt.lines]
    # A card of shoe 1 after the second checkpoint: the two before it still hold.
    after = sorted(checkpoints, key=lambda cp: cp.records)[1].input_no
    input_no, card = next((n, c) for n, c in card_inputs(copy) if n > after + 1)
    other = parse_card(card)
    other_card = next(str(c) for c in _same_rank(other) if str(c) != card)
    signed_again = rewrite_card(copy, input_no, other_card, load_signer(dealt.key))
    assert signed_again >= 1  # the insider signs the file's own checkpoints again

    alone = verify("--journal", str(copy))
    assert alone.returncode == 0, alone.stdout  # the chain holds, the file agrees with itself
    assert line_of(alone, "chain").startswith("intact")
    assert "agree with its chain" in line_of(alone, "checkpoints")

    held = verify("--journal", str(copy), "--checkpoints", str(dealt.copies),
                  "--public-key", str(dealt.public))  # fmt: skip
    assert held.returncode == 1, held.stdout
    assert held.stdout.endswith("NOT VERIFIED\n")
    ordered = sorted(
        enumerate(dealt.lines, start=1), key=lambda pair: checkpoint_of(pair[1]).records
    )
    contradicted = [(n, line) for n, line in ordered if checkpoint_of(line).input_no >= input_no]
    number, line = contradicted[0]
    named = checkpoint_of(line)
    with Journal.open(copy, None, read_only=True) as journal:
        end = journal.integrity.input_ends({named.input_no})[named.input_no]
    assert end.head != named.head
    assert line_of(held, "checkpoints") == (
        f"REWRITTEN: the journal was rewritten after checkpoint {line['id']} of"
        f" {UTC.stamp(named.time)} ({dealt.copies} line {number}): at record {named.records}"
        f" ({end.name}) the head is {end.head}, the table server holds {named.head}"
        f" ({len(contradicted) - 1} later checkpoint(s) contradicted too)"
    )


def test_a_rewritten_shoe_file_verifies_alone_and_fails_against_the_copies(
    dealt: Dealt, tmp_path: Path
) -> None:
    """The same insider, who deals the doctored inputs again through the controller with the
    table's key: every record is the controller's own, every event the table's, every
    checkpoint in the file signed; only the table server's copies tell."""
    inputs = shoe_inputs(CONFIG, SEEDS)
    first_shoe = len(shoe_inputs(CONFIG, SEEDS[:1]))
    cards = [
        i for i, item in enumerate(inputs[:first_shoe]) if isinstance(item, CardDrawn) and item.card
    ]
    index = cards[len(cards) // 2]  # in the middle of shoe 1
    original = inputs[index]
    assert isinstance(original, CardDrawn)
    assert original.card is not None
    swapped = next(c for c in _same_rank(original.card) if c != original.card)
    inputs[index] = dataclasses.replace(original, card=swapped)
    table = CheckpointedTable(tmp_path / "again.db", load_signer(dealt.key), inputs, CONFIG)
    table.close()
    shoe = tmp_path / "shoe-1.jsonl"
    exported = cli(
        "export", "--journal", str(tmp_path / "again.db"), "--shoe", "1", "-o", str(shoe)
    )
    assert exported.returncode == 0, exported.stderr
    alone = verify(str(shoe))
    assert alone.returncode == 0, alone.stdout
    assert line_of(alone, "replay").startswith("equal")
    held = verify(str(shoe), "--checkpoints", str(dealt.copies), "--public-key", str(dealt.public))
    assert held.returncode == 1, held.stdout
    assert line_of(held, "checkpoints").startswith(
        "REWRITTEN: the journal was rewritten after checkpoint tbl-07-shoe:"
    )
    assert ", the table server holds " in line_of(held, "checkpoints")


def test_an_older_copy_of_the_journal_is_found_short(dealt: Dealt, tmp_path: Path) -> None:
    """The journal put back as it was before the second shoe (a backup), or cut there: the
    table server holds checkpoints of records it lacks."""
    older = CheckpointedTable(tmp_path / "older.db", load_signer(dealt.key),
                              shoe_inputs(CONFIG, SEEDS[:1]), CONFIG)  # fmt: skip
    last_input = older.journal.reads.last_input()
    older.close()
    result = verify("--journal", str(tmp_path / "older.db"), "--checkpoints", str(dealt.copies),
                    "--public-key", str(dealt.public))  # fmt: skip
    assert result.returncode == 1, result.stdout
    number, line = max(enumerate(dealt.lines, start=1), key=lambda p: checkpoint_of(p[1]).records)
    last = checkpoint_of(line)
    assert line_of(result, "checkpoints") == (
        f"CUT: the journal ends at input {last_input}, but checkpoint {line['id']} of"
        f" {UTC.stamp(last.time)} ({dealt.copies} line {number}) had it through input"
        f" {last.input_no} ({last.records} records): records removed from its end, or an older"
        " copy of it"
    )


def test_a_forged_checkpoint_is_refused(dealt: Dealt, tmp_path: Path) -> None:
    lines = [dict(line) for line in dealt.lines]
    forged = lines[2]
    forged["data"] = {**forged["data"], "head": "0" * 64}  # the signature no longer fits
    cp = write_lines(tmp_path / "forged.jsonl", lines)
    result = verify("--journal", str(dealt.journal), "--checkpoints", str(cp),
                    "--public-key", str(dealt.public))  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert line_of(result, "checkpoints") == (
        f"REFUSED: {cp} line 3 (checkpoint {forged['id']}): bad signature: forged, or changed"
        " after it was signed"
    )


def test_another_tables_checkpoint_is_refused(dealt: Dealt, tmp_path: Path) -> None:
    other_key = tmp_path / "other.key"
    assert cli("key", "--new", str(other_key)).returncode == 0
    other = CheckpointedTable(tmp_path / "other.db", load_signer(other_key),
                              shoe_inputs(CONFIG, SEEDS[:1]), CONFIG,
                              controller_id="tbl-08-shoe")  # fmt: skip
    theirs = other.copies()
    other.close()
    cp = write_lines(tmp_path / "mixed.jsonl", [*dealt.lines, theirs[0]])
    result = verify("--journal", str(dealt.journal), "--checkpoints", str(cp),
                    "--public-key", str(dealt.public))  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert line_of(result, "checkpoints") == (
        f"REFUSED: {cp} line {len(dealt.lines) + 1} (checkpoint {theirs[0]['id']}): a checkpoint"
        " of controller tbl-08-shoe, not of tbl-07-shoe: another table's"
    )
    # The same checkpoint said to be this table's: by a key that is not the table's; said to
    # be by the table's key too: its signature does not fit.
    table_key = dealt.lines[0]["data"]["key"]
    relabeled = dict(theirs[0], data={**theirs[0]["data"], "controller_id": CONTROLLER})
    with_our_key = dict(relabeled, data={**relabeled["data"], "key": table_key})
    cp = write_lines(tmp_path / "relabeled.jsonl", [relabeled, with_our_key])
    result = verify("--journal", str(dealt.journal), "--checkpoints", str(cp),
                    "--public-key", str(dealt.public))  # fmt: skip
    assert result.returncode == 1
    theirs_key = theirs[0]["data"]["key"]
    assert line_of(result, "checkpoints") == (
        f"REFUSED: {cp} line 1 (checkpoint {theirs[0]['id']}): signed by key"
        f" {theirs_key[:16]}..., which is not the table's; {cp} line 2 (checkpoint"
        f" {theirs[0]['id']}): bad signature: forged, or changed after it was signed"
    )
    # Signed anew by that other key as this table's: a key that is not the table's.
    signer = load_signer(other_key)
    mine = Checkpoint.from_json(dealt.lines[0]["data"])
    resigned = signer.sign(CONTROLLER, mine.point, mine.time).to_json()
    cp = write_lines(tmp_path / "own-key.jsonl", [dict(dealt.lines[0], data=resigned)])
    result = verify("--journal", str(dealt.journal), "--checkpoints", str(cp),
                    "--public-key", str(dealt.public))  # fmt: skip
    assert result.returncode == 1
    assert f"signed by key {signer.key[:16]}..., which is not the table's" in result.stdout


def test_without_a_key_the_files_own_is_used_and_said(dealt: Dealt) -> None:
    result = verify("--journal", str(dealt.journal), "--checkpoints", str(dealt.copies))
    assert result.returncode == 0, result.stdout
    assert "by the key the file's own checkpoints carry" in line_of(result, "signed")
    assert "give --public-key FILE for a key known apart from it" in line_of(result, "signed")


def test_bad_cp_files_and_keys_are_named(dealt: Dealt, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(dealt.lines[0]) + "\n{not json\n")
    result = verify("--journal", str(dealt.journal), "--checkpoints", str(broken))
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: {broken} line 2: not JSON")
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(json.dumps({**dealt.lines[0], "data": {"head": "x"}}) + "\n")
    result = verify("--journal", str(dealt.journal), "--checkpoints", str(wrong))
    assert result.stderr.startswith(f"Error: {wrong} line 1: a checkpoint lacks version")
    not_a_key = tmp_path / "not.pub"
    not_a_key.write_text("hello\n")
    result = verify("--journal", str(dealt.journal), "--public-key", str(not_a_key))
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: {not_a_key}: not a public key")
    again = cli("key", "--new", str(dealt.key))
    assert again.returncode == 1
    assert again.stderr == f"Error: {dealt.key} exists: a key in use is never overwritten\n"
    absent = cli("key", "--public", "--key-file", str(tmp_path / "absent.key"))
    assert absent.returncode == 1
    assert "cannot read" in absent.stderr


def _same_rank(card: Card) -> list[Card]:
    """The card in every suit: a swap that changes no point, no total, no winner."""
    return [Card(card.rank, suit) for suit in Suit]


def test_check_says_whether_the_journal_is_checkpointed(dealt: Dealt, tmp_path: Path) -> None:
    absent = tmp_path / "absent.key"
    secret = tmp_path / "table.key"
    secret.write_text("secret\n")
    secret.chmod(0o640)
    for key, said in (
        (dealt.key, f"journal checkpoints signed with {dealt.key}, every 300 s while dealing"),
        (absent, f"journal checkpoints OFF: no key {absent} (shoe-controller key --new {absent})"),
    ):
        config = tmp_path / "shoe-controller.toml"
        config.write_text(
            f'[table]\nid = "07"\n[journal]\npath = "{tmp_path / "j.db"}"\n'
            f'checkpoint_key = "{key}"\n[server]\nkey_file = "{secret}"\n'
            f'[control]\nsocket = "{tmp_path / "c.sock"}"\n'
        )
        checked = cli("check", "--config", str(config))
        assert checked.returncode == 0, checked.stderr
        assert f"shoe-controller: {said}" in checked.stdout.splitlines()
