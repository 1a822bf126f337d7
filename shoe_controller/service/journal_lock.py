"""One daemon a journal: the exclusive lock beside the journal file, held for a daemon's life.

Two daemons on one journal break each other: each keeps the journal's counters in memory
(store/journal.py: one writer a file), so the second's start takes the first's next input
number, and the first stores no card from then on. So `shoe-controller run` takes
`flock(LOCK_EX | LOCK_NB)` on `<journal>.lock` (`journal.db.lock` beside `journal.db`) before
it opens a device, the control socket or the journal, and holds it on an open descriptor for
its whole life. The kernel lets go of it when the process ends, however it ends: a SIGKILL or
a power cut leaves nothing to clean up, no lock is ever stale.

The holder writes its PID into the file, for the refusal to name; the lock is the flock, never
the PID (a PID left by a dead process is only text). The file is never deleted: a process
that deleted it while another had it open would let a third lock a new file beside the old
one. Readers (export, verify, report, replay, the control socket's reader) take no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path

LOCK_SUFFIX = ".lock"
# sysexits' EX_TEMPFAIL ("try again later"): neither 1 (a configuration refused) nor click's 2
# (a command line); under systemd's Restart=always the service so refused starts again, and
# takes the journal over once the daemon that holds it has stopped.
EXIT_IN_USE = 75
# A `check` or a demo probes the lock for an instant (a shared flock); a daemon that starts in
# that instant tries again for this long rather than be refused by a probe.
PROBE_GRACE_S = 0.5
_RETRY_S = 0.02


def lock_path(journal: Path) -> Path:
    """The lock file of the journal at `journal`: beside it, its name and `.lock`."""
    return journal.with_name(journal.name + LOCK_SUFFIX)


class LockUnusable(Exception):  # noqa: N818 - a state of the file, as JournalFull
    """The lock file cannot be opened (its directory is read-only, it is a directory ...)."""


class JournalInUse(Exception):  # noqa: N818
    """Another process holds the journal's lock: one line naming the journal and its PID."""

    def __init__(self, journal: Path, pid: int | None, lock_file: Path, holder: str) -> None:
        self.journal, self.pid, self.lock_file = journal, pid, lock_file
        who = f"{holder} of PID {pid}" if pid is not None else f"{holder} (PID not written yet)"
        super().__init__(
            f"journal {journal} is in use by {who}, which holds {lock_file}: one daemon a"
            " journal; stop that one first"
        )


class HeldLock:
    """An exclusive flock on an open descriptor; `release()`, or the process's end, frees it."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def take(
        cls,
        path: Path,
        journal: Path,
        *,
        holder: str = "the daemon",
        grace_s: float = PROBE_GRACE_S,
    ) -> HeldLock:
        """Lock `path` (made if absent) and write this process's PID into it; JournalInUse
        (naming `journal` and the PID in the file, `holder` its kind) when another process
        holds it for longer than `grace_s`; LockUnusable when it cannot be opened."""
        try:
            # O_CLOEXEC: a child must not keep the lock alive after this process is gone.
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise LockUnusable(f"lock file {path} cannot be opened: {error.strerror}") from None
        deadline = time.monotonic() + grace_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = _pid_in(fd)
                    os.close(fd)
                    raise JournalInUse(journal, pid, path, holder) from None
                time.sleep(_RETRY_S)
        with contextlib.suppress(OSError):  # the PID is for the message; the flock is the lock
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd, path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor lets go of the flock
            self._fd = None

    def __enter__(self) -> HeldLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def take(journal: Path) -> HeldLock:
    """The daemon's lock on the journal at `journal` (see HeldLock.take)."""
    return HeldLock.take(lock_path(journal), journal)


@dataclass(frozen=True)
class Holder:
    """A process that holds a lock now: the PID it wrote (None: not written yet)."""

    pid: int | None


def holder(lock_file: Path) -> Holder | None:
    """Who holds `lock_file` now, without making it (None: nobody, there is no such file, or
    this user may not open it, nor then use the journal: the start-up checks say so). A
    shared flock for an instant, never the PID alone: a dead process's PID stays in the file."""
    try:
        fd = os.open(lock_file, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return Holder(_pid_in(fd))
        return None
    finally:
        os.close(fd)  # a shared lock taken goes with it


def check_free(journal: Path) -> None:
    """JournalInUse when a daemon holds the lock of `journal` now (the demo's first look)."""
    held = holder(lock_path(journal))
    if held is not None:
        raise JournalInUse(journal, held.pid, lock_path(journal), "the daemon")


def _pid_in(fd: int) -> int | None:
    """The PID the holder wrote (None: none yet, or not a number)."""
    with contextlib.suppress(OSError, ValueError):
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return int(text) if text.isdigit() else None
    return None
