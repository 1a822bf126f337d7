"""Benchmark of the shoe link's receive path, as ratios against baselines measured in this run.

1. Decode throughput of ``HostLink.receive_data`` (frames to typed messages, with the ACK
   after each) over a recorded 8-deck shoe, as a multiple of the wire rate at 115200 baud
   (8N1: 11520 bytes/s) and of a straightforward byte-at-a-time decoder (bitwise CRC, COBS
   by hand) run on the same bytes. Aim: >= 100x the wire rate.
2. Latency from the last byte of a CARD frame to the typed message, against the time that
   one byte takes on the wire.

Run: ``python bench/bench_link.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drivers.wire.link import DeviceLink, HostLink
from drivers.wire.messages import (
    Card,
    CardFlags,
    DeviceKind,
    Heartbeat,
    Hello,
    Shoe,
    ShoeState,
    decode_message,
)

BAUD = 115200
WIRE_BYTES_PER_SECOND = BAUD / 10  # 8N1: start + 8 data + stop bits


def recorded_shoe() -> bytes:
    """The bytes a device sends for one 8-deck shoe (HELLO, SHOE, 416 CARDs, heartbeats)."""
    device, host = DeviceLink(), HostLink()
    device.start_session(Hello(DeviceKind.OPTICAL_SHOE, 7, "bench", "b", "1", "1"))
    stream = bytearray()
    messages = [Shoe(ShoeState.LOADED)]
    for counter in range(1, 417):
        flags = CardFlags.FACE_UP if counter % 97 == 0 else CardFlags.NONE
        messages.append(Card(counter, flags, (counter - 1) % 13 + 1, (counter - 1) % 4))
        if counter % 50 == 0:
            messages.append(Heartbeat(counter * 1000))
    messages.append(Shoe(ShoeState.EMPTY))
    for message in [None, *messages]:
        if message is not None:
            device.send(message)
        data = device.bytes_to_send()
        stream += data
        for delivery in host.receive_data(data):
            host.ack(delivery.handle)
        device.receive_data(host.bytes_to_send())
    return bytes(stream)


def naive_decode(stream: bytes) -> int:
    """Baseline: one byte at a time, COBS and CRC by the textbook, then the same payload decode."""
    messages = 0
    frame = bytearray()
    for byte in stream:
        if byte != 0:
            frame.append(byte)
            continue
        body = bytearray()
        index = 0
        while index < len(frame):
            code = frame[index]
            index += 1
            for _ in range(code - 1):
                body.append(frame[index])
                index += 1
            if code != 0xFF and index < len(frame):
                body.append(0)
        frame.clear()
        crc = 0xFFFF
        for value in body[:-2]:
            crc ^= value << 8
            for _ in range(8):
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
        if crc == int.from_bytes(body[-2:], "big"):
            decode_message(body[2], bytes(body[3:-2]))
            messages += 1
    return messages


def link_decode(stream: bytes, chunk: int) -> int:
    host = HostLink()
    delivered = 0
    for start in range(0, len(stream), chunk):
        for delivery in host.receive_data(stream[start : start + chunk]):
            host.ack(delivery.handle)
            delivered += 1
        host.bytes_to_send()
    return delivered


def best_of(rounds: int, function, *args) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    times = []
    result = 0
    for _ in range(rounds):
        start = time.perf_counter()
        result = function(*args)
        times.append(time.perf_counter() - start)
    return min(times), result


def card_latency(samples: int) -> list[float]:
    """Seconds from feeding the last byte of a CARD frame to holding the typed message."""
    device, host = DeviceLink(), HostLink()
    device.start_session(Hello(DeviceKind.OPTICAL_SHOE, 9))
    for delivery in host.receive_data(device.bytes_to_send()):
        host.ack(delivery.handle)
    device.receive_data(host.bytes_to_send())
    latencies = []
    for counter in range(1, samples + 1):
        device.send(Card(counter, CardFlags.NONE, 1, 0))
        frame = device.bytes_to_send()
        host.receive_data(frame[:-1])
        start = time.perf_counter_ns()
        (delivery,) = host.receive_data(frame[-1:])
        elapsed = time.perf_counter_ns() - start
        assert isinstance(delivery.message, Card)
        latencies.append(elapsed / 1e9)
        host.ack(delivery.handle)
        device.receive_data(host.bytes_to_send())
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    stream = recorded_shoe()
    frames = stream.count(0)
    print(f"recorded shoe: {len(stream)} bytes, {frames} frames")
    print(f"wire rate at {BAUD} baud 8N1: {WIRE_BYTES_PER_SECOND:,.0f} bytes/s")

    naive_time, naive_messages = best_of(args.rounds, naive_decode, stream)
    naive_rate = len(stream) / naive_time
    print(
        f"baseline byte-at-a-time decoder: {naive_rate:,.0f} bytes/s "
        f"({naive_rate / WIRE_BYTES_PER_SECOND:.1f}x wire), {naive_messages} messages"
    )
    for chunk in (4096, 64, 16, 1):
        link_time, delivered = best_of(args.rounds, link_decode, stream, chunk)
        if delivered != naive_messages:
            print(f"MISMATCH: link delivered {delivered}, baseline {naive_messages}")
            return 1
        rate = len(stream) / link_time
        print(
            f"HostLink.receive_data, reads of {chunk:>4} bytes: {rate:,.0f} bytes/s = "
            f"{rate / WIRE_BYTES_PER_SECOND:,.0f}x wire rate, "
            f"{rate / naive_rate:.1f}x baseline, {link_time / frames * 1e6:.1f} us/frame"
        )

    latencies = card_latency(2000)
    byte_time = 1 / WIRE_BYTES_PER_SECOND
    median = statistics.median(latencies)
    p99 = statistics.quantiles(latencies, n=100)[98]
    print(
        f"last byte of CARD -> typed message: median {median * 1e6:.1f} us, p99 {p99 * 1e6:.1f} us"
        f" = {median / byte_time:.3f} / {p99 / byte_time:.3f} of one byte's wire time"
        f" ({byte_time * 1e6:.1f} us)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
