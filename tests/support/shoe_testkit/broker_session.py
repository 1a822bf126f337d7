"""Test support for the AMQP tests: one real RabbitMQ node for the whole session.

Not a test module. Import the fixture into a test module:

    (tests/conftest.py gives the `broker` fixture)

and ask for `broker`: the session's `shoe_testkit.broker.Broker`, started on first
use (a few seconds, once) and stopped when the session ends. Before each test it undoes whatever
the previous test did to it (killed, refusing, confirms paused), so tests may break it freely.
Tests share the node: give queues and exchanges names of their own (`unique_name`).
It skips, saying why, where rabbitmq-server is not installed.
"""

from __future__ import annotations

import secrets
import socket

import pytest

from shoe_testkit.broker import Broker, BrokerError, missing

# The node lives in the session's stash, not in a module global or a session-scoped fixture:
# a fixture imported into several test modules is a separate fixture in each of them, and
# would start one broker per module.
_SHARED = pytest.StashKey[Broker | BrokerError]()


def shared_broker(config: pytest.Config) -> Broker:
    """The session's broker, started on first call; skips when RabbitMQ is not installed."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    shared = config.stash.get(_SHARED, None)
    if shared is None:
        broker = Broker()
        config.add_cleanup(broker.stop)
        try:
            broker.start()
        except BrokerError as error:
            config.stash[_SHARED] = error  # fail every test fast, not after 60 s each
            raise
        config.stash[_SHARED] = shared = broker
    if isinstance(shared, BrokerError):
        raise BrokerError(f"the session's broker failed to start: {shared}")
    return shared


def unique_name(prefix: str) -> str:
    """A queue or exchange name no other test uses on the shared node."""
    return f"{prefix}.{secrets.token_hex(4)}"


def port_refuses(port: int, host: str = "127.0.0.1") -> bool:
    """True when a TCP connect to host:port is refused right now."""
    try:
        with socket.create_connection((host, port), timeout=5.0):
            return False
    except ConnectionRefusedError:
        return True
