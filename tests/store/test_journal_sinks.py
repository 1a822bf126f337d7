"""Each sink's own numbering (store/backlogs.py), as a property: whatever the event types, the
filters, the commits and the restarts, every sink's seqs are 1, 2, 3 ... without a gap, each
naming exactly the next event its filter takes, in the journal's order."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st

from shoe_controller.delivery.routing import EventFilter
from shoe_controller.store.journal import Journal
from shoe_controller.vocab.events import iso_time

CONTROLLER = "tbl-07-shoe"
TYPES = ["card.dealt", "round.started", "round.result", "shoe.ended", "surveillance.edge"]
FILTERS = {
    "server": EventFilter(exclude=("surveillance.*",)),
    "rounds": EventFilter(("round.*",)),
    "surveillance": EventFilter(("surveillance.*",)),
    "nothing": EventFilter(("no.such.*",)),
}

# A commit is a list of inputs, each with its events' types; a run is commits with restarts.
inputs = st.lists(st.lists(st.sampled_from(TYPES), max_size=4), min_size=1, max_size=3)
runs = st.lists(st.tuples(inputs, st.booleans()), min_size=1, max_size=12)


class Restartable:
    """A journal in a directory of its own: `restart()` closes it and opens the file again."""

    def __init__(self, path: Path, routes: dict[str, EventFilter]) -> None:
        self.path, self.routes = path, routes
        self.journal = Journal.open(path, CONTROLLER, routes=routes)

    def restart(self) -> None:
        self.journal.close()
        self.journal = Journal.open(self.path, CONTROLLER, routes=self.routes)


@contextmanager
def restartable(routes: dict[str, EventFilter]) -> Iterator[Restartable]:
    with TemporaryDirectory() as directory:
        table = Restartable(Path(directory) / "journal.db", routes)
        try:
            yield table
        finally:
            table.journal.close()


def record(journal: Journal, commit: list[list[str]]) -> None:
    steps = [
        (
            {"type": "x"},
            [{"type": t, "at": iso_time(1.8e9), "shoe": 1, "round": 1, "data": {}} for t in types],
            1,
        )
        for types in commit
    ]
    journal.record_many(steps)


@settings(max_examples=60, deadline=None)
@given(runs, st.sets(st.sampled_from(sorted(FILTERS)), min_size=1))
def test_every_sink_numbers_exactly_the_events_it_takes_gap_free_across_restarts(
    run: list[tuple[list[list[str]], bool]], names: set[str]
) -> None:
    routes = {name: FILTERS[name] for name in names}
    with restartable(routes) as table:
        for commit, restart in run:
            record(table.journal, commit)
            if restart:  # the numbering goes on from what the file says
                table.restart()
        journal = table.journal
        events = journal.reads.events_after(0, 10**6)
        marks = journal.sinks.marks()
        for name, takes in routes.items():
            numbered = journal.sinks.events_after(name, 0, 10**6)
            assert [item.seq for item in numbered] == list(range(1, len(numbered) + 1))
            assert [item.event for item in numbered] == [e for e in events if takes(e.type)]
            assert all(item.to_wire()["id"] == item.event.id for item in numbered)
            mark = marks.get(name)
            assert (mark.last_seq if mark else 0) == len(numbered)
        assert journal.integrity.check() == []


@settings(max_examples=60, deadline=None)
@given(runs, st.sets(st.sampled_from(sorted(FILTERS)), min_size=1), st.data())
def test_what_a_sink_takes_from_memory_is_what_it_would_read(
    run: list[tuple[list[list[str]], bool]], names: set[str], data: st.DataObject
) -> None:
    """A sink that keeps up is handed the journal's latest events without a read:
    whatever it is handed, from wherever it stands, equals the read; its last seq likewise."""
    routes = {name: FILTERS[name] for name in names}
    with restartable(routes) as table:
        for commit, restart in run:
            journal = table.journal
            record(journal, commit)
            for name in routes:
                last = journal.sinks.last_seq(name)
                assert last == journal.sinks.marks()[name].last_seq
                seq = data.draw(st.integers(0, last), label=f"{name} stands at")
                limit = data.draw(st.integers(1, 5), label="batch")
                recent = journal.sinks.recent_events(name, seq, limit)
                if recent is not None:
                    assert recent == journal.sinks.events_after(name, seq, limit)
            if restart:  # memory starts empty: everything is read again
                table.restart()
                assert all(table.journal.sinks.recent_events(n, 0, 5) is None for n in routes)


def test_a_sink_that_keeps_up_is_handed_the_commit_and_nothing_pruned(tmp_path: Path) -> None:
    journal = Journal.open(
        tmp_path / "journal.db", CONTROLLER, routes={"server": FILTERS["server"]}
    )
    try:
        record(journal, [["round.started", "card.dealt"]])
        record(journal, [["card.dealt"]])
        handed = journal.sinks.recent_events("server", 1, 200)
        assert handed is not None
        assert [(item.seq, item.event.type) for item in handed] == [
            (2, "card.dealt"), (3, "card.dealt")
        ]  # fmt: skip
        assert journal.sinks.recent_events("server", 3, 200) == []  # up to date: nothing new
        assert journal.sinks.recent_events("nobody", 0, 200) is None
    finally:
        journal.close()
