"""shoectl's connection to the control socket (service/control_client.py, the companion's too)."""

from shoe_controller.service.control_client import (
    TIMEOUT_S,
    AnswerError,
    Client,
    UnreachableError,
)

__all__ = ["TIMEOUT_S", "AnswerError", "Client", "UnreachableError"]
