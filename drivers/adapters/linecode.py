"""Sans-I/O decoder of the line-code shoe protocol: one card code per line, bytes in, readings out.

A line is `A01`..`A13` (spades), `H..` hearts, `C..` clubs, `D..` diamonds; 01 is the ace and
11-13 are J Q K (`cards.from_line_code`). Lines end in CR, LF or CR LF; blanks and NULs around
a code are ignored. A line that is not a code but holds a letter or digit could have been a
card, so it is reported (GarbledRead -> DeviceFault GARBLED); a line of pure noise is counted.
"""

from __future__ import annotations

import contextlib
import re

from drivers.adapters import (
    DEFAULT_BAUD,
    GARBLED,
    STALE_AFTER,
    AdapterStats,
    CardRead,
    GarbledRead,
    Reading,
    connected_input,
    reading_to_inputs,
)
from shoe_controller.cards import Card, CardError, Suit, from_line_code, full_deck
from shoe_controller.inputs import Input

__all__ = ["DEFAULT_BAUD", "GARBLED", "MAX_LINE", "LineCodeAdapter", "encode_card"]

MAX_LINE = 32  # a code is 3 characters; anything this long is not one
_SUIT_LETTERS = {Suit.S: "A", Suit.H: "H", Suit.C: "C", Suit.D: "D"}
_BLANKS = " \t\x00"
_CODES = {f"{_SUIT_LETTERS[card.suit]}{card.rank:02d}": card for card in full_deck()}
_COULD_BE_CARD = re.compile(r"[0-9A-Za-z]")


def encode_card(card: Card, terminator: bytes = b"\r\n") -> bytes:
    """A card as the shoe sends it: `H12\\r\\n` for the queen of hearts."""
    return f"{_SUIT_LETTERS[card.suit]}{card.rank:02d}".encode("ascii") + terminator


class LineCodeAdapter:
    """One line-code shoe's byte stream decoded into readings; keeps at most MAX_LINE chars."""

    def __init__(
        self, *, device: str = "scanner", kind: str = "optical", stale_after: float = STALE_AFTER
    ) -> None:
        self.device = device
        self.kind = kind
        self.stats = AdapterStats()
        self._stale_after = stale_after
        self._line = ""  # the line in progress (latin-1: one char per byte)
        self._overlong = False  # the line in progress was already reported as too long
        self._generation = 0
        self._pending_since: float | None = None
        self._pending_generation = -1
        self._queued: list[Reading] = []  # reported on a lost connection, not yet returned

    def receive_data(self, data: bytes) -> list[Reading]:
        """Decode every line `data` completes; a line split across calls is kept until its end."""
        readings, self._queued = self._queued, []
        if not data:
            return readings
        self.stats.bytes_in += len(data)
        self._generation += 1
        fresh: list[Reading] = []
        pieces = bytes(data).decode("latin-1").replace("\r", "\n").split("\n")
        for index, piece in enumerate(pieces):
            self._extend(piece, fresh)
            if index < len(pieces) - 1:  # a terminator followed this piece
                self._finish_line(fresh, unterminated=None)
        return readings + self._counted(fresh)

    @property
    def buffered(self) -> int:
        """Characters kept while waiting for the end of a message (bounded)."""
        return len(self._line)

    def bytes_to_send(self) -> bytes:
        return b""  # the protocol is one-way: nothing is ever acknowledged

    def poll(self, now: float) -> list[Reading]:
        """Report a line that has waited `stale_after` seconds for its terminator."""
        readings, self._queued = self._queued, []
        if not self._line and not self._overlong:
            self._pending_since = None
        elif self._pending_since is None or self._pending_generation != self._generation:
            self._pending_since, self._pending_generation = now, self._generation
        elif now - self._pending_since >= self._stale_after:
            readings += self._flush("line never ended")
        return readings

    def connection_lost(self) -> None:
        """The port went away: a line in progress can never end, so it is reported (by the
        next `receive_data` or `poll`) instead of being glued to the next connection's text."""
        self._queued += self._flush("connection lost mid-line")

    def translate(self, reading: Reading, now: float) -> list[Input]:
        return reading_to_inputs(reading, now, self.device)

    def connected(self, now: float) -> list[Input]:
        return [connected_input(now, self.device, self.kind, "line-code", "ASCII")]

    def _extend(self, piece: str, readings: list[Reading]) -> None:
        if self._overlong:
            return  # the rest of a line already reported; drop it up to its terminator
        self._line += piece
        if len(self._line) > MAX_LINE:
            readings.append(GarbledRead(self._line, "line too long"))
            self._line, self._overlong = "", True

    def _flush(self, reason: str) -> list[Reading]:
        self._pending_since = None
        readings: list[Reading] = []
        self._finish_line(readings, unterminated=reason)
        return self._counted(readings)

    def _counted(self, readings: list[Reading]) -> list[Reading]:
        for reading in readings:
            self.stats.count(reading)
        return readings

    def _finish_line(self, readings: list[Reading], *, unterminated: str | None) -> None:
        """Decode the line in progress. One without its terminator (`unterminated` says why)
        is reported, never guessed: its end may still have been on the way."""
        line, self._line, self._overlong = self._line.strip(_BLANKS), "", False
        if not line:
            return
        if unterminated is None:
            card = _CODES.get(line)
            if card is None:
                with contextlib.suppress(CardError):
                    card = from_line_code(line)  # lower case and other spellings it accepts
            if card is not None:
                readings.append(CardRead(card, burn=False, raw=line))
                return
        if _COULD_BE_CARD.search(line):
            readings.append(GarbledRead(line, unterminated or "not a line code"))
        else:
            self.stats.noise_bytes += len(line)
