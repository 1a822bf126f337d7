"""`shoectl status --watch`: the status redrawn in place every few seconds, as `watch upsc`
draws a UPS, until Ctrl-C.

On a terminal the screen is cleared once; each later frame goes over the last from the top
left, every line ending with erase-to-end-of-line and the frame with erase-below, so nothing
is blanked between frames (no flicker). Lines are cut to the terminal's width and the frame
to its height, so a frame never scrolls. The cursor is hidden meanwhile and shown again on
the way out. Piped, each frame is printed after the last with a blank line between (a log).
A controller that cannot be reached is said in the frame, and the watch goes on: it shows
the daemon coming back.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NoReturn, TextIO

import click

from shoe_controller.cli.shoectl.times import Times

HOME, ERASE_LINE, ERASE_BELOW, CLEAR = "\x1b[H", "\x1b[K", "\x1b[J", "\x1b[2J"
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


def fit(line: str, width: int) -> str:
    """`line` cut to `width` visible columns (colours dropped from a line that is cut)."""
    if len(click.unstyle(line)) <= width:
        return line
    return click.unstyle(line)[: max(width - 1, 0)] + "…"


def frame_text(head: str, body: str, columns: int, rows: int) -> str:
    """One frame for a terminal: from the top left, each line erased to its end, the rest
    of the screen below erased."""
    lines = [head, "", *body.splitlines()][: max(rows - 1, 1)]
    return HOME + "".join(fit(line, columns) + ERASE_LINE + "\n" for line in lines) + ERASE_BELOW


def watch(
    draw: Callable[[], str], interval: float, times: Times, out: TextIO | None = None
) -> NoReturn:
    """Draw `draw()` every `interval` seconds until Ctrl-C, then exit 0."""
    stream = out or sys.stdout
    tty = stream.isatty()
    if tty:
        stream.write(HIDE_CURSOR + HOME + CLEAR)
    try:
        while True:
            body = draw()
            stamp = times.stamp(datetime.now(UTC).isoformat())
            head = f"Every {interval:g} s: shoectl status    {stamp}    (Ctrl-C ends)"
            if tty:
                size = shutil.get_terminal_size()
                stream.write(frame_text(head, body, size.columns, size.lines))
            else:
                stream.write(f"{head}\n\n{body}\n\n")
            stream.flush()
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    finally:
        if tty:
            stream.write(SHOW_CURSOR)
            stream.flush()
    raise SystemExit(0)
