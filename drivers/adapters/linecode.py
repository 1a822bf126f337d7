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
    CardRead,
    GarbledRead,
    Reading,
    TextAdapter,
)
from shoe_controller.vocab.cards import Card, CardError, Suit, from_line_code, full_deck

__all__ = ["DEFAULT_BAUD", "GARBLED", "MAX_LINE", "LineCodeAdapter", "encode_card"]

MAX_LINE = 32  # a code is 3 characters; anything this long is not one
_SUIT_LETTERS = {Suit.S: "A", Suit.H: "H", Suit.C: "C", Suit.D: "D"}
_BLANKS = " \t\x00"
_CODES = {f"{_SUIT_LETTERS[card.suit]}{card.rank:02d}": card for card in full_deck()}
_COULD_BE_CARD = re.compile(r"[0-9A-Za-z]")


def encode_card(card: Card, terminator: bytes = b"\r\n") -> bytes:
    """A card as the shoe sends it: `H12\\r\\n` for the queen of hearts."""
    return f"{_SUIT_LETTERS[card.suit]}{card.rank:02d}".encode("ascii") + terminator


class LineCodeAdapter(TextAdapter):
    """One line-code shoe's byte stream decoded into readings; keeps at most MAX_LINE chars."""

    VENDOR = "line-code"
    NEVER_ENDED = "line never ended"
    CUT_OFF = "connection lost mid-line"

    def __init__(
        self, *, device: str = "scanner", kind: str = "optical", stale_after: float = STALE_AFTER
    ) -> None:
        super().__init__(device=device, kind=kind, stale_after=stale_after)
        self._line = ""  # the line in progress (latin-1: one char per byte)
        self._overlong = False  # the line in progress was already reported as too long

    @property
    def buffered(self) -> int:
        return len(self._line)

    def _waiting(self) -> bool:
        return bool(self._line) or self._overlong

    def _decode(self, text: str) -> list[Reading]:
        """Every line `text` completes; the last piece waits for its terminator."""
        readings: list[Reading] = []
        pieces = text.replace("\r", "\n").split("\n")
        for index, piece in enumerate(pieces):
            self._extend(piece, readings)
            if index < len(pieces) - 1:  # a terminator followed this piece
                self._finish_line(readings, unterminated=None)
        return readings

    def _give_up(self, reason: str) -> list[Reading]:
        readings: list[Reading] = []
        self._finish_line(readings, unterminated=reason)
        return readings

    def _extend(self, piece: str, readings: list[Reading]) -> None:
        if self._overlong:
            return  # the rest of a line already reported; drop it up to its terminator
        self._line += piece
        if len(self._line) > MAX_LINE:
            readings.append(GarbledRead(self._line, "line too long"))
            self._line, self._overlong = "", True

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
