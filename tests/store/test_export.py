"""The dispute file's records (store/export.py), in process: what `shoe-controller export`
writes for a shoe, a round or a time, read back by `verify`'s own reader and checked by its
own checks; and what an export that names nothing the journal holds says.
tests/system/test_export_verify.py runs the same two commands as processes."""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.perfect_dealer import START_TIME, deal_shoe

from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.verify import read_export, verify_export
from shoe_controller.store.controller import Controller
from shoe_controller.store.export import ExportError, Selection, export_records
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import Card, Suit
from shoe_controller.vocab.events import iso_time
from shoe_controller.vocab.inputs import Input, input_to_json

CONTROLLER = "tbl-07-shoe"
CONFIG = TableConfig(decks=6)
RECORDED_AT = 1_900_000_000.0
NOW = 1_900_100_000.0


class Clock:
    """The journal's clock: each input half a second after the one before."""

    def __init__(self) -> None:
        self.now = RECORDED_AT

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


def _inputs() -> list[Input]:
    """Shoe 1 dealt to its cut card, then shoe 2's first rounds (the perfect dealer)."""
    cards = [Card(rank, suit) for _ in range(6) for rank in range(1, 14) for suit in Suit]
    random.Random(18).shuffle(cards)
    first = deal_shoe(cards, CONFIG, cut_after=len(cards) - 40)
    random.Random(19).shuffle(cards)
    second = deal_shoe(cards, CONFIG, cut_after=len(cards) - 40, start=START_TIME + 10_000)
    return [*first.inputs, *second.inputs[:60]]


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Journal]:
    path = tmp_path_factory.mktemp("export") / "journal.db"
    with Journal.open(path, CONTROLLER, clock=Clock()) as opened:
        controller = Controller(CONFIG, opened)
        for item in _inputs():
            controller.submit(item)
        yield opened


def _export(journal: Journal, selection: Selection, **options: Any) -> list[dict[str, Any]]:
    options.setdefault("procedures", None)
    return list(export_records(journal, selection, now=NOW, **options))


