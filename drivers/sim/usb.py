"""A virtual pyusb backend: simulated devices behind ``usb.core.find(backend=...)``.

``VirtualUsbBackend`` implements ``usb.backend.IBackend`` so pyusb's real core (descriptor
parsing, configuration, interface claiming, endpoint lookup, string descriptors) runs
unchanged; only the wire is simulated. Each ``VirtualUsbDevice`` has one configuration with
one vendor-specific interface (class 0xFF) holding a bulk OUT (0x01) and a bulk IN (0x81)
endpoint, and string descriptors for manufacturer, product and serial number.

Bulk OUT feeds the simulated device; bulk IN drives it (``tick`` with the clock, so it deals
while the host is reading) and returns its output, waiting up to the transfer timeout. The
calls may come from several threads (a reader and a writer); one lock serialises them.
``unplug()`` makes every transfer fail with ENODEV and hides the device from enumeration;
``plug()`` brings it back, and it greets the host with HELLO as after a reconnect.
"""

from __future__ import annotations

import array
import errno
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import usb.backend
import usb.core

from drivers.sim.base import SimDevice

BULK_OUT = 0x01
BULK_IN = 0x81
MAX_PACKET = 64
_GET_DESCRIPTOR = 0x06
_STRING_DESCRIPTOR = 0x03
_LANGID_EN_US = 0x0409
_POLL = 0.001


@dataclass(slots=True)
class _DeviceDescriptor:
    idVendor: int  # noqa: N815  (pyusb's field names)
    idProduct: int  # noqa: N815
    bus: int
    address: int
    bLength: int = 18  # noqa: N815
    bDescriptorType: int = 1  # noqa: N815
    bcdUSB: int = 0x0200  # noqa: N815
    bDeviceClass: int = 0  # noqa: N815
    bDeviceSubClass: int = 0  # noqa: N815
    bDeviceProtocol: int = 0  # noqa: N815
    bMaxPacketSize0: int = 64  # noqa: N815
    bcdDevice: int = 0x0100  # noqa: N815
    iManufacturer: int = 1  # noqa: N815
    iProduct: int = 2  # noqa: N815
    iSerialNumber: int = 3  # noqa: N815
    bNumConfigurations: int = 1  # noqa: N815
    port_number: int | None = None
    port_numbers: tuple[int, ...] | None = None
    speed: int | None = 3  # high speed


@dataclass(slots=True)
class _ConfigurationDescriptor:
    bLength: int = 9  # noqa: N815
    bDescriptorType: int = 2  # noqa: N815
    wTotalLength: int = 32  # noqa: N815
    bNumInterfaces: int = 1  # noqa: N815
    bConfigurationValue: int = 1  # noqa: N815
    iConfiguration: int = 0  # noqa: N815
    bmAttributes: int = 0x80  # noqa: N815
    bMaxPower: int = 50  # noqa: N815
    extra_descriptors: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _InterfaceDescriptor:
    bLength: int = 9  # noqa: N815
    bDescriptorType: int = 4  # noqa: N815
    bInterfaceNumber: int = 0  # noqa: N815
    bAlternateSetting: int = 0  # noqa: N815
    bNumEndpoints: int = 2  # noqa: N815
    bInterfaceClass: int = 0xFF  # noqa: N815  vendor-specific
    bInterfaceSubClass: int = 0  # noqa: N815
    bInterfaceProtocol: int = 0  # noqa: N815
    iInterface: int = 0  # noqa: N815
    extra_descriptors: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _EndpointDescriptor:
    bEndpointAddress: int  # noqa: N815
    bLength: int = 7  # noqa: N815
    bDescriptorType: int = 5  # noqa: N815
    bmAttributes: int = 0x02  # noqa: N815  bulk
    wMaxPacketSize: int = MAX_PACKET  # noqa: N815
    bInterval: int = 0  # noqa: N815
    bRefresh: int = 0  # noqa: N815
    bSynchAddress: int = 0  # noqa: N815
    extra_descriptors: list[int] = field(default_factory=list)


_ENDPOINTS = (_EndpointDescriptor(BULK_OUT), _EndpointDescriptor(BULK_IN))


