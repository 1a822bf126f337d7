"""What can go wrong with the journal, and which of those an SQLite error is."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

LOW_SPACE_BYTES = 1024 * 1024  # an I/O error with less free space than this is a full disk


class JournalError(Exception):
    """The journal could not do what was asked; nothing was half-written, retry may work.

    The subclass names (JournalFull, JournalCorrupt, ...) are the daemon's interface, hence
    no "Error" suffix (N818).
    """


class JournalFull(JournalError):  # noqa: N818
    """The file system holding the journal is full: free space, then retry the same call."""


class JournalCorrupt(JournalError):  # noqa: N818
    """The journal file is damaged or is not a journal; it needs an operator."""


class JournalOutcomeUnknown(JournalError):  # noqa: N818
    """The disk failed the commit itself (an fsync error): the transaction may be in the
    file or not, and this connection cannot tell. Never retry the fsync and trust it (the
    lesson of PostgreSQL's fsync errors): only a fresh open of the journal says which."""


class JournalWrittenElsewhere(JournalError):  # noqa: N818
    """Another process wrote the journal behind this writer's back: the counters this writer
    keeps in memory (store/journal.py) no longer match the file, so every later record would
    collide with what the other one stored. Only a fresh open (a restart) reads them right."""


class JournalBusy(JournalError):  # noqa: N818
    """Another process holds the journal's write lock for too long."""


class JournalMismatch(JournalError):  # noqa: N818
    """The journal belongs to another controller or a newer schema."""


class ReplayMismatch(JournalError):  # noqa: N818
    """Replaying a stored input produced events that differ from the stored ones."""


class RecordInvalid(ValueError):  # noqa: N818
    """An input, event or link state cannot be stored as given (caller bug); nothing stored."""


def journal_error(exc: sqlite3.Error, path: Path, *, committing: bool = False) -> JournalError:
    """The JournalError subclass that `exc`, raised on the journal at `path`, stands for;
    `committing`: raised by COMMIT itself, where an I/O error leaves the outcome unknown."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = f"journal {path}: {exc}"
    if committing and name.startswith("SQLITE_IOERR") and not _low_on_space(path):
        return JournalOutcomeUnknown(f"{text} ({name}): the commit may or may not be on disk")
    if name.startswith("SQLITE_FULL"):
        return JournalFull(text)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return JournalCorrupt(text)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return JournalBusy(text)
    if name.startswith("SQLITE_IOERR") and _low_on_space(path):
        # some writes (the WAL index, fsync of a grown file) report ENOSPC as an I/O error
        return JournalFull(f"{text} (file system nearly full)")
    return JournalError(text)


def _low_on_space(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.resolve().parent).free < LOW_SPACE_BYTES
    except OSError:
        return False
