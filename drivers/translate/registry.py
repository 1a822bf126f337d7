"""The RFID deck registry: which card and deck each tag UID belongs to, loaded from CSV files.

docs/spec-protocol.md: one CSV per deck, rows `uid_hex,rank,suit,deck_serial`. A UID the registry
does
not know is a foreign card; the scanner translator, not the registry, tracks duplicates.

File format (docs/drivers.md "Deck registry"):
- an optional header row `uid_hex,rank,suit,deck_serial`; blank lines and lines starting
  with `#` are ignored;
- `uid_hex`: 4 to 10 bytes in hex (8-20 digits), case-insensitive, `:`/`-` separators allowed;
- `rank`: the protocol's number 1-13 or a letter `A 2-9 T J Q K` (`10` is accepted);
- `suit`: the protocol's number 0-3 (0 S, 1 H, 2 D, 3 C) or a letter `S H D C`;
- `deck_serial`: the same non-empty text on every row of one file.
Any bad row, a UID listed twice (in any files) or a card listed twice in one deck stops
loading with a `RegistryError` naming the file and line, so a bad registry never half-loads.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from shoe_controller.vocab.cards import RANK_LETTERS, Card, CardError, Suit

HEADER = ("uid_hex", "rank", "suit", "deck_serial")
UID_MIN_BYTES, UID_MAX_BYTES = 4, 10  # docs/spec-protocol.md CARD encoding 2: uid_len 4-10
_UID_SEPARATORS = re.compile(r"[:\-\s]")
_HEX = re.compile(r"[0-9A-F]+")


class RegistryError(ValueError):
    """A registry file that cannot be used; the message names the file and line."""


class RegisteredCard(NamedTuple):
    """What a known UID stands for: a card of the deck with serial `deck_serial`."""

    card: Card
    deck_serial: str


@dataclass(frozen=True, slots=True)
class _Origin:
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def normalize_uid(uid: bytes | str) -> str:
    """The registry's key for a UID: upper-case hex without separators.

    Raises ValueError for text that is not 4-10 bytes of hex.
    """
    if isinstance(uid, bytes | bytearray | memoryview):
        text = bytes(uid).hex().upper()
    else:
        text = _UID_SEPARATORS.sub("", uid).upper()
    if not _HEX.fullmatch(text) or len(text) % 2:
        raise ValueError(f"UID {uid!r} is not an even number of hex digits")
    if not UID_MIN_BYTES <= len(text) // 2 <= UID_MAX_BYTES:
        raise ValueError(
            f"UID {uid!r} has {len(text) // 2} bytes; docs/spec-protocol.md allows "
            f"{UID_MIN_BYTES}-{UID_MAX_BYTES}"
        )
    return text


def _parse_rank(text: str) -> int:
    text = text.strip().upper()
    if text.isdigit() and 1 <= int(text) <= 13:
        return int(text)
    if len(text) == 1 and text in RANK_LETTERS and not text.isdigit():
        return RANK_LETTERS.index(text) + 1
    raise ValueError(f"rank {text!r} is not 1-13 or one of A 2-9 T J Q K")


def _parse_suit(text: str) -> Suit:
    text = text.strip().upper()
    if text in Suit.__members__:
        return Suit[text]
    if text.isdigit() and int(text) <= 3:
        return Suit(int(text))
    raise ValueError(f"suit {text!r} is not 0-3 (0 S, 1 H, 2 D, 3 C) or one of S H D C")


class DeckRegistry:
    """Lookup from an RFID UID to its card and deck; immutable once built."""

    def __init__(self, entries: Mapping[str, RegisteredCard]) -> None:
        self._entries = dict(entries)

    @classmethod
    def load(cls, directory: str | Path) -> DeckRegistry:
        """Read every `*.csv` in `directory` (not recursive), in name order."""
        folder = Path(directory)
        if not folder.is_dir():
            problem = "is not a directory" if folder.exists() else "does not exist"
            raise RegistryError(f"deck registry directory {folder} {problem}")
        files = sorted(path for path in folder.glob("*.csv") if path.is_file())
        if not files:
            raise RegistryError(f"deck registry directory {folder} holds no *.csv files")
        return cls.from_files(files)

    @classmethod
    def from_files(cls, paths: Iterable[str | Path]) -> DeckRegistry:
        """Read the given deck files; a UID may appear only once across all of them."""
        entries: dict[str, RegisteredCard] = {}
        origins: dict[str, _Origin] = {}
        deck_files: dict[str, Path] = {}
        for raw_path in paths:
            path = Path(raw_path)
            serial = None
            cards_seen: dict[Card, _Origin] = {}
            for origin, row in _rows(path):
                uid, registered = _parse_row(origin, row)
                if serial is None:
                    serial = registered.deck_serial
                    if serial in deck_files:
                        raise RegistryError(
                            f"{origin}: deck {serial!r} is already registered by "
                            f"{deck_files[serial]} (one file per deck)"
                        )
                    deck_files[serial] = path
                elif registered.deck_serial != serial:
                    raise RegistryError(
                        f"{origin}: deck_serial {registered.deck_serial!r} differs from "
                        f"{serial!r} on the file's first row (one file per deck)"
                    )
                if uid in origins:
                    raise RegistryError(f"{origin}: UID {uid} is already listed at {origins[uid]}")
                if registered.card in cards_seen:
                    raise RegistryError(
                        f"{origin}: card {registered.card} of deck {serial!r} is already "
                        f"listed at {cards_seen[registered.card]}"
                    )
                cards_seen[registered.card] = origin
                origins[uid] = origin
                entries[uid] = registered
            if serial is None:
                raise RegistryError(f"{path}: no card rows")
        return cls(entries)

    def lookup(self, uid: bytes | str) -> RegisteredCard | None:
        """The card a UID stands for, or None for a foreign (or malformed) UID."""
        try:
            return self._entries.get(normalize_uid(uid))
        except ValueError:
            return None

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, uid: object) -> bool:
        return isinstance(uid, bytes | str) and self.lookup(uid) is not None

    def decks(self) -> dict[str, int]:
        """Cards registered per deck serial."""
        counts: dict[str, int] = {}
        for registered in self._entries.values():
            counts[registered.deck_serial] = counts.get(registered.deck_serial, 0) + 1
        return counts


def _rows(path: Path) -> Iterator[tuple[_Origin, list[str]]]:
    """The data rows of one file with their line numbers (header, blanks and comments skipped)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise RegistryError(
            f"{path}: cannot read deck file: not UTF-8 text (byte {error.start})"
        ) from None
    except OSError as error:
        # The system's reason in words, not Python's `[Errno 13] ... '/path'` around it.
        why = error.strerror.lower() if error.strerror else str(error)
        raise RegistryError(f"{path}: cannot read deck file: {why}") from None
    first = True
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = next(csv.reader([line]))
        if first:
            first = False
            if tuple(cell.strip().lower() for cell in row) == HEADER:
                continue
        yield _Origin(path, number), row


def _parse_row(origin: _Origin, row: list[str]) -> tuple[str, RegisteredCard]:
    if len(row) != len(HEADER):
        raise RegistryError(
            f"{origin}: expected {len(HEADER)} fields {','.join(HEADER)}, got {len(row)}: "
            f"{','.join(row)!r}"
        )
    uid_text, rank_text, suit_text, serial = (cell.strip() for cell in row)
    try:
        uid = normalize_uid(uid_text)
        card = Card(_parse_rank(rank_text), _parse_suit(suit_text))
    except (ValueError, CardError) as error:
        raise RegistryError(f"{origin}: {error}") from None
    if not serial:
        raise RegistryError(f"{origin}: deck_serial is empty")
    return uid, RegisteredCard(card, serial)
