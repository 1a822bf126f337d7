"""docs/spec-protocol.md's numbers that mean something beyond the wire: fault codes, severities, and
the INDICATE patterns the table asks the shoe to show.

The drivers encode and decode them (drivers.wire.messages); the table acts on them. Defined
once, here, so both layers read the same page.
"""

from __future__ import annotations

from enum import IntEnum


class FaultCode(IntEnum):
    """FAULT codes defined by the protocol; vendors use 0x8000 and up (kept as plain ints)."""

    JAM = 0x0001
    READ_FAILURE = 0x0002
    COVER_OPEN_WHILE_DEALING = 0x0003
    TAMPER = 0x0004
    SHUFFLER_JAM = 0x0101
    CARD_DROPPED_DURING_SHUFFLE = 0x0102  # R10.6
    SHUFFLER_DOOR_OPEN = 0x0103


VENDOR_FAULT_BASE = 0x8000
# Faults the host raises itself (docs/drivers.md "Fault codes the host raises"): no device
# will ever clear them, so the supervisor's own decision does (`resume`).
HOST_FAULT_BASE = 0xF000
# The daemon's own: the journal's disk nearly full (retention keeps what a sink still needs).
JOURNAL_SPACE_LOW = 0xF004
JOURNAL_DEVICE = "journal"  # the "device" its fault is raised for
SHUFFLER_FAULTS = range(0x0100, 0x0200)  # the shuffler's own; its deck check decides


class Severity(IntEnum):
    """FAULT ``severity``."""

    WARNING = 1
    ERROR = 2
    CRITICAL = 3


class IndicatePattern(IntEnum):
    """INDICATE ``pattern`` shown on the shoe's lights or display."""

    OFF = 0
    READY = 1
    BURN = 2  # arg = cards still to burn
    STOP = 3  # misdeal or supervisor needed
    INSURANCE_OPEN = 4  # hold the next card
    DEAL = 5  # arg = position due: 1 P1, 2 B1, 3 P2, 4 B2, 5 P3, 6 B3
    RESULT = 6  # arg: 1 player, 2 banker, 3 tie
    BETS_OPEN = 7  # do not deal yet; arg = seconds left when known, else 0
