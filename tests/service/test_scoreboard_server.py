"""The scoreboard's server (service/scoreboard/server.py) on a real port, fed by a real
Controller and journal, read by real HTTP clients: the files, the event stream's fan-out, what
it costs a commit, slow clients, limits, read-only routes, a restart, and `shoectl road`'s
answer being the same board."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from shoe_testkit.net import free_port
from shoe_testkit.perfect_dealer import START_TIME, deal_shoe
from shoe_testkit.table import shuffled_shoe

from shoe_controller.service.config import from_mapping
from shoe_controller.service.control import ControlService
from shoe_controller.service.control.journal_answers import JournalAnswers
from shoe_controller.service.scoreboard.server import ScoreboardServer
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal, JournalReader
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.inputs import Input, ShoeState, ShoeStateChanged

GUARD_S = 60.0  # only stops a hung test


class CountingJournal:
    """The real journal's reader, counting the reads the scoreboard makes of it."""

    def __init__(self, journal: JournalReader) -> None:
        self.journal = journal
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        self.reads += 1
        return getattr(self.journal, name)


@dataclass
class Table:
    server: ScoreboardServer
    controller: Controller
    journal: CountingJournal
    url: str
    commits: int = 0

    async def deal(self, inputs: Sequence[Input], pause: float = 0.0) -> None:
        """Submit inputs as the daemon would, one commit each; `pause` lets the loop run."""
        for item in inputs:
            self.controller.submit(item)
            self.commits += 1
            await asyncio.sleep(pause)
        await self.settled()

    async def settled(self) -> None:
        """Until the server folded every stored event in (its flush runs after a delay)."""
        deadline = time.monotonic() + GUARD_S
        while self.server.stream.board.seq < self.journal.journal.last_seq():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.005)


@asynccontextmanager
async def serving(
    path: Path, config: TableConfig | None = None, **options: Any
) -> AsyncIterator[Table]:
    config = config or TableConfig()
    journal = Journal.open(path / "journal.db", "tbl-07-shoe")
    counting = CountingJournal(journal.reads)
    port = free_port()
    server = ScoreboardServer(f"127.0.0.1:{port}", "07", config.cards_in_shoe, counting, **options)
    controller = Controller(config, journal, on_stored=server.on_stored)
    await server.start()
    try:
        yield Table(server, controller, counting, f"http://127.0.0.1:{port}/")
    finally:
        await server.close()
        journal.close()


@dataclass
class Follower:
    """An event-stream client: every message's raw bytes, and decoded."""

    raw: list[bytes] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    async def follow(self, session: aiohttp.ClientSession, url: str) -> None:
        async with session.get(url + "events") as response:
            assert response.status == 200
            assert response.headers["Content-Type"] == "text/event-stream"
            block = b""
            async for line in response.content:
                block += line
                if line == b"\n":
                    self._add(block)
                    block = b""

    def _add(self, block: bytes) -> None:
        fields = dict(line.split(": ", 1) for line in block.decode().splitlines() if ": " in line)
        if "data" in fields:
            self.raw.append(block)
            self.kinds.append(fields["event"])
            self.messages.append(json.loads(fields["data"]))

    async def until(self, seq: int) -> None:
        deadline = time.monotonic() + GUARD_S
        while not self.messages or self.messages[-1]["seq"] < seq:
            assert time.monotonic() < deadline, "the stream did not get there"
            assert self.task is None or not self.task.done(), "the stream ended"
            await asyncio.sleep(0.005)


def start(session: aiohttp.ClientSession, url: str) -> Follower:
    follower = Follower()
    follower.task = asyncio.create_task(follower.follow(session, url))
    return follower


async def connected(server: ScoreboardServer, count: int) -> None:
    deadline = time.monotonic() + GUARD_S
    while server.clients < count:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.005)


def shoe_inputs(seed: int = 11, config: TableConfig | None = None) -> list[Input]:
    cards = shuffled_shoe(8, seed=seed)
    return deal_shoe(cards, config or TableConfig(), cut_after=len(cards) - 30).inputs


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, GUARD_S))


