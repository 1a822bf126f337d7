"""Benchmark: what the scoreboard page costs the daemon, and what the page weighs.

Measures, in one run on this machine, with real processes (`shoe-controller run` with
`[scoreboard] listen`, a shoe on a pty as in bench_daemon.py, a table server):
  1. card -> ACK latency (the CARD frame's last byte on the pty to its ACK), p50/p99, with
     10 event-stream clients connected against none, in alternating blocks of cards so that
     the machine's drift falls on both alike; the ratio is the page's cost to a card;
  2. event -> client: from an event's time (the daemon's clock when the card came) to its
     message reaching the clients, p50/p99 (a browser adds its drawing, a frame or so);
  3. the page's size: its three files, and the `board` message a client gets on connecting
     to a full shoe (what a page loads to draw everything), raw and gzipped.
The clients run in a process of their own and read every byte as a browser's EventSource
does (the same stream); they do not draw, so the machine's two cores stay the daemon's.

Run: python bench/bench_scoreboard.py [--quick] [--dir DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import urllib.request
from datetime import datetime
from pathlib import Path

from bench_daemon import BenchShoe, Notify, _started, deal_phase, describe
from shoe_testkit.net import free_port

from shoe_controller.kit.rig import RigOptions, TableRig

CLIENTS = 10
FAST_RATE = 100.0  # cards a second
PACED_RATE = 2.0  # a brisk dealer

# The clients: CLIENTS connections to /events, every byte read; on stdin's end, the first
# arrival (time.time) of each message id on each connection, as JSON on stdout.
CLIENT = textwrap.dedent(
    """
    import json, re, selectors, socket, sys, threading, time
    host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    selector = selectors.DefaultSelector()
    arrivals = [dict() for _ in range(count)]
    tails = [b"" for _ in range(count)]
    for index in range(count):
        conn = socket.create_connection((host, port))
        conn.sendall(b"GET /events HTTP/1.1\\r\\nHost: bench\\r\\n\\r\\n")
        conn.setblocking(False)
        selector.register(conn, selectors.EVENT_READ, index)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    told = False
    while not done.is_set():
        for key, _ in selector.select(0.1):
            data = key.fileobj.recv(1 << 20)
            now = time.time()
            index = key.data
            text = tails[index] + data
            for found in re.finditer(rb"(?:^|\\n)id: (\\d+)\\n", text):
                arrivals[index].setdefault(int(found.group(1)), now)
            tails[index] = text[-64:]
        if not told and all(arrivals):
            print("connected", flush=True)
            told = True
    print(json.dumps([{str(k): v for k, v in a.items()} for a in arrivals]), flush=True)
    """
)


class Clients:
    """CLIENTS event-stream readers in their own process."""

    def __init__(self, host: str, port: int, count: int = CLIENTS) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", CLIENT, host, str(port), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != "connected":
            raise RuntimeError(f"the clients did not connect: {line!r}")

    def close(self) -> list[dict[int, float]]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        result = json.loads(self.process.stdout.readline())
        self.process.wait(30)
        return [{int(k): v for k, v in arrivals.items()} for arrivals in result]


def event_times(rig: TableRig) -> dict[int, float]:
    journal = rig.records.journal()
    assert journal is not None
    return {
        event.seq: datetime.fromisoformat(event.at.replace("Z", "+00:00")).timestamp()
        for event in journal.reads.events_after(0, 1_000_000)
    }


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return bytes(response.read())


def first_message(host: str, port: int) -> bytes:
    """The bytes of the board message a page gets on connecting."""
    with socket.create_connection((host, port), timeout=30) as conn:
        conn.sendall(b"GET /events HTTP/1.1\r\nHost: bench\r\n\r\n")
        data = b""
        while b"\nevent: board\n" not in data or not data.rstrip(b"\r\n").endswith(b"}"):
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    start = data.index(b"id: ")
    end = data.index(b"\n\n", data.index(b"\nevent: board\n")) + 2
    return data[start:end]


def ratio_line(name: str, ours: tuple[float, float], base: tuple[float, float]) -> None:
    print(f"    ratio {name:<46} p50 {ours[0] / base[0]:6.2f}x   p99 {ours[1] / base[1]:6.2f}x")


def run(directory: Path, *, blocks: int, fast_block: int, paced_block: int) -> None:
    print(f"scoreboard page cost, real processes (files in {directory.parent})")
    rig = TableRig(directory, RigOptions())
    rig.directory.mkdir(exist_ok=True)
    rig.key_file.write_text("bench secret\n")
    rig.key_file.chmod(0o600)
    notify = Notify(directory / "notify")
    host, port = "127.0.0.1", free_port()
    shoe: BenchShoe | None = None
    try:
        rig.start_receiver()
        rig.write_config(scoreboard={"listen": f"{host}:{port}"})
        shoe = BenchShoe(rig.port_of("shoe"))
        shoe.hello()
        rig.start_daemon({"NOTIFY_SOCKET": str(notify.path)}, wait=False)
        notify.wait_ready()
        shoe.pump_until(lambda: _started(rig, 0))  # answering the daemon, as a shoe would
        shoe.load()  # then the cards: the burn, and rounds
        url = f"http://{host}:{port}/"

        acks: dict[str, dict[bool, list[float]]] = {"paced": {}, "fast": {}}
        arrivals: list[dict[int, float]] = []
        plan = [("paced", PACED_RATE, paced_block), ("fast", FAST_RATE, fast_block)]
        for phase, rate, size in plan:
            for block in range(2 * blocks):
                with_clients = block % 2 == 1
                clients = Clients(host, port) if with_clients else None
                try:
                    samples, _ = deal_phase(shoe, rate, size)
                finally:
                    if clients is not None:
                        shoe.pump_for(0.2)  # the last messages on their way
                        arrivals += clients.close()
                acks[phase].setdefault(with_clients, []).extend(samples)

        print(f"\n1. CARD last byte on the pty -> ACK, {CLIENTS} clients connected vs none")
        for phase, rate, _ in plan:
            none = describe(f"at {rate:g} cards/s, no page", acks[phase][False])
            ten = describe(f"at {rate:g} cards/s, {CLIENTS} pages", acks[phase][True])
            ratio_line(f"{CLIENTS} pages / none at {rate:g} cards/s", ten, none)

        print("\n2. event time (card at the daemon) -> message at the clients")
        times = event_times(rig)
        # The board each client got on connecting is not an update: leave out the first.
        firsts = {min(got) for got in arrivals if got}
        delays = [
            when - times[seq]
            for got in arrivals
            for seq, when in got.items()
            if seq in times and seq not in firsts
        ]
        describe(f"{len(arrivals)} client connections, every update", delays)

        print("\n3. the page's size")
        files = {name: fetch(url + name) for name in ("", "board.css", "board.js")}
        total = 0
        for name, body in files.items():
            total += len(body)
            print(f"  {name or 'index.html':<12} {len(body):7d} bytes")
        packed = len(gzip.compress(b"".join(files.values())))
        print(f"  {'the page':<12} {total:7d} bytes, {packed} gzipped")
        board = first_message(host, port)
        rounds = json.loads(fetch(url + "board.json"))["stats"]["rounds"]
        print(f"  board message on connecting ({rounds} rounds): {len(board)} bytes,"
              f" {len(gzip.compress(board))} gzipped")  # fmt: skip
        journal = rig.records.journal()
        assert journal is not None
        alerts = [e for e in journal.reads.events_after(0, 1_000_000) if e.type.endswith(".alert")]
        if alerts:  # the numbers above are of a table that dealt: say so if it did not
            print(f"  warning: {len(alerts)} alerts, first {alerts[0].data}")
    finally:
        rig.close()
        notify.sock.close()
        if shoe is not None:
            shoe.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--dir", default=None, help="where the files go (the journal's disk)")
    parser.add_argument("--keep", action="store_true", help="keep the files (logs, journal)")
    args = parser.parse_args(argv)
    blocks = 2 if args.quick else 3  # pairs of blocks: none, clients, none, clients ...
    fast_block = 40 if args.quick else 55
    paced_block = 6 if args.quick else 10
    directory = Path(tempfile.mkdtemp(prefix="bench-sb-", dir=args.dir))
    try:
        run(directory, blocks=blocks, fast_block=fast_block, paced_block=paced_block)
    finally:
        if args.keep:
            print(f"files kept in {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
