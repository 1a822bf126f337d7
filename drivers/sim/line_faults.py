"""Line faults for simulated devices: noise, lost or flipped bytes, doubled frames, silence.

A ``LineFaults`` sits between a device's link and its port and spoils the byte stream on
request, like a bad cable would; the link on either side must recover (docs/spec-protocol.md,
Reliability). Each request counts down (``drop(5)`` loses the next five bytes); rates
(``drop_rate=0.2``) keep spoiling until set back to 0. Randomness comes from the given
``random.Random`` so a seeded simulator misbehaves the same way every run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(slots=True)
class FaultCounters:
    noise_bytes: int = 0
    dropped_bytes: int = 0
    flipped_bytes: int = 0
    doubled_frames: int = 0
    silenced_bytes: int = 0


class LineFaults:
    """Spoils one direction of a byte stream on request."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self.counters = FaultCounters()
        self._noise = bytearray()
        self._drop = 0
        self._flip = 0
        self._double = 0
        self.drop_rate = 0.0
        self.flip_rate = 0.0
        self._silent_until = 0.0
        self._partial = bytearray()  # bytes of a frame whose end has not passed yet (doubling)

    # -- requests -----------------------------------------------------------------------

    def noise(self, count: int) -> None:
        """Send ``count`` random bytes (delimiters included) before the next output."""
        self._noise += bytes(self._rng.randrange(256) for _ in range(count))

    def drop(self, count: int) -> None:
        """Lose the next ``count`` bytes."""
        self._drop += count

    def flip(self, count: int) -> None:
        """Flip one random bit in each of the next ``count`` bytes."""
        self._flip += count

    def double(self, count: int) -> None:
        """Send each of the next ``count`` frames twice."""
        self._double += count

    def silence(self, now: float, seconds: float) -> None:
        """Send nothing for ``seconds`` (the bytes are lost, as from a hung device)."""
        self._silent_until = max(self._silent_until, now + seconds)

    def clear(self) -> None:
        self._noise.clear()
        self._drop = self._flip = self._double = 0
        self.drop_rate = self.flip_rate = 0.0
        self._silent_until = 0.0

    @property
    def active(self) -> bool:
        return bool(self._noise or self._drop or self._flip or self._double) or bool(
            self.drop_rate or self.flip_rate or self._silent_until
        )

    # -- the stream ---------------------------------------------------------------------

    def apply(self, data: bytes, now: float) -> bytes:
        """The bytes that actually reach the other end."""
        if now < self._silent_until:
            self.counters.silenced_bytes += len(data)
            return b""
        if not self.active:
            return data
        if self._double:
            data = self._apply_double(data)
        out = bytearray(self._noise)
        self.counters.noise_bytes += len(self._noise)
        self._noise.clear()
        rng = self._rng
        for byte in data:
            if self._drop:
                self._drop -= 1
                self.counters.dropped_bytes += 1
                continue
            if self.drop_rate and rng.random() < self.drop_rate:
                self.counters.dropped_bytes += 1
                continue
            if self._flip or (self.flip_rate and rng.random() < self.flip_rate):
                self._flip = max(0, self._flip - 1)
                self.counters.flipped_bytes += 1
                out.append(byte ^ (1 << rng.randrange(8)))
                continue
            out.append(byte)
        return bytes(out)

    def _apply_double(self, data: bytes) -> bytes:
        out = bytearray()
        for byte in data:
            out.append(byte)
            self._partial.append(byte)
            if byte == 0:
                if self._double:
                    out += self._partial
                    self._double -= 1
                    self.counters.doubled_frames += 1
                self._partial.clear()
        return bytes(out)
