"""The scoreboard page in a real headless Chromium, served by a real daemon (`shoe-controller
run`) fed by the simulated shoe (TableRig): the cells of every road after N rounds and after a
whole shoe, each update drawn before the next card comes, a daemon killed and restarted, full
screen and phone layouts, and in squeeze mode no unrevealed card anywhere on the page (R15).

How "within 200 ms" is checked without a timed assertion: for a stretch of the shoe the dealer
waits 200 ms after each card is stored before he draws the next, and the test asserts the page
had already drawn that card's update by then (an order of events: the update came before the
next card). The page's own timestamps (event time to drawn frame) are printed for the record;
bench/bench_scoreboard.py measures them properly.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.roads import NAMES, reference_ask, reference_road
from shoe_testkit.scoreboard import Browser, chromium, start_rig

from shoe_controller.game.board import SHOWN
from shoe_controller.vocab.cards import RANK_LETTERS, Card

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        chromium() is None,
        reason="needs Debian's chromium (apt-get install chromium; .ci/run installs it)",
    ),
]

GAP_S = 0.2  # the "within 200 ms": the next card comes no sooner than this
# Set to a path (docs/scoreboard.png) to keep the full shoe's screenshot.
SCREENSHOT = os.environ.get("SCOREBOARD_SCREENSHOT")


@pytest.fixture
def browser() -> Iterator[Browser]:
    with Browser() as tab:
        yield tab


def winners(rig: TableRig) -> list[str]:
    """The real rounds' winners of the journal's latest shoe, in order (trials left out)."""
    events = rig.records.journal_events()
    shoe = max(e.shoe for e in events if e.type == "round.result")
    trials = {e.round for e in events if e.type == "round.started" and e.data.get("trial")}
    return [
        e.data["winner"]
        for e in events
        if e.type == "round.result" and e.shoe == shoe and e.round not in trials
    ]


def expected_cells(names: list[str]) -> dict[str, int]:
    """Cells per road from the second implementation (tests/support/shoe_testkit/roads.py)."""
    wins = sum(name != "tie" for name in names)
    counts = {"bead_plate": len(names), "big_road": wins or (1 if names else 0)}
    for k, road in NAMES.items():
        counts[road] = len(reference_road(names, k))
    counts["ask"] = sum(
        colour is not None for side in reference_ask(names).values() for colour in side.values()
    )
    return counts


def page_cells(tab: Browser) -> dict[str, int]:
    return tab.evaluate(
        "Object.fromEntries(['bead_plate','big_road','big_eye_boy','small_road','cockroach_pig',"
        "'ask'].map(id => [id, document.querySelectorAll('#' + id + ' .cell').length]))"
    )


def drawn(tab: Browser) -> int:
    return tab.evaluate("window.scoreboard && window.scoreboard.drawn || 0")


def last_board_seq(rig: TableRig) -> int:
    """The last stored event the page has news of (the others change nothing on the board,
    so they bring no message)."""
    return max(e.seq for e in rig.records.journal_events() if e.type in SHOWN)


def deal_rounds(rig: TableRig, rounds: int) -> None:
    target = len(winners_or_none(rig)) + rounds
    while len(winners_or_none(rig)) < target:
        rig.dealer.deal(1)


def winners_or_none(rig: TableRig) -> list[str]:
    events = rig.records.journal_events()
    return winners(rig) if any(e.type == "round.result" for e in events) else []


def loop_lag(rig: TableRig) -> Any:
    """The daemon's own measure of how late its loop wakes (`shoectl status`)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30)
        client.connect(str(rig.directory / "control.sock"))
        client.sendall(b'{"cmd": "status"}\n')
        answer = json.loads(client.makefile("rb").readline())
    return answer["result"]["controller"]["loop_lag"]


def latencies(tab: Browser) -> list[float]:
    """Milliseconds from each message's newest event to the frame that drew it (page clock
    and daemon clock are the same machine's)."""
    log = tab.evaluate("window.scoreboard.log")
    return [entry["drawn"] - entry["at"] for entry in log if entry["at"]]


def opened(rig: TableRig, url: str, browser: Browser) -> None:
    rig.dealer.deal(1)  # the shoe is loaded and burning: the board has a shoe
    browser.open(url)
    browser.wait_for("window.scoreboard && window.scoreboard.connects === 1", "connect")
    browser.wait_for(f"window.scoreboard.drawn >= {last_board_seq(rig)}", "the board at start")
    assert browser.evaluate("document.getElementById('table').textContent") == "Table 07"


def test_each_update_is_drawn_before_the_next_card(tmp_path: Path, browser: Browser) -> None:
    rig, url = start_rig(tmp_path / "u", RigOptions())
    try:
        opened(rig, url, browser)
        # The dealer waits GAP_S after each card is stored; by then the page drew it.
        late = []
        for _ in range(14):
            rig.dealer.deal(1)
            time.sleep(GAP_S)
            if drawn(browser) < last_board_seq(rig):
                late.append(last_board_seq(rig))
        measured = latencies(browser)
        said = (
            f"event -> drawn in the page: median {statistics.median(measured):.1f} ms, max"
            f" {max(measured):.1f} ms over {len(measured)} updates; the daemon's loop lag:"
            f" {loop_lag(rig)}"
        )
        print("\n" + said)
        assert late == [], f"updates not drawn {GAP_S * 1000:.0f} ms after their card: {said}"
    finally:
        rig.close()