class VirtualUsbDevice:
    """One simulated device on the virtual bus."""

    def __init__(
        self,
        device: SimDevice,
        *,
        vid: int,
        pid: int,
        serial_number: str | None = None,
        manufacturer: str = "shoe-controller",
        product: str = "SLP simulator",
        bus: int = 1,
        address: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.device = device
        self.clock = clock
        self.descriptor = _DeviceDescriptor(vid, pid, bus, address)
        self.strings = {
            1: manufacturer,
            2: product,
            3: serial_number or device.config.serial_number,
        }
        self.plugged = True
        self.configuration = 1
        self.claimed_by: dict[int, int] = {}  # interface -> handle id
        self.lock = threading.RLock()
        self._pending = bytearray()  # device output not yet read by the host
        self._connected = False

    @property
    def serial_number(self) -> str:
        return self.strings[3]

    def unplug(self) -> None:
        with self.lock:
            self.plugged = False
            self.claimed_by.clear()
            self._pending.clear()
            self._connected = False
            self.device.disconnect()

    def plug(self) -> None:
        with self.lock:
            self.plugged = True

    def _require_plugged(self) -> None:
        if not self.plugged:
            raise usb.core.USBError(
                "No such device (it may have been disconnected)", -4, errno.ENODEV
            )

    def _service(self) -> None:
        """Advance the simulated device to now (lock held)."""
        now = self.clock()
        if not self._connected:
            self._connected = True
            self.device.connect(now)
        self.device.tick(now)
        self._pending += self.device.output(now)

    def write(self, data: bytes) -> int:
        with self.lock:
            self._require_plugged()
            self._service()
            self.device.receive_bytes(bytes(data), self.clock())
            self._service()
            return len(data)

    def read(self, size: int, timeout_ms: int) -> bytes:
        deadline = self.clock() + timeout_ms / 1000.0
        while True:
            with self.lock:
                self._require_plugged()
                self._service()
                if self._pending:
                    chunk = bytes(self._pending[:size])
                    del self._pending[:size]
                    return chunk
            if self.clock() >= deadline:
                raise usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)
            time.sleep(_POLL)


@dataclass(slots=True)
class _Handle:
    device: VirtualUsbDevice
    number: int


