"""The journal and sink as the daemon has them for one table server, for tests and benches.

The sink "server" ([server]) takes every event here, so its seqs are the journal's: what
the tests of marks, retention and the push API count on.
"""

from __future__ import annotations

from typing import Any

from shoe_controller.delivery.push import PushConfig, PushSink
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.store.journal import Journal
from shoe_controller.store.schema import LEGACY_SINK

SERVER = LEGACY_SINK
TO_SERVER = {SERVER: lambda _type: True}


def open_journal(*args: Any, **options: Any) -> Journal:
    return Journal.open(*args, routes=TO_SERVER, **options)


def delivered(journal: Journal, sink: str = SERVER) -> int:
    mark = journal.sinks.marks().get(sink)  # none before the journal's first write
    return 0 if mark is None else mark.delivered_through


def backlog(journal: Journal, sink: str = SERVER) -> int:
    mark = journal.sinks.marks().get(sink)
    return 0 if mark is None else mark.backlog


def server_sink(journal: Journal, config: PushConfig, **options: Any) -> PushSink:
    """The table server's sink over `journal`, as the daemon builds it for [server]."""
    return PushSink(SERVER, SinkBacklog(journal, SERVER), config, **options)
