"""Reference table server: receives, checks and stores pushed events exactly as
docs/spec-push-api.md says.

For integrators (a working counterpart to read and run) and for the delivery tests. It checks
the signature and timestamp (401), stores each (table, seq) once in its own SQLite file and
answers 200/409/GET as the page says. For fault tests it can be told to misbehave (answer an
HTTP status, garbage, slowly, or drop the connection) by constructor options, command-line
options or, when enabled, the `/control/...` endpoints. Standard library HTTP server, one
thread per connection; the store is serialised by a lock.

Run it: `python -m shoe_controller.kit.receiver --db r.db --key-file table.key --table-id 07`
(or `shoe-controller receiver ...`). The first line on stdout is the TCP port it bound.

The parts: `store` (the SQLite file), `faults` (how it misbehaves), `validation` (what a
request may be), `server` (the HTTP server and its handler), `command` (the command line).
"""

from shoe_controller.kit.receiver.command import receiver_command
from shoe_controller.kit.receiver.faults import FAULT_MODES, FAULT_TARGETS, FaultPlan
from shoe_controller.kit.receiver.server import Receiver, server_ssl_context
from shoe_controller.kit.receiver.store import ReceiverStore, StoreResult

__all__ = [
    "FAULT_MODES",
    "FAULT_TARGETS",
    "FaultPlan",
    "Receiver",
    "ReceiverStore",
    "StoreResult",
    "receiver_command",
    "server_ssl_context",
]
