"""A whole table as real processes on this machine: receiver, simulated devices, the daemon.

`TableRig` starts the reference table server (`python -m shoe_controller.kit.receiver`), the
simulated shoe (and, for a batch-shuffler table, the shuffler) on pseudo-terminals
(`python -m drivers.sim`), and the daemon (`shoe-controller run`) with a configuration it
writes; it can SIGKILL and restart any of them. It plays the dealer in lock step: a card is
drawn only once the shoe's previous frames are acknowledged, which the daemon does only after
the journal stored them (docs/architecture.md), so no card is drawn into a shoe the table has
closed.
It reads what happened from the daemon's journal (read-only) and the receiver's database.

Used by `shoe-controller demo`, the end-to-end tests and bench/bench_daemon.py. Every file
(configuration, key, journal, receiver database, logs, pty links, sockets) lives in one
directory; keep its path short, Unix socket paths are limited to 107 bytes.

The parts: `table_rig` (TableRig itself), `processes` (spawn, watch, kill), `dealer` (the
dealer's part), `records` (the journal and the receiver's database, read), `config` (the
options and the daemon's TOML).
"""

from shoe_controller.kit.rig.config import TABLE_ID, RigOptions
from shoe_controller.kit.rig.dealer import Dealt
from shoe_controller.kit.rig.processes import RigError
from shoe_controller.kit.rig.table_rig import TableRig

__all__ = ["TABLE_ID", "Dealt", "RigError", "RigOptions", "TableRig"]
