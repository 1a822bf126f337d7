"""The control socket's reader process: the requests that read the journal, answered on a
read-only connection of its own, away from the loop that ACKs the cards.

`reads.ReadQueries` starts it as `python -P -m shoe_controller.service.control.reader FD`,
FD its end of a socket pair (reader_link.py: the frames), and sends it first its
`ReaderSettings`, then one request at a time with what the loop knew of it
(journal_answers.Live). It answers each with a header and the answer's line, exactly the
bytes the loop would have written (journal_answers.py builds both), or an error answer when
the line would be longer than `[control] max_answer_bytes`. Once ready it says so (READY). It
exits when the daemon closes its end (the daemon stopped or found it idle, or died). No module
of the package imports this one (it runs as __main__).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import traceback
from collections.abc import Mapping
from typing import Any

from shoe_controller.service.control.journal_answers import JournalAnswers, Live
from shoe_controller.service.control.reader_link import (
    ANSWER,
    READY,
    ReaderSettings,
    read_frame,
)
from shoe_controller.service.control.requests import ControlError
from shoe_controller.service.control.surveillance import without_surveillance
from shoe_controller.service.control.wire import encode, error_answer
from shoe_controller.store.journal import Journal, JournalError

# What to ask instead, when an answer is over the bound.
_LESS = {
    "events": "fewer events (limit) or those after a seq (after)",
    "rounds": "the last rounds only (last)",
    "export": "the journal itself with `shoe-controller export` (docs/journal.md)",
}


class Reader:
    """Answers the journal's requests on a read-only connection (opened on first need, and
    again after a journal error)."""

    def __init__(self, settings: ReaderSettings) -> None:
        self._settings = settings
        self._journal: Journal | None = None
        self._answers: JournalAnswers | None = None

    def open(self) -> JournalAnswers:
        if self._answers is None:
            try:
                self._journal = Journal.open(
                    self._settings.journal_path,
                    self._settings.controller_id,
                    read_only=True,
                    quick_check=False,
                )
            except JournalError as error:
                raise ControlError("journal", f"the journal cannot be read: {error}") from None
            self._answers = JournalAnswers(self._journal, self._settings.config)
        return self._answers

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = self._answers = None

    def line(self, request: Mapping[str, Any], live: Live, hidden: bool) -> bytes:
        """The answer's line, or an error answer's when it would be over the bound."""
        command = request.get("cmd")
        line = encode(self._answer(request, live, hidden))
        limit = self._settings.max_answer_bytes
        if len(line) <= limit:
            return line
        instead = _LESS.get(command, "less")
        text = (
            f"the answer would be {len(line)} bytes, more than the {limit} one answer may"
            f" hold ([control] max_answer_bytes): ask for {instead}"
        )
        return encode(error_answer("too_large", text, command))

    def _answer(self, request: Mapping[str, Any], live: Live, hidden: bool) -> dict[str, Any]:
        command = request.get("cmd")
        try:
            result = self.open().answer(request, live)
        except ControlError as error:
            if error.code == "journal":
                self.close()  # opened again for the next request
            return error_answer(error.code, error.text, command)
        except Exception as error:  # answer, say why on stderr (the daemon's log), serve on
            traceback.print_exc(file=sys.stderr)
            return error_answer(
                "internal", f"the controller failed on this request: {error!r}", command
            )
        if hidden:
            result = without_surveillance(command, result)
        return {"ok": True, "cmd": command, "result": result}


def serve(connection: socket.socket) -> None:
    """Answer the daemon's requests on `connection` until it closes its end."""
    incoming = connection.makefile("rb")
    settings = read_frame(incoming)
    if settings is None:
        return
    reader = Reader(settings)
    try:
        with contextlib.suppress(ControlError):  # else each request says why, till it opens
            reader.open()
        connection.sendall(READY)
        while (request := read_frame(incoming)) is not None:
            number, asked, live, hidden = request
            line = reader.line(asked, live, hidden)
            connection.sendall(ANSWER.pack(number, len(line)))
            connection.sendall(line)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the daemon went away
    finally:
        reader.close()


def main(argv: list[str]) -> int:
    # The daemon stops this process (a Ctrl-C in its terminal reaches both: the daemon's
    # closing of the pair ends this one, without a traceback here).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with socket.socket(fileno=int(argv[0])) as connection:
        serve(connection)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
