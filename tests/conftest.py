"""The suite's shared fixtures, and one marker per folder.

Each test is marked with the folder it lives in (`table`, `store`, ..., `system`), so
`pytest -m "not system"` runs everything but the whole-system tests (docs/testing.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.broker import Broker
from shoe_testkit.broker_session import shared_broker
from shoe_testkit.control import LiveTable
from shoe_testkit.debian_build import Debs, build_debs, why_no_build

TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    del config
    for item in items:
        folder = item.path.relative_to(TESTS).parts[0]
        item.add_marker(getattr(pytest.mark, folder))


@pytest.fixture(name="broker")
def broker_fixture(request: pytest.FixtureRequest) -> Broker:
    """The session's RabbitMQ node, running, accepting connections and confirming."""
    shared = shared_broker(request.config)
    shared.heal()
    return shared


@pytest.fixture(name="live")
def live_fixture(tmp_path: Path) -> Iterator[LiveTable]:
    """A fresh LiveTable for one test: a control socket over a real controller and shoe."""
    table = LiveTable(tmp_path)
    try:
        yield table
    finally:
        table.close()


@pytest.fixture(name="debs", scope="session")
def debs_fixture(tmp_path_factory: pytest.TempPathFactory) -> Debs:
    """The project's .deb and the next version's, built once a run (dpkg-buildpackage)."""
    why = why_no_build()
    if why is not None:
        pytest.skip(why)
    return build_debs(tmp_path_factory.mktemp("deb"))
