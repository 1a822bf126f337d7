"""A line plot written as a PNG with numpy and zlib alone (the study's plot; no matplotlib here).

`LinePlot(title, x_label, y_label, x_ticks, y_range)`, `.line(label, xs, ys)` per series, then
`.write(path)`: axes, grid, ticks, a legend, lines with square markers, text in a 5x7 pixel
font (capitals, digits and a little punctuation). Deterministic: the same series, the same bytes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np

# 5x7 glyphs, one hex byte a row (bit 4 the leftmost pixel).
_FONT = {
    "0": "0e 11 13 15 19 11 0e", "1": "04 0c 04 04 04 04 0e", "2": "0e 11 01 02 04 08 1f",
    "3": "1f 02 04 02 01 11 0e", "4": "02 06 0a 12 1f 02 02", "5": "1f 10 1e 01 01 11 0e",
    "6": "06 08 10 1e 11 11 0e", "7": "1f 01 02 04 08 08 08", "8": "0e 11 11 0e 11 11 0e",
    "9": "0e 11 11 0f 01 02 0c", "A": "0e 11 11 1f 11 11 11", "B": "1e 11 11 1e 11 11 1e",
    "C": "0e 11 10 10 10 11 0e", "D": "1c 12 11 11 11 12 1c", "E": "1f 10 10 1e 10 10 1f",
    "F": "1f 10 10 1e 10 10 10", "G": "0e 11 10 17 11 11 0f", "H": "11 11 11 1f 11 11 11",
    "I": "0e 04 04 04 04 04 0e", "J": "07 02 02 02 02 12 0c", "K": "11 12 14 18 14 12 11",
    "L": "10 10 10 10 10 10 1f", "M": "11 1b 15 15 11 11 11", "N": "11 11 19 15 13 11 11",
    "O": "0e 11 11 11 11 11 0e", "P": "1e 11 11 1e 10 10 10", "Q": "0e 11 11 11 15 12 0d",
    "R": "1e 11 11 1e 14 12 11", "S": "0f 10 10 0e 01 01 1e", "T": "1f 04 04 04 04 04 04",
    "U": "11 11 11 11 11 11 0e", "V": "11 11 11 11 11 0a 04", "W": "11 11 11 15 15 15 0a",
    "X": "11 11 0a 04 0a 11 11", "Y": "11 11 11 0a 04 04 04", "Z": "1f 01 02 04 08 10 1f",
    " ": "00 00 00 00 00 00 00", ".": "00 00 00 00 00 0c 0c", ",": "00 00 00 00 0c 04 08",
    "-": "00 00 00 1f 00 00 00", "+": "00 04 04 1f 04 04 00", "%": "18 19 02 04 08 13 03",
    "(": "02 04 08 08 08 04 02", ")": "08 04 02 02 02 04 08", "/": "00 01 02 04 08 10 00",
    ":": "00 0c 0c 00 0c 0c 00", "=": "00 00 1f 00 1f 00 00", "'": "04 04 08 00 00 00 00",
}  # fmt: skip
COLOURS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
           (140, 86, 75), (227, 119, 194), (127, 127, 127)]  # fmt: skip
BLACK, GREY = (0, 0, 0), (225, 225, 225)


def _glyph(char: str) -> np.ndarray:
    rows = [int(value, 16) for value in _FONT.get(char.upper(), _FONT[" "]).split()]
    return np.array([[(row >> (4 - bit)) & 1 for bit in range(5)] for row in rows], dtype=bool)


def text_width(text: str, scale: int) -> int:
    return len(text) * 6 * scale


def png_bytes(pixels: np.ndarray) -> bytes:
    """An RGB image (height x width x 3, uint8) as PNG bytes: no filter, one IDAT."""
    height, width, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


class Canvas:
    """Pixels and the few ways the plot draws on them."""

    def __init__(self, width: int, height: int) -> None:
        self.pixels = np.full((height, width, 3), 255, dtype=np.uint8)

    def box(self, x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]) -> None:
        height, width, _ = self.pixels.shape
        x0, x1 = max(0, min(x0, x1)), min(width, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(height, max(y0, y1))
        self.pixels[y0:y1, x0:x1] = colour

    def segment(
        self,
        start: tuple[float, float],
        end: tuple[float, float],
        colour: tuple[int, int, int],
        width: int = 2,
        dashed: bool = False,
    ) -> None:
        steps = int(max(abs(end[0] - start[0]), abs(end[1] - start[1])) * 2) + 1
        for step, t in enumerate(np.linspace(0.0, 1.0, steps)):
            if dashed and (step // 16) % 2:
                continue  # 8 pixels drawn, 8 left out
            x = round(start[0] + (end[0] - start[0]) * t)
            y = round(start[1] + (end[1] - start[1]) * t)
            self.box(
                x - width // 2,
                y - width // 2,
                x - width // 2 + width,
                y - width // 2 + width,
                colour,
            )

    def text(self, x: int, y: int, text: str, colour=BLACK, scale: int = 2) -> None:
        for index, char in enumerate(text):
            glyph = np.kron(_glyph(char), np.ones((scale, scale), dtype=bool))
            left = x + index * 6 * scale
            region = self.pixels[y : y + glyph.shape[0], left : left + glyph.shape[1]]
            region[glyph[: region.shape[0], : region.shape[1]]] = colour


class LinePlot:
    """Series against x on fixed axes, with a legend on the right."""

    def __init__(
        self,
        title: str,
        x_label: str,
        y_label: str,
        x_ticks: Sequence[float],
        y_range: tuple[float, float, float],  # low, high, tick step
    ) -> None:
        self.title, self.x_label, self.y_label = title, x_label, y_label
        self.x_ticks, self.y_range = list(x_ticks), y_range
        self.series: list[tuple[str, list[float], list[float], bool]] = []

    def line(
        self, label: str, xs: Sequence[float], ys: Sequence[float], dashed: bool = False
    ) -> None:
        self.series.append((label, list(xs), list(ys), dashed))

    def write(self, path: Path, width: int = 1000, height: int = 600) -> None:
        canvas = Canvas(width, height)
        left, right, top, bottom = 90, width - 330, 60, height - 80
        low, high, step = self.y_range
        x_low, x_high = self.x_ticks[0], self.x_ticks[-1]

        def at(x: float, y: float) -> tuple[float, float]:
            return (
                left + (x - x_low) / (x_high - x_low) * (right - left),
                bottom - (y - low) / (high - low) * (bottom - top),
            )

        tick = low
        while tick <= high + 1e-9:
            _, y = at(x_low, tick)
            canvas.box(left, int(y), right, int(y) + 1, GREY)
            label = f"{tick:g}"
            canvas.text(left - 12 - text_width(label, 2), int(y) - 7, label)
            tick += step
        for x_tick in self.x_ticks:
            x, _ = at(x_tick, low)
            canvas.box(int(x), top, int(x) + 1, bottom, GREY)
            label = f"{x_tick:g}"
            canvas.text(int(x) - text_width(label, 2) // 2, bottom + 10, label)
        canvas.box(left, top, left + 2, bottom + 1, BLACK)
        canvas.box(left, bottom, right + 1, bottom + 2, BLACK)
        canvas.text((left + right - text_width(self.title, 2)) // 2, 8, self.title)
        canvas.text((left + right - text_width(self.x_label, 2)) // 2, bottom + 40, self.x_label)
        canvas.text(8, top - 24, self.y_label)
        for index, (label, xs, ys, dashed) in enumerate(self.series):
            colour = COLOURS[index % len(COLOURS)]
            points = [at(x, y) for x, y in zip(xs, ys, strict=True)]
            for start, end in pairwise(points):
                canvas.segment(start, end, colour, 5 if dashed else 3, dashed)
            for x, y in points:
                canvas.box(int(x) - 4, int(y) - 4, int(x) + 5, int(y) + 5, colour)
            legend_y = top + 10 + index * 30
            canvas.segment(
                (right + 20, legend_y + 7), (right + 60, legend_y + 7), colour, 3, dashed
            )
            canvas.text(right + 70, legend_y, label)
        path.write_bytes(png_bytes(canvas.pixels))