# ---------------------------------------------------------------------- the page


def test_the_page_and_its_files_are_served_with_nothing_from_outside(tmp_path: Path) -> None:
    async def check() -> None:
        async with serving(tmp_path) as table, aiohttp.ClientSession() as session:
            files = {}
            for path, kind in (("", "text/html"), ("board.css", "text/css"),
                               ("board.js", "text/javascript")):  # fmt: skip
                async with session.get(table.url + path) as response:
                    assert response.status == 200
                    assert response.content_type == kind
                    files[path] = await response.text()
            assert 'href="board.css"' in files[""]
            assert 'src="board.js"' in files[""]
            assert '<meta name="viewport"' in files[""]
            for text in files.values():  # the table PC is offline: no CDN, no web font
                assert not re.search(r"(?:https?:)?//[\w-]+\.[\w.-]+", text)
                assert "@import" not in text
                assert "url(" not in text
            async with session.get(table.url) as response:
                assert response.headers["Content-Security-Policy"] == "default-src 'self'"

    run(check())


def test_every_client_gets_the_same_bytes_for_each_commit(tmp_path: Path) -> None:
    async def check() -> None:
        async with serving(tmp_path) as table, aiohttp.ClientSession() as session:
            followers = [start(session, table.url) for _ in range(3)]
            await connected(table.server, 3)
            await table.deal(shoe_inputs()[:120], pause=0.002)
            last = table.journal.journal.last_seq()
            for follower in followers:
                await follower.until(last)
            first, *others = followers
            for other in others:
                # After the board each got on connecting, the very same messages.
                assert other.raw[1:] == first.raw[1:]
            assert first.kinds[0] == "board"
            assert {"board", "round"} <= set(first.kinds)
            # One message per batch of commits, never more than the commits.
            assert 1 < len(first.messages) - 1 <= table.commits
            assert len(first.messages) - 1 == table.server.messages
            seqs = [message["seq"] for message in first.messages]
            assert seqs == sorted(seqs)
            assert first.messages[-1]["stats"] == table.server.stream.board.stats()
            for follower in followers:
                assert follower.task is not None
                follower.task.cancel()

    run(check())


def test_a_commit_costs_no_journal_read_and_no_work_before_the_flush(tmp_path: Path) -> None:
    async def check() -> None:
        slow_flush = serving(tmp_path, flush_delay_s=0.05)
        async with slow_flush as table, aiohttp.ClientSession() as session:
            followers = [start(session, table.url) for _ in range(2)]
            await connected(table.server, 2)
            reads = table.journal.reads
            inputs = shoe_inputs()
            board = table.server.stream.board
            before = board.seq
            for item in inputs[:40]:
                table.controller.submit(item)  # the listener runs inside, after the commit
            # Back from the commits: the listener only kept the events, nothing is folded.
            assert board.seq == before
            await table.settled()
            assert board.seq == table.journal.journal.last_seq()
            # 40 commits without yielding: one batch, one message for all of them.
            assert table.server.messages == 1
            await table.deal(inputs[40:200], pause=0.001)
            for follower in followers:
                await follower.until(table.journal.journal.last_seq())
            # The journal was read at start only, never for an event or a client.
            assert table.journal.reads == reads

    run(check())


def test_a_client_that_does_not_read_is_dropped_and_the_others_go_on(tmp_path: Path) -> None:
    async def check() -> None:
        small_buffer = serving(tmp_path, max_buffered=32 << 10)
        async with small_buffer as table, aiohttp.ClientSession() as session:
            reader = start(session, table.url)
            slow = socket.socket()
            slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            slow.connect((table.server.host, table.server.port))
            slow.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")  # and never reads
            await connected(table.server, 2)
            await table.deal(shoe_inputs(), pause=0.0005)
            await reader.until(table.journal.journal.last_seq())
            assert table.server.dropped == 1
            assert table.server.clients == 1
            slow.close()

    run(check())


