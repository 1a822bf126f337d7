"""Signed checkpoints: the message and its signature as docs/journal.md writes them,
a forged or another table's checkpoint told apart, the key files, and the checkpoint as the
controller journals it: chained, replayed, in no shoe, only where the chain stands.

Real keys (the `cryptography` library), real journal files; no mock.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from shoe_testkit.checkpoints import CONTROLLER, CheckpointedTable, shoe_inputs

from shoe_controller.store.chain import (
    GENESIS,
    ChainPoint,
    InputEnd,
    event_record,
    in_chain_order,
    input_ends,
    input_record,
)
from shoe_controller.store.checkpoint import (
    FIELDS,
    Checkpoint,
    CheckpointError,
    Held,
    compare,
    key_text,
    public_key_from_text,
    public_pem,
    signature_problem,
)
from shoe_controller.store.checkpoint_keys import load_signer, read_public_key, write_new_key
from shoe_controller.store.controller import Controller
from shoe_controller.store.errors import RecordInvalid
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.events import iso_time
from shoe_controller.vocab.inputs import JournalCheckpoint, input_from_json, input_to_json

TIME = iso_time(1_900_000_000.25)
POINT = ChainPoint(41, 97, "ab" * 32)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("keys")
    for name in ("table", "other"):
        write_new_key(directory / f"{name}.key")
    return {name: directory / f"{name}.key" for name in ("table", "other")}


def test_the_signature_is_over_the_message_the_page_writes(keys: dict[str, Path]) -> None:
    signer = load_signer(keys["table"])
    checkpoint = signer.sign(CONTROLLER, POINT, TIME)
    data = checkpoint.to_json()
    assert list(data) == list(FIELDS)
    assert data["records"] == 41 + 97
    # docs/journal.md "Checkpoints", written again from the page: a second implementation.
    message = json.dumps(
        ["shoe-controller checkpoint", 1, CONTROLLER, 138, 41, 97, "ab" * 32, TIME, data["key"]],
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(data["key"]))
    public.verify(bytes.fromhex(data["signature"]), message)  # raises if it is not
    assert data["key"] == key_text(signer.public_key)
    assert signature_problem(Checkpoint.from_json(data), {data["key"]: public}) is None


def test_a_forged_checkpoint_and_another_tables_are_told_apart(keys: dict[str, Path]) -> None:
    table, other = load_signer(keys["table"]), load_signer(keys["other"])
    trusted = {table.key: table.public_key}
    genuine = table.sign(CONTROLLER, POINT, TIME)
    for forged in (
        dataclasses.replace(genuine, head="cd" * 32),  # another head, the signature kept
        dataclasses.replace(genuine, records=genuine.records + 1, seq=genuine.seq + 1),
        dataclasses.replace(genuine, time=iso_time(1_900_000_001.0)),
        dataclasses.replace(genuine, controller_id="tbl-08-shoe"),
    ):
        problem = signature_problem(forged, trusted)
        assert problem == "bad signature: forged, or changed after it was signed"
    theirs = other.sign(CONTROLLER, POINT, TIME)  # a valid signature, by another key
    assert signature_problem(theirs, trusted) == (
        f"signed by key {other.key[:16]}..., which is not the table's"
    )
    assert signature_problem(theirs, {other.key: other.public_key}) is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 2}, "checkpoint version 2; this program reads 1"),
        ({"head": "AB" * 32}, "head must be 64 hex digits"),
        ({"signature": "00"}, "signature must be 128 hex digits"),
        ({"records": 5}, "records must be its input_no + seq"),
        ({"seq": -1}, "seq must be a whole number >= 0"),
        ({"input_no": True}, "input_no must be a whole number >= 0"),
        ({"controller_id": ""}, "controller_id must be a text"),
        ({"card": "QH"}, "unknown fields: card"),
    ],
)
def test_what_is_not_a_checkpoint_is_named(
    keys: dict[str, Path], change: dict[str, object], message: str
) -> None:
    data = {**load_signer(keys["table"]).sign(CONTROLLER, POINT, TIME).to_json(), **change}
    with pytest.raises(CheckpointError, match=message.replace("+", r"\+")):
        Checkpoint.from_json(data)
    incomplete = {name: value for name, value in data.items() if name != "time"}
    with pytest.raises(CheckpointError, match="lacks time"):
        Checkpoint.from_json(incomplete)


def test_key_files(keys: dict[str, Path], tmp_path: Path) -> None:
    made = tmp_path / "new.key"
    signer = write_new_key(made)
    assert stat.S_IMODE(made.stat().st_mode) == 0o600  # the daemon's alone (postinst: 0640)
    assert made.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # openssl's PKCS#8
    secret = made.read_text().splitlines()[1]  # the key's base64 line
    assert secret not in repr(signer)
    assert secret not in str(signer)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(signer)
    with pytest.raises(CheckpointError, match="exists: a key in use is never overwritten"):
        write_new_key(made)
    assert load_signer(made).key == signer.key
    pem = tmp_path / "table.pub"
    pem.write_text(public_pem(signer.public_key))
    assert key_text(read_public_key(pem)) == signer.key
    hex_file = tmp_path / "table.hex"
    hex_file.write_text(signer.key + "\n")
    assert key_text(read_public_key(hex_file)) == signer.key
    assert key_text(public_key_from_text(signer.key.upper())) == signer.key
    (tmp_path / "not.pem").write_text("hello\n")
    with pytest.raises(CheckpointError, match=r"not\.pem: not a public key"):
        read_public_key(tmp_path / "not.pem")
    with pytest.raises(CheckpointError, match="not a PEM private key"):
        load_signer(pem)  # a public key is no signing key
    with pytest.raises(CheckpointError, match="cannot read"):
        load_signer(tmp_path / "absent.key")


def test_compare_finds_the_checkpoint_the_chain_does_not_pass(keys: dict[str, Path]) -> None:
    signer = load_signer(keys["table"])
    at_one = Held(signer.sign(CONTROLLER, ChainPoint(1, 0, "11" * 32), TIME), "cp line 1")
    at_two = Held(signer.sign(CONTROLLER, ChainPoint(2, 3, "22" * 32), TIME), "cp line 2")
    later = Held(signer.sign(CONTROLLER, ChainPoint(9, 9, "99" * 32), TIME), "cp line 3")
    ends = {1: InputEnd(1, None, "11" * 32, "input 1"), 2: InputEnd(2, 3, "33" * 32, "x")}
    found = compare([at_one, at_two, later], ends)
    assert found.matched == (at_one,)
    assert found.contradicted == ((at_two, ends[2]),)
    assert found.outside == (later,)


def test_a_journaled_checkpoint_is_chained_replayed_and_in_no_shoe(
    keys: dict[str, Path], tmp_path: Path
) -> None:
    signer = load_signer(keys["table"])
    config = TableConfig(decks=6)
    made = CheckpointedTable(tmp_path / "j.db", signer, shoe_inputs(config, [3, 4]), config)
    journal = made.journal
    assert made.checkpoints is not None
    assert made.checkpoints.taken >= 4  # start-up, periodic ones, each shoe's end
    stored_inputs = journal.reads.replay_steps(from_input=1)
    kinds = [(step.input["type"], step.shoe) for step in stored_inputs]
    assert ("journal_checkpoint", None) in kinds
    assert all(shoe is None for kind, shoe in kinds if kind == "journal_checkpoint")
    assert [info.shoe for info in journal.reads.shoes()] == [1, 2]
    events = {e.seq: e for e in journal.reads.events_after(0, 100_000)}
    checkpoints = [e for e in events.values() if e.type == "journal.checkpoint"]
    assert len(checkpoints) == made.checkpoints.taken
    for event in checkpoints:
        assert (event.shoe, event.round) == (None, None)
        assert list(event.data) == list(FIELDS)  # its fields and nothing else: no card (R15)
        checkpoint = Checkpoint.from_json(event.data)
        assert signature_problem(checkpoint, {signer.key: signer.public_key}) is None
        assert event.at == checkpoint.time
    # Each says where the chain stood before its own input: its head is that record's link.
    follows, inputs, stored = journal.integrity.chain_rows(0, journal.reads.last_input())
    ends = input_ends(in_chain_order(map(input_record, inputs), map(event_record, stored)), follows)
    assert follows == GENESIS
    for event in checkpoints:
        checkpoint = Checkpoint.from_json(event.data)
        assert event.input_no == checkpoint.input_no + 1
        assert ends[checkpoint.input_no].head == checkpoint.head
        assert ends[checkpoint.input_no].seq == checkpoint.seq
    made.close()
    # Opened again, recovery replays the checkpoints among the rest and finds them equal.
    with Journal.open(tmp_path / "j.db", CONTROLLER) as again:
        controller = Controller(config, again)
        assert controller.recovery.mismatch is None
        assert again.integrity.verify_chain().intact
    # The shoe's end checkpoint began no shoe: shoe 2 begins with its own settings.
    with Journal.open(tmp_path / "j.db", CONTROLLER, read_only=True) as again:
        second = next(info for info in again.reads.shoes() if info.shoe == 2)
        [first] = again.reads.replay_steps(from_input=second.first_input)[:1]
        assert first.input["type"] == "table_settings"
        after_first_shoe = again.reads.replay_steps(from_input=second.first_input - 1)[0]
        assert after_first_shoe.input["type"] == "journal_checkpoint"  # the shoe's end


def test_a_checkpoint_not_where_the_chain_stands_is_not_journaled(
    keys: dict[str, Path], tmp_path: Path
) -> None:
    signer = load_signer(keys["table"])
    with Journal.open(tmp_path / "j.db", CONTROLLER) as journal:
        controller = Controller(TableConfig(), journal)
        controller.start("test", 1_900_000_000.0)
        point = journal.chain_point
        stale = dataclasses.replace(point, head="00" * 32)
        for wrong in (stale, dataclasses.replace(point, seq=point.seq + 1)):
            checkpoint = signer.sign(CONTROLLER, wrong, TIME)
            with pytest.raises(RecordInvalid, match="not where the chain stands"):
                controller.submit(JournalCheckpoint(at=1_900_000_001.0, **checkpoint.to_json()))
        assert journal.chain_point == point  # nothing stored
        good = signer.sign(CONTROLLER, point, TIME)
        item = JournalCheckpoint(at=1_900_000_001.0, **good.to_json())
        assert input_from_json(input_to_json(item)) == item  # the journal's form, both ways
        [stored] = controller.submit(item)
        assert stored.data == good.to_json()
        assert journal.chain_point.input_no == point.input_no + 1


def test_the_key_file_made_is_readable_by_its_owner_alone(tmp_path: Path) -> None:
    path = tmp_path / "k"
    old = os.umask(0)  # whatever the umask, the file is made 0600
    try:
        write_new_key(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
