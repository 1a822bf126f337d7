"""A small tmpfs of its own for tests of a full disk (root only; skipped with the reason)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_tmpfs(mount_point: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of `size` (e.g. "1m") on `mount_point` for the duration."""
    mount_point.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root/CAP_SYS_ADMIN): {done.stderr}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path, leave: int) -> Path:
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    with filler.open("wb") as out:
        out.write(b"\0" * max(0, free - leave))
        out.flush()
        os.fsync(out.fileno())
    return filler
