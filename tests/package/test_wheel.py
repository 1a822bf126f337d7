"""The product's wheel holds the product and the integrators' kit, and no test harness.

The wheel is built from a copy of the tracked files (what a clean clone has) with pip, as the
Debian package's dh-virtualenv builds it, and its file list is read back from the archive.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# What only tests and benches use: the test kit's modules, by the names they had in the
# product before 2026-12-01 and have in tests/support/shoe_testkit/ now.
HARNESS_NAMES = (
    "shoe_testkit",
    "/testing/",
    "/broker/",
    "/scenario/",
    "perfect_dealer",
    "odds_reference",
    "one_server",
    "journal_writer",
    "conftest",
)


def _tracked_copy(destination: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True
    ).stdout.split("\0")
    source = destination / "source"
    for name in filter(None, listed):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, target)
    return source


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a clone: the wheel is built from the tracked files")
    work = tmp_path_factory.mktemp("wheel")
    source = _tracked_copy(work)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work), "."],
        cwd=source,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = work.glob("shoe_controller-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_no_test_harness(wheel_files: list[str]) -> None:
    harness = [name for name in wheel_files if any(part in name for part in HARNESS_NAMES)]
    assert harness == []
    assert not [name for name in wheel_files if name.startswith(("tests/", "bench/", "tools/"))]


def test_the_wheel_holds_the_product_and_the_integrators_kit(wheel_files: list[str]) -> None:
    # The product commands' parts: the daemon, the CLIs, the reference receiver, the demo rig,
    # the simulators the demo deals with, and the scoreboard page.
    for needed in (
        "shoe_controller/service/daemon.py",
        "shoe_controller/cli/main.py",
        "shoe_controller/kit/receiver/server.py",
        "shoe_controller/kit/rig/table_rig.py",
        "drivers/sim/shoe.py",
        "shoe_controller/service/scoreboard/static/",
    ):
        assert any(name.startswith(needed) for name in wheel_files), needed
    top_level = {name.split("/")[0] for name in wheel_files if "/" in name}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {
        "shoe_controller",
        "drivers",
    }
