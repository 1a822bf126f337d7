"""Decode throughput of the vendor ASCII adapters as a multiple of the 9600-baud wire rate.

Run: `python bench/bench_adapters.py [--repeat N]`. Feeds a recorded-like stream (an 8-deck
shoe, with line noise for beetek) in chunks of 1, 16 and 4096 bytes (a byte-at-a-time serial
read, a USB-serial packet, a big buffered read) and prints, for each adapter and chunk size,
bytes per second, the multiple of the wire rate (9600 baud 8N1 = 960 bytes/s), and the ratio
against a naive decoder measured in the same run on the same bytes: the beetek one re-runs a
regex over its whole buffer on each chunk, the line-code one splits lines one at a time.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections.abc import Callable

from drivers.adapters.beetek import BeetekAdapter, encode_card, encode_warning
from drivers.adapters.linecode import LineCodeAdapter
from drivers.adapters.linecode import encode_card as encode_line
from drivers.sim.ascii import noise, shuffled_shoe
from shoe_controller.vocab.cards import CardError, from_line_code, parse_card

WIRE_BYTES_PER_SECOND = 9600 / 10  # 8N1: a start bit, 8 data bits, a stop bit
CHUNKS = (1, 16, 4096)


def beetek_stream(shoes: int) -> tuple[bytes, int]:
    rng = random.Random(1)
    parts = []
    cards = 0
    for shoe in range(shoes):
        for index, card in enumerate(shuffled_shoe(8, seed=shoe)):
            if rng.random() < 0.3:
                parts.append(noise(rng, rng.randint(1, 8)))
            parts.append(encode_card(card, burn=index < 3, ten=rng.choice(("10", "T"))))
            cards += 1
        parts.append(encode_warning(1))
    return b"".join(parts), cards


def linecode_stream(shoes: int) -> tuple[bytes, int]:
    rng = random.Random(2)
    parts = []
    cards = 0
    for shoe in range(shoes):
        for card in shuffled_shoe(8, seed=shoe):
            parts.append(encode_line(card, rng.choice((b"\r\n", b"\r", b"\n"))))
            cards += 1
    return b"".join(parts), cards


class NaiveBeetek:
    """The obvious decoder: append, regex the whole buffer, keep what follows the last match."""

    _MESSAGE = re.compile(r"(?:\[([^\]]*)\]\s*)?<([^>]*)>")

    def __init__(self) -> None:
        self.buffer = ""

    def receive_data(self, data: bytes) -> list[object]:
        self.buffer += data.decode("latin-1")
        out: list[object] = []
        end = 0
        for match in self._MESSAGE.finditer(self.buffer):
            tag, body = match.groups()
            if body.startswith("Card:"):
                try:
                    out.append((parse_card(body[5:]), tag == "Manual Burn Cards"))
                except CardError:
                    out.append(None)
            else:
                out.append(body)
            end = match.end()
        self.buffer = self.buffer[end:]
        return out


class NaiveLineCode:
    """The obvious decoder: append, then split off one line at a time."""

    def __init__(self) -> None:
        self.buffer = b""

    def receive_data(self, data: bytes) -> list[object]:
        self.buffer += data.replace(b"\r", b"\n")
        out: list[object] = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                try:
                    out.append(from_line_code(line.decode("latin-1")))
                except CardError:
                    out.append(None)
        return out


def measure(make: Callable[[], object], data: bytes, chunk: int, repeat: int) -> tuple[float, int]:
    """Best bytes/second of `repeat` runs, and how many cards the last run decoded."""
    best = 0.0
    cards = 0
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    for _ in range(repeat):
        decoder = make()
        receive = decoder.receive_data  # type: ignore[attr-defined]
        found = 0
        start = time.perf_counter()
        for piece in pieces:
            found += len(receive(piece))
        elapsed = time.perf_counter() - start
        best = max(best, len(data) / elapsed)
        cards = found
    return best, cards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best counts")
    parser.add_argument("--shoes", type=int, default=4, help="8-deck shoes in the stream")
    args = parser.parse_args()
    cases = [
        ("beetek", beetek_stream(args.shoes), BeetekAdapter, NaiveBeetek),
        ("linecode", linecode_stream(args.shoes), LineCodeAdapter, NaiveLineCode),
    ]
    print(f"wire rate: 9600 baud 8N1 = {WIRE_BYTES_PER_SECOND:.0f} bytes/s")
    print(
        f"{'adapter':9} {'chunk':>5} {'bytes/s':>12} {'x wire':>9} {'naive x wire':>13} "
        f"{'vs naive':>9}"
    )
    for name, (data, cards), adapter, naive in cases:
        for chunk in CHUNKS:
            rate, decoded = measure(adapter, data, chunk, args.repeat)
            naive_rate, naive_decoded = measure(naive, data, chunk, args.repeat)
            messages_expected = cards + (args.shoes if name == "beetek" else 0)
            if decoded != messages_expected or naive_decoded != messages_expected:
                raise SystemExit(
                    f"{name} chunk {chunk}: decoded {decoded} / naive {naive_decoded} "
                    f"messages, expected {messages_expected}"
                )
            print(
                f"{name:9} {chunk:>5} {rate:>12,.0f} {rate / WIRE_BYTES_PER_SECOND:>9,.0f} "
                f"{naive_rate / WIRE_BYTES_PER_SECOND:>13,.0f} {rate / naive_rate:>9.2f}"
            )
        print(f"{'':9} ({len(data):,} bytes, {cards} cards)")


if __name__ == "__main__":
    main()