def _verified(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """verify's lines for the file these records make; asserts it passed."""
    lines = [json.dumps(record, ensure_ascii=False) for record in records]
    verdict = verify_export(read_export(lines, "export.jsonl"), None, Times.chosen(True))
    assert verdict.ok, verdict.lines
    return verdict.lines


def _shoe(journal: Journal, number: int) -> Any:
    return next(info for info in journal.reads.shoes() if info.shoe == number)


def test_a_shoe_exports_with_its_header_every_record_and_its_end(journal: Journal) -> None:
    shoe_1, shoe_2 = _shoe(journal, 1), _shoe(journal, 2)
    assert shoe_1.last_input < shoe_2.first_input
    records = _export(journal, Selection(shoe=1))
    header, body, end = records[0], records[1:-1], records[-1]
    previous, inputs, events = journal.integrity.chain_rows(shoe_1.first_input, shoe_1.last_input)
    assert header == {
        "record": "export",
        "format": "shoe-controller-export",
        "version": 1,
        "controller_id": CONTROLLER,
        "schema_version": 3,
        "exported_at": iso_time(NOW),
        "journal": str(journal.path),
        "selection": {"shoe": 1},
        "inputs": [shoe_1.first_input, shoe_1.last_input],
        "follows": previous,
        "journal_chain": journal.integrity.chain_state(),
        "shoes": [dataclasses.asdict(shoe_1)],  # not shoe 2, after the stretch
        "procedures": dataclasses.asdict(CONFIG),  # the table_settings input in force
    }
    assert len(body) == len(inputs) + len(events)
    assert end == {"record": "end", "records": len(body), "head": body[-1]["chain"]}
    # The inputs as the controller was given them, numbered, with the events they caused.
    given = [record for record in body if record["record"] == "input"]
    assert [record["input_no"] for record in given] == list(range(1, shoe_1.last_input + 1))
    assert [record["input"] for record in given[1:]] == [
        input_to_json(item) for item in _inputs()[: len(given) - 1]
    ]
    assert {record["shoe"] for record in given} == {1}
    assert given[0]["type"] == "table_settings"
    assert given[1]["recorded_at"] == RECORDED_AT + 1.0
    caused = [record for record in body if record["record"] == "event"]
    stored = journal.reads.events_after(0, limit=len(caused))
    assert caused == [
        {
            "record": "event",
            "seq": event.seq,
            "id": f"{CONTROLLER}:{event.seq}",
            "input_no": event.input_no,
            "type": event.type,
            "at": event.at,
            "shoe": event.shoe,
            "round": event.round,
            "data": event.data,
            "chain": record["chain"],
        }
        for event, record in zip(stored, caused, strict=True)
    ]
    for record in given:  # each input is followed by the events it caused
        if record["event_count"]:
            owned = [e["seq"] for e in caused if e["input_no"] == record["input_no"]]
            assert owned == list(
                range(record["first_seq"], record["first_seq"] + record["event_count"])
            )
    assert [record["record"] for record in body[1:3]] == ["input", "event"]
    lines = dict(_verified(records))
    assert lines["chain"] == f"intact: {len(body)} record(s), last link {body[-1]['chain']}"
    assert lines["replay"].startswith(f"equal: {shoe_1.last_input} input(s) replayed give")


def test_a_round_exports_from_its_shoes_first_input_to_its_last(journal: Journal) -> None:
    last = journal.reads.round_last_input(2, 3)
    assert last is not None
    records = _export(journal, Selection(round=(2, 3)))
    header = records[0]
    assert header["selection"] == {"shoe": 2, "round": 3}
    assert header["inputs"] == [_shoe(journal, 2).first_input, last]
    assert [shoe["shoe"] for shoe in header["shoes"]] == [2]
    assert records[-2]["input_no"] == last  # the round's last event closes the stretch
    _verified(records)


def test_since_a_time_exports_from_the_shoe_in_play_then(journal: Journal) -> None:
    shoe_1, shoe_2 = _shoe(journal, 1), _shoe(journal, 2)
    # The time of shoe 1's last input: shoe 1 was in play, so the stretch starts with it.
    (last,) = [
        record
        for record in _export(journal, Selection(shoe=1))
        if record.get("input_no") == shoe_1.last_input and record["record"] == "input"
    ]
    at = last["recorded_at"]
    assert journal.reads.first_input_since(at) == shoe_1.last_input
    records = _export(journal, Selection(since=at))
    header = records[0]
    assert header["selection"] == {"since": iso_time(at)}
    assert header["inputs"] == [shoe_1.first_input, journal.reads.last_input()]
    assert [shoe["shoe"] for shoe in header["shoes"]] == [1, 2]
    # A time in shoe 2: from shoe 2's first input through the last.
    at = RECORDED_AT + 0.5 * (shoe_2.first_input + 5)
    header = _export(journal, Selection(since=at))[0]
    assert header["inputs"] == [shoe_2.first_input, journal.reads.last_input()]
    assert header["follows"] != header["journal_chain"]["anchor"]  # a link inside the chain
    _verified(_export(journal, Selection(since=at)))


def test_an_export_that_names_nothing_held_says_what_the_journal_holds(journal: Journal) -> None:
    with pytest.raises(
        ExportError, match=r"^shoe 9 is not in the journal \(it holds shoe\(s\) 1, 2\)$"
    ):
        _export(journal, Selection(shoe=9))
    with pytest.raises(ExportError, match=r"^shoe 3 is not in the journal \(it holds shoe"):
        _export(journal, Selection(round=(3, 1)))
    with pytest.raises(ExportError, match=r"^shoe 1 has no round 99 in the journal$"):
        _export(journal, Selection(round=(1, 99)))
    later = journal.reads.last_input() + RECORDED_AT  # long after the last input
    with pytest.raises(ExportError) as raised:
        _export(journal, Selection(since=later))
    assert str(raised.value) == f"nothing was recorded since {iso_time(later)}"


def _raw(path: Path, shoes: int) -> Journal:
    """A journal of `shoes` shoes of one input each (what a prune may leave)."""
    journal = Journal.open(path, CONTROLLER, clock=Clock())
    for shoe in range(1, shoes + 1):
        journal.record({"type": "x", "n": shoe}, [], shoe)
    return journal


@pytest.mark.parametrize(
    ("shoes", "held"),
    [
        (0, "it holds no shoe"),
        (10, "it holds shoe(s) 1, 2, 3, 4, 5, 6, 7, 8, 9, 10"),
        (11, "it holds shoe(s) ..., 2, 3, 4, 5, 6, 7, 8, 9, 10, 11"),
        (12, "it holds shoe(s) ..., 3, 4, 5, 6, 7, 8, 9, 10, 11, 12"),
    ],
)
def test_the_shoes_held_are_named_the_last_ten_at_most(
    tmp_path: Path, shoes: int, held: str
) -> None:
    with _raw(tmp_path / "journal.db", shoes) as journal, pytest.raises(ExportError) as raised:
        _export(journal, Selection(shoe=99))
    assert str(raised.value) == f"shoe 99 is not in the journal ({held})"


def test_a_shoe_of_one_input_is_a_stretch_of_one(tmp_path: Path) -> None:
    with _raw(tmp_path / "journal.db", 3) as journal:
        records = _export(journal, Selection(shoe=2))
    header = records[0]
    assert header["inputs"] == [2, 2]
    assert [shoe["shoe"] for shoe in header["shoes"]] == [2]
    assert header["procedures"] is None  # no table settings journaled, none given
    assert [record["record"] for record in records] == ["export", "input", "end"]
    assert records[1]["input"] == {"type": "x", "n": 2}
    assert records[1]["first_seq"] is None
    assert records[-1] == {"record": "end", "records": 1, "head": records[1]["chain"]}


def test_a_journal_without_journaled_settings_takes_the_configurations(tmp_path: Path) -> None:
    """Written as before 2026-12-02 (each input applied and recorded, no table_settings)."""
    config = TableConfig(decks=6, squeeze=True)
    with Journal.open(tmp_path / "journal.db", CONTROLLER, clock=Clock()) as journal:
        table = Table(config)
        for item in _inputs()[:40]:
            journal.record(input_to_json(item), table.apply(item), table.shoe_of(item))
        records = _export(journal, Selection(shoe=1), procedures=config)
    assert records[0]["procedures"] == dataclasses.asdict(config)
    assert dict(_verified(records))["replay"].endswith(
        "with the export header's table settings (not in the chain)"
    )


@pytest.mark.parametrize(
    "given",
    [{}, {"shoe": 1, "round": (1, 2)}, {"shoe": 1, "since": 1.0}, {"round": (1, 2), "since": 1.0}],
)
def test_a_selection_is_exactly_one_of_shoe_round_since(given: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"^a selection is exactly one of shoe, round, since$"):
        Selection(**given)


def test_a_record_stored_without_its_link_leaves_the_last_link_empty(tmp_path: Path) -> None:
    """Another hand cleared the last input's link: the file says so, verify names it."""
    path = tmp_path / "journal.db"
    _raw(path, 3).close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("UPDATE inputs SET chain = NULL WHERE input_no = 3")
    connection.close()
    with Journal.open(path, CONTROLLER, read_only=True) as journal:
        records = _export(journal, Selection(shoe=3))
    assert records[-1] == {"record": "end", "records": 1, "head": ""}
    lines = [json.dumps(record) for record in records]
    verdict = verify_export(read_export(lines, "export.jsonl"), None, Times.chosen(True))
    assert ("chain", "BROKEN at input 3: input 3 carries no hash") in verdict.lines
