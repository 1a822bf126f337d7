"""What the scoreboard page's event stream carries: the board's messages, each built and
encoded once for every client (docs/scoreboard.md "The event stream").

Two kinds of server-sent event: `board` (everything: the roads drawn as SVG, the ask road,
the statistics, the round) when the results or the shoe changed, and the smaller `round`
(the round being dealt and the statistics) when only a card came. Both carry `seq`, the last
journal event folded in, and `at`, that event's time, so the page can tell how late it draws.
No I/O: the server writes the bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from shoe_controller.game.board import Board, Change, EventLike
from shoe_controller.service.scoreboard.svg import board_svg, road_svgs

RETRY_MS = 1000  # how soon a browser reconnects after losing the stream (a daemon restart)
KEEPALIVE = b": keep-alive\n\n"


def sse(kind: str, data: dict[str, Any], seq: int) -> bytes:
    """One server-sent event; its data one line of JSON."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"id: {seq}\nevent: {kind}\ndata: {text}\n\n".encode()


class BoardStream:
    """The live board and its encoded messages; the roads are drawn again only when a result
    (or the shoe) changed them."""

    def __init__(self, board: Board, table_id: str) -> None:
        self.board = board
        self.table_id = table_id
        self._at: str | None = None  # the time of the last event folded in
        self._roads: dict[str, Any] | None = None  # the board's JSON as of the last result
        self._pictures: dict[str, str] | None = None

    def feed(self, events: Sequence[EventLike]) -> bytes | None:
        """Fold new events in; the one message every client gets, or None if nothing changed
        that the page shows. Events the board already has (seq) are skipped."""
        fresh = [event for event in events if getattr(event, "seq", 0) > self.board.seq]
        if not fresh:
            return None
        self._at = getattr(fresh[-1], "at", self._at)
        change = self.board.feed_all(fresh)
        if change == Change.NOTHING:
            return None
        if change == Change.ROADS:
            self._roads = self._pictures = None
            return self.snapshot()
        return sse("round", self._head() | self._live(), self.board.seq)

    def snapshot(self) -> bytes:
        """The `board` message: all a page needs to draw from nothing (sent on connect)."""
        roads = self.roads_json()
        if self._pictures is None:
            self._pictures = road_svgs(roads)
        data = self._head() | {
            "svg": self._pictures,
            "cells": {
                "bead_plate": len(roads["bead_plate"]),
                "big_road": len(roads["big_road"]),
                **{
                    name: len(roads[name]["cells"])
                    for name in ("big_eye_boy", "small_road", "cockroach_pig")
                },
            },
            "ask": roads["ask"],
        }
        return sse("board", data | self._live(), self.board.seq)

    def roads_json(self) -> dict[str, Any]:
        """The results and the roads drawn from them (cached until the next result)."""
        if self._roads is None:
            self._roads = self.board.roads()
        return self._roads

    def board_json(self) -> dict[str, Any]:
        """The whole board now (docs/scoreboard.md), as `/board.json` serves it."""
        head = self._head()
        del head["at"]
        return head | self.roads_json() | self._live()

    def board_svg(self) -> str:
        return board_svg(self.board_json(), self.table_id)

    def _head(self) -> dict[str, Any]:
        return {
            "table": self.table_id,
            "shoe": self.board.shoe,
            "seq": self.board.seq,
            "at": self._at,
            "ended": self.board.ended,
        }

    def _live(self) -> dict[str, Any]:
        return {"stats": self.board.stats(), "round": self.board.round_json()}
