"""shoectl: the pit boss's view of the table and the supervisor's actions, over the control socket.

A thin client of the daemon's control socket (docs/control.md): it sends one JSON request,
draws the answer for a person (aligned tables, colour only on a terminal, suits as symbols)
or prints it as JSON (`--json`). It never reads the journal or the devices itself, and it
proves nothing about who you are: the daemon checks that from the socket (docs/shoectl.md).

Exit codes: 0 fine; 1 something needs a person (status) or the table refused the action;
2 the controller cannot be reached or answered an error; 4 not authorized to act;
`check` uses Nagios's 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
"""

from shoe_controller.cli.shoectl.commands import main

__all__ = ["main"]