class VirtualUsbBackend(usb.backend.IBackend):
    """pyusb backend over ``VirtualUsbDevice`` objects (pass it as ``backend=``)."""

    def __init__(self, devices: list[VirtualUsbDevice] | None = None) -> None:
        self.devices: list[VirtualUsbDevice] = list(devices or [])
        self._handles = 0

    def add(self, device: VirtualUsbDevice) -> VirtualUsbDevice:
        self.devices.append(device)
        return device

    # -- enumeration and descriptors --------------------------------------------------------

    def enumerate_devices(self) -> Iterator[VirtualUsbDevice]:
        return iter([device for device in self.devices if device.plugged])

    def get_parent(self, dev: VirtualUsbDevice) -> None:
        return None

    def get_device_descriptor(self, dev: VirtualUsbDevice) -> _DeviceDescriptor:
        return dev.descriptor

    def get_configuration_descriptor(
        self, dev: VirtualUsbDevice, config: int
    ) -> _ConfigurationDescriptor:
        if config != 0:
            raise IndexError(f"no configuration {config}")
        return _ConfigurationDescriptor()

    def get_interface_descriptor(
        self, dev: VirtualUsbDevice, intf: int, alt: int, config: int
    ) -> _InterfaceDescriptor:
        if (config, intf, alt) != (0, 0, 0):
            raise IndexError(f"no interface {intf} alt {alt} in configuration {config}")
        return _InterfaceDescriptor()

    def get_endpoint_descriptor(
        self, dev: VirtualUsbDevice, ep: int, intf: int, alt: int, config: int
    ) -> _EndpointDescriptor:
        if (config, intf, alt) != (0, 0, 0) or not 0 <= ep < len(_ENDPOINTS):
            raise IndexError(f"no endpoint {ep}")
        return _ENDPOINTS[ep]

    # -- handles, configuration, interfaces ----------------------------------------------

    def open_device(self, dev: VirtualUsbDevice) -> _Handle:
        dev._require_plugged()
        self._handles += 1
        return _Handle(dev, self._handles)

    def close_device(self, dev_handle: _Handle) -> None:
        device = dev_handle.device
        with device.lock:
            for interface, owner in list(device.claimed_by.items()):
                if owner == dev_handle.number:
                    del device.claimed_by[interface]

    def set_configuration(self, dev_handle: _Handle, config_value: int) -> None:
        dev_handle.device._require_plugged()
        if config_value not in (0, 1):
            raise usb.core.USBError("Invalid configuration", -2, errno.EINVAL)
        dev_handle.device.configuration = config_value

    def get_configuration(self, dev_handle: _Handle) -> int:
        dev_handle.device._require_plugged()
        return dev_handle.device.configuration

    def set_interface_altsetting(self, dev_handle: _Handle, intf: int, altsetting: int) -> None:
        if (intf, altsetting) != (0, 0):
            raise usb.core.USBError("Invalid parameter", -2, errno.EINVAL)

    def claim_interface(self, dev_handle: _Handle, intf: int) -> None:
        device = dev_handle.device
        with device.lock:
            device._require_plugged()
            owner = device.claimed_by.get(intf)
            if owner is not None and owner != dev_handle.number:
                raise usb.core.USBError("Resource busy", -6, errno.EBUSY)
            device.claimed_by[intf] = dev_handle.number

    def release_interface(self, dev_handle: _Handle, intf: int) -> None:
        device = dev_handle.device
        with device.lock:
            if device.claimed_by.get(intf) == dev_handle.number:
                del device.claimed_by[intf]

    def is_kernel_driver_active(self, dev_handle: _Handle, intf: int) -> bool:
        return False

    def detach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        return None

    def attach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        return None

    def clear_halt(self, dev_handle: _Handle, ep: int) -> None:
        dev_handle.device._require_plugged()

    def reset_device(self, dev_handle: _Handle) -> None:
        dev_handle.device._require_plugged()

    # -- transfers ------------------------------------------------------------------------

    def _check_claimed(self, dev_handle: _Handle, intf: int) -> None:
        device = dev_handle.device
        device._require_plugged()
        if device.claimed_by.get(intf) != dev_handle.number:
            raise usb.core.USBError("Interface not claimed", -5, errno.EACCES)

    def bulk_write(
        self, dev_handle: _Handle, ep: int, intf: int, data: array.array[int], timeout: int
    ) -> int:
        self._check_claimed(dev_handle, intf)
        if ep != BULK_OUT:
            raise usb.core.USBError("Invalid endpoint", -2, errno.EINVAL)
        return dev_handle.device.write(data.tobytes())

    def bulk_read(
        self, dev_handle: _Handle, ep: int, intf: int, buff: array.array[int], timeout: int
    ) -> int:
        self._check_claimed(dev_handle, intf)
        if ep != BULK_IN:
            raise usb.core.USBError("Invalid endpoint", -2, errno.EINVAL)
        size = len(buff) * buff.itemsize
        chunk = dev_handle.device.read(size, timeout or 1000)
        buff[: len(chunk)] = array.array("B", chunk)
        return len(chunk)

    def ctrl_transfer(  # noqa: PLR0917  (pyusb's IBackend signature)
        self,
        dev_handle: _Handle,
        bmRequestType: int,  # noqa: N803  (pyusb's parameter names)
        bRequest: int,  # noqa: N803
        wValue: int,  # noqa: N803
        wIndex: int,  # noqa: N803
        data: Any,
        timeout: int,
    ) -> int:
        device = dev_handle.device
        device._require_plugged()
        is_in = bmRequestType & 0x80
        if not (is_in and bRequest == _GET_DESCRIPTOR and wValue >> 8 == _STRING_DESCRIPTOR):
            raise usb.core.USBError("Pipe error", -9, errno.EPIPE)  # a STALL, as hardware does
        index = wValue & 0xFF
        if index == 0:
            payload = _LANGID_EN_US.to_bytes(2, "little")
        elif index in device.strings:
            payload = device.strings[index].encode("utf-16-le")
        else:
            raise usb.core.USBError("Pipe error", -9, errno.EPIPE)
        descriptor = bytes((2 + len(payload), _STRING_DESCRIPTOR)) + payload
        count = min(len(descriptor), len(data) * data.itemsize)
        data[:count] = array.array("B", descriptor[:count])
        return count