def test_too_many_pages_are_refused_and_nothing_but_get_is_answered(tmp_path: Path) -> None:
    async def check() -> None:
        async with serving(tmp_path, max_clients=1) as table, aiohttp.ClientSession() as session:
            first = start(session, table.url)
            await connected(table.server, 1)
            async with session.get(table.url + "events") as response:
                assert response.status == 503
                assert response.headers["Retry-After"] == "10"
            # Read-only: no route takes anything in (R15, no supervisor action from the page).
            for method, path in (("POST", ""), ("PUT", "events"), ("DELETE", "board.json"),
                                 ("POST", "board.svg")):  # fmt: skip
                async with session.request(method, table.url + path) as response:
                    assert response.status == 405, (method, path)
            async with session.get(table.url + "journal.db") as response:
                assert response.status == 404
            assert first.task is not None
            first.task.cancel()

    run(check())


def test_a_new_server_redraws_the_same_board_from_the_journal(tmp_path: Path) -> None:
    config = TableConfig()
    first_shoe = shoe_inputs(seed=11)
    second = deal_shoe(shuffled_shoe(8, seed=12), config, start=START_TIME + 1e5).inputs

    async def check() -> dict[str, Any]:
        async with serving(tmp_path) as table:
            removed = ShoeStateChanged(START_TIME + 5e4, "scanner", ShoeState.REMOVED)
            await table.deal([*first_shoe, removed, *second[:150]])
            shown = table.server.stream.board_json()
            assert shown["shoe"] == 2
            assert shown["stats"]["rounds"] > 5
            # The control socket's `road` answer (shoectl road) is the same board.
            config = from_mapping({"table": {"id": "07"}})
            service = ControlService(table.controller, list, list, config)
            answers = JournalAnswers(table.controller.journal, config)  # as the reader answers
            answer = answers.answer({"cmd": "road"}, service.live("road"))
            assert {**answer, "table": "07"} == {**shown, "table": "07"}
            older = answers.answer({"cmd": "road", "shoe": 1}, service.live("road"))
            assert older["ended"] is True
            assert older["stats"]["rounds"] > 60
            ended = [e for e in table.journal.journal.events_after(0, 5000)
                     if e.type == "shoe.ended"]  # fmt: skip
            assert older["stats"]["cards_dealt"] == ended[0].data["cards_dealt"]
            assert older["stats"]["cards_left"] == 416 - ended[0].data["cards_dealt"]
            return shown

    shown = run(check())

    async def again() -> None:
        async with serving(tmp_path) as table:  # a restarted daemon's page
            assert table.server.stream.board_json() == shown

    run(again())


def test_the_stream_of_a_squeeze_table_names_no_hidden_card(tmp_path: Path) -> None:
    config = TableConfig(squeeze=True)

    async def check() -> None:
        async with serving(tmp_path, config) as table, aiohttp.ClientSession() as session:
            follower = start(session, table.url)
            await connected(table.server, 1)
            await table.deal(shoe_inputs(config=config)[:150], pause=0.002)
            await follower.until(table.journal.journal.last_seq())
        hidden_seen = 0
        for message in follower.messages:
            cards = (message["round"] or {}).get("cards") or {}
            hidden_seen += sum(card is None for card in cards.values())
            if None in cards.values():
                assert message["stats"]["cards_unknown"] == sum(c is None for c in cards.values())
                assert message["round"]["player_total"] is None or all(
                    cards[p] is not None for p in cards if p.startswith("P")
                )
        assert hidden_seen > 10

    run(check())


def test_an_address_taken_is_an_error_at_start_and_nonsense_at_once(tmp_path: Path) -> None:
    async def check() -> None:
        journal = Journal.open(tmp_path / "journal.db", "tbl-07-shoe")
        taken = socket.socket()
        try:
            with pytest.raises(ValueError, match="listen must be host:port"):
                ScoreboardServer("nonsense", "07", 416, journal.reads)
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            server = ScoreboardServer(f"127.0.0.1:{port}", "07", 416, journal.reads)
            # The daemon says so and runs without the page (service/daemon.py).
            with pytest.raises(OSError, match="address already in use"):
                await server.start()
        finally:
            taken.close()
            journal.close()

    run(check())
