"""The stage bench's own bookkeeping (bench/bench_ack_stages.py): each of the three hosts it
compares gets the same cards through a real host link, stores them (the daemon's parts in a
real journal), and times every stage it has, card by card. No timing is asserted."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import ModuleType

import pytest
from shoe_testkit.bench import bench_module

from shoe_controller.store.journal import Journal

CARDS = 12


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return bench_module("bench_ack_stages")


def test_the_daemons_parts_store_every_card_and_time_each_stage(
    bench: ModuleType, tmp_path: Path
) -> None:
    messages = bench.frames(CARDS)
    times = bench.daemon_stages(tmp_path, messages, 0.0)
    assert {stage: len(samples) for stage, samples in times.items()} == dict.fromkeys(
        bench.STAGES, CARDS
    )  # the burn phase fed, not timed
    assert all(seconds >= 0 for samples in times.values() for seconds in samples)
    journal = Journal.open(tmp_path / "stages-0.0.db", None, read_only=True)
    try:
        cards = [step for step in journal.reads.replay_steps(1) if step.input["type"] == "card"]
    finally:
        journal.close()
    assert len(cards) == len(messages) - 1  # every CARD frame, after SHOE loaded


@pytest.mark.parametrize(
    ("host", "table", "timed"),
    [
        ("minimal_stages", "inputs", {"decode", "commit", "ack"}),
        ("input_first_stages", "inputs", {"decode", "translate", "commit", "ack"}),
    ],
)
def test_the_other_hosts_store_each_frame_and_time_their_own_stages(
    bench: ModuleType, tmp_path: Path, host: str, table: str, timed: set[str]
) -> None:
    messages = bench.frames(CARDS)
    times = getattr(bench, host)(tmp_path, messages, 0.0)
    assert {stage for stage, samples in times.items() if samples} == timed
    assert all(len(times[stage]) == CARDS for stage in timed)
    [database] = tmp_path.glob("*.db")
    with sqlite3.connect(database) as conn:
        stored = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    assert stored >= len(messages)  # SHOE loaded and every card (a card may add inputs)
