"""The virtual table PC (docs/table-pc.md): one booted Debian 12 for the folder's tests.

The image is built once per recipe and cached outside the repository; the package is built
once a run (the `debs` fixture) and installed into the guest with apt, as a technician does.
The tests of tests/vm/test_table_pc.py run in the order they are written, on one machine,
one after the other (a boot under TCG costs half a minute): each leaves the table dealing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from shoe_testkit.debian_build import Debs
from shoe_testkit.tablepc.host_table import HostTable
from shoe_testkit.tablepc.image import Image, built_image, why_no_image
from shoe_testkit.tablepc.machine import TablePC, Wiring
from shoe_testkit.tablepc.station import TableStation

STATE_DISK_MB = 48  # /var/lib/shoe-controller's own file system: small enough to fill


@pytest.fixture(name="image", scope="session")
def image_fixture(tmp_path_factory: pytest.TempPathFactory) -> Image:
    why = why_no_image()
    if why is not None:
        pytest.skip(why)
    return built_image(log=tmp_path_factory.mktemp("image") / "build.log")


@pytest.fixture(name="station", scope="session")
def station_fixture(
    image: Image, debs: Debs, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TableStation]:
    """The table PC booted, the package installed and configured, the service started."""
    root = tmp_path_factory.mktemp("tablepc")
    host = HostTable(root / "host").start()
    share = root / "share"
    share.mkdir()
    state_disk = root / "state.img"
    subprocess.run(["truncate", "-s", f"{STATE_DISK_MB}M", str(state_disk)], check=True)
    pc = TablePC(
        image,
        root / "guest",
        Wiring(
            serial_port=host.shoe_tty,
            server_port=host.receiver_port,
            share=share,
            extra_disks=(state_disk,),
        ),
    )
    station = TableStation(host, pc, share)
    try:
        pc.boot()
        station.state_disk()
        station.install(debs.first)
        station.configure()
        pc.run(["systemctl", "start", "shoe-controller"]).check()
        yield station
    finally:
        pc.shutdown()
        host.close()
