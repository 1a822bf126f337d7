"""Fixtures of the system tests: a shoectl client run as nobody."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from shoe_testkit.control import REPO
from shoe_testkit.users import can_switch_user


@pytest.fixture(scope="module")
def nobody_env() -> Iterator[dict[str, str]]:
    """PYTHONPATH for a client run as nobody, who cannot read root's site-packages: the
    repository and a world-readable copy of click (shoectl's only third-party import)."""
    if not can_switch_user():
        pytest.skip("needs root and setpriv to run shoectl as another user")
    libs = Path(tempfile.mkdtemp(prefix="shoectl-libs-", dir="/tmp"))
    try:
        shutil.copytree(Path(click.__file__).parent, libs / "click")
        for path in (libs, *libs.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield {"PYTHONPATH": f"{REPO}{os.pathsep}{libs}"}
    finally:
        shutil.rmtree(libs, ignore_errors=True)
