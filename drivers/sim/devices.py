"""The simulator for a configured device kind: `make_device(config)`."""

from __future__ import annotations

from drivers.sim.base import SimConfig, SimDevice
from drivers.sim.shoe import ShoeSim
from drivers.sim.shufflers import ShufflerDealerSim, ShufflerSim
from drivers.wire.fields import DeviceKind


def make_device(config: SimConfig) -> SimDevice:
    """The simulator for ``config.kind``."""
    if config.kind in (DeviceKind.RFID_SHOE, DeviceKind.OPTICAL_SHOE):
        return ShoeSim(config)
    if config.kind == DeviceKind.BATCH_SHUFFLER:
        return ShufflerSim(config)
    return ShufflerDealerSim(config)
