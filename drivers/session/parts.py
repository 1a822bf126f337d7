"""The parts a device runs with, built from its `DeviceSpec`: for the daemon and the monitor alike.

- transport: `SerialTransport` for a pyserial URL, `UsbTransport` for a `UsbAddress`;
- protocol object: a `HostLink` for the reference protocol, else the vendor ASCII adapter
  (`BeetekAdapter`, `LineCodeAdapter`), which also turns its readings into inputs;
- translator (reference protocol): `make_translator`, the one rule that picks it;
- silence: docs/spec-protocol.md's timeout for the reference protocol; none for the ASCII shoes,
which
  send no heartbeat (an idle shoe is quiet, not silent);
- the `DeviceConnection` that runs them on the asyncio loop (the port opens when its
  `messages()` starts).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drivers.adapters import TextAdapter
from drivers.adapters.beetek import BeetekAdapter
from drivers.adapters.linecode import LineCodeAdapter
from drivers.session.spec import SHUFFLER_KINDS, Address, DeviceRole, DeviceSpec, UsbAddress
from drivers.translate.base import Translator
from drivers.translate.registry import DeckRegistry
from drivers.translate.scanner import ScannerTranslator
from drivers.translate.shuffler import ShufflerTranslator
from drivers.transports.base import Transport
from drivers.transports.connection import ConnectionStatus, DeviceConnection
from drivers.transports.serial import SerialTransport
from drivers.transports.usb import UsbTransport
from drivers.wire.link import HostLink

StatusCallback = Callable[[ConnectionStatus, "str | None"], None]


def make_transport(
    address: Address, baud: int, *, read_timeout: float, usb_backend: Any = None
) -> Transport:
    """The transport for an address: a serial port (any pyserial URL) or a USB device."""
    if isinstance(address, UsbAddress):
        return UsbTransport(
            address.vid,
            address.pid,
            serial_number=address.serial,
            backend=usb_backend,
            read_timeout=read_timeout,
        )
    return SerialTransport(address, baudrate=baud, read_timeout=read_timeout)


def make_translator(
    role: DeviceRole, name: str, kind: str | None, registry: DeckRegistry | None
) -> Translator:
    """A reference-protocol device's translator, by its role and kind; `name` is its inputs'.

    The table's shuffler, a shuffler kind, or a kind not said get a `ShufflerTranslator`: it
    takes any device (a shuffler-dealer also deals) and learns the kind from HELLO. A shoe
    (rfid, optical) gets a `ScannerTranslator`.
    """
    if role is DeviceRole.SHUFFLER or kind is None or kind in SHUFFLER_KINDS:
        shuffler_kind = kind if kind in SHUFFLER_KINDS else None
        return ShufflerTranslator(device=name, kind=shuffler_kind, registry=registry)
    return ScannerTranslator(device=name, registry=registry, kind=kind)


def make_adapter(name: str, protocol: str, kind: str | None) -> TextAdapter:
    """A vendor ASCII shoe's adapter (an optical shoe unless said otherwise)."""
    adapter_class = BeetekAdapter if protocol == "beetek" else LineCodeAdapter
    return adapter_class(device=name, kind=kind or "optical")


@dataclass(frozen=True, slots=True)
class DeviceParts:
    """A device ready to run: its connection and what speaks its protocol.

    The reference protocol has `link` and `translator`; a vendor ASCII shoe has `adapter`."""

    spec: DeviceSpec
    connection: DeviceConnection[Any]
    link: HostLink | None
    translator: Translator | None
    adapter: TextAdapter | None


def build_device(
    spec: DeviceSpec,
    *,
    registry: DeckRegistry | None = None,
    transport: Transport | None = None,
    usb_backend: Any = None,
    on_status: StatusCallback | None = None,
) -> DeviceParts:
    """The parts of the device `spec` describes; `transport` replaces the one its address names
    (the monitor's watched port), `on_status` hears the connection's status changes."""
    if transport is None:
        transport = make_transport(
            spec.address,
            spec.baud_rate,
            read_timeout=spec.timings.read_timeout,
            usb_backend=usb_backend,
        )
    link: HostLink | None = None
    translator: Translator | None = None
    adapter: TextAdapter | None = None
    if spec.acknowledged:
        link = HostLink()
        translator = make_translator(spec.role, spec.name, spec.kind, registry)
        silence = spec.timings.silence_timeout
    else:
        adapter = make_adapter(spec.name, spec.protocol, spec.kind)
        silence = math.inf  # these shoes send no heartbeat: quiet is not silence
    timings = spec.timings
    connection: DeviceConnection[Any] = DeviceConnection(
        transport,
        link if link is not None else adapter,  # type: ignore[arg-type]
        silence_timeout=silence,
        backoff_initial=timings.backoff_initial,
        backoff_max=timings.backoff_max,
        poll_interval=timings.poll_interval,
        on_status=on_status,
    )
    return DeviceParts(spec, connection, link, translator, adapter)
