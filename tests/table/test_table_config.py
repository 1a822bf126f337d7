"""TableConfig: defaults as docs/rules.md reads them, and every bad value refused by name."""

from __future__ import annotations

import dataclasses

import pytest

from shoe_controller.table.config import TableConfig


def test_defaults_are_the_rules_defaults() -> None:
    config = TableConfig()
    assert (config.decks, config.burn, config.burn_per_round) == (8, "first_card_value", 0)
    assert (config.cut_card, config.squeeze, config.mode) == ("finish_current", False, "manual")
    assert config.min_cards_behind_cut == 12  # R2.1
    assert config.max_trial_rounds == 3  # R2.3
    assert config.big_small_last_round == 20  # R14.1
    assert config.insurance is True
    assert config.factory_order_run == 6
    assert config.cards_in_shoe == 416


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("decks", 5, "6 to 12"),
        ("decks", 13, "6 to 12"),
        ("decks", True, "6 to 12"),
        ("decks", 8.0, "6 to 12"),
        ("burn", "value", "first_card_value, decks"),
        ("burn_per_round", -1, "0 to 10"),
        ("cut_card", "last", "finish_current, one_more"),
        ("squeeze", 1, "true or false"),
        ("mode", "auto", "manual, batch_shuffler, shuffler_dealer"),
        ("min_cards_behind_cut", 11, "12 to 104"),
        ("max_trial_rounds", 4, "0 to 3"),
        ("big_small_last_round", -1, "0 to 1000"),
        ("insurance", "yes", "true or false"),
        ("factory_order_run", 3, "4 to 13"),
        ("factory_order_run", 14, "4 to 13"),
    ],
)
def test_a_bad_value_names_the_field_and_what_is_allowed(
    field: str, value: object, allowed: str
) -> None:
    with pytest.raises(ValueError, match=field) as caught:
        TableConfig(**{field: value})
    assert allowed in str(caught.value)


def test_replace_validates_too() -> None:
    with pytest.raises(ValueError, match="decks"):
        dataclasses.replace(TableConfig(), decks=20)


def test_from_mapping_reads_a_toml_table_and_refuses_unknown_keys() -> None:
    config = TableConfig.from_mapping({"decks": 6, "squeeze": True})
    assert (config.decks, config.squeeze) == (6, True)
    with pytest.raises(ValueError, match=r"unknown table setting\(s\) \['deck'\]"):
        TableConfig.from_mapping({"deck": 6})
