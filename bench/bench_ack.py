"""Benchmark: a card's ACK from the daemon against a minimal fsync-and-ACK host, under load.

The question: does the device's ACK (the card is on disk) wait for
anything but the commit? Measured in one run, real processes, the same pty frames:
  baseline  the minimal host (bench_daemon.MINIMAL_HOST): reads the frame, commits one row to
            SQLite (WAL, synchronous=FULL: the journal's own fsync), writes the ACK; nothing else;
  card + session  the same, also storing what the ACK is numbered in (the link session as
            the journal's links row, an input counter): the least a card's ACK stands for;
  alone     `shoe-controller run` with a table server answering at once;
  loaded    the table server answering each request after 200 ms, and the live scoreboard
            (`[scoreboard] listen`) with 10 clients reading its event stream;
  hammered  150 clients asking `status` in a loop and 50 `events --follow` followers;
  viewers   a viewer's per-user cap of connections (8) each asking the heaviest of `events`
            (limit 1000), `rounds`, `road` and `outbox` in a loop;
each at 2 cards/s and at 100 cards/s, p50 and p99, with ratios: loaded / card + session (aim:
p50 and p99 <= 1.5x), hammered / alone (aim: <= 1.2x), viewers / alone (aim: p50
<= 1.2x, p99 <= 1.5x, no ACK over 10 ms) and daemon / baseline. Every daemon's journal holds
PREFILL_SHOES past shoes first, as a table PC's does (bench_viewers.prefill).
Then whether the viewers' reader needs a process of its own (a card's handling in-process
while answers are built beside it by a thread, by a process: bench_viewers.reads_beside),
and where a card's time goes inside the daemon, from its own timestamps
(shoe_card_stage_seconds and shoe_journal_commit_seconds on `[metrics]`, in one more run alone),
and in-process, stage by stage (bench_ack_stages.py).

With --betting, only the daemon alone with `[table] betting = "button"` off and on:
the bench's dealer presses NO_MORE_BETS, untimed, whenever the lights say bets open.

Run: python bench/bench_ack.py [--quick] [--viewers | --betting]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import urllib.request
from pathlib import Path

from bench_daemon import (
    BenchShoe,
    Notify,
    deal_phase,
    deal_shoe,
    describe,
    minimal_host,
    timed_start,
)
from bench_scoreboard import Clients, free_port
from bench_viewers import QUERIES, Viewers, heaviest, prefill, reads_beside

from shoe_controller.kit.rig import RigOptions, TableRig
from shoe_controller.vocab.events import EventType

SLOW_SERVER_S = 0.2
PREFILL_SHOES = 3  # past shoes in each daemon's journal (about 600 events each)
VIEWERS = 8  # [control] max_connections_per_user: what one viewer may hold
MAX_ACK_S = 0.010  # No ACK over this while the viewers ask

# The minimal hosts: the least (the card's row alone) and one that also stores what the
# ACK is numbered in (the link session, as the journal's links row, and an input counter).
MINIMAL_KINDS = {"baseline": "row", "card + session": "session"}

# Control-socket clients in a process of their own: HAMMER threads ask `status` in a loop,
# FOLLOW threads follow the event stream and read every line.
LOAD = textwrap.dedent(
    """
    import json, socket, sys, threading
    path, hammer, follow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    def hammering():
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(path)
            reader = sock.makefile("rb")
            while True:
                sock.sendall(b'{"cmd": "status"}\\n')
                if not reader.readline():
                    return
    def following():
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(path)
            sock.sendall(b'{"cmd": "events", "follow": true}\\n')
            reader = sock.makefile("rb")
            while reader.readline():
                pass
    for target, count in ((hammering, hammer), (following, follow)):
        for _ in range(count):
            threading.Thread(target=target, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
    """
)


def run_baseline(
    directory: Path, paced: int, fast: int, name: str = "baseline"
) -> dict[str, tuple[float, float]]:
    with minimal_host(directory, MINIMAL_KINDS[name]) as (shoe, _pid):
        (paced_acks, _), (fast_acks, _) = deal_shoe(shoe, [(2.0, paced), (100.0, fast)])
    return {
        "2/s": describe(f"{name} at 2 cards/s", paced_acks),
        "100/s": describe(f"{name} at 100 cards/s", fast_acks),
    }


def run_daemon(
    directory: Path,
    name: str,
    paced: int,
    fast: int,
    *,
    slow: bool,
    hammer: int,
    follow: int,
    pages: int = 0,
    viewers: int = 0,
    stages_by_pace: dict[str, dict[str, float]] | None = None,
    worst: dict[str, float] | None = None,
    betting: bool = False,
) -> dict[str, tuple[float, float]]:
    """`pages` clients of the live scoreboard (`[scoreboard] listen`, bench_scoreboard's
    event-stream readers), `follow` followers and `hammer` askers on the control socket,
    `viewers` connections asking the heaviest query of the journal in a loop.
    With `stages_by_pace`, the daemon serves `[metrics]` and what its own histograms say
    of each pace's cards is put there (mean seconds by stage); `worst` gets each pace's
    slowest ACK. With `betting`, the table closes bets by the dealer's button (`[table]
    betting = "button"`) and the bench's dealer presses it when the lights say bets open."""
    work = directory / name
    work.mkdir()
    clients = {"max_connections": 250, "max_connections_per_user": 250}
    metrics_port = free_port()
    metrics = {"listen": f"127.0.0.1:{metrics_port}"} if stages_by_pace is not None else {}
    table = {"betting": "button"} if betting else {}
    options = RigOptions(receiver_control=True, control=clients, metrics=metrics, table=table)
    rig = TableRig(work, options)
    rig.key_file.write_text("bench secret\n")
    rig.key_file.chmod(0o600)
    notify = Notify(work / "notify")
    shoe = BenchShoe(rig.port_of("shoe"))
    load = None
    page_clients = None
    viewing = None
    port = free_port()
    try:
        rig.start_receiver()
        if slow:
            _post(rig, "/control/faults", {"mode": "slow", "delay_s": SLOW_SERVER_S})
        rig.write_config(**({"scoreboard": {"listen": f"127.0.0.1:{port}"}} if pages else {}))
        prefill(rig.config_path, PREFILL_SHOES)
        shoe.hello()
        timed_start(rig, notify, shoe)
        shoe.load()
        loaded_at = max((event.seq for event in rig.records.journal_events()), default=0)
        if pages:
            page_clients = Clients("127.0.0.1", port, pages)
        if hammer or follow:
            load = subprocess.Popen(
                [sys.executable, "-c", LOAD, str(work / "control.sock"), str(hammer),
                 str(follow)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert load.stdout is not None
            load.stdout.readline()
            shoe.pump_for(1.0)  # the clients connected and busy
        if viewers:
            socket_path = str(work / "control.sock")
            query, costs = heaviest(socket_path)
            print("  a viewer's queries alone, median ms: "
                  + ", ".join(f"{q} {t * 1e3:.1f}" for q, t in costs.items())
                  + f"; the heaviest: {query}")  # fmt: skip
            viewing = Viewers(socket_path, viewers, QUERIES[query])
        results = {}
        for pace, rate, count in (("2/s", 2.0, paced), ("100/s", 100.0, fast)):
            before = stage_sums(metrics_port) if stages_by_pace is not None else None
            samples = deal_phase(shoe, rate, count, betting=betting)[0]
            results[pace] = describe(f"{name} at {pace[:-2]} cards/s", samples)
            if worst is not None:
                worst[pace] = max(samples)
            if stages_by_pace is not None and before is not None:
                stages_by_pace[pace] = stage_means(before, stage_sums(metrics_port))
        held = sorted({
            event.data["code"]
            for event in rig.records.journal_events()
            if event.seq > loaded_at and event.type == EventType.PROCEDURE_ALERT
            and event.data.get("needs_supervisor")
        })  # fmt: skip
        if held:  # a held table queues its cards: their ACKs would measure something else
            print(f"  NOT VALID: the table was held ({', '.join(held)})")
        if viewing is not None:
            answered, seconds = viewing.stop()
            viewing = None
            print(f"  the viewers were answered {answered} in {seconds:.0f} s"
                  f" ({sum(answered.values()) / seconds:.0f} answers/s)")  # fmt: skip
        return results
    finally:
        if viewing is not None:
            viewing.process.kill()
            viewing.process.wait()
        if page_clients is not None:
            page_clients.process.kill()
            page_clients.process.wait()
        if load is not None:
            load.kill()
            load.wait()
        rig.close()
        shoe.close()


STAGE_ORDER = ("decode", "translate", "table", "commit", "ack")


def stage_sums(port: int) -> dict[str, tuple[float, float]]:
    """(sum, count) of the daemon's card stage histograms and its commit histogram."""
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    sums: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("shoe_card_stage_seconds_"):
                key = sample.labels["stage"]
            elif sample.name.startswith("shoe_journal_commit_seconds_"):
                key = "commit"
            else:
                continue
            kind = sample.name.rsplit("_", 1)[1]
            if kind in ("sum", "count"):
                sums.setdefault(key, [0.0, 0.0])[kind == "count"] += sample.value
    return {key: (total, count) for key, (total, count) in sums.items()}


def stage_means(
    before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]
) -> dict[str, float]:
    """Mean seconds per card by stage between two scrapes; `table` is the store stage less
    the mean commit (the commit histogram counts every commit, heartbeats' too)."""
    means = {}
    for key, (total, count) in after.items():
        old_total, old_count = before.get(key, (0.0, 0.0))
        means[key] = (total - old_total) / max(count - old_count, 1.0)
    means["table"] = max(0.0, means.get("store", 0.0) - means.get("commit", 0.0))
    return means


def print_stages(stages_by_pace: dict[str, dict[str, float]]) -> None:
    print("\nwhere a card's time goes inside the daemon (its own timestamps, alone; mean ms)")
    for pace, means in stages_by_pace.items():
        cells = "  ".join(f"{stage} {means.get(stage, 0.0) * 1e3:6.3f}" for stage in STAGE_ORDER)
        print(f"  at {pace:<6} {cells}")


def _post(rig: TableRig, path: str, body: dict[str, object]) -> None:
    request = urllib.request.Request(
        f"{rig.receiver_url}{path}", json.dumps(body).encode(), method="POST"
    )
    urllib.request.urlopen(request, timeout=10).read()


def ratios(name: str, ours: dict[str, tuple[float, float]], base: dict[str, tuple[float, float]]):
    for pace in ("2/s", "100/s"):
        (p50, p99), (b50, b99) = ours[pace], base[pace]
        print(f"    {name:<34} {pace:>6}   p50 {p50 / b50:5.2f}x   p99 {p99 / b99:5.2f}x")


def viewers_only(directory: Path, paced: int, fast: int) -> int:
    alone = run_daemon(directory, "alone", paced, fast, slow=False, hammer=0, follow=0)
    worst: dict[str, float] = {}
    viewed = run_daemon(
        directory, "viewers", paced, fast, slow=False, hammer=0, follow=0, viewers=VIEWERS,
        worst=worst,
    )  # fmt: skip
    print("\nratios")
    ratios("viewers / alone (aim <= 1.2, 1.5)", viewed, alone)
    print_worst(worst)
    print()
    reads_beside(directory)
    return 0


def print_worst(worst: dict[str, float]) -> None:
    for pace, seconds in worst.items():
        verdict = "met" if seconds <= MAX_ACK_S else "NOT met"
        print(f"    viewers' slowest ACK at {pace:>6}: {seconds * 1e3:6.2f} ms"
              f" (aim <= {MAX_ACK_S * 1e3:.0f} ms: {verdict})")  # fmt: skip


def betting_only(directory: Path, paced: int, fast: int) -> int:
    """The daemon alone with betting off and on, in the order off, on, on, off."""
    runs = {}
    for name, betting in (("off 1", False), ("on 1", True), ("on 2", True), ("off 2", False)):
        label = f"betting {name}"
        runs[name] = run_daemon(
            directory, label, paced, fast, slow=False, hammer=0, follow=0, betting=betting
        )
    print("\nratios (aim: the ACK does not move, about 1x)")
    ratios("betting on 1 / off 1", runs["on 1"], runs["off 1"])
    ratios("betting on 2 / off 2", runs["on 2"], runs["off 2"])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument(
        "--viewers", action="store_true", help="only the daemon alone and with the viewers"
    )
    parser.add_argument(
        "--betting", action="store_true", help="only the daemon alone, betting off and on"
    )
    args = parser.parse_args(argv)
    paced, fast = (10, 200) if args.quick else (30, 380)
    directory = Path(tempfile.mkdtemp(prefix="bench-ack-"))
    try:
        print("card -> ACK, real processes, same pty frames (ms)\n")
        if args.viewers:
            return viewers_only(directory, paced, fast)
        if args.betting:
            return betting_only(directory, paced, fast)
        base = run_baseline(directory, paced, fast)
        session = run_baseline(directory, paced, fast, "card + session")
        alone = run_daemon(directory, "alone", paced, fast, slow=False, hammer=0, follow=0)
        inside: dict[str, dict[str, float]] = {}
        run_daemon(
            directory, "alone, metrics", paced, fast, slow=False, hammer=0, follow=0,
            stages_by_pace=inside,
        )  # fmt: skip
        loaded = run_daemon(
            directory, "loaded", paced, fast, slow=True, hammer=0, follow=0, pages=10
        )
        hammered = run_daemon(directory, "hammered", paced, fast, slow=False, hammer=150, follow=50)
        worst: dict[str, float] = {}
        viewed = run_daemon(
            directory, "viewers", paced, fast, slow=False, hammer=0, follow=0, viewers=VIEWERS,
            worst=worst,
        )  # fmt: skip
        print("\nratios")
        ratios("alone / baseline", alone, base)
        ratios("loaded / baseline", loaded, base)
        ratios("loaded / card + session (aim <= 1.5, 1.5)", loaded, session)
        ratios("hammered / alone (aim <= 1.2)", hammered, alone)
        ratios("viewers / alone (aim <= 1.2, 1.5)", viewed, alone)
        print_worst(worst)
        print_stages(inside)
        print()
        reads_beside(directory)
        print()
        from bench_ack_stages import stages  # noqa: PLC0415 - after the processes are gone

        stages(directory, quick=args.quick)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
