"""Sans-I/O decoder of the Beetek shoe's ASCII protocol: bytes in, card and alarm readings out.

Messages (docs/drivers.md "beetek"), separated by blanks and line noise:
- ` [Game]<Card:4S> ` a dealt card: rank `2`-`9`, `10`, `T`, `J`, `Q`, `K`, `A`, suit `S H D C`;
- ` [Manual Burn Cards]<Card:4S> ` a card burned in the shoe's burn mode (CardDrawn burn=True);
- ` [Game]<Game> ` a card passed but could not be read (CardDrawn card=None, R10.5);
- ` [Game]<Alarm:E3 Card Not Read> `, ` [GameAlarm]<Alarm:...> ` alarms (DeviceFault severity 2);
- `<W0x01>` warnings (DeviceFault severity 1).
Alarm codes: `E<n>` maps to 0x8100 + n, except those in `ALARM_CODES` whose meaning is a
docs/spec-protocol.md fault (E3 "Card Not Read" is 0x0002 read failure); an alarm without a number
is
0x81FF. Warning `W0x<hh>` maps to 0x8200 + hh. The text is kept as the device sent it.
"""

from __future__ import annotations

import re

from drivers.adapters import (
    DEFAULT_BAUD,
    GARBLED,
    SEVERITY_ERROR,
    SEVERITY_WARNING,
    STALE_AFTER,
    AlarmRead,
    CardRead,
    GarbledRead,
    Reading,
    TextAdapter,
)
from shoe_controller.vocab.cards import Card, CardError, full_deck, parse_card

__all__ = [
    "ALARM_BASE",
    "ALARM_CODES",
    "DEFAULT_BAUD",
    "GARBLED",
    "WARNING_BASE",
    "BeetekAdapter",
    "encode_alarm",
    "encode_card",
    "encode_unreadable",
    "encode_warning",
]

ALARM_BASE = 0x8100  # + the alarm's number E<n>
ALARM_UNNUMBERED = 0x81FF
WARNING_BASE = 0x8200  # + the warning's code W0x<hh>
ALARM_CODES = {3: 0x0002}  # E3 Card Not Read = docs/spec-protocol.md read failure

TAG_GAME = "game"
TAG_BURN = "manual burn cards"
TAG_ALARM = "gamealarm"
_CARD_TAGS = {TAG_GAME: False, TAG_BURN: True}  # tag -> burn

MAX_TAG = 32
MAX_BODY = 64
MAX_PENDING = 160  # bound of the text kept between calls (a message is at most ~100 chars)

_BLANKS = " \t\r\n\x00"
_CARD_TEXTS = {
    text: card for card in full_deck() for text in {str(card), card.pretty[:-1] + str(card)[-1]}
}
_TAG_BEFORE = re.compile(rf"\[([^\[\]<>]{{1,{MAX_TAG}}})\][ \t\r\n\x00]*\Z")
_TAG_IN_PROGRESS = re.compile(rf"\[[^\[\]<>]{{0,{MAX_TAG}}}(?:\][ \t\r\n\x00]*)?\Z")
_TRAILING_WORD = re.compile(r"[^ \t\r\n\x00]+\Z")
_ALARM = re.compile(r"\s*E(\d{1,3})\b.*", re.IGNORECASE | re.DOTALL)
_WARNING = re.compile(r"W0x([0-9A-Fa-f]{1,2})", re.IGNORECASE)
# Noise with these could be what is left of a message: report it, never just count it.
_SUSPICIOUS = re.compile(r"[\[\]<>]|card|game|alarm|burn", re.IGNORECASE)


def encode_card(card: Card, *, burn: bool = False, ten: str = "10") -> bytes:
    """A card message as the shoe sends it (`ten` is how the shoe writes a ten: `10` or `T`)."""
    text = str(card)
    if card.rank == 10:
        text = ten + text[1:]
    tag = "Manual Burn Cards" if burn else "Game"
    return f" [{tag}]<Card:{text}> ".encode("ascii")


def encode_unreadable(*, burn: bool = False) -> bytes:
    tag = "Manual Burn Cards" if burn else "Game"
    return f" [{tag}]<Game> ".encode("ascii")


def encode_alarm(text: str, *, tag: str = "GameAlarm") -> bytes:
    return f" [{tag}]<Alarm:{text}> ".encode("ascii")


def encode_warning(code: int) -> bytes:
    return f"<W0x{code:02X}>".encode("ascii")


