"""What the daemon and its control reader process (reader.py) say to each other over their
socket pair: frames to the reader (a length, then a pickle: the daemon is its parent, the only
one who holds the other end), the header before each answer (the request's number, the
answer's length), and the reader's settings (reads.py is the daemon's side).
"""

from __future__ import annotations

import dataclasses
import pickle
import struct
from typing import IO, Any

from shoe_controller.service.config import Config

FRAME = struct.Struct(">I")  # the length of a frame to the reader
ANSWER = struct.Struct(">II")  # the request's number and the answer's length, before it
READY = ANSWER.pack(0, 0)


@dataclasses.dataclass(frozen=True, slots=True)
class ReaderSettings:
    """What the reader needs: the journal, the configuration its answers read, the bound."""

    journal_path: str
    controller_id: str
    config: Config
    max_answer_bytes: int


def frame(value: Any) -> bytes:
    """A frame to the reader."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME.pack(len(body)) + body


def read_frame(stream: IO[bytes]) -> Any | None:
    """The next frame from the daemon; None when it closed its end."""
    head = stream.read(FRAME.size)
    if len(head) < FRAME.size:
        return None
    (size,) = FRAME.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)  # from the daemon, our parent, over our own socket pair
