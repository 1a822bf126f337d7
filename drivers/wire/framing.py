"""Byte framing of the shoe link (docs/spec-protocol.md v1): COBS, CRC-16, frames in and out of a
stream.

A frame is ``COBS(version seq type payload crc) 0x00``. ``encode_frame`` builds one,
``decode_frame`` takes one apart, and ``FrameDecoder`` cuts a received byte stream at its
delimiters into frames as the bytes come. Nothing here knows about sequence numbers, ACKs or
sessions: that is the reliable link's job (``drivers.wire.link``).
"""

from __future__ import annotations

import binascii
from typing import NamedTuple

FRAME_VERSION = 1
MAX_ENCODED_FRAME = 255  # bytes before the 0x00 delimiter
MIN_BODY = 5  # version, seq, type, crc(2)
DELIMITER = b"\x00"


class FrameError(ValueError):
    """A frame that cannot be taken apart (COBS, CRC, length or version)."""


class CobsError(FrameError):
    """Bytes that are not valid COBS."""


class CrcError(FrameError):
    """CRC mismatch, or a body too short to carry one."""


class FrameTooLongError(FrameError):
    """An encoded frame longer than 255 bytes."""


# --- framing primitives --------------------------------------------------------------


def crc16_ccitt_false(data: bytes) -> int:
    """CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, xorout 0 (check 0x29B1).

    ``binascii.crc_hqx`` is exactly this CRC when started at 0xFFFF, and it runs in C.
    """
    return binascii.crc_hqx(data, 0xFFFF)


def cobs_encode(data: bytes) -> bytes:
    """Consistent Overhead Byte Stuffing: the result holds no zero byte (delimiter not added)."""
    out = bytearray()
    chunks = bytes(data).split(b"\x00")
    last = len(chunks) - 1
    for index, piece in enumerate(chunks):
        chunk = piece
        while len(chunk) >= 254:
            out.append(0xFF)
            out += chunk[:254]
            chunk = chunk[254:]
            if not chunk and index == last:
                return bytes(out)  # canonical: a full block at the very end needs no 0x01
        out.append(len(chunk) + 1)
        out += chunk
    return bytes(out)


def cobs_decode(data: bytes) -> bytes:
    """Inverse of ``cobs_encode``; ``CobsError`` on a zero byte or a block running past the end."""
    if 0 in data:
        raise CobsError(f"zero byte inside a COBS frame at {bytes(data).index(0)}")
    return _cobs_decode_zero_free(data)


def _cobs_decode_zero_free(data: bytes) -> bytes:
    """COBS decoding of bytes already known to hold no zero (a frame cut at its delimiters)."""
    parts = []
    position = 0
    size = len(data)
    while position < size:
        code = data[position]
        end = position + code
        if end > size:
            raise CobsError(f"COBS block at {position} runs {end - size} bytes past the end")
        parts.append(data[position + 1 : end])
        position = end
        if code != 0xFF and position < size:
            parts.append(b"\x00")
    return b"".join(parts)


def encode_frame(seq: int, message_type: int, payload: bytes) -> bytes:
    """``COBS(version seq type payload crc) 0x00``; ``FrameTooLongError`` past 255 bytes."""
    body = bytes((FRAME_VERSION, seq, message_type)) + payload
    body += crc16_ccitt_false(body).to_bytes(2, "big")
    encoded = cobs_encode(body)
    if len(encoded) > MAX_ENCODED_FRAME:
        raise FrameTooLongError(f"encoded frame is {len(encoded)} bytes, at most 255 allowed")
    return encoded + DELIMITER


class RawFrame(NamedTuple):
    """A frame with a good CRC, not yet interpreted."""

    version: int
    seq: int
    message_type: int
    payload: bytes


def decode_frame(encoded: bytes) -> RawFrame:
    """Take apart one frame (without its delimiter); raises a ``FrameError`` subclass."""
    if len(encoded) > MAX_ENCODED_FRAME:
        raise FrameTooLongError(f"encoded frame is {len(encoded)} bytes, at most 255 allowed")
    body = cobs_decode(encoded) if 0 in encoded else _cobs_decode_zero_free(encoded)
    if len(body) < MIN_BODY:
        raise CrcError(f"frame body of {len(body)} bytes is too short to carry a CRC")
    if crc16_ccitt_false(body[:-2]) != int.from_bytes(body[-2:], "big"):
        raise CrcError("CRC mismatch")
    return RawFrame(body[0], body[1], body[2], body[3:-2])


# --- the streaming decoder -------------------------------------------------------------


class FrameDecoder:
    """Cuts received bytes into frames at their delimiters and takes each apart.

    A transfer may hold several frames or part of one (docs/spec-protocol.md): the part is kept for
    the next ``feed``. A frame growing past 255 bytes is not kept: its bytes are discarded up
    to the next delimiter and reported as one ``FrameTooLongError``.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._overflow = False  # discarding an oversize frame up to its delimiter

    def reset(self) -> None:
        """Forget a frame partly received (the transport reopened, went away, a new session)."""
        self._buffer.clear()
        self._overflow = False

    def feed(self, data: bytes) -> list[tuple[bytes, RawFrame | FrameError]]:
        """The frames ``data`` completed, in order; never raises on bad input.

        Each comes as received (COBS, without its delimiter: for post-mortems) with the frame
        or the ``FrameError`` it is; empty frames (two delimiters in a row) are skipped.
        """
        if 0 not in data:
            self._buffer += data
            if len(self._buffer) > MAX_ENCODED_FRAME:
                self._overflow = True  # discard up to the next delimiter
                self._buffer.clear()
            return []
        parts = bytes(data).split(DELIMITER)
        if self._buffer or self._overflow:
            parts[0] = bytes(self._buffer) + parts[0]
        tail = parts.pop()
        frames: list[tuple[bytes, RawFrame | FrameError]] = []
        for index, encoded in enumerate(parts):
            if index == 0 and self._overflow:
                self._overflow = False
                frames.append((encoded, FrameTooLongError("frame longer than 255 bytes")))
                continue
            if encoded:
                try:
                    frames.append((encoded, decode_frame(encoded)))
                except FrameError as error:
                    frames.append((encoded, error))
        self._buffer = bytearray(tail)
        if len(self._buffer) > MAX_ENCODED_FRAME:
            self._overflow = True
            self._buffer.clear()
        return frames