class BeetekAdapter(TextAdapter):
    """One Beetek shoe's byte stream decoded into readings; keeps at most MAX_PENDING chars."""

    VENDOR = "Beetek"
    NEVER_ENDED = "message never ended"
    CUT_OFF = "connection lost mid-message"

    def __init__(
        self, *, device: str = "scanner", kind: str = "optical", stale_after: float = STALE_AFTER
    ) -> None:
        super().__init__(device=device, kind=kind, stale_after=stale_after)
        self._text = ""  # undecoded tail: latin-1, so one char per byte

    @property
    def buffered(self) -> int:
        return len(self._text)

    def _give_up(self, reason: str) -> list[Reading]:
        text, self._text = self._text, ""
        readings: list[Reading] = []
        self._noise(text, readings, reason=reason)
        return readings

    def _decode(self, text: str) -> list[Reading]:
        text, pos, out = self._text + text, 0, []
        while True:
            start = text.find("<", pos)
            if start < 0:
                keep = self._kept_tail(text, pos)
                self._noise(text[pos:keep], out)
                pos = keep
                break
            tag_start, tag = self._tag_before(text, pos, start)
            end = text.find(">", start + 1)
            reopen = text.find("<", start + 1)
            if reopen >= 0 and (end < 0 or reopen < end):
                # A message start inside a message: the first one lost its end.
                next_start, _ = self._tag_before(text, start + 1, reopen)
                self._noise(text[pos:tag_start], out)
                out.append(GarbledRead(text[tag_start:next_start], "message cut short"))
                pos = next_start
                continue
            if end < 0:
                self._noise(text[pos:tag_start], out)
                pos = tag_start
                if len(text) - start > MAX_BODY + 2:
                    out.append(GarbledRead(text[tag_start:], "message too long"))
                    pos = len(text)
                break
            self._noise(text[pos:tag_start], out)
            raw = text[tag_start : end + 1]
            if end - start - 1 > MAX_BODY:
                out.append(GarbledRead(raw, "message too long"))
            else:
                out.append(self._interpret(tag, text[start + 1 : end], raw))
            pos = end + 1
        tail = text[pos:]
        if len(tail) > MAX_PENDING:  # a word or tag that never ends: bound what is kept
            self._noise(tail, out, reason="message too long")
            tail = ""
        self._text = tail
        return out

    @staticmethod
    def _tag_before(text: str, pos: int, start: int) -> tuple[int, str | None]:
        """Where the `[Tag]` right before the `<` at `start` begins, and the tag (or None)."""
        window_start = max(pos, start - MAX_TAG - 8)
        match = _TAG_BEFORE.search(text, window_start, start)
        if match is None:
            return start, None
        return match.start(), match.group(1)

    @staticmethod
    def _kept_tail(text: str, pos: int) -> int:
        """Where the text that may still grow into a message begins (a tag, or a word)."""
        bracket = text.rfind("[", pos)
        if bracket >= 0 and _TAG_IN_PROGRESS.fullmatch(text, bracket):
            return bracket
        word = _TRAILING_WORD.search(text, pos)
        if word is None or text.endswith(">"):  # a '>' ends whatever it was: judge it now
            return len(text)
        return word.start()

    def _noise(self, text: str, out: list[Reading], reason: str = "not a message") -> None:
        solid = text.strip(_BLANKS)
        if not solid:
            return
        if _SUSPICIOUS.search(solid):
            out.append(GarbledRead(solid, reason))
        else:
            self.stats.noise_bytes += len(solid)

    @staticmethod
    def _interpret(tag: str | None, body: str, raw: str) -> Reading:
        key = tag.strip().casefold() if tag is not None else None
        content = body.strip()
        head, colon, rest = content.partition(":")
        head = head.strip().casefold()
        if colon and head == "card":
            if key not in _CARD_TAGS:
                return GarbledRead(raw, "card without a [Game] or [Manual Burn Cards] tag")
            card = _CARD_TEXTS.get(rest)
            if card is None:
                try:
                    card = parse_card(rest)  # blanks, lower case and other accepted spellings
                except CardError:
                    return GarbledRead(raw, "unknown card")
            return CardRead(card, burn=_CARD_TAGS[key], raw=raw)
        if not colon and head == "game":
            if key not in _CARD_TAGS:
                return GarbledRead(raw, "unread card without a [Game] tag")
            return CardRead(None, burn=_CARD_TAGS[key], raw=raw)
        if colon and head == "alarm":
            alarm = rest.strip()
            number = _ALARM.fullmatch(alarm)
            if number is None:
                code = ALARM_UNNUMBERED
            else:
                value = int(number.group(1))
                code = ALARM_CODES.get(value, ALARM_BASE + value if value < 0xFF else None)
                if code is None:
                    code = ALARM_UNNUMBERED
            return AlarmRead(code, SEVERITY_ERROR, f"alarm {alarm}", raw)
        warning = _WARNING.fullmatch(content)
        if warning is not None:
            value = int(warning.group(1), 16)
            return AlarmRead(WARNING_BASE + value, SEVERITY_WARNING, f"warning {content}", raw)
        return GarbledRead(raw, "unknown message")
