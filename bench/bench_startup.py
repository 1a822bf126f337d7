"""Benchmark: whole-process start-up of the commands, as ratios to `python -c "import click"`.

Each command runs as a new process N times (after one untimed run that warms the disk cache and
the .pyc files); the runs of all commands are interleaved so that the machine's noise falls on
each alike. Printed: median and best wall time, and the median's ratio to the baseline, a bare
interpreter importing click (what any of our commands needs at the least), measured in this run
with the same interpreter. The aim: `shoe-controller --help`, `odds` and `shoectl --help`
within 2x of it. Importing the daemon is shown for information (`run` pays it once at start).

Run (package installed, or PYTHONPATH=.): python bench/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from latency import percentile

COMMANDS: dict[str, list[str]] = {
    'python -c "import click" (baseline)': ["-c", "import click"],
    "shoe-controller --help": ["-m", "shoe_controller.cli", "--help"],
    "shoe-controller odds --decks 8": ["-m", "shoe_controller.cli", "odds", "--decks", "8"],
    "shoectl --help": ["-m", "shoe_controller.cli.shoectl", "--help"],
    "import shoe_controller.service.daemon": ["-c", "import shoe_controller.service.daemon"],
}
BASELINE = next(iter(COMMANDS))


def wall_time(arguments: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *arguments], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=21,
        help="timed runs of each command (odd: the median is one run)",
    )
    args = parser.parse_args(argv)
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for arguments in COMMANDS.values():
        wall_time(arguments)
    for _ in range(args.runs):
        for name, arguments in COMMANDS.items():
            samples[name].append(wall_time(arguments))
    base = percentile(samples[BASELINE], 0.50)
    print(f"process start-up, {args.runs} runs each ({sys.executable})")
    for name, times in samples.items():
        median = percentile(times, 0.50)
        print(
            f"  {name:<40} median {median * 1e3:7.1f} ms   best {min(times) * 1e3:7.1f} ms   "
            f"ratio to baseline {median / base:5.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
