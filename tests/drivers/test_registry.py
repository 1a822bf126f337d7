"""The RFID deck registry: loading CSV files, clear errors naming file and line, lookups."""

from __future__ import annotations

import re
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shoe_testkit.device_kit import incomplete_decks

from drivers.translate.registry import DeckRegistry, RegisteredCard, RegistryError, normalize_uid
from shoe_controller.vocab.cards import Card, Suit, full_deck, parse_card

SAMPLE = Path(__file__).resolve().parents[2] / "config" / "decks"
HEADER = "uid_hex,rank,suit,deck_serial\n"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def deck_text(serial: str, prefix: str = "04AA") -> str:
    """A full deck whose UIDs are `prefix` + a counter (7 bytes)."""
    rows = [
        f"{prefix}{index:010X},{card.rank},{card.suit.value},{serial}"
        for index, card in enumerate(full_deck())
    ]
    return HEADER + "\n".join(rows) + "\n"


def test_sample_registry_loads_eight_full_decks() -> None:
    registry = DeckRegistry.load(SAMPLE)
    decks = registry.decks()
    assert len(decks) == 8
    assert set(decks.values()) == {52}
    assert len(registry) == 8 * 52
    assert incomplete_decks(registry) == {}


def test_sample_rows_map_to_their_cards() -> None:
    registry = DeckRegistry.load(SAMPLE)
    checked = 0
    for path in sorted(SAMPLE.glob("*.csv")):
        for line in path.read_text().splitlines():
            if not line or line.startswith("#") or line.startswith("uid_hex"):
                continue
            uid, rank, suit, serial = line.split(",")
            assert registry.lookup(uid) == (Card(int(rank), Suit(int(suit))), serial)
            checked += 1
    assert checked == 416


def test_lookup_accepts_bytes_any_case_and_separators(tmp_path: Path) -> None:
    write(tmp_path, "a.csv", HEADER + "04a1b2c3d4e5f6,12,1,D1\n")
    registry = DeckRegistry.load(tmp_path)
    expected = RegisteredCard(parse_card("QH"), "D1")
    assert registry.lookup("04A1B2C3D4E5F6") == expected
    assert registry.lookup("04:a1:b2:c3:d4:e5:f6") == expected
    assert registry.lookup(bytes.fromhex("04a1b2c3d4e5f6")) == expected
    assert registry.lookup("04A1B2C3D4E5F7") is None  # foreign
    assert registry.lookup("not hex") is None
    assert registry.lookup(b"\x01") is None  # too short to be a UID
    assert "04A1B2C3D4E5F6" in registry
    assert "04A1B2C3D4E5F7" not in registry


def test_letters_header_comments_and_blank_lines(tmp_path: Path) -> None:
    text = (
        "# deck D2\n\nuid_hex,rank,suit,deck_serial\nDEADBEEF,Q,H,D2\n\n# end\n01020304,10,s,D2\n"
    )
    write(tmp_path, "d2.csv", text)
    registry = DeckRegistry.load(tmp_path)
    assert registry.lookup("DEADBEEF") == (parse_card("QH"), "D2")
    assert registry.lookup("01020304") == (parse_card("TS"), "D2")
    assert incomplete_decks(registry)["D2"] == tuple(
        card for card in full_deck() if card not in (parse_card("QH"), parse_card("TS"))
    )


def test_header_is_optional(tmp_path: Path) -> None:
    write(tmp_path, "d.csv", "DEADBEEF,1,0,D\n")
    assert DeckRegistry.load(tmp_path).lookup("DEADBEEF") == (parse_card("AS"), "D")


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("XYZ12345,1,0,D", "hex"),
        ("ABC,1,0,D", "hex"),
        ("0102,1,0,D", "2 bytes"),
        ("0102030405060708090A0B,1,0,D", "11 bytes"),
        ("01020304,14,0,D", "rank '14'"),
        ("01020304,0,0,D", "rank '0'"),
        ("01020304,1,4,D", "suit '4'"),
        ("01020304,1,X,D", "suit 'X'"),
        ("01020304,1,0,", "deck_serial is empty"),
        ("01020304,1,0", "expected 4 fields"),
        ("01020304,1,0,D,extra", "expected 4 fields"),
    ],
)
def test_bad_row_names_file_and_line(tmp_path: Path, row: str, words: str) -> None:
    path = write(tmp_path, "bad.csv", HEADER + "0A0B0C0D,2,0,D\n" + row + "\n")
    with pytest.raises(RegistryError) as caught:
        DeckRegistry.load(tmp_path)
    message = str(caught.value)
    assert f"{path}:3" in message
    assert words in message


