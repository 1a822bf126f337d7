"""What a broker sink's link does with a node it leaves (delivery/amqp_nodes.py NodeLink, issue
30): its connection is closed in the background, at most `timeout_s`, so a dead or blocked node
that never answers a close cannot hold the sink back; the sink's own close waits for those.

The connections here are the one thing NodeLink asks of a client's connection, an awaitable
close(), each doing what a node's connection does: closing, hanging, failing.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import structlog
from structlog.testing import capture_logs

from shoe_controller.delivery.amqp_nodes import NodeLink, Nodes

NODES = ["amqp://mq1:5672/", "amqp://mq2:5672/", "amqp://mq3:5672/"]
TIMEOUT_S = 0.2  # the link's; the tests below wait for it to pass, they do not time it


class Connection:
    """A node's connection: its close takes `closing_s`, or fails with `error`."""

    def __init__(self, closing_s: float = 0.0, error: Exception | None = None) -> None:
        self.closing_s = closing_s
        self.error = error
        self.closed = False

    async def close(self) -> None:
        await asyncio.sleep(self.closing_s)
        if self.error is not None:
            raise self.error
        self.closed = True


class Link(NodeLink):
    """A link whose client is the Connection above."""

    def __init__(self, nodes: Nodes) -> None:
        super().__init__(nodes, structlog.get_logger("delivery"), TIMEOUT_S)
        self.connection: Connection | None = None

    def _leave(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            self._close_later(connection)


def connected_link(connection: Connection) -> Link:
    link = Link(Nodes(NODES, random.Random(30).random))
    link.nodes.connected(0, at=1.0, failures=0)
    link.connection = connection
    return link


def test_a_failed_node_is_left_at_once_and_the_next_attempt_goes_to_the_next_node() -> None:
    async def scenario() -> None:
        slow = Connection(closing_s=TIMEOUT_S / 2)
        link = connected_link(slow)
        order = [url for _, url in link.nodes.attempts()]
        link.failed("ConnectionResetError: gone")
        assert link.connection is None  # left without waiting for its close
        assert not slow.closed
        assert link.nodes.in_use is None
        assert [url for _, url in link.nodes.attempts()] == order[1:] + order[:1]
        index, _ = next(link.nodes.attempts())
        failover = link.nodes.connected(index, at=2.0, failures=1)
        assert failover is not None
        assert failover.reason == "ConnectionResetError: gone"  # why the node was left
        await link.close()
        assert slow.closed  # the sink's close waited for it

    asyncio.run(scenario())


def test_a_close_that_never_ends_is_given_up_after_the_timeout_and_logged() -> None:
    async def scenario() -> list[dict[str, Any]]:
        hung = Connection(closing_s=3600.0)  # a blocked node never answers
        link = connected_link(hung)
        with capture_logs() as logs:
            link.failed("broker withholds confirms")
            await asyncio.wait_for(link.close(), 30.0)  # a guard: the link gives up itself
        assert not hung.closed
        return logs

    logs = asyncio.run(scenario())
    assert [(log["event"], log["log_level"], log["error"]) for log in logs] == [
        ("delivery.close_failed", "debug", "TimeoutError()")
    ]


def test_a_close_that_fails_is_logged_and_goes_no_further() -> None:
    async def scenario() -> list[dict[str, Any]]:
        link = connected_link(Connection(error=ConnectionResetError("reset by peer")))
        with capture_logs() as logs:
            link.failed("gone")
            await link.close()  # raises nothing
        return logs

    logs = asyncio.run(scenario())
    assert [(log["event"], log["error"]) for log in logs] == [
        ("delivery.close_failed", "ConnectionResetError('reset by peer')")
    ]


def test_the_sinks_close_releases_the_node_without_counting_a_failure() -> None:
    async def scenario() -> None:
        connection = Connection()
        link = connected_link(connection)
        order = [url for _, url in link.nodes.attempts()]
        await link.close()
        assert connection.closed
        assert link.nodes.in_use is None
        assert [url for _, url in link.nodes.attempts()] == order  # the same node first again

    asyncio.run(scenario())


def test_closed_connections_are_not_kept() -> None:
    """A sink failing over for months must not keep every connection it ever left."""

    async def scenario() -> None:
        link = connected_link(Connection())
        for n in range(5):
            link.connection = Connection()
            link.failed(f"failure {n}")
        await asyncio.sleep(0.05)  # each background close ran
        assert link._closing == set()
        await asyncio.wait_for(link.close(), 30.0)

    asyncio.run(scenario())
