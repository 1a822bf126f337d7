"""Virtual Beetek and line-code shoes: deal a card sequence as vendor ASCII on a real pty.

Run as a process (the far side of the pty is what the controller or the monitor opens):

    python -m drivers.sim.ascii --protocol beetek --decks 8 --seed 7 --pace 0.2 --noise 0.3

It prints the pty's path as its first stdout line, waits for the start condition (`--start`:
`open` = the reader opened and configured the port, `stdin` = a line on stdin, `now`), deals,
prints `done <n>` and keeps the pty open until stdin closes or SIGTERM (closing it would look
like an unplugged cable). Each item of the deal is a card or a token:

    4S, 10H, TD      a card (beetek writes tens as `--ten`: 10, T or mixed)
    burn:4S          beetek: burned in the shoe's burn mode ([Manual Burn Cards])
    unread           beetek: a card passed but was not read ([Game]<Game>)
    alarm:TEXT       beetek: [GameAlarm]<Alarm:TEXT>, e.g. alarm:E3 Card Not Read
    warn:1           beetek: <W0x01>
    raw:TEXT         these bytes as they are (to inject garbled text on purpose)

Fault injection: `--chunk-max N` splits every message into writes of 1..N bytes (with
`--chunk-gap` seconds between them, so readers see them apart), `--noise P` puts a burst of
harmless line noise (blanks, NULs, `~#*%`, for beetek digits too; never message syntax, and for
line codes always a line of its own) before a message with probability P. `deal_script` and
`render` are pure, so tests build the exact bytes too; `spawn` runs the simulator for a test.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import select
import signal
import subprocess
import sys
import termios
import time
import tty
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from drivers.adapters import beetek, linecode
from shoe_controller.vocab.cards import Card, full_deck, parse_card

PROTOCOLS = ("beetek", "linecode")
NOISE_ALPHABET = b"\x00 \t\r\n~#*%0123456789"
LINE_NOISE_ALPHABET = b"\x00 \t\r\n~#*%"
TERMINATORS = {"crlf": b"\r\n", "cr": b"\r", "lf": b"\n"}
_SENTINEL_SPEED = termios.B50  # the port's speed until a reader configures it (`--start open`)


class ScriptError(ValueError):
    """A deal item that names no card or token."""


@dataclass(frozen=True, slots=True)
class Item:
    """One step of a deal: `kind` is card, burn, unread, alarm, warn or raw."""

    kind: str
    card: Card | None = None
    text: str = ""


def shuffled_shoe(decks: int, seed: int | None) -> list[Card]:
    """`decks` full decks in a random order (seeded: tests compute the same shoe)."""
    cards = [card for _ in range(decks) for card in full_deck()]
    random.Random(seed).shuffle(cards)
    return cards


def parse_items(text: str) -> list[Item]:
    """Comma-separated deal items (see the module's docstring)."""
    items = []
    for token in (part.strip() for part in text.split(",")):
        if not token:
            continue
        head, colon, rest = token.partition(":")
        head = head.lower()
        try:
            if not colon and head == "unread":
                items.append(Item("unread"))
            elif colon and head == "burn":
                items.append(Item("burn", parse_card(rest)))
            elif colon and head == "alarm":
                items.append(Item("alarm", text=rest))
            elif colon and head == "warn":
                items.append(Item("warn", text=str(int(rest, 0))))
            elif colon and head == "raw":
                items.append(Item("raw", text=rest))
            else:
                items.append(Item("card", parse_card(token)))
        except ValueError as error:
            raise ScriptError(f"deal item {token!r}: {error}") from None
    return items


def render(
    item: Item, protocol: str, rng: random.Random, *, ten: str = "10", end: str = "crlf"
) -> bytes:
    """The bytes a shoe of `protocol` sends for one item."""
    if item.kind == "raw":
        return item.text.encode("latin-1")
    if protocol == "linecode":
        if item.kind != "card" or item.card is None:
            raise ScriptError(f"a line-code shoe cannot send {item.kind!r}")
        terminator = rng.choice(list(TERMINATORS.values())) if end == "mixed" else TERMINATORS[end]
        return linecode.encode_card(item.card, terminator)
    spelling = rng.choice(("10", "T")) if ten == "mixed" else ten
    if item.kind in ("card", "burn") and item.card is not None:
        return beetek.encode_card(item.card, burn=item.kind == "burn", ten=spelling)
    if item.kind == "unread":
        return beetek.encode_unreadable()
    if item.kind == "alarm":
        return beetek.encode_alarm(item.text)
    if item.kind == "warn":
        return beetek.encode_warning(int(item.text))
    raise ScriptError(f"unknown deal item {item!r}")


def noise(rng: random.Random, size: int, protocol: str = "beetek") -> bytes:
    """Line noise that can never be taken for a message (no letters, no `[ ] < >`).

    For line codes it has no digits either and ends its own line, so it never joins a code.
    """
    if protocol == "linecode":
        return bytes(rng.choice(LINE_NOISE_ALPHABET) for _ in range(size)) + b"\r\n"
    return bytes(rng.choice(NOISE_ALPHABET) for _ in range(size))


def chunks(data: bytes, rng: random.Random, chunk_max: int) -> Iterator[bytes]:
    """`data` cut into pieces of 1..chunk_max bytes (0: one piece)."""
    if chunk_max <= 0:
        yield data
        return
    position = 0
    while position < len(data):
        size = rng.randint(1, chunk_max)
        yield data[position : position + size]
        position += size


def deal_script(
    items: Sequence[Item],
    protocol: str,
    *,
    seed: int | None = None,
    noise_rate: float = 0.0,
    ten: str = "10",
    end: str = "crlf",
) -> list[bytes]:
    """The bytes of each step, noise included (noise goes before a message)."""
    rng = random.Random(seed)
    steps = []
    for item in items:
        message = render(item, protocol, rng, ten=ten, end=end)
        if noise_rate and rng.random() < noise_rate:
            message = noise(rng, rng.randint(1, 12), protocol) + message
        steps.append(message)
    return steps


class PtyShoe:
    """The device end of a fresh pty; the slave's path is what readers open."""

    def __init__(self) -> None:
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no CR/LF translation: bytes pass as they are
        attributes = termios.tcgetattr(self._slave)
        attributes[4] = attributes[5] = _SENTINEL_SPEED
        termios.tcsetattr(self._slave, termios.TCSANOW, attributes)
        self.path = os.ttyname(self._slave)

    def wait_until_opened(self, timeout: float | None = None) -> bool:
        """True once a reader has set the port's speed (pyserial does on open)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while deadline is None or time.monotonic() < deadline:
            if termios.tcgetattr(self._slave)[5] != _SENTINEL_SPEED:
                time.sleep(0.1)  # let the reader finish opening (it flushes its input)
                return True
            time.sleep(0.01)
        return False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self.master, view)
            view = view[written:]

    def close(self) -> None:
        for fd in (self.master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)


def run(
    shoe: PtyShoe,
    steps: Sequence[bytes],
    *,
    pace: float,
    chunk_max: int,
    chunk_gap: float,
    seed: int | None,
) -> None:
    """Write each step at `pace` seconds apart, cut into chunks."""
    rng = random.Random(None if seed is None else seed + 1)
    for index, step in enumerate(steps):
        if index and pace:
            time.sleep(pace)
        for piece in chunks(step, rng, chunk_max):
            shoe.write(piece)
            if chunk_max and chunk_gap:
                time.sleep(chunk_gap)


@dataclass(frozen=True, slots=True)
class Running:
    """A simulator process and the pty path it printed."""

    process: subprocess.Popen[bytes]
    path: str

    def start(self) -> None:
        """Begin dealing (for `--start stdin`)."""
        assert self.process.stdin is not None
        self.process.stdin.write(b"go\n")
        self.process.stdin.flush()

    def wait_done(self) -> int:
        """Block until the simulator says it dealt everything; the number of items dealt."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()
        if not line.startswith("done "):
            raise RuntimeError(f"simulator ended early: {line!r}")
        return int(line.split()[1])


@contextlib.contextmanager
def spawn(*args: str) -> Iterator[Running]:
    """Run the simulator in another process (for tests and demos); stopped on exit.

    `args` are the command line options, e.g. `spawn("--protocol", "beetek", "--decks", "1")`.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "drivers.sim.ascii", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        path = process.stdout.readline().decode().strip()
        if not path:
            raise RuntimeError(f"simulator did not start (exit code {process.wait()})")
        yield Running(process, path)
    finally:
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _wait_for_stdin_close() -> None:
    while True:
        readable, _, _ = select.select([sys.stdin], [], [], 1.0)
        if readable and not sys.stdin.buffer.read1(4096):
            return


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m drivers.sim.ascii", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--protocol", choices=PROTOCOLS, required=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--cards", help="comma-separated deal items, e.g. 4S,burn:TD,unread")
    source.add_argument("--decks", type=int, help="deal a shuffled shoe of this many decks")
    parser.add_argument("--count", type=int, help="deal only the first COUNT items")
    parser.add_argument("--seed", type=int, help="seed of the shuffle and of the noise")
    parser.add_argument("--pace", type=float, default=0.5, help="seconds between messages")
    parser.add_argument("--chunk-max", type=int, default=0, help="cut messages into 1..N bytes")
    parser.add_argument("--chunk-gap", type=float, default=0.002, help="seconds between chunks")
    parser.add_argument("--noise", type=float, default=0.0, help="chance of noise before a message")
    parser.add_argument("--ten", choices=("10", "T", "mixed"), default="10", help="beetek's ten")
    parser.add_argument("--end", choices=(*TERMINATORS, "mixed"), default="crlf", help="line end")
    parser.add_argument("--start", choices=("open", "stdin", "now"), default="open")
    parser.add_argument("--exit-when-done", action="store_true", help="do not keep the pty open")
    args = parser.parse_args(argv)

    try:
        if args.cards is not None:
            items = parse_items(args.cards)
        else:
            items = [Item("card", card) for card in shuffled_shoe(args.decks, args.seed)]
        items = items[: args.count] if args.count is not None else items
        steps = deal_script(
            items, args.protocol, seed=args.seed, noise_rate=args.noise, ten=args.ten, end=args.end
        )
    except ScriptError as error:
        parser.error(str(error))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    shoe = PtyShoe()
    try:
        print(shoe.path, flush=True)
        if args.start == "open":
            shoe.wait_until_opened()
        elif args.start == "stdin":
            sys.stdin.readline()
        run(
            shoe,
            steps,
            pace=args.pace,
            chunk_max=args.chunk_max,
            chunk_gap=args.chunk_gap,
            seed=args.seed,
        )
        print(f"done {len(steps)}", flush=True)
        if not args.exit_when_done:
            _wait_for_stdin_close()
    except KeyboardInterrupt:
        pass
    finally:
        shoe.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
