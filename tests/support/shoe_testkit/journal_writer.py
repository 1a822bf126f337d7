"""Test driver process: records synthetic inputs and events in the journal and publishes them.

Stands in for the daemon in the delivery fault tests, so that a real process can be killed
with SIGKILL mid-transaction or mid-delivery and restarted on the same journal. Synthetic
input k causes `--events-per-input` events whose data name (input k, index i, of n), so a
check can tell a torn transaction from a whole one.

Prints one line per fact, flushed, for the test to wait on:
    started <last_input> <last_seq> <acked_through>
    recorded <input_no> <last_seq>
    acked <n>
    fault <code> | fault cleared
    journal-full
    delivered <n>
Reads commands on stdin with --commands: `record N` (N more inputs), `finish` (exit once
every event is acknowledged).

A full disk (`journal-full`) ends a `record`: the same input is retried until it lands (the
operator freed space), then the writer records nothing more and only publishes. Flat out it
would fill the freed space again within some 50 ms, before a test's SIGKILL arrives on a busy
machine, and leave a journal whose WAL holds the whole file system: nothing could be recorded
or checkpointed after that.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import structlog

from shoe_controller.delivery.push import PushConfig, PushSink
from shoe_controller.delivery.sink import Backoff, SinkFault
from shoe_controller.store.journal import JournalError, JournalFull
from shoe_controller.vocab.events import iso_time
from shoe_testkit.one_server import delivered, open_journal, server_sink


def synthetic_events(input_no: int, count: int, payload: int) -> list[dict[str, Any]]:
    at = iso_time(1_800_000_000 + input_no / 1000)
    return [
        {
            "type": "test.event",
            "at": at,
            "shoe": 1,
            "round": input_no,
            "data": {"input": input_no, "index": i, "of": count, "pad": "x" * payload},
        }
        for i in range(count)
    ]


def say(line: str) -> None:
    print(line, flush=True)


class Writer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.journal = open_journal(args.journal, args.controller_id)
        self.publisher: PushSink | None = None
        self.finish = asyncio.Event()
        self.commands: asyncio.Queue[str] = asyncio.Queue()

    async def record(self, count: int) -> None:
        interval = 1 / self.args.rate if self.args.rate else 0.0
        full = False
        for _ in range(count):
            input_no = self.journal.reads.last_input() + 1
            events = synthetic_events(input_no, self.args.events_per_input, self.args.payload)
            while True:
                try:
                    self.journal.record({"type": "synthetic", "n": input_no}, events, shoe=1)
                    break
                except JournalFull:
                    if not full:
                        say("journal-full")
                    full = True
                    await asyncio.sleep(0.05)  # the caller retries the same record
            say(f"recorded {input_no} {self.journal.reads.last_seq()}")
            if self.publisher is not None:
                self.publisher.notify()
            if full:
                return  # the retried input landed: leave the freed space alone (see above)
            await asyncio.sleep(interval)  # also lets the publisher run

    async def main(self) -> int:
        args = self.args
        say(
            f"started {self.journal.reads.last_input()} {self.journal.reads.last_seq()} "
            f"{delivered(self.journal)}"
        )
        task = None
        if args.url:
            config = PushConfig(
                base_url=args.url,
                table_id=args.table_id,
                controller_id=args.controller_id,
                key_file=Path(args.key_file),
                timeout_s=args.timeout,
                backoff=Backoff(args.backoff_min, args.backoff_max),
            )
            self.publisher = server_sink(
                self.journal,
                config,
                on_fault=_report_fault,
                on_delivered=lambda n: say(f"acked {n}"),
                logger=structlog.get_logger("writer").bind(),
            )
            task = asyncio.create_task(self.publisher.run())
        if args.commands:
            _read_commands(asyncio.get_running_loop(), self.commands)
        await self.record(args.inputs)
        if args.commands:
            while (command := await self.commands.get()) != "finish":
                verb, _, number = command.partition(" ")
                if verb == "record":
                    await self.record(int(number))
        elif not args.exit_when_delivered:
            await asyncio.Event().wait()  # keep publishing until killed
        if self.publisher is not None and task is not None:
            while self.publisher.status().delivered_through != self.journal.reads.last_seq():
                await asyncio.sleep(0.01)
            say(f"delivered {self.journal.reads.last_seq()}")
            self.publisher.stop()
            await task
        self.journal.close()
        return 0


def _report_fault(fault: SinkFault | None) -> None:
    say("fault cleared" if fault is None else f"fault {fault.code}")


def _read_commands(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str]) -> None:
    def pump() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line.strip())
        loop.call_soon_threadsafe(queue.put_nowait, "finish")

    threading.Thread(target=pump, daemon=True).start()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--journal", required=True)
    parser.add_argument("--controller-id", default="tbl-07-shoe")
    parser.add_argument("--url", default=None, help="receiver base URL (no publishing if absent)")
    parser.add_argument("--table-id", default="07")
    parser.add_argument("--key-file", default=None)
    parser.add_argument("--inputs", type=int, default=0, help="inputs to record at start")
    parser.add_argument("--events-per-input", type=int, default=3)
    parser.add_argument("--payload", type=int, default=16, help="pad bytes per event")
    parser.add_argument("--rate", type=float, default=0.0, help="inputs per second (0: flat out)")
    parser.add_argument("--commands", action="store_true", help="read commands on stdin")
    parser.add_argument("--exit-when-delivered", action="store_true")
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--backoff-min", type=float, default=0.01)
    parser.add_argument("--backoff-max", type=float, default=0.1)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        processors=[structlog.processors.KeyValueRenderer()],
    )
    try:
        return asyncio.run(Writer(args).main())
    except JournalError as exc:
        print(f"writer: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 3


if __name__ == "__main__":
    sys.exit(main())
