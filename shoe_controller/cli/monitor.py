"""`shoe-controller monitor`: connect to one device and print every decoded input (like gpsmon).

`shoe-controller monitor --protocol slp|beetek|linecode --port URL ...` runs drivers.monitor's
`Monitor`: the port with the daemon's `DeviceConnection` (reads, silence watchdog, reconnect
with backoff), decoded with the same link, adapters and translators as the daemon. It prints
one line per input (with `--json` one JSON object per line, see docs/drivers.md "Monitor"),
then the link's counters on exit (Ctrl-C, SIGTERM, `--count`, `--seconds`). Exit status 1 when
the port never opened or was lost at the end.
As the host it stores nothing, so it ACKs every reference-protocol frame at once; `--tap`
listens only (a second port on the line, a spy) and writes nothing at all. `--hex` shows the
raw bytes with their times beside the decoded frames. A port another program holds is named
with its holder ("held by shoe-controller, pid N", from /proc/locks). Port URLs are pyserial's
(`/dev/ttyUSB0`, `socket://host:port`, `rfc2217://...`) or `usb:VID:PID[:SERIAL]` (hex ids).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

import click

from drivers.monitor import MONITOR_TIMINGS, Emit, Monitor
from drivers.session.parts import make_transport
from drivers.session.spec import PROTOCOLS, default_baud, parse_address
from drivers.translate.registry import DeckRegistry, RegistryError
from drivers.translate.scanner import KINDS
from drivers.transports.watched import Watcher
from shoe_controller.cli.shoectl.wording import value_text


def hex_lines(direction: str, data: bytes, at: float, width: int = 16) -> list[str]:
    """pyserial spy:// style: time, direction, offset, hex bytes, printable text."""
    stamp = time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1e6) % 1_000_000:06d}"
    lines = []
    for offset in range(0, len(data), width):
        chunk = data[offset : offset + width]
        text = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in chunk)
        lines.append(
            f"{stamp} {direction.upper()} {offset:04x}  {chunk.hex(' '):<{width * 3 - 1}}  {text}"
        )
    return lines


def statistics_text(stats: dict[str, Any]) -> str:
    """The counters for a person: one line per part, `name value` pairs."""
    lines = [f"statistics: {stats['protocol']} on {stats['port']}"]
    by_type = ", ".join(f"{name} {count}" for name, count in stats["by_type"].items())
    lines.append(f"  {'inputs':<11}{stats['inputs']}" + (f" ({by_type})" if by_type else ""))
    for part in ("connection", "link", "adapter", "translator", "tap"):
        if part in stats:
            pairs = ", ".join(
                f"{name.replace('_', ' ')} {value_text(value)}"
                for name, value in stats[part].items()
                if value is not None  # not known yet: nothing to say
            )
            if pairs:
                lines.append(f"  {part:<11}{pairs}")
    return "\n".join(lines)


def _printer(as_json: bool, out: TextIO) -> Emit:
    lock = threading.Lock()  # `--hex` bytes may come from the reading thread

    def emit(record: dict[str, Any], text: str) -> None:
        with lock:
            out.write((json.dumps(record, ensure_ascii=False) if as_json else text) + "\n")
            out.flush()

    return emit


def _hex_watcher(emit: Emit) -> Watcher:
    def watch(direction: str, data: bytes, at: float) -> None:
        record = {"type": "bytes", "direction": direction, "at": at, "hex": data.hex()}
        emit(record, "\n".join(hex_lines(direction, data, at)))

    return watch


@click.command("monitor")
@click.option(
    "--protocol",
    type=click.Choice(PROTOCOLS),
    required=True,
    help="The wire protocol the device speaks.",
)
@click.option(
    "--port",
    "url",
    required=True,
    metavar="URL",
    help="Where the device is: a pyserial URL (/dev/ttyUSB0, socket://HOST:PORT) or"
    " usb:VID:PID[:SERIAL].",
)
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    help="The device's kind (a reference-protocol device also says it in its HELLO).",
)
@click.option(
    "--registry",
    type=click.Path(file_okay=False, path_type=Path),
    help="The RFID deck registry folder (without it every tag is shown as foreign).",
)
@click.option(
    "--baud",
    type=click.IntRange(50, 4_000_000),
    metavar="BAUD",
    help=f"The serial speed (default {default_baud('slp')} for slp,"
    f" {default_baud('beetek')} for the ASCII shoes).",
)
@click.option(
    "--device",
    metavar="NAME",
    help="The device's name in the inputs (default: scanner or shuffler).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line instead.")
@click.option(
    "--heartbeats", is_flag=True, help="Also print the heartbeats of a reference-protocol device."
)
@click.option(
    "--tap", is_flag=True, help="Listen only: write nothing, ACK nothing (a spy port on the line)."
)
@click.option("--hex", "show_hex", is_flag=True, help="Also the raw bytes, with their times.")
@click.option("--count", type=click.IntRange(min=1), help="Exit after COUNT inputs.")
@click.option("--seconds", type=click.FloatRange(min=0), help="Exit after SECONDS.")
def monitor_command(
    *,
    protocol: str,
    url: str,
    kind: str | None,
    registry: Path | None,
    baud: int | None,
    device: str | None,
    as_json: bool,
    heartbeats: bool,
    tap: bool,
    show_hex: bool,
    count: int | None,
    seconds: float | None,
) -> None:
    """Connect to one device and print every decoded input, one line each."""
    deck_registry = None
    if registry is not None:
        try:
            deck_registry = DeckRegistry.load(registry)
        except RegistryError as error:
            raise click.BadParameter(str(error), param_hint="--registry") from None
    try:
        address = parse_address(url)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--port") from None
    transport = make_transport(
        address, baud or default_baud(protocol), read_timeout=MONITOR_TIMINGS.read_timeout
    )
    emit = _printer(as_json, sys.stdout)
    monitor = Monitor(
        protocol,
        transport,
        kind=kind,
        registry=deck_registry,
        device=device,
        emit=emit,
        heartbeats=heartbeats,
        tap=tap,
        watch=_hex_watcher(emit) if show_hex else None,
    )
    try:
        monitor.run(count=count, seconds=seconds)
    finally:
        stats = monitor.statistics()
        emit(stats, statistics_text(stats))
    if monitor.failed:
        raise SystemExit(1)


if __name__ == "__main__":
    monitor_command()
