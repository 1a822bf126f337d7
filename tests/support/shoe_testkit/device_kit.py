"""Helpers for the drivers' tests: feeding the ASCII adapters, running a HostLink to a shoe, and
what only the tests ask of messages and the deck registry.

The adapter half feeds bytes to a `TextAdapter` whole, in fixed steps, in random chunks or
from a real pty. The link half builds a `DeviceConnection` whose status reports are kept,
collects what a simulated device says until a test has seen enough (ACKing every message as
if it was stored), and disturbs the device once mid-shoe (unplug, silence, kill). The product
has no use for a message's `(type, payload)` pair or for a registry's missing cards:
`encode_message` and `incomplete_decks` are here.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from drivers.adapters import Reading, TextAdapter
from drivers.sim.base import SimConfig, SimDevice
from drivers.sim.devices import make_device
from drivers.translate.registry import DeckRegistry
from drivers.transports.base import Transport
from drivers.transports.connection import ConnectionStatus, DeviceConnection
from drivers.transports.serial import SerialTransport
from drivers.wire.link import HostLink
from drivers.wire.messages import Card, DeviceKind, Message, Shoe, ShoeState
from shoe_controller.vocab import cards

GUARD = 60.0  # seconds: only stops a hung test, asserts nothing about speed
MAX_READS = 2000  # a bound on reads from a pty, in case the simulator dies

Done = Callable[[list[Message]], bool]


# --- the vendor ASCII adapters ------------------------------------------------------------


def feed(adapter: TextAdapter, data: bytes, *, step: int = 0) -> list[Reading]:
    """The readings of `data`, given whole (`step` 0) or `step` bytes at a time."""
    if step <= 0:
        return adapter.receive_data(data)
    readings: list[Reading] = []
    for start in range(0, len(data), step):
        readings += adapter.receive_data(data[start : start + step])
    return readings


def feed_in_random_chunks(
    adapter: TextAdapter, data: bytes, rng: random.Random, largest: int
) -> list[Reading]:
    """The readings of `data` given in chunks of 1 to `largest` bytes, as `rng` cuts them."""
    readings: list[Reading] = []
    position = 0
    while position < len(data):
        size = rng.randint(1, largest)
        readings += adapter.receive_data(data[position : position + size])
        position += size
    return readings


def read_pty(path: str, adapter: TextAdapter, wanted: int) -> list[Reading]:
    """Read a simulated shoe's pty through SerialTransport until `wanted` readings came."""
    port = SerialTransport(path, baudrate=9600, read_timeout=0.05)
    port.open()
    readings: list[Reading] = []
    try:
        for _ in range(MAX_READS):
            readings += adapter.receive_data(port.read())
            if len(readings) >= wanted:
                break
    finally:
        port.close()
    return readings


# --- the reference protocol over a DeviceConnection ---------------------------------------


def optical_shoe(*, pace: float, **fields: Any) -> SimDevice:
    """A simulated one-deck optical shoe; `fields` override any other SimConfig field."""
    options: dict[str, Any] = {"kind": DeviceKind.OPTICAL_SHOE, "decks": 1, "pace": pace}
    options.update(fields)
    return make_device(SimConfig(**options))


def watched_connection(
    transport: Transport, **options: Any
) -> tuple[DeviceConnection[Any], HostLink, list[ConnectionStatus]]:
    """A HostLink on a DeviceConnection (`options` are its timings) and the statuses it reports."""
    link = HostLink()
    statuses: list[ConnectionStatus] = []
    connection: DeviceConnection[Any] = DeviceConnection(
        transport, link, on_status=lambda status, _: statuses.append(status), **options
    )
    return connection, link, statuses


async def collect(connection: DeviceConnection[Any], link: HostLink, done: Done) -> list[Message]:
    """Every message, each ACKed as if stored, until `done(received)` says enough."""
    received: list[Message] = []

    async def consume() -> None:
        async for delivery in connection.messages():
            received.append(delivery.message)  # "stored"
            link.ack(delivery.handle)
            if done(received):
                connection.stop()

    await asyncio.wait_for(consume(), GUARD)
    return received


def counters(received: list[Message]) -> list[int]:
    return [m.counter for m in received if isinstance(m, Card)]


def shoe_empty(received: list[Message]) -> bool:
    return Shoe(ShoeState.EMPTY) in received


def disturbed_once(after_cards: int, disturb: Callable[[], object]) -> Done:
    """Until the shoe is empty, calling `disturb()` once when `after_cards` cards came."""
    disturbed = False

    def done(received: list[Message]) -> bool:
        nonlocal disturbed
        if not disturbed and len(counters(received)) == after_cards:
            disturbed = True
            disturb()
        return shoe_empty(received)

    return done


# --- what only the tests ask of messages and the deck registry ---------------------------


def encode_message(message: Message) -> tuple[int, bytes]:
    """``(type, payload)`` of a message, as `encode_frame(seq, type, payload)` takes them."""
    return message.TYPE, message.encode_payload()


def incomplete_decks(registry: DeckRegistry) -> dict[str, tuple[cards.Card, ...]]:
    """Decks of `registry` that lack cards, with the cards they lack (a partly tagged deck
    loads). The registry lists nothing itself: its entries are read directly."""
    have: dict[str, set[cards.Card]] = {}
    for registered in registry._entries.values():
        have.setdefault(registered.deck_serial, set()).add(registered.card)
    return {
        serial: tuple(card for card in cards.full_deck() if card not in held)
        for serial, held in sorted(have.items())
        if len(held) < 52
    }
