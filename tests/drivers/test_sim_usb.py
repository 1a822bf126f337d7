"""The simulated devices behind pyusb's real core (virtual backend), through UsbTransport."""

from __future__ import annotations

import asyncio

import pytest
import usb.core
import usb.util
from shoe_testkit.device_kit import (
    collect,
    counters,
    disturbed_once,
    optical_shoe,
    watched_connection,
)

from drivers.sim.usb import BULK_IN, BULK_OUT, VirtualUsbBackend, VirtualUsbDevice
from drivers.transports.base import TransportError
from drivers.transports.connection import ConnectionStatus
from drivers.transports.usb import UsbTransport
from drivers.wire.link import HostLink
from drivers.wire.messages import Card, DeviceKind, Hello, Message

VID, PID = 0x1209, 0x5CAD


def virtual(serial: str, *, pace: float = 0.002, **fields: object) -> VirtualUsbDevice:
    device = optical_shoe(pace=pace, serial=serial, **fields)
    return VirtualUsbDevice(device, vid=VID, pid=PID)


def test_pyusb_core_sees_a_vendor_interface_with_bulk_endpoints() -> None:
    backend = VirtualUsbBackend([virtual("SHOE-7")])
    device = usb.core.find(idVendor=VID, idProduct=PID, backend=backend)
    assert device is not None
    assert (device.serial_number, device.manufacturer) == ("SHOE-7", "shoe-controller")
    interface = device.get_active_configuration()[(0, 0)]
    assert interface.bInterfaceClass == 0xFF
    endpoints = {ep.bEndpointAddress: usb.util.endpoint_type(ep.bmAttributes) for ep in interface}
    assert endpoints == {
        BULK_OUT: usb.util.ENDPOINT_TYPE_BULK,
        BULK_IN: usb.util.ENDPOINT_TYPE_BULK,
    }
    assert usb.core.find(idVendor=VID, idProduct=PID + 1, backend=backend) is None


def test_serial_number_picks_one_of_several_devices() -> None:
    backend = VirtualUsbBackend([virtual("A", seed=1), virtual("B", seed=2)])
    with pytest.raises(TransportError, match="2 devices match"):
        UsbTransport(VID, PID, backend=backend).open()
    transport = UsbTransport(VID, PID, serial_number="B", backend=backend)
    transport.open()
    try:
        link = HostLink()
        hello: Message | None = None
        for _ in range(100):
            deliveries = link.receive_data(transport.read())
            if deliveries:
                hello = deliveries[0].message
                break
        assert isinstance(hello, Hello)
        assert hello.serial == "B"
    finally:
        transport.close()
    with pytest.raises(TransportError, match="no such USB device"):
        UsbTransport(VID, PID, serial_number="C", backend=backend).open()


def test_the_interface_is_claimed_exclusively() -> None:
    backend = VirtualUsbBackend([virtual("X")])
    first, second = UsbTransport(VID, PID, backend=backend), UsbTransport(VID, PID, backend=backend)
    first.open()
    try:
        with pytest.raises(TransportError, match="busy"):
            second.open()
    finally:
        first.close()
    second.open()  # free again once the first let go
    second.close()


def test_an_unplugged_device_fails_reads_with_a_transport_error() -> None:
    gadget = virtual("U")
    transport = UsbTransport(VID, PID, backend=VirtualUsbBackend([gadget]))
    transport.open()
    gadget.unplug()
    with pytest.raises(TransportError, match="read failed"):
        transport.read()
    transport.close()
    with pytest.raises(TransportError):
        transport.open()


def test_eight_deck_shoe_over_usb_with_unplug_and_replug() -> None:
    gadget = virtual("SHOE-8", decks=8, pace=0.001, kind=DeviceKind.RFID_SHOE)
    backend = VirtualUsbBackend([gadget])
    connection, link, statuses = watched_connection(
        UsbTransport(VID, PID, serial_number="SHOE-8", backend=backend), backoff_initial=0.05
    )

    def unplug_for_a_while() -> None:
        gadget.unplug()
        asyncio.get_running_loop().call_later(0.3, gadget.plug)

    on_message = disturbed_once(200, unplug_for_a_while)
    received = asyncio.run(collect(connection, link, on_message))
    assert counters(received) == list(range(1, 417))
    assert len({m.uid for m in received if isinstance(m, Card)}) == 416
    assert ConnectionStatus.LOST in statuses
    assert connection.stats.reconnects >= 1
    assert len([m for m in received if isinstance(m, Hello)]) == 1  # same boot_id: ACK only
