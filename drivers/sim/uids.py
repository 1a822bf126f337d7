"""Deterministic RFID tag UIDs for simulated decks, and the matching deck registry CSV files.

``uid_for(deck_serial, rank, suit)`` is a 7-byte UID (0x04, the NXP manufacturer byte, then
six bytes of SHA-256 of ``"deck_serial:rank:suit"``): the same deck always carries the same
tags, so a registry written once matches every later run. ``write_registry`` writes one CSV
per deck in the docs/spec-protocol.md format ``uid_hex,rank,suit,deck_serial`` (header row,
upper-case
hex, protocol numbers for rank and suit).
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterable
from pathlib import Path

UID_LENGTH = 7
REGISTRY_HEADER = ("uid_hex", "rank", "suit", "deck_serial")


def uid_for(deck_serial: str, rank: int, suit: int) -> bytes:
    """The tag UID of (rank, suit) in the deck with this serial."""
    digest = hashlib.sha256(f"{deck_serial}:{rank}:{suit}".encode()).digest()
    return b"\x04" + digest[: UID_LENGTH - 1]


def deck_serials(prefix: str, decks: int) -> list[str]:
    """Serials of the decks of one simulated shoe: ``PREFIX-01`` … ``PREFIX-NN``."""
    return [f"{prefix}-{number:02d}" for number in range(1, decks + 1)]


def registry_rows(deck_serial: str) -> list[tuple[str, int, int, str]]:
    """The 52 rows of one deck, in rank then suit order."""
    return [
        (uid_for(deck_serial, rank, suit).hex().upper(), rank, suit, deck_serial)
        for rank in range(1, 14)
        for suit in range(4)
    ]


def write_registry(directory: str | Path, serials: Iterable[str]) -> list[Path]:
    """Write ``<deck_serial>.csv`` for each deck into ``directory``; returns the paths."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    for serial in serials:
        path = target / f"{serial}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(REGISTRY_HEADER)
            writer.writerows(registry_rows(serial))
        paths.append(path)
    return paths
