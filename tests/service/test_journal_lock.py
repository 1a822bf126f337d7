"""The journal's lock (service/journal_lock.py, docs/journal.md "One daemon a journal"): an
flock beside the journal with the holder's PID written in it for the message, freed by the
kernel with its descriptor, never by deleting the file; a probe of `check` or the demo does
not refuse a daemon that starts in its instant. Two real daemons: tests/system/test_one_daemon.py.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shoe_controller.service import journal_lock
from shoe_controller.service.journal_lock import HeldLock, Holder, JournalInUse, LockUnusable


def test_the_lock_file_is_beside_the_journal() -> None:
    assert journal_lock.lock_path(Path("/var/lib/s/journal.db")) == Path(
        "/var/lib/s/journal.db.lock"
    )


def test_the_holder_writes_its_pid_and_a_second_taker_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "journal.db"
    lock_file = journal_lock.lock_path(journal)
    with journal_lock.take(journal):
        assert lock_file.read_text() == f"{os.getpid()}\n"
        assert journal_lock.holder(lock_file) == Holder(os.getpid())
        # flock is per open file: a second descriptor conflicts even in this process.
        with pytest.raises(JournalInUse) as refused:
            HeldLock.take(lock_file, journal, grace_s=0)
    assert refused.value.pid == os.getpid()
    assert str(refused.value) == (
        f"journal {journal} is in use by the daemon of PID {os.getpid()}, which holds"
        f" {lock_file}: one daemon a journal; stop that one first"
    )
    assert journal_lock.holder(lock_file) is None  # released with its descriptor
    assert lock_file.exists()  # never deleted: a third taker would lock another file


def test_a_pid_left_in_the_file_is_no_lock(tmp_path: Path) -> None:
    """A dead holder's PID stays in the file: the flock decides, not the text."""
    journal = tmp_path / "journal.db"
    journal_lock.lock_path(journal).write_text("1\n")  # init: alive, yet it holds nothing
    assert journal_lock.holder(journal_lock.lock_path(journal)) is None
    journal_lock.check_free(journal)
    with journal_lock.take(journal):
        assert journal_lock.lock_path(journal).read_text() == f"{os.getpid()}\n"


def test_another_process_holding_it_is_named_and_its_death_frees_it(tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    holder = _holder(journal)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(JournalInUse, match=f"the daemon of PID {holder.pid},"):
            journal_lock.check_free(journal)
        holder.kill()  # SIGKILL: nothing is cleaned up, the kernel lets go
        holder.wait()
        with journal_lock.take(journal):
            pass
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_a_probe_does_not_refuse_a_daemon_starting_in_its_instant(tmp_path: Path) -> None:
    """`check` holds a shared flock for an instant; a daemon taking the lock meanwhile
    waits it out (PROBE_GRACE_S) rather than exit as if another daemon ran."""
    journal = tmp_path / "journal.db"
    lock_file = journal_lock.lock_path(journal)
    probe = os.open(lock_file, os.O_RDWR | os.O_CREAT)
    fcntl.flock(probe, fcntl.LOCK_SH)
    threading.Timer(0.1, os.close, (probe,)).start()
    with journal_lock.take(journal):
        assert journal_lock.holder(lock_file) == Holder(os.getpid())


def test_a_holder_that_wrote_no_pid_yet_is_said_so(tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    lock_file = journal_lock.lock_path(journal)
    other = os.open(lock_file, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)
        assert journal_lock.holder(lock_file) == Holder(None)
        with pytest.raises(JournalInUse, match=r"the daemon \(PID not written yet\), which"):
            HeldLock.take(lock_file, journal, grace_s=0)
    finally:
        os.close(other)


def test_a_lock_file_that_cannot_be_opened_is_said(tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    journal_lock.lock_path(journal).mkdir()
    with pytest.raises(LockUnusable, match=r"journal\.db\.lock cannot be opened: Is a directory"):
        journal_lock.take(journal)
    assert journal_lock.holder(tmp_path / "absent.lock") is None  # nothing made by looking
    assert not (tmp_path / "absent.lock").exists()


def test_a_program_the_holder_started_does_not_keep_the_lock(tmp_path: Path) -> None:
    """O_CLOEXEC: a child the holder started, which outlives it, does not hold the journal."""
    journal = tmp_path / "journal.db"
    holder = _holder(journal, "import subprocess; child = subprocess.Popen(['sleep', '60'],"
                     " close_fds=False); print(child.pid, flush=True)")  # fmt: skip
    assert holder.stdout is not None
    child = int(holder.stdout.readline())
    try:
        holder.kill()
        holder.wait()
        os.kill(child, 0)  # still running, its parent gone
        assert journal_lock.holder(journal_lock.lock_path(journal)) is None
    finally:
        os.kill(child, 9)
        if holder.stdout is not None:
            holder.stdout.close()


def _holder(journal: Path, then: str = "print('held', flush=True)") -> subprocess.Popen[str]:
    """A process that takes the journal's lock, runs `then` and sleeps."""
    program = (
        "import sys, time; from pathlib import Path;"
        " from shoe_controller.service.journal_lock import take;"
        f" lock = take(Path(sys.argv[1])); {then}; time.sleep(60)"
    )
    return subprocess.Popen(
        [sys.executable, "-c", program, str(journal)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