def test_the_page_follows_a_whole_shoe_and_a_restart(tmp_path: Path, browser: Browser) -> None:
    rig, url = start_rig(tmp_path / "t", RigOptions())
    try:
        opened(rig, url, browser)
        # N rounds: every road has the cells the second implementation says.
        deal_rounds(rig, 10)
        browser.wait_for(f"window.scoreboard.drawn >= {last_board_seq(rig)}", "the rounds")
        assert page_cells(browser) == expected_cells(winners(rig))
        cards = rig.dealer.dealt_cards()
        shown = browser.evaluate("document.getElementById('s-cards_dealt').textContent")
        assert int(shown) == len(cards)

        # A daemon killed and started again: the page reconnects and draws it all again.
        before = page_cells(browser)
        rig.kill_daemon()
        browser.wait_for(
            "document.getElementById('link').textContent === 'reconnecting'", "the loss"
        )
        rig.start_daemon()
        browser.wait_for("window.scoreboard.connects === 2", "the reconnection")
        browser.wait_for(f"window.scoreboard.drawn >= {last_board_seq(rig)}", "the redraw")
        assert page_cells(browser) == before
        rig.dealer.deal(3)
        browser.wait_for(f"window.scoreboard.drawn >= {last_board_seq(rig)}", "news")

        # The rest of the shoe; the full board fits a 1920x1080 screen, unscrolled.
        rig.dealer.deal_until_shoe_ends()
        browser.wait_for(f"window.scoreboard.drawn >= {last_board_seq(rig)}", "the end")
        names = winners(rig)
        assert len(names) > 60
        assert page_cells(browser) == expected_cells(names)
        size = browser.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        assert size[0] <= 1920
        assert size[1] <= 1080
        browser.screenshot(tmp_path / "shoe.png")
        assert (tmp_path / "shoe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if SCREENSHOT:
            browser.screenshot(Path(SCREENSHOT))

        # A phone: one column, the round first, no sideways scrolling of the page.
        browser.viewport(390, 844, mobile=True)
        layout = browser.wait_for(
            "document.documentElement.clientWidth === 390 && [document.documentElement"
            ".scrollWidth, document.getElementById('round').getBoundingClientRect().top,"
            " document.getElementById('bead_plate').getBoundingClientRect().top]",
            "the phone layout",
        )
        assert layout[0] <= 390
        assert layout[1] < layout[2]
    finally:
        rig.close()


def hidden_cards(rig: TableRig) -> tuple[list[Card], int]:
    """The round's cards the journal has not named yet (as the simulator dealt them), and
    how many cards the round has."""
    events = rig.records.journal_events()
    started = [e.round for e in events if e.type == "round.started"]
    if not started:
        return [], 0
    current = max(started)
    dealt = [e for e in events if e.round == current and e.type == "card.dealt"]
    named = {e.data["position"] for e in events if e.round == current and e.type == "card.revealed"}
    truth = [item.card for item in rig.dealer.dealt_cards()]
    truth = truth[len(truth) - len(dealt) :]
    secret = [
        card
        for card, e in zip(truth, dealt, strict=True)
        if e.data["card"] is None and e.data["position"] not in named
    ]
    return secret, len(dealt)


def public_left_by_rank(rig: TableRig, hidden: int) -> dict[str, int]:
    """32 a rank less every card out but the `hidden` last ones (8 decks)."""
    truth = [item.card for item in rig.dealer.dealt_cards()]
    public = truth[: len(truth) - hidden]
    return {rank: 32 - sum(str(card)[0] == rank for card in public) for rank in RANK_LETTERS}


def test_a_squeeze_table_shows_no_card_before_its_reveal(tmp_path: Path, browser: Browser) -> None:
    rig, url = start_rig(tmp_path / "s", RigOptions(squeeze=True))
    try:
        browser.open(url)
        browser.wait_for("window.scoreboard && window.scoreboard.connects === 1", "connect")
        checked = 0
        for _ in range(200):
            rig.dealer.deal(1, wait=False)
            rig.dealer.settle()
            secret, dealt = hidden_cards(rig)
            if not secret or dealt < 4:
                continue
            if len(secret) < 4:  # a squeezed third card: the dealer opens it too
                rig.dealer.reveal()
                continue
            # The round waits for the reveal with four squeezed cards.
            browser.wait_for(f"window.scoreboard.drawn >= {last_board_seq(rig)}", "cards")
            page: dict[str, Any] = browser.evaluate(
                "({text: document.body.innerText, html: document.documentElement.outerHTML,"
                " backs: document.querySelectorAll('#round .card.back').length,"
                " faces: document.querySelectorAll('#round .card:not(.back)').length,"
                " left: [...document.querySelectorAll('#rank-left td')].map(td => +td"
                ".textContent)})"
            )
            assert (page["backs"], page["faces"]) == (4, 0)
            for card in secret:
                assert card.pretty not in page["text"]
                assert card.pretty not in page["html"]
            # Cards left by rank: as if the squeezed cards were still in the shoe.
            left = public_left_by_rank(rig, hidden=len(secret))
            assert page["left"] == [left[rank] for rank in RANK_LETTERS]
            assert "4 card(s) out not shown yet" in page["text"]
            rig.dealer.reveal()
            checked += 1
            # Revealed: the faces come, and the counts take them off.
            browser.wait_for(f"window.scoreboard.drawn >= {last_board_seq(rig)}", "reveal")
            faces = browser.evaluate(
                "[...document.querySelectorAll('#round .card:not(.back)')].map(c => c.textContent)"
            )
            assert sorted(faces) == sorted(card.pretty for card in secret)
            after = browser.evaluate(
                "[...document.querySelectorAll('#rank-left td')].map(td => +td.textContent)"
            )
            assert after == [public_left_by_rank(rig, hidden=0)[rank] for rank in RANK_LETTERS]
            if checked == 3:
                break
        assert checked == 3
    finally:
        rig.close()
