"""Benchmark: the whole daemon (`shoe-controller run`) with a shoe on a pty and a table server.

Measures, in one run on this machine, with real processes:
  1. latency from the last byte of a CARD frame written on the pty to
     (a) the device's ACK (the card is durable in the journal: ACK after storage), and
     (b) the table server storing the card's first event (its `received_at`),
     p50/p99, at dealing pace (2 cards/s) and at 100 cards/s;
  2. the daemon's RSS and CPU while idle (heartbeats only) and while dealing, and its CPU per
     card over the whole shoe (SHOE loaded to the last card's events at the table server);
  3. recovery: time from starting the daemon to READY (sd_notify) and to its
     controller.started in the journal, with a full shoe (~400 cards) in the journal.
Each is printed beside a baseline measured in the same run: a bare pty echo by another
process, a bare SQLite commit (WAL, synchronous=FULL), a bare HTTP round trip to the same
receiver, the minimal host (MINIMAL_HOST: read the frame, commit its row, ACK) dealt the same
shoe for the CPU per card, and a start with an empty journal.

The shoe is our own small SLP device (drivers.wire.link.DeviceLink on a pty), so that the moment
the frame's last byte is written and the moment its ACK arrives are both seen here.

Run: python bench/bench_daemon.py [--quick] [--dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import select
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tty
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from latency import http_round_trips, percentile

from drivers.wire.link import DeviceLink, LinkConfig
from drivers.wire.messages import (
    Button,
    ButtonId,
    Card,
    CardFlags,
    DeviceKind,
    Heartbeat,
    Hello,
    Indicate,
    IndicatePattern,
    Message,
    Shoe,
    ShoeState,
    StatusRequest,
)
from shoe_controller.kit.rig import TABLE_ID, RigOptions, TableRig

REPO = Path(__file__).resolve().parents[1]
DEALING_PACE = 2.0  # cards a second, a brisk dealer
FAST_RATE = 100.0  # cards a second
# A shoe as dealt: an eight-deck shoe's 416 cards less those behind the cut card (at least
# 12, R2.1). The bench's shoe deals no cut card; it stops there.
SHOE_CARDS = 400
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def describe(name: str, samples: list[float]) -> tuple[float, float]:
    p50, p99 = percentile(samples, 0.50), percentile(samples, 0.99)
    print(
        f"  {name:<52} p50 {p50 * 1e3:8.3f} ms   p99 {p99 * 1e3:8.3f} ms   "
        f"max {max(samples) * 1e3:8.3f} ms   (n={len(samples)})"
    )
    return p50, p99


def ratio(name: str, ours: tuple[float, float], base: tuple[float, float]) -> None:
    print(f"    ratio to {name:<44} p50 {ours[0] / base[0]:7.1f}x   p99 {ours[1] / base[1]:7.1f}x")


# ---------------------------------------------------------------------- the bench shoe


INDICATE_WAIT_S = 0.02  # how long the bench's dealer looks for the lights a card brought


class BenchShoe:
    """A minimal reference-protocol shoe on a pty that times each CARD until its ACK."""

    def __init__(self, link_path: Path, seed: int = 7) -> None:
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)  # kept open: the daemon closing its side loses nothing
        os.set_blocking(self.master, False)
        link_path.symlink_to(os.ttyname(self._slave))
        self.link = DeviceLink(LinkConfig())
        rng = random.Random(seed)
        self.boot_id = rng.getrandbits(32)
        self.cards = [(rank, suit) for _ in range(8) for rank in range(1, 14) for suit in range(4)]
        rng.shuffle(self.cards)
        self.counter = 0
        self.state = ShoeState.REMOVED
        self.born = time.monotonic()
        self.last_send = 0.0
        self.acked_at: float | None = None  # perf_counter of the read that brought the ACK
        self.lights: IndicatePattern | None = None  # the last INDICATE's pattern
        self.indications = 0  # INDICATE frames received
        self._indications_at_deal = 0

    def close(self) -> None:
        for fd in (self.master, self._slave):
            os.close(fd)

    # -- sending -------------------------------------------------------------------------

    def hello(self) -> None:
        self.link.start_session(
            Hello(DeviceKind.OPTICAL_SHOE, self.boot_id, "bench", "bench-shoe", "BENCH1", "1.0")
        )
        self._flush()

    def send(self, message: Message) -> tuple[float, float]:
        """Send once nothing is in flight; (perf_counter, time) of the frame's last byte."""
        self.pump_until(lambda: self.link.pending == 0)
        self.link.send(message)
        self.acked_at = None
        return self._flush(), time.time()

    def deal(self) -> tuple[int, float, float]:
        rank, suit = self.cards[self.counter]
        self.counter += 1
        self._indications_at_deal = self.indications
        written, wall = self.send(Card(self.counter, CardFlags.NONE, rank, suit))
        return self.counter, written, wall

    def close_bets_when_open(self) -> None:
        """The dealer's eye on the lights (`[table] betting = "button"`): the
        lights the last card brought (they come after its ACK; at most INDICATE_WAIT_S, a
        card need not change them), and if they say "bets open", NO_MORE_BETS and "deal"."""
        deadline = time.monotonic() + INDICATE_WAIT_S
        while self.indications == self._indications_at_deal and time.monotonic() < deadline:
            self.step(deadline)
        if self.lights == IndicatePattern.BETS_OPEN:
            self.send(Button(ButtonId.NO_MORE_BETS))
            self.pump_until(lambda: self.lights != IndicatePattern.BETS_OPEN)

    def load(self, cards: list[tuple[int, int]] | None = None) -> None:
        """SHOE loaded; `cards` (rank, suit) the new shoe's order (else the same again)."""
        if cards is not None:
            self.cards = list(cards)
        # A shoe counts its cards from 1 again after SHOE loaded (docs/spec-protocol.md): without
        # this
        # the table saw a counter gap, held for a missed card and queued every card after.
        self.counter = 0
        self.state = ShoeState.LOADED
        self.send(Shoe(ShoeState.LOADED))
        self.pump_until(lambda: self.link.pending == 0)

    def _flush(self) -> float:
        data = self.link.bytes_to_send()
        while data:
            try:
                written = os.write(self.master, data)
            except BlockingIOError:
                select.select([], [self.master], [], 0.05)
                continue
            data = data[written:]
            self.last_send = time.monotonic()
        return time.perf_counter()

    # -- receiving -----------------------------------------------------------------------

    def pump_until(self, done: Callable[[], bool], timeout: float = 30.0) -> None:
        """Read, answer and resend until `done()`; heartbeats while idle (docs/spec-protocol.md)."""
        deadline = time.monotonic() + timeout
        while not done():
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f"the daemon did not answer; link {self.link.stats}")
            self.step(min(deadline, now + 0.05))

    def pump_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.step(end)

    def step(self, until: float) -> None:
        now = time.monotonic()
        self.link.poll(now)
        if self.link.pending == 0 and now - self.last_send >= 1.0:
            self.link.send(Heartbeat(int((now - self.born) * 1000) & 0xFFFFFFFF))
        self._flush()
        wake = [until, self.last_send + 1.0]  # the next heartbeat is due then at the latest
        timer = self.link.next_timer()
        if timer is not None:
            wake.append(timer)
        wait = max(0.0, min(wake) - time.monotonic())
        readable, _, _ = select.select([self.master], [], [], wait)
        if not readable:
            return
        try:
            data = os.read(self.master, 4096)
        except (BlockingIOError, OSError):
            return
        arrived = time.perf_counter()
        before = self.link.pending
        deliveries = self.link.receive_data(data)
        if self.link.pending < before:
            self.acked_at = arrived
        for delivery in deliveries:
            if isinstance(delivery.message, StatusRequest):
                self.link.send(Shoe(self.state))
            elif isinstance(delivery.message, Indicate):
                self.lights = delivery.message.pattern
                self.indications += 1
        self._flush()


