"""The `table_settings` input (docs/inputs.md): the settings in force from it on,
no event of its own, settings the table cannot take refused with those in force kept."""

from __future__ import annotations

import dataclasses

from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import (
    ShoeState,
    ShoeStateChanged,
    TableSettings,
    input_from_json,
    input_to_json,
)

AT = 1_800_000_000.0


def settings(at: float = AT, **changes: object) -> TableSettings:
    return TableSettings(at=at, settings=dataclasses.asdict(TableConfig(**changes)))  # type: ignore[arg-type]


def loaded(at: float = AT + 1) -> ShoeStateChanged:
    return ShoeStateChanged(at=at, device="scanner", state=ShoeState.LOADED)


def test_the_settings_are_in_force_from_the_input_on_and_it_yields_no_event() -> None:
    table = Table(TableConfig(decks=8))
    assert table.apply(settings(decks=6, squeeze=True)) == []
    assert (table.config.decks, table.config.squeeze) == (6, True)
    shuffled = [e for e in table.apply(loaded()) if e.type == EventType.SHOE_SHUFFLED]
    assert [(e.data["decks"], e.data["total"]) for e in shuffled] == [(6, 312)]
    assert table.view()["squeeze"] is True


def test_settings_the_table_cannot_take_are_refused_and_those_in_force_stay() -> None:
    table = Table(TableConfig(decks=7))
    for bad in ({"decks": 40}, {"decks": 6, "colour": "red"}, {"squeeze": "yes"}):
        events = table.apply(TableSettings(at=AT, settings=bad))
        assert [(e.type, e.data["code"]) for e in events] == [
            (EventType.PROCEDURE_ALERT, "bad_settings")
        ]
        assert "those in force stay" in events[0].data["text"]
        assert table.config == TableConfig(decks=7)


def test_a_key_left_out_takes_its_default_and_the_json_form_round_trips() -> None:
    table = Table(TableConfig(decks=7, insurance=False))
    table.apply(TableSettings(at=AT, settings={"decks": 9}))  # a file of an older version
    assert table.config == TableConfig(decks=9)
    item = settings(decks=10, burn="decks")
    assert input_from_json(input_to_json(item)) == item


def test_its_time_is_no_step_back_of_the_clock() -> None:
    table = Table(TableConfig())
    table.apply(loaded(at=AT + 100))
    # Journaled beside the next input or at a start: never a time_went_back of its own.
    assert table.apply(settings(at=AT)) == []
