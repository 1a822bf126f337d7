"""The control socket shoectl talks to (docs/control.md): `ControlServer` (server.py, the
socket and who may connect and act) around `ControlService` (service.py, the answers from the
daemon's live objects); `ControlError` is a request's error answer.

The modules, by job: `requests` what a request may say, `wire` its JSON lines, `answers` the
seeing requests, `journal_answers` those that read the journal, `reads` their queue and the
reader process (`reader`, `reader_link`) that answers them away from the cards' loop,
`status` the status answer, `backlogs` each sink's backlog (the `outbox` answer), `scan` the
journal read for a type filter, `followers` `events --follow`, `actions` the supervisor's
`act`, `surveillance` `report`, `edge` and who may see the surveillance events.
"""

from shoe_controller.service.control.requests import ControlError
from shoe_controller.service.control.server import ControlServer
from shoe_controller.service.control.service import ControlService

__all__ = ["ControlError", "ControlServer", "ControlService"]
