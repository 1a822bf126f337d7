"""What building a device needs, in drivers' own terms: its role, name, address, protocol, kind,
timings.

The daemon converts its ``[scanner]`` / ``[shuffler]`` sections into a ``DeviceSpec``
(shoe_controller/service/devices.py); the monitor builds one from its options. Addresses are a
pyserial URL or device path (``/dev/ttyUSB0``, ``socket://host:port``, ``rfc2217://...``) or a
``UsbAddress``; ``parse_address`` reads the monitor's ``usb:VID:PID[:SERIAL]`` (hex ids).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from drivers.adapters import DEFAULT_BAUD as ASCII_BAUD
from drivers.transports.base import DEFAULT_BAUDRATE as SLP_BAUD

PROTOCOLS = ("slp", "beetek", "linecode")  # the reference protocol, then the vendor ASCII ones
SHUFFLER_KINDS = ("shuffler", "shuffler_dealer")


class DeviceRole(StrEnum):
    """Which of the table's two devices one is: its configuration section, and the `device` of
    its inputs. What a device is asked to do follows from its role, never from its name."""

    SCANNER = "scanner"  # the shoe the cards are dealt from (or a shuffler-dealer dealing)
    SHUFFLER = "shuffler"  # the machine that shuffles between shoes

    @property
    def shows_lights(self) -> bool:
        """The table's lights (INDICATE) are shown on the device it deals from."""
        return self is DeviceRole.SCANNER

    @property
    def shuffles(self) -> bool:
        """A batch shuffler is asked to shuffle when a shoe ends."""
        return self is DeviceRole.SHUFFLER

    @classmethod
    def of(cls, name: str, kind: str | None) -> DeviceRole:
        """A device's role by its name, or, for a name that is not a role (the monitor's
        `--device`), by its kind."""
        if name in cls._value2member_map_:
            return cls(name)
        return cls.SHUFFLER if kind in SHUFFLER_KINDS else cls.SCANNER


@dataclass(frozen=True, slots=True)
class UsbAddress:
    """A USB device by its vendor and product ids, and its serial number when several share them."""

    vid: int
    pid: int
    serial: str | None = None


Address = str | UsbAddress  # a pyserial URL or device path, or a USB device


def parse_address(text: str) -> Address:
    """`usb:VID:PID[:SERIAL]` (hex ids) as a `UsbAddress`; any other text is a pyserial URL.

    ValueError, saying what is expected, for a `usb:` address that is not one."""
    if not text.startswith("usb:"):
        return text
    parts = text.split(":")
    if len(parts) not in (3, 4):
        raise ValueError(f"{text!r}: expected usb:VID:PID[:SERIAL]")
    try:
        vid, pid = int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        raise ValueError(f"{text!r}: VID and PID are hex") from None
    return UsbAddress(vid, pid, parts[3] if len(parts) == 4 else None)


def default_baud(protocol: str) -> int:
    """The serial speed a protocol runs at unless configured: 115200 slp, 9600 the ASCII ones."""
    return SLP_BAUD if protocol == "slp" else ASCII_BAUD


@dataclass(frozen=True, slots=True)
class DeviceTimings:
    """docs/spec-protocol.md's silence and backoff, and how often an idle port wakes up."""

    silence_timeout: float = 3.0  # a reference device is silent after this long without a frame
    backoff_initial: float = 0.5  # reopening a vanished port: 0.5 s doubling to 10 s
    backoff_max: float = 10.0
    # Reads return as soon as bytes arrive; these only pace the timers and an idle port's
    # wake-ups (20 ms / 50 ms cost ~3 % CPU per idle device on a table PC).
    poll_interval: float = 0.05
    read_timeout: float = 0.2


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """One device: its role, its name in the inputs, where it is, what it speaks and which kind
    it is."""

    role: DeviceRole
    name: str  # the `device` of every input it produces: the role's, but for the monitor's
    address: Address
    protocol: str = "slp"
    baud: int = 0  # 0: the protocol's default
    kind: str | None = None  # rfid, optical, shuffler, shuffler_dealer; None: HELLO says it
    timings: DeviceTimings = field(default_factory=DeviceTimings)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}")

    @property
    def baud_rate(self) -> int:
        return self.baud or default_baud(self.protocol)

    @property
    def acknowledged(self) -> bool:
        """The reference protocol ACKs each frame; the vendor ASCII shoes acknowledge nothing."""
        return self.protocol == "slp"
