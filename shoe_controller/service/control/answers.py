"""The answers to the seeing requests (`hello`, `status`, `check`, `devices`, `rounds`,
`round`, `export`, `road`, `events`, `outbox`), from the table and its journal
(docs/control.md). They only read: acting is actions.py's, surveillance's requests are
surveillance.py's. Those that read the journal are journal_answers.py's, answered by the
control socket's reader process (reads.py); they are named here only as commands there are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shoe_controller.service.config import Config
from shoe_controller.service.control import journal_answers
from shoe_controller.service.control.requests import PROTOCOL_VERSION, ControlError
from shoe_controller.service.control.status import LiveStatus
from shoe_controller.service.health import check_line
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import JournalError
from shoe_controller.table.action_specs import ACTIONS


class Answers:
    """Answers the seeing requests from the daemon's live objects."""

    def __init__(
        self,
        controller: Controller,
        config: Config,
        status: LiveStatus,
        version: str,
    ) -> None:
        self._controller = controller
        self._config = config
        self._status = status
        self._version = version
        self._handlers: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "hello": self._hello,
            "status": self._status_answer,
            "check": self._check,
            "devices": self._devices,
        }
        # Every command there is, as `hello` and an unknown command's refusal name them.
        self._commands = [*self._handlers, *journal_answers.COMMANDS, "act"]

    def answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The result of a seeing command; ControlError for a bad request."""
        command = request.get("cmd")
        handler = self._handlers.get(command) if isinstance(command, str) else None
        if handler is None:
            raise ControlError(
                "unknown_command",
                f"unknown command {command!r}; commands: {', '.join(self._commands)}",
            )
        try:
            return handler(request)
        except JournalError as error:
            raise ControlError("journal", f"the journal cannot be read: {error}") from None

    def _hello(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "version": self._version,
            "controller_id": self._config.controller_id,
            "table_id": self._config.table.id,
            "commands": list(self._commands),
            "actions": {
                action.name: {
                    "summary": action.summary,
                    "rules": action.rules,
                    "args": [
                        {"name": arg.name, "kind": arg.kind, "help": arg.help}
                        | {"required": arg.required, "default": arg.default}
                        for arg in action.args
                    ],
                }
                for action in ACTIONS.values()
            },
        }

    def _status_answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return self._status.status()

    def _check(self, request: Mapping[str, Any]) -> dict[str, Any]:
        status = self._status.status()
        return {"line": check_line(status), **status["health"]}

    def _devices(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return {"devices": self._status.devices(self._controller.table.view())}