def test_uid_listed_twice_across_files_names_both_places(tmp_path: Path) -> None:
    first = write(tmp_path, "a.csv", HEADER + "0A0B0C0D,2,0,DA\n")
    second = write(tmp_path, "b.csv", HEADER + "01010101,3,0,DB\n0a:0b:0c:0d,5,1,DB\n")
    with pytest.raises(RegistryError) as caught:
        DeckRegistry.load(tmp_path)
    message = str(caught.value)
    assert f"{second}:3" in message
    assert f"{first}:2" in message
    assert "0A0B0C0D" in message


def test_card_listed_twice_in_one_deck(tmp_path: Path) -> None:
    path = write(tmp_path, "a.csv", HEADER + "0A0B0C0D,2,0,D\n0A0B0C0E,2,S,D\n")
    with pytest.raises(
        RegistryError, match=rf"{re.escape(str(path))}:3: card 2S of deck 'D' is already listed"
    ):
        DeckRegistry.load(tmp_path)


def test_one_file_per_deck(tmp_path: Path) -> None:
    path = write(tmp_path, "a.csv", HEADER + "0A0B0C0D,2,0,D1\n0A0B0C0E,3,0,D2\n")
    with pytest.raises(RegistryError, match=rf"{re.escape(str(path))}:3: deck_serial 'D2' differs"):
        DeckRegistry.load(tmp_path)
    (tmp_path / "a.csv").unlink()
    write(tmp_path, "a.csv", HEADER + "0A0B0C0D,2,0,D1\n")
    write(tmp_path, "b.csv", HEADER + "0A0B0C0E,3,0,D1\n")
    with pytest.raises(RegistryError, match="already registered by"):
        DeckRegistry.load(tmp_path)


def test_directory_errors(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="does not exist"):
        DeckRegistry.load(tmp_path / "missing")
    with pytest.raises(RegistryError, match=r"no \*\.csv files"):
        DeckRegistry.load(tmp_path)
    path = write(tmp_path, "empty.csv", HEADER + "# nothing\n")
    with pytest.raises(RegistryError, match=rf"{re.escape(str(path))}: no card rows"):
        DeckRegistry.load(tmp_path)


def test_unreadable_file_is_a_registry_error(tmp_path: Path) -> None:
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(RegistryError, match=r"bin\.csv"):
        DeckRegistry.load(tmp_path)


def test_full_decks_load_and_only_csv_files_count(tmp_path: Path) -> None:
    write(tmp_path, "one.csv", deck_text("ONE", "04AA"))
    write(tmp_path, "two.csv", deck_text("TWO", "04BB"))
    write(tmp_path, "notes.txt", "not a deck")
    registry = DeckRegistry.load(tmp_path)
    assert registry.decks() == {"ONE": 52, "TWO": 52}
    assert registry.lookup("04BB0000000033") == (full_deck()[0x33], "TWO")


def test_normalize_uid() -> None:
    assert normalize_uid("04-a1-b2-c3") == "04A1B2C3"
    assert normalize_uid(b"\x04\xa1\xb2\xc3") == "04A1B2C3"
    with pytest.raises(ValueError, match="hex"):
        normalize_uid("04A1B2C")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=string.printable + "♠é,", max_size=60), min_size=1, max_size=6))
def test_any_file_content_loads_or_raises_registry_error(lines: list[str]) -> None:
    """Bad input gets a clear error: a RegistryError, never another exception."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "x.csv").write_text("\n".join(lines), encoding="utf-8")
        problem = ""
        try:
            registry = DeckRegistry.load(folder)
        except RegistryError as error:
            problem = str(error)
        if problem:
            assert "x.csv" in problem
        else:
            assert len(registry) >= 1