# ---------------------------------------------------------------------- baselines


def bare_commits(path: Path, samples: int) -> list[float]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
    times = []
    for n in range(samples):
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (body) VALUES (?)", (f'{{"card": "QH", "n": {n}}}',))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - start)
    conn.close()
    return times


ECHO = textwrap.dedent(
    """
    import os, sys, tty
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    print("ready", flush=True)
    while True:
        data = os.read(fd, 4096)
        if data.endswith(b"\\0"):
            os.write(fd, b"\\6")
    """
)


def pty_echo(samples: int) -> list[float]:
    """Another process reads a CARD-sized frame from the pty and answers one byte."""
    master, slave = os.openpty()
    tty.setraw(slave)
    echo = subprocess.Popen(
        [sys.executable, "-c", ECHO, os.ttyname(slave)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert echo.stdout is not None
        echo.stdout.readline()
        frame = bytes(range(1, 15)) + b"\0"  # a CARD frame is 15 bytes with its delimiter
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            os.write(master, frame)
            os.read(master, 16)
            times.append(time.perf_counter() - start)
            time.sleep(0.001)
        return times
    finally:
        echo.kill()
        echo.wait()
        os.close(master)
        os.close(slave)


MINIMAL_HOST = textwrap.dedent(
    """
    import json, os, sqlite3, sys, tty
    from drivers.wire.link import HostLink
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    db = sqlite3.connect(sys.argv[2], isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS inputs (n INTEGER PRIMARY KEY, body TEXT)")
    db.execute("CREATE TABLE IF NOT EXISTS links (device TEXT PRIMARY KEY, state TEXT)")
    db.execute("CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, last INTEGER)")
    db.execute("INSERT OR IGNORE INTO counter VALUES (1, 0)")
    with_session = sys.argv[3] == "session"
    link = HostLink()
    print("ready", flush=True)
    while True:
        for delivery in link.receive_data(os.read(fd, 4096)):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO inputs (body) VALUES (?)", (repr(delivery.message),))
            if with_session:  # what the card's ACK stands for: the card, the ACK's session
                session = json.dumps(delivery.handle.session_after.to_dict())
                db.execute("INSERT OR REPLACE INTO links VALUES ('scanner', ?)", (session,))
                db.execute("UPDATE counter SET last = last + 1")
            db.execute("COMMIT")
            link.ack(delivery.handle)
            out = link.bytes_to_send()
            if out:
                os.write(fd, out)
    """
)


@contextmanager
def minimal_host(directory: Path, kind: str) -> Iterator[tuple[BenchShoe, int]]:
    """MINIMAL_HOST on a bench shoe of its own, the shoe's HELLO sent; yields the shoe and the
    host's pid. `kind` "row" stores the card's row alone, "session" also what the ACK is
    numbered in (the link session, as the journal's links row, and an input counter)."""
    shoe = BenchShoe(directory / f"{kind}-shoe")
    host = subprocess.Popen(
        [sys.executable, "-c", MINIMAL_HOST, str(directory / f"{kind}-shoe"),
         str(directory / f"{kind}.db"), kind],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    try:
        assert host.stdout is not None
        host.stdout.readline()
        shoe.hello()
        yield shoe, host.pid
    finally:
        host.kill()
        host.wait()
        if host.stdout is not None:
            host.stdout.close()
        shoe.close()


def minimal_host_shoe_cpu(directory: Path, paces: list[tuple[float, int]]) -> float:
    """CPU seconds the minimal host spends on the bench's shoe dealt at `paces` (deal_shoe),
    from SHOE loaded to the last card's ACK."""
    with minimal_host(directory, "row") as (shoe, pid):
        usage = Usage(pid)
        before = usage.cpu()
        deal_shoe(shoe, paces)
        return usage.cpu() - before


# ---------------------------------------------------------------------- the daemon


class Usage:
    """CPU time and RSS of a process, from /proc."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._cpu, self._wall = self.cpu(), time.monotonic()

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def report(self, name: str) -> None:
        cpu, wall = self.cpu(), time.monotonic()
        share = (cpu - self._cpu) / (wall - self._wall) * 100
        print(f"  {name:<52} CPU {share:6.1f} %   RSS {self.rss_mb():6.1f} MB")
        self._cpu, self._wall = cpu, wall


class Notify:
    """The socket systemd would give the daemon (NOTIFY_SOCKET)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))

    def drain(self) -> None:
        self.sock.setblocking(False)
        try:
            while True:
                self.sock.recv(4096)
        except BlockingIOError:
            pass
        self.sock.setblocking(True)

    def wait_ready(self, timeout: float = 30.0) -> float:
        self.sock.settimeout(timeout)
        while b"READY=1" not in self.sock.recv(4096):
            pass
        return time.perf_counter()


def timed_start(
    rig: TableRig, notify: Notify, shoe: BenchShoe | None
) -> tuple[float, float, float]:
    """Start the daemon; seconds to READY, to its controller.started in the journal and,
    with a shoe, to the ACK of the next card dealt (the table takes cards again)."""
    notify.drain()
    journal = rig.records.journal()
    before = journal.reads.last_seq() if journal is not None else 0
    start = time.perf_counter()
    rig.start_daemon({"NOTIFY_SOCKET": str(notify.path)}, wait=False)
    ready = notify.wait_ready() - start
    if shoe is None:
        rig.wait_until(lambda: _started(rig, before), "controller.started")
        return ready, time.perf_counter() - start, float("nan")
    shoe.pump_until(lambda: _started(rig, before))  # answering the daemon, as a shoe would
    started = time.perf_counter() - start
    shoe.deal()
    shoe.pump_until(lambda: shoe.acked_at is not None)
    assert shoe.acked_at is not None
    return ready, started, shoe.acked_at - start


def _started(rig: TableRig, after_seq: int) -> bool:
    journal = rig.records.journal()
    return journal is not None and any(
        event.type == "controller.started"
        for event in journal.reads.events_after(after_seq, 10_000)
    )


def deal_phase(
    shoe: BenchShoe, rate: float, count: int, *, betting: bool = False
) -> tuple[list[float], dict[int, float]]:
    """Deal `count` cards at `rate` a second; ACK latencies and each counter's wall time.
    With `betting`, the dealer closes each round's bets by button before its first card
    (untimed, and before waiting for the card's turn, so the pace is kept)."""
    latencies, walls = [], {}
    interval = 1.0 / rate
    next_at = time.monotonic()
    for _ in range(count):
        if betting:
            shoe.close_bets_when_open()
        if next_at > time.monotonic():
            shoe.pump_for(next_at - time.monotonic())
        next_at += interval
        counter, written, wall = shoe.deal()
        shoe.pump_until(lambda: shoe.acked_at is not None)
        assert shoe.acked_at is not None
        latencies.append(shoe.acked_at - written)
        walls[counter] = wall
    return latencies, walls


def deal_shoe(
    shoe: BenchShoe,
    paces: list[tuple[float, int]],
    after_pace: Callable[[float, int], None] | None = None,
) -> list[tuple[list[float], dict[int, float]]]:
    """SHOE loaded, then (rate, count) for each of `paces` in turn (deal_phase's results);
    `after_pace(rate, count)` after each. Both sides of the CPU per card are dealt by it."""
    shoe.load()
    phases = []
    for rate, count in paces:
        phases.append(deal_phase(shoe, rate, count))
        if after_pace is not None:
            after_pace(rate, count)
    return phases


def cpu_per_card(daemon_s: float, minimal_s: float, cards: int) -> float:
    """Print the daemon's CPU per card beside the minimal host's and their ratio; the ratio
    (infinite if the minimal host's CPU was under a clock tick)."""
    ratio = daemon_s / minimal_s if minimal_s > 0 else float("inf")
    print(f"  {f'CPU per card, the shoe ({cards} cards)':<52} "
          f"{daemon_s / cards * 1e3:7.3f} ms   ({daemon_s * 1e3:.0f} ms in all)")  # fmt: skip
    print(f"    ratio to {'the minimal host, the same shoe':<44} {ratio:7.2f}x")
    return ratio


def delivered_latencies(rig: TableRig, walls: dict[int, float]) -> list[float]:
    """Card written on the pty to the table server storing the card's first event."""
    journal = rig.records.journal()
    assert journal is not None
    first_id = {}  # by event id: the server's seq is its sink's, not the journal's
    for step in journal.reads.replay_steps(1):
        if step.input["type"] == "card" and step.events:
            first_id[step.input["counter"]] = step.events[0].id
    conn = sqlite3.connect(f"file:{rig.receiver_db}?mode=ro", uri=True)
    received = dict(conn.execute("SELECT id, received_at FROM events WHERE table_id = ?",
                                 (TABLE_ID,)).fetchall())  # fmt: skip
    conn.close()
    return [
        received[first_id[counter]] - wall for counter, wall in walls.items() if counter in first_id
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--dir", default=None, help="where the files go (the journal's disk)")
    parser.add_argument("--keep", action="store_true", help="keep the files (logs, journal)")
    args = parser.parse_args(argv)
    paced = 12 if args.quick else 40
    fast = SHOE_CARDS - paced  # together a shoe: the CPU per card, and the recovery's journal
    idle_s = 3.0 if args.quick else 6.0
    starts = 2 if args.quick else 4

    directory = Path(tempfile.mkdtemp(prefix="bench-daemon-", dir=args.dir))
    try:
        run(directory, paced=paced, fast=fast, idle_s=idle_s, starts=starts)
    finally:
        if args.keep:
            print(f"files kept in {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


def run(directory: Path, *, paced: int, fast: int, idle_s: float, starts: int) -> None:
    print(f"shoe-controller daemon, real processes (files in {directory.parent})")
    print("\nbaselines")
    commit = describe(
        "bare SQLite commit (WAL, synchronous=FULL)", bare_commits(directory / "b.db", 300)
    )
    echo = describe("bare pty echo (frame out, 1 byte back, 2 processes)", pty_echo(300))
    paces = [(DEALING_PACE, paced), (FAST_RATE, fast)]
    minimal_cpu = minimal_host_shoe_cpu(directory, paces)
    print(f"  {'minimal host (read, commit, ACK), CPU per card':<52} "
          f"{minimal_cpu / (paced + fast) * 1e3:7.3f} ms   ({minimal_cpu * 1e3:.0f} ms in all,"
          f" the shoe below)")  # fmt: skip
    rig = TableRig(directory, RigOptions())
    rig.directory.mkdir(exist_ok=True)
    rig.key_file.write_text("bench secret\n")
    rig.key_file.chmod(0o600)  # the start-up check refuses a key others may read
    notify = Notify(directory / "notify")
    shoe: BenchShoe | None = None
    try:
        rig.start_receiver()
        http = {
            rate: describe(
                f"bare HTTP round trip (GET .../ack, kept alive) {rate:g}/s",
                asyncio.run(http_round_trips(rig.receiver_url, TABLE_ID, count, 1.0 / rate)),
            )
            for rate, count in ((DEALING_PACE, paced), (FAST_RATE, 300))
        }
        empty = []
        # Empty journals: the start-up cost itself (the scanner's port is not there yet: the
        # daemon starts anyway and keeps trying it, as on a table PC).
        for n in range(starts):
            rig.records.use_journal(directory / f"empty{n}.db")
            rig.write_config()
            empty.append(timed_start(rig, notify, None))
            rig.stop_daemon()
        rig.records.use_journal(directory / "journal.db")
        rig.write_config()
        shoe = BenchShoe(rig.port_of("shoe"))
        shoe.hello()
        timed_start(rig, notify, shoe)
        assert rig.daemon is not None
        usage = Usage(rig.daemon.pid)
        shoe.pump_until(lambda: shoe is not None and shoe.link.pending == 0)

        print("\ndaemon resources")
        shoe.pump_for(idle_s)
        usage.report(f"idle, shoe connected ({idle_s:g} s)")
        shoe_cpu = usage.cpu()
        (paced_acks, walls), (fast_acks, fast_walls) = deal_shoe(
            shoe,
            paces,
            lambda rate, count: usage.report(f"dealing {rate:g} cards/s ({count} cards)"),
        )
        rig.wait_delivered()  # the shoe's work done: its events at the table server too
        cpu_per_card(usage.cpu() - shoe_cpu, minimal_cpu, paced + fast)
        paced_delivered = delivered_latencies(rig, walls)
        fast_delivered = delivered_latencies(rig, fast_walls)

        print("\n(a) CARD last byte on the pty -> device ACK (card durable)")
        for name, samples in ((f"{DEALING_PACE:g}", paced_acks), (f"{FAST_RATE:g}", fast_acks)):
            result = describe(f"at {name} cards/s", samples)
            ratio("bare pty echo", result, echo)
            ratio("bare pty echo + bare commit", result, (echo[0] + commit[0],
                                                            echo[1] + commit[1]))  # fmt: skip
        print("\n(b) CARD last byte on the pty -> event stored by the table server")
        for rate, samples, acks in (
            (DEALING_PACE, paced_delivered, paced_acks),
            (FAST_RATE, fast_delivered, fast_acks),
        ):
            result = describe(f"at {rate:g} cards/s", samples)
            trip = http[rate]
            ratio(f"bare HTTP round trip at {rate:g}/s", result, trip)
            ack = (percentile(acks, 0.5), percentile(acks, 0.99))
            ratio("(a) + that round trip (aim p50 <= 1.2)", result,
                  (ack[0] + trip[0], ack[1] + trip[1]))  # fmt: skip

        print("\nrecovery (start -> READY, start -> controller.started stored)")
        journal = rig.records.journal()
        assert journal is not None
        inputs = journal.reads.last_input()
        full = []
        for _ in range(starts):
            rig.kill_daemon()  # SIGKILL mid-shoe: the open shoe is replayed
            full.append(timed_start(rig, notify, shoe))
        for index, name in ((0, "READY"), (1, "controller.started")):
            base = statistics.median(sample[index] for sample in empty)
            ours = statistics.median(sample[index] for sample in full)
            print(f"  {name:<20} empty journal {base * 1e3:8.1f} ms   "
                  f"full shoe ({inputs} inputs) {ours * 1e3:8.1f} ms   "
                  f"ratio {ours / base:5.2f}x   (median of {starts})")  # fmt: skip
        card = statistics.median(sample[2] for sample in full)
        ready = statistics.median(sample[0] for sample in full)
        print(f"  {'next card ACKed':<20} full shoe {card * 1e3:8.1f} ms from start, "
              f"{(card - ready) * 1e3:6.1f} ms after READY (device re-synchronised)")  # fmt: skip
    finally:
        rig.close()
        notify.sock.close()
        if shoe is not None:
            shoe.close()


if __name__ == "__main__":
    sys.exit(main())
