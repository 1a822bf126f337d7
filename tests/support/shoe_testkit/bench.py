"""The benches' modules, for tests of their own bookkeeping (bench/ is not a package)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[3] / "bench"


def bench_module(name: str) -> ModuleType:
    """bench/NAME.py, imported with bench/ on the path for its siblings (latency.py)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))
