"""A USB bulk device (pyusb) as a blocking byte transport."""

from __future__ import annotations

import contextlib
from typing import Any

import usb.core
import usb.util

from drivers.transports.base import READ_CHUNK, Transport, TransportError

# What pyusb's backends raise for an operation they do not offer (kernel driver detach on
# some platforms, string descriptors on some devices): a property of the device, not a bug.
_UNSUPPORTED = NotImplementedError


class UsbTransport(Transport):
    """A vendor-specific USB interface with one bulk OUT and one bulk IN endpoint (pyusb).

    ``backend`` is a pyusb backend (None: pyusb's default, libusb); the simulators pass a
    virtual one. ``serial_number`` picks one device when several share VID:PID.
    """

    def __init__(
        self,
        vid: int,
        pid: int,
        *,
        serial_number: str | None = None,
        backend: Any = None,
        read_timeout: float = 0.05,
        write_timeout: float = 2.0,
        interface_class: int = 0xFF,
    ) -> None:
        self.vid = vid
        self.pid = pid
        self.serial_number = serial_number
        self.backend = backend
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.interface_class = interface_class
        self.name = f"usb:{vid:04x}:{pid:04x}" + (f":{serial_number}" if serial_number else "")
        self._device: Any = None
        self._interface: Any = None
        self._ep_in: Any = None
        self._ep_out: Any = None

    @property
    def is_open(self) -> bool:
        return self._device is not None

    def open(self) -> None:
        self.close()
        try:
            device = self._find()
            self._claim(device)
        except TransportError:
            self.close()
            raise
        except (usb.core.USBError, ValueError, _UNSUPPORTED, OSError) as exc:
            self.close()
            raise TransportError(f"{self.name}: cannot open: {exc}") from exc

    def _find(self) -> Any:
        found = list(
            usb.core.find(
                find_all=True, idVendor=self.vid, idProduct=self.pid, backend=self.backend
            )
            or []
        )
        if self.serial_number is not None:
            found = [dev for dev in found if _serial_of(dev) == self.serial_number]
        if not found:
            raise TransportError(f"{self.name}: no such USB device")
        if len(found) > 1:
            serials = ", ".join(str(_serial_of(dev)) for dev in found)
            raise TransportError(
                f"{self.name}: {len(found)} devices match ({serials}); configure serial_number"
            )
        return found[0]

    def _claim(self, device: Any) -> None:
        try:
            config = device.get_active_configuration()
        except usb.core.USBError:
            device.set_configuration()
            config = device.get_active_configuration()
        interface = usb.util.find_descriptor(config, bInterfaceClass=self.interface_class)
        if interface is None:
            raise TransportError(f"{self.name}: no vendor-specific interface")
        number = interface.bInterfaceNumber
        with contextlib.suppress(_UNSUPPORTED, usb.core.USBError):
            if device.is_kernel_driver_active(number):
                device.detach_kernel_driver(number)
        self._device = device
        usb.util.claim_interface(device, number)
        self._interface = interface
        self._ep_in = _bulk_endpoint(interface, usb.util.ENDPOINT_IN)
        self._ep_out = _bulk_endpoint(interface, usb.util.ENDPOINT_OUT)
        if self._ep_in is None or self._ep_out is None:
            raise TransportError(f"{self.name}: interface {number} lacks bulk IN and OUT")

    def read(self, max_bytes: int = READ_CHUNK) -> bytes:
        if self._ep_in is None:
            raise TransportError(f"{self.name} is not open")
        packet = max(int(self._ep_in.wMaxPacketSize), 1)
        size = max(packet, max_bytes - max_bytes % packet)  # whole packets: no overflow
        try:
            data = self._ep_in.read(size, timeout=max(1, int(self.read_timeout * 1000)))
        except usb.core.USBTimeoutError:
            return b""
        except (usb.core.USBError, ValueError, OSError) as exc:
            raise TransportError(f"{self.name}: read failed: {exc}") from exc
        return bytes(data)

    def write(self, data: bytes) -> None:
        if self._ep_out is None:
            raise TransportError(f"{self.name} is not open")
        try:
            written = self._ep_out.write(data, timeout=max(1, int(self.write_timeout * 1000)))
        except (usb.core.USBError, ValueError, OSError) as exc:
            raise TransportError(f"{self.name}: write failed: {exc}") from exc
        if written != len(data):
            raise TransportError(f"{self.name}: wrote {written} of {len(data)} bytes")

    def close(self) -> None:
        device, self._device = self._device, None
        interface, self._interface = self._interface, None
        self._ep_in = self._ep_out = None
        if device is None:
            return
        with contextlib.suppress(Exception):  # the device may be gone already
            if interface is not None:
                usb.util.release_interface(device, interface.bInterfaceNumber)
        with contextlib.suppress(Exception):
            usb.util.dispose_resources(device)


def _serial_of(device: Any) -> str | None:
    try:
        return device.serial_number
    except (usb.core.USBError, ValueError, _UNSUPPORTED):
        return None


def _bulk_endpoint(interface: Any, direction: int) -> Any:
    return usb.util.find_descriptor(
        interface,
        custom_match=lambda ep: (
            usb.util.endpoint_direction(ep.bEndpointAddress) == direction
            and usb.util.endpoint_type(ep.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK
        ),
    )
