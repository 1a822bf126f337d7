"""The daemon bench's CPU per card (bench/bench_daemon.py): a whole run, small (few paced
cards, one start of each kind), prints the minimal host's CPU per card, the daemon's over the
same shoe and their ratio. No timing is asserted: only that the figures are there and sane."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
from shoe_testkit.bench import bench_module

NUMBER = r"(\d+\.\d+)"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return bench_module("bench_daemon")


@pytest.mark.slow
def test_a_run_prints_the_cpu_per_card_of_both_hosts_and_their_ratio(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paced = 2  # the rest of the shoe at 100 cards/s: enough CPU for a clock tick or more
    bench.run(tmp_path, paced=paced, fast=bench.SHOE_CARDS - paced, idle_s=0.5, starts=1)
    out = capsys.readouterr().out
    minimal_ms = figure(rf"minimal host \(read, commit, ACK\), CPU per card +{NUMBER} ms", out)
    cards = bench.SHOE_CARDS
    daemon_ms = figure(rf"CPU per card, the shoe \({cards} cards\) +{NUMBER} ms", out)
    times = figure(rf"ratio to the minimal host, the same shoe +{NUMBER}x", out)
    assert minimal_ms > 0
    assert daemon_ms > 0
    # The ratio is of the totals; the per-card figures are printed rounded to the microsecond.
    assert times == pytest.approx(daemon_ms / minimal_ms, rel=0.05, abs=0.01)


def figure(pattern: str, out: str) -> float:
    """The number `pattern` captures in the bench's output (a zero's "inf" ratio does not)."""
    found = re.search(pattern, out)
    assert found is not None, f"{pattern!r} not in:\n{out}"
    return float(found[1])
