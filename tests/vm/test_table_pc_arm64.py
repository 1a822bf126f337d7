"""The table PC on ARM: the image's recipe for arm64, booted by qemu-system-aarch64 (TCG),
with an arm64 build of the package, dealing a whole shoe from a USB serial shoe.

Many table PCs are ARM boards. Here every arm64 program of the image's and the package's
builds runs under qemu-user (shoe_testkit.tablepc.foreign), and the guest on an emulated
CPU: together more than the whole `.ci/run` may take on this machine kind (docs/table-pc.md,
"ARM", has the figures). So this module runs when `SHOE_TABLEPC_ARM64=1` asks for it, alone
(`pytest tests/vm/test_table_pc_arm64.py`), and the default run says why it did not.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from shoe_testkit.tablepc import builder
from shoe_testkit.tablepc.host_table import HostTable
from shoe_testkit.tablepc.image import Image, built_image, why_no_image
from shoe_testkit.tablepc.machine import TablePC, Wiring
from shoe_testkit.tablepc.promises import assert_nothing_lost_or_doubled, journal_cards
from shoe_testkit.tablepc.station import UNIT, USB_SERIAL_RULE, TableStation

ARCH = "arm64"
REPORT = os.environ.get("SHOE_TABLEPC_REPORT")  # a file for the figures, if set

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("SHOE_TABLEPC_ARM64") != "1",
        reason="the arm64 table PC (image, package and boot under emulation) takes longer than"
        " the whole CI run may here: SHOE_TABLEPC_ARM64=1 runs it (docs/table-pc.md, ARM)",
    ),
]

Figures = dict[str, float]  # each stage's seconds and the shoe's counts, for docs/table-pc.md


@contextlib.contextmanager
def stopwatch(figures: Figures, name: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    figures[name] = round(time.monotonic() - started, 1)


@pytest.fixture(name="figures", scope="module")
def figures_fixture() -> Iterator[Figures]:
    figures: Figures = {}
    yield figures
    if REPORT:
        Path(REPORT).write_text(json.dumps(figures, indent=1) + "\n")


@pytest.fixture(name="arm_image", scope="module")
def arm_image_fixture(figures: Figures, tmp_path_factory: pytest.TempPathFactory) -> Image:
    why = why_no_image(ARCH)
    if why is not None:
        pytest.skip(why)
    with stopwatch(figures, "image_s"):
        return built_image(ARCH, log=tmp_path_factory.mktemp("image-arm64") / "build.log")


@pytest.fixture(name="arm_deb", scope="module")
def arm_deb_fixture(figures: Figures, tmp_path_factory: pytest.TempPathFactory) -> Path:
    with stopwatch(figures, "package_s"):
        return builder.build_deb(ARCH, tmp_path_factory.mktemp("deb-arm64"))


@pytest.fixture(name="arm_station", scope="module")
def arm_station_fixture(
    figures: Figures, arm_image: Image, arm_deb: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TableStation]:
    """The arm64 table PC booted, the arm64 package installed, the shoe on a USB serial
    adapter (the virt machine's one UART is its console), the service started."""
    root = tmp_path_factory.mktemp("tablepc-arm64")
    host = HostTable(root / "host").start()
    share = root / "share"
    share.mkdir()
    pc = TablePC(
        arm_image,
        root / "guest",
        Wiring(usb_serial_port=host.shoe_tty, server_port=host.receiver_port, share=share),
    )
    station = TableStation(host, pc, share)
    try:
        with stopwatch(figures, "boot_s"):
            pc.boot()
        with stopwatch(figures, "install_s"):
            station.install(arm_deb)
        station.configure(shoe_rule=USB_SERIAL_RULE)
        pc.run(["systemctl", "start", UNIT]).check()
        yield station
    finally:
        pc.shutdown()
        host.close()


def test_an_arm_table_pc_deals_a_whole_shoe_once_and_in_order(
    arm_station: TableStation, figures: Figures
) -> None:
    station = arm_station
    with stopwatch(figures, "ready_s"):
        state = station.wait_active(patience=900)
    figures["ready_after_power_on_s"] = round(state.ready_after_s, 1)
    assert station.pc.run(["uname", "-m"]).check().stdout.strip() == "aarch64"
    built_for = station.pc.run(["dpkg-query", "-W", "-f=${Architecture}", "shoe-controller"])
    assert built_for.check().stdout == ARCH
    user = station.pc.run(["ps", "-o", "user=", "-p", str(state.main_pid)]).check().stdout
    assert user.strip() == "shoe-controller"
    port = station.pc.run(["readlink", "-f", "/dev/shoe-scanner"]).check().stdout.strip()
    assert port.startswith("/dev/ttyUSB"), port
    with stopwatch(figures, "shoe_s"):
        station.deal_shoe()
    counts = assert_nothing_lost_or_doubled(station)
    figures.update(counts)
    assert counts["cards_stored"] == len(journal_cards(station))
    assert "VERIFIED" in station.verify_copy()
    assert station.service().restarts == 0
