"""Command line of the device simulators: ``python -m drivers.sim --device shoe --pty-link PATH``.

Prints ``ready <path>`` on stdout once the pty exists, then runs until SIGTERM/SIGINT or the
``stop`` control command. See ``drivers.sim`` for the devices and the control socket.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from drivers.sim.base import SimConfig
from drivers.sim.devices import make_device
from drivers.sim.pty import SimRunner
from drivers.sim.uids import write_registry
from drivers.wire.link_state import LinkConfig
from drivers.wire.messages import DeviceKind

KINDS = {
    ("shoe", "rfid"): DeviceKind.RFID_SHOE,
    ("shoe", "optical"): DeviceKind.OPTICAL_SHOE,
    ("shuffler", None): DeviceKind.BATCH_SHUFFLER,
    ("dealer", None): DeviceKind.SHUFFLER_DEALER,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m drivers.sim", description=__doc__)
    parser.add_argument("--device", choices=("shoe", "shuffler", "dealer"), default="shoe")
    parser.add_argument("--kind", choices=("rfid", "optical"), default="optical")
    parser.add_argument("--pty-link", help="symlink to the pty slave (the host opens this)")
    parser.add_argument("--control", help="Unix socket path for control commands")
    parser.add_argument("--pace", type=float, default=0.5, help="seconds between cards")
    parser.add_argument("--decks", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cut-after", type=int, help="cut card after this many cards (0: none)")
    parser.add_argument("--no-autoload", action="store_true", help="wait for a load command")
    parser.add_argument("--manual", action="store_true", help="deal only on deal commands")
    parser.add_argument("--reload-after", type=float, help="load a new shoe this long after empty")
    parser.add_argument("--heartbeat", type=float, default=1.0)
    parser.add_argument("--shuffle-time", type=float, default=1.0)
    parser.add_argument("--relink-after", type=float, default=1.0)
    parser.add_argument("--resend-after", type=float, default=0.2)
    parser.add_argument("--max-resends", type=int, default=10)
    parser.add_argument("--serial", help="serial number in HELLO (default SIM<seed>)")
    parser.add_argument("--registry", help="write the RFID deck registry CSVs into this directory")
    return parser.parse_args(argv)


def config_from_args(args: argparse.Namespace) -> SimConfig:
    kind = KINDS[(args.device, args.kind if args.device == "shoe" else None)]
    return SimConfig(
        kind=kind,
        decks=args.decks,
        pace=args.pace,
        seed=args.seed,
        cut_after=args.cut_after,
        autoload=not args.no_autoload,
        autodeal=not args.manual,
        reload_after=args.reload_after,
        heartbeat=args.heartbeat,
        relink_after=args.relink_after,
        shuffle_time=args.shuffle_time,
        serial=args.serial,
        link=LinkConfig(resend_after=args.resend_after, max_resends=args.max_resends),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    config = config_from_args(args)
    if args.registry:
        write_registry(args.registry, config.deck_serials)
    runner = SimRunner(make_device(config), link_path=args.pty_link, control_path=args.control)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        runner.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    runner.on_ready = lambda: print(f"ready {runner.path}", flush=True)
    runner.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
