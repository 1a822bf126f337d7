"""`shoectl road` as a pit boss runs it (a real process against a live control socket over a
real Controller, journal and simulated shoe, shoe_testkit/control.py): all five roads and
the ask road as text, `--svg` a picture of the board, `--json` the documented object."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.control import LiveTable
from shoe_testkit.roads import NAMES, reference_ask, reference_road

# The burn (A♠ and one card), then rounds; the winners are the table's own (its view).
CARDS = (
    "AS 4C 2S 4D 7H 9C QH 5D AH AD 3C 3H 3S KD 5C 2D 9S JC JS 5H 4S 3D 4C 9H 2C 9D 3C"
    " 7S 4H KH 2H TS 5S 9C 8C 6D 6S 2H 5C"
)
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTable]:
    table = LiveTable(tmp_path_factory.mktemp("road"))
    try:
        table.load(CARDS)
        table.deal(len(CARDS.split()))
        assert table.view()["round"] is None  # the last card finished a round
        yield table
    finally:
        table.close()


def winners(live: LiveTable) -> list[str]:
    return [str(entry["winner"]) for entry in live.view()["road"]]


def test_the_json_is_the_documented_board(live: LiveTable) -> None:
    WINNERS = winners(live)  # noqa: N806
    assert len(WINNERS) >= 8
    result = live.shoectl("road", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [entry["winner"] for entry in data["results"]] == WINNERS
    for key in ("table", "shoe", "seq", "ended", "results", "rows", "summary", "bead_plate",
                "big_road", "big_eye_boy", "small_road", "cockroach_pig", "ask", "stats",
                "round"):  # fmt: skip
        assert key in data, key
    for k, name in NAMES.items():
        assert data[name]["sequence"] == reference_road(WINNERS, k), name
        assert [cell["colour"] for cell in data[name]["cells"]] == data[name]["sequence"]
    assert data["ask"] == reference_ask(WINNERS)
    stats = data["stats"]
    assert (stats["rounds"], stats["banker"], stats["player"], stats["tie"]) == (
        len(WINNERS), WINNERS.count("banker"), WINNERS.count("player"), WINNERS.count("tie"),
    )  # fmt: skip
    road = live.view()["road"]
    assert stats["banker_pair"] == sum(bool(entry["banker_pair"]) for entry in road)
    assert stats["naturals"] == sum(entry["natural"] is not None for entry in road)
    dealt = len(CARDS.split())
    assert (stats["cards_dealt"], stats["cards_left"], stats["cards_unknown"]) == (
        dealt, 416 - dealt, 0,
    )  # fmt: skip
    aces = sum(card[0] == "A" for card in CARDS.split())
    assert stats["cards_left_by_rank"]["A"] == 32 - aces
    assert data["table"] == "07"


def test_the_text_shows_five_roads_the_ask_road_and_the_cards(live: LiveTable) -> None:
    WINNERS = winners(live)  # noqa: N806
    result = live.shoectl("road")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Shoe 1  {len(WINNERS)} rounds: ")
    titles = ["Bead plate", "Big road", "Big eye boy", "Small road", "Cockroach pig", "Ask road"]
    at = [next(i for i, line in enumerate(lines) if line.startswith(title)) for title in titles]
    assert at == sorted(at)
    eye = lines[lines.index(next(x for x in lines if x.startswith("Big eye boy"))) + 1 :][:6]
    letters = {"red": "●", "blue": "○"}  # not B, which is Banker
    expected = reference_road(WINNERS, 1)
    assert expected
    # The first column of the big eye boy, as drawn: its colour down to where it changes.
    run = next((i for i, c in enumerate(expected) if c != expected[0]), len(expected))
    assert [row[1] for row in eye[: min(run, 6)]] == [letters[expected[0]]] * min(run, 6)
    ask = reference_ask(WINNERS)
    banker = next(line for line in lines if line.startswith("Banker next:"))
    shown = "●" if ask["banker"]["big_eye_boy"] == "red" else "○"
    assert f"big eye boy {shown}" in banker
    assert any(line.startswith("Left by rank A ") for line in lines)
    assert any(f"cards dealt {len(CARDS.split())}" in line for line in lines)


def test_svg_writes_the_board_as_a_picture(live: LiveTable, tmp_path: Path) -> None:
    WINNERS = winners(live)  # noqa: N806
    target = tmp_path / "board.svg"
    result = live.shoectl("road", "--svg", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    root = ET.fromstring(target.read_text())
    assert root.tag == f"{SVG}svg"
    roads = {
        element.get("class", "").split()[1]: element
        for element in root.iter(f"{SVG}svg")
        if element.get("class", "").startswith("road ")
    }
    counts = {kind: sum("cell" in (e.get("class") or "").split() for e in element.iter())
              for kind, element in roads.items()}  # fmt: skip
    assert counts["bead-plate"] == len(WINNERS)
    assert counts["big-road"] == sum(winner != "tie" for winner in WINNERS)
    for k, name in NAMES.items():
        assert counts[name.replace("_", "-")] == len(reference_road(WINNERS, k)), name
    assert "Table 07" in target.read_text()
    # '-' is standard output.
    printed = live.shoectl("road", "--svg", "-")
    assert printed.returncode == 0
    assert printed.stdout == target.read_text()


def test_svg_to_a_place_that_cannot_be_written_is_one_clear_line(live: LiveTable) -> None:
    result = live.shoectl("road", "--svg", "/nonexistent/dir/board.svg")
    assert result.returncode == 1  # a file that cannot be written, as every command says it
    assert result.stdout == ""
    assert result.stderr == (
        "Error: Could not open file '/nonexistent/dir/board.svg': there is no folder"
        " /nonexistent/dir\n"
    )
