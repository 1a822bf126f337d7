"""Every system call of the daemon and of its surveillance companion, against what their
units let through (the packaged service was killed with SIGSYS at its first
`chown`, which only a real PID 1 applying `SystemCallFilter=` shows).

The real daemon and the real companion each run under `strace -f`, as the units run them:
an unprivileged user (the daemon with the viewer group among its groups), no capabilities,
no new privileges (setpriv standing in for systemd's User=, SupplementaryGroups=,
CapabilityBoundingSet= and NoNewPrivileges=; setpriv's own calls are left out, as systemd's
are), with systemd's
NOTIFY_SOCKET, WATCHDOG_USEC and JOURNAL_STREAM, logging to a journald socket. They go
through start-up, a whole shoe dealt by the simulated shoe with the companion reporting
after every round, every kind of control request (shoectl's commands, a supervisor's
actions, the raw requests shoectl does not send), the scoreboard and the metrics over HTTP,
a reload (SIGHUP), a journal fault (the disk running low: the table held, the space freed,
resumed) and a stop (SIGTERM). The daemon signs its journal's checkpoints all along (at
start-up, every 10 s, at the shoe's end: Ed25519 through `cryptography`'s OpenSSL), with a key
owned as the package's postinst leaves it (root, the daemon's group, 0640).

Each call is then checked against the unit file as it is in the repository (so the test
follows the unit): SystemCallFilter= computed from systemd's own sets (`systemd-analyze
syscall-filter`) line by line as systemd applies them, MemoryDenyWriteExecute=,
`~@resources` (a prlimit64 setting a limit, which systemd's filter lets through) and
RestrictAddressFamilies=. A failure names each call, the sets that hold it and the line that
took it out. `-rP` prints the calls made and how often (docs/install.md, "Hardening").
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import secrets
import selectors
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from shoe_testkit.fs import fill, small_tmpfs
from shoe_testkit.net import free_port
from shoe_testkit.rig import RigOptions, TableRig
from shoe_testkit.rig_checks import shoectl
from shoe_testkit.syscalls import (
    Call,
    call_filter,
    counts,
    killed_calls,
    read_trace,
    refused_families,
    resource_changes,
    split_args,
    table,
    write_and_execute,
)

from shoe_controller.store.checkpoint import Checkpoint, signature_problem
from shoe_controller.store.checkpoint_keys import load_signer, write_new_key
from shoe_controller.vocab.events import EventType

REPO = Path(__file__).resolve().parents[2]
UNITS = {
    "daemon": REPO / "systemd" / "shoe-controller.service",
    "surveillance": REPO / "systemd" / "shoe-surveillance.service",
}
USER = 65534  # nobody: the units' own user does not exist here
MB = 1024 * 1024
# [journal] min_free_mb, on a 16 MB disk of its own (as tests/system/test_journal_space.py)
LIMIT_MB = 6
WATCHDOG_USEC = 2_000_000
DUE = (EventType.ROUND_RESULT, EventType.ROUND_VOIDED, EventType.SHOE_BURNED)
WAIT_S = 60.0  # generous: every call of the daemon is stopped for strace
CHECKPOINT_EVERY_S = 10  # the least [journal] checkpoint_every_s: the timer's too, in the run
JOURNAL = {"min_free_mb": LIMIT_MB, "checkpoint_every_s": CHECKPOINT_EVERY_S}


def _needs() -> str | None:
    """Why the test cannot run here, or None."""
    for tool in ("strace", "setpriv", "systemd-analyze"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/run installs strace; systemd gives the other two)"
    if os.geteuid() != 0:
        return "needs root: the daemon runs as another user, its journal on a tmpfs of its own"
    return None


def _viewer_group() -> grp.struct_group:
    """A group of this machine's to stand for shoe-viewers: not the user's own, so the daemon
    gives its socket to it, as under the unit."""
    for group in sorted(grp.getgrall(), key=lambda g: g.gr_gid):
        if group.gr_gid not in (0, USER):
            return group
    pytest.skip("no group on this machine to stand for the viewer group")


def _as_the_unit(*groups: int) -> list[str]:
    """What systemd does before the ExecStart= of either unit: the user, its groups
    (SupplementaryGroups=), no capabilities (CapabilityBoundingSet=), NoNewPrivileges=yes."""
    joined = f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups"
    no_capabilities = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", joined, *no_capabilities, "--nnp"]


PROBE = (
    "import os, sys; os.execv(sys.executable, [sys.executable, '-c',"
    " 'import numpy, aiohttp, structlog, shoe_controller.cli.main'])"
)  # the daemon execs its reader process with its own interpreter: that must work too


def _works_as_the_user(python: str) -> bool:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([*_as_the_unit(), python, "-c", PROBE], env=env,
                          capture_output=True, timeout=WAIT_S, check=False)  # fmt: skip
    return done.returncode == 0


def _service_python(directory: Path) -> str:
    """An interpreter the units' user can run with the daemon's libraries: this one, else
    (it lives where only root may read, as pyenv's under /root) Debian's python3.X, the
    package's own, in a venv of its own that reads this environment's libraries."""
    if _works_as_the_user(sys.executable):
        return sys.executable
    debian = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not debian.exists():
        pytest.skip(f"the unit's user cannot run {sys.executable}, and there is no {debian}")
    venv = directory / "python"
    subprocess.run([str(debian), "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True, timeout=WAIT_S)  # fmt: skip
    (site_dir,) = venv.glob("lib/python*/site-packages")
    lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
    (site_dir / "daemon-libraries.pth").write_text("\n".join(lines) + "\n")
    python = str(venv / "bin" / "python")
    if not _works_as_the_user(python):
        pytest.skip(f"the unit's user can run neither {sys.executable} nor {debian} with the"
                    " daemon's libraries (are they where only root may read?)")  # fmt: skip
    return python


def _traced(trace: Path, *groups: int) -> list[str]:
    # -f: every thread and child process (the reader process too); -qq: no attach lines
    return ["strace", "-f", "-qq", "-s", "24", "-o", str(trace), *_as_the_unit(*groups)]


class Systemd:
    """The sockets systemd gives a service: NOTIFY_SOCKET and journald's, read by a thread."""

    def __init__(self, directory: Path) -> None:
        self.notify_path = directory / "notify.sock"
        self.journal_path = directory / "journal.sock"
        self.notices: list[str] = []
        self.records: list[bytes] = []
        self._sockets = []
        for path in (self.notify_path, self.journal_path):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(str(path))
            path.chmod(0o666)  # the service's user sends to it
            self._sockets.append(sock)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with selectors.DefaultSelector() as selector:
            for sock in self._sockets:
                selector.register(sock, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in selector.select(0.05):
                    data = key.fileobj.recv(1 << 20)  # type: ignore[union-attr]
                    if key.fileobj is self._sockets[0]:
                        self.notices += data.decode().splitlines()
                    else:
                        self.records.append(data)

    def logged(self, text: str) -> bool:
        return any(text.encode() in record for record in self.records)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in self._sockets:
            sock.close()


@dataclass
class Journaled:
    """The daemon's journal after the run: each checkpoint (its event's seq, what it says, why
    its signature is not the rig's key's: None) and the seqs of the events it is held to."""

    checkpoints: list[tuple[int, Checkpoint, str | None]] = field(default_factory=list)
    seqs: dict[str, list[int]] = field(default_factory=dict)  # round.result, shoe.ended


@dataclass
class Traced:
    """One unit's process under strace: the calls it made."""

    unit: str
    trace: Path
    process: subprocess.Popen[str] | None = None  # strace
    pid: int | None = None  # the process strace traces
    calls: list[Call] = field(default_factory=list)
    exit_code: int | None = None
    journaled: Journaled | None = None  # the daemon's: what its journal holds after the run

    @property
    def unit_text(self) -> str:
        return UNITS[self.unit].read_text()

    def started(self, process: subprocess.Popen[str] | None) -> None:
        """strace started: the pid of the process it traces is its output's first word (not
        strace's child in /proc: strace forks short-lived children of its own first)."""
        self.process = process
        deadline = time.monotonic() + WAIT_S
        while self.pid is None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                self.pid = int(self.trace.read_text().split(maxsplit=1)[0])
            assert time.monotonic() < deadline, f"strace wrote nothing to {self.trace}"
            time.sleep(0.01)

    def signal(self, signum: int) -> None:
        assert self.pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def stop(self) -> None:
        """SIGTERM the traced process itself (strace keeps fatal signals off itself), wait;
        SIGKILL if it hangs."""
        if self.process is None or self.pid is None or self.process.poll() is not None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.exit_code = self.process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.process.wait(WAIT_S)


def _request(rig: TableRig, *lines: bytes) -> list[dict]:
    """Raw lines on the control socket (the requests shoectl does not send); an answer each."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(WAIT_S)
        sock.connect(str(rig.directory / "control.sock"))
        sock.sendall(b"".join(line + b"\n" for line in lines))
        with sock.makefile("rb") as answers:
            return [json.loads(answers.readline()) for _ in lines]


def _look(rig: TableRig) -> None:
    """Every request that looks, through shoectl as a pit boss runs it, and the raw ones."""
    for command in (
        ["status"], ["status", "--json"], ["check"], ["devices"], ["rounds"],
        ["rounds", "--last", "3", "--json"], ["round", "1"], ["road"], ["events"],
        ["events", "--last", "50", "--json"], ["outbox"], ["edge"], ["shuffle"], ["pace"],
    ):  # fmt: skip
        done = shoectl(rig, *command)
        if command == ["shuffle"] and "no shuffle report for shoe" in done.stderr:
            continue  # a table's first shoe has no shoe before it to be held against
        assert done.returncode in (0, 1), (command, done.stderr)  # 1: a person is needed
    hello, export, bad = _request(
        rig, b'{"cmd": "hello"}', b'{"cmd": "export", "shoe": 1, "round": 1}', b"not json"
    )
    assert hello["ok"], hello
    assert export["ok"], export
    assert bad["error"]["code"] == "bad_request"
    follow = subprocess.Popen(
        [sys.executable, "-m", "shoe_controller.cli.shoectl", "events", "--follow"],
        env={**os.environ, "SHOECTL_SOCKET": str(rig.directory / "control.sock"),
             "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        rig.dealer.deal(2)  # the follower sees them
        assert follow.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(follow.stdout, selectors.EVENT_READ)
            assert selector.select(WAIT_S), "shoectl events --follow showed nothing"
    finally:
        follow.terminate()
        follow.wait(WAIT_S)


def _act(rig: TableRig) -> None:
    """A supervisor's actions: hold the table, resume it (the journal fault's resume too)."""
    held = shoectl(rig, "hold", "--by", "sup7", "--reason", "syscall test")
    assert held.returncode == 0, held.stderr
    resumed = shoectl(rig, "resume", "--by", "sup7", "--reason", "syscall test")
    assert resumed.returncode == 0, resumed.stderr


def _http(*urls: str) -> None:
    for url in urls:
        with urllib.request.urlopen(url, timeout=WAIT_S) as answer:
            assert answer.status == 200, url
            answer.read()


def _space_fault(rig: TableRig) -> bool:
    faults = json.loads(shoectl(rig, "status", "--json").stdout)["table"]["faults"]
    return any(fault["device"] == "journal" and fault["code"] == 0xF004 for fault in faults)


def _journal_fault(rig: TableRig, disk: Path) -> None:
    """The journal's disk runs low: the table is held with the fault; the space is freed, the
    fault lifts, a supervisor resumes (tests/system/test_journal_space.py, shorter)."""
    filler = fill(disk, (LIMIT_MB - 2) * MB)
    rig.wait_until(lambda: _space_fault(rig), "the journal's space fault", WAIT_S)
    filler.unlink()
    rig.wait_until(lambda: not _space_fault(rig), "the fault lifted", WAIT_S)
    resumed = shoectl(rig, "resume", "--by", "sup7", "--reason", "disk freed")
    assert resumed.returncode == 0, resumed.stderr


def _reported(rig: TableRig) -> bool:
    """The companion's reports are through the last event one is due after (a round's
    result, a void, a burn; not those that came with shoe.ended: test_surveillance_live)."""
    events = rig.records.journal_events()
    ended = {event.input_no for event in events if event.type == EventType.SHOE_ENDED}
    due = [e.seq for e in events if e.type in DUE and e.input_no not in ended]
    reports = [i for i in rig.records.journal_inputs() if i["type"] == "surveillance_report"]
    return bool(reports) and max(r["after_seq"] for r in reports) >= max(due, default=0)


def _journaled(rig: TableRig) -> Journaled:
    signer = load_signer(rig.checkpoint_key)
    keys = {signer.key: signer.public_key}
    journaled = Journaled()
    for event in rig.records.journal_events():
        if event.type == EventType.JOURNAL_CHECKPOINT:
            checkpoint = Checkpoint.from_json(event.data)
            journaled.checkpoints.append(
                (event.seq, checkpoint, signature_problem(checkpoint, keys))
            )
        elif event.type in (EventType.ROUND_RESULT, EventType.SHOE_ENDED):
            journaled.seqs.setdefault(event.type, []).append(event.seq)
    return journaled


@dataclass
class Table:
    """The run: the rig, systemd's sockets, the two traced processes."""

    directory: Path
    disk: Path  # the journal's, a small tmpfs
    python: str  # an interpreter the units' user can run
    group: grp.struct_group  # stands for shoe-viewers (and the supervisors and surveillance)
    systemd: Systemd
    rig: TableRig
    metrics: str = field(default_factory=lambda: f"127.0.0.1:{free_port()}")
    board: str = field(default_factory=lambda: f"127.0.0.1:{free_port()}")
    traced: dict[str, Traced] = field(default_factory=dict)


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Traced]]:
    why = _needs()
    if why is not None:
        pytest.skip(why)
    directory = Path(tempfile.mkdtemp(prefix="sys-", dir="/tmp"))  # short: socket paths
    directory.chmod(0o755)
    kept = tmp_path_factory.mktemp("syscalls")  # pytest keeps it: the traces to read
    out = {unit: Traced(unit, kept / f"{unit}.strace") for unit in UNITS}
    table: Table | None = None
    try:
        python = _service_python(directory)
        with small_tmpfs(directory / "disk", "16m") as disk:
            group = _viewer_group()
            names = {"viewer_group": group.gr_name, "supervisor_group": group.gr_name}
            rig = TableRig(directory / "rig", RigOptions(journal=JOURNAL, control=names))
            table = Table(directory, disk, python, group, Systemd(directory), rig, traced=out)
            _run(table)
            for result in out.values():
                result.calls = read_trace(result.trace, skip_execs=1)  # setpriv's
            out["daemon"].journaled = _journaled(rig)
            yield out
    finally:
        for result in out.values():
            result.stop()
        if table is not None:
            table.rig.close()
            table.systemd.close()
        shutil.rmtree(directory, ignore_errors=True)


def _run(table: Table) -> None:
    """Start-up, a whole shoe with the companion, every request, a reload, a journal fault,
    the stop."""
    rig, daemon, companion = table.rig, table.traced["daemon"], table.traced["surveillance"]
    _start(table)
    rig.dealer.deal(40)
    rig.wait_until(lambda: _reported(rig), "the companion's reports", WAIT_S)
    _look(rig)
    _act(rig)
    _http(f"http://{table.metrics}/metrics", f"http://{table.board}/",
          f"http://{table.board}/board.json")  # fmt: skip
    daemon.signal(signal.SIGHUP)  # systemctl reload
    rig.wait_until(lambda: table.systemd.logged("logs reopened"), "the reload", WAIT_S)
    rig.dealer.deal(20)
    _journal_fault(rig, table.disk)
    rig.dealer.settle()
    rig.dealer.deal_until_shoe_ends()
    rig.wait_until(lambda: _reported(rig), "the companion's last report", WAIT_S)
    _look(rig)  # edge and shuffle with the whole shoe's reports
    companion.stop()
    daemon.stop()
    assert "STOPPING=1" in table.systemd.notices


def _start(table: Table) -> None:
    """The table up, the daemon and the companion each under strace as their units run them."""
    rig, systemd, gid = table.rig, table.systemd, table.group.gr_gid
    os.chown(table.disk, USER, USER)  # the journal's directory, as StateDirectory= makes it
    rig.records.use_journal(table.disk / "journal.db")
    rig.directory.mkdir()
    os.chown(rig.directory, USER, USER)  # the socket's, as RuntimeDirectory= makes it
    rig.key_file.write_text(secrets.token_hex(32) + "\n")
    rig.key_file.chmod(0o600)
    os.chown(rig.key_file, USER, USER)
    write_new_key(rig.checkpoint_key)  # as postinst: root's, the daemon's group reads it
    os.chown(rig.checkpoint_key, 0, USER)
    rig.checkpoint_key.chmod(0o640)
    rig.start_receiver()
    rig.start_simulators()
    os.chown(os.path.realpath(rig.port_of("shoe")), USER, -1)  # the pty, as a udev rule would
    rig.write_config(
        log={"format": "auto", "journal_socket": str(systemd.journal_path)},
        metrics={"listen": table.metrics},
        scoreboard={"listen": table.board},
        surveillance={"group": table.group.gr_name},
    )
    stderr = rig.directory / "daemon.log"  # the rig's log of the daemon's stderr
    stderr.touch()
    info = stderr.stat()
    env = {
        "NOTIFY_SOCKET": str(systemd.notify_path),
        "WATCHDOG_USEC": str(WATCHDOG_USEC),
        "JOURNAL_STREAM": f"{info.st_dev}:{info.st_ino}",  # stderr is the journal's stream
    }
    daemon, companion = table.traced["daemon"], table.traced["surveillance"]
    rig.start_daemon(env, wait=False, prefix=_traced(daemon.trace, gid), python=table.python)
    daemon.started(rig.daemon)
    rig.wait_until(lambda: "READY=1" in systemd.notices, "READY=1", WAIT_S)
    rig.wait_until(lambda: systemd.logged("control socket listening"), "the socket", WAIT_S)
    # the companion's unit has no SupplementaryGroups=: it reaches the socket as its owner
    rig.start_surveillance(_traced(companion.trace), table.python)
    companion.started(rig.companion)


# ---------------------------------------------------------------------- the checks


def _summary(result: Traced) -> str:
    calls = table(counts(result.calls))
    return f"the calls of the {result.unit} ({UNITS[result.unit].name}):\n{calls}"


@pytest.mark.slow
@pytest.mark.parametrize("unit", list(UNITS))
def test_the_unit_s_filter_lets_every_call_through(traced: dict[str, Traced], unit: str) -> None:
    result = traced[unit]
    assert result.calls, f"nothing traced in {result.trace}"
    print(_summary(result))  # -rP shows it
    killed = killed_calls(result.calls, result.unit_text)
    assert not killed, (
        f"{UNITS[unit].name}'s SystemCallFilter= would kill the {unit} (SIGSYS) on:\n  "
        + "\n  ".join(killed)
        + f"\n(every call with its arguments: {result.trace})"
    )


@pytest.mark.slow
@pytest.mark.parametrize("unit", list(UNITS))
def test_no_memory_both_writable_and_executable(traced: dict[str, Traced], unit: str) -> None:
    result = traced[unit]
    found = write_and_execute(result.calls, result.unit_text)
    assert not found, "MemoryDenyWriteExecute=yes refuses (EPERM):\n  " + "\n  ".join(found)


@pytest.mark.slow
@pytest.mark.parametrize("unit", list(UNITS))
def test_no_resource_limit_priority_or_affinity_changed(
    traced: dict[str, Traced], unit: str
) -> None:
    result = traced[unit]
    found = resource_changes(result.calls, result.unit_text)
    assert not found, f"the unit denies @resources; the {unit} changed:\n  " + "\n  ".join(found)


@pytest.mark.slow
@pytest.mark.parametrize("unit", list(UNITS))
def test_every_socket_is_of_a_family_the_unit_allows(traced: dict[str, Traced], unit: str) -> None:
    result = traced[unit]
    found = refused_families(result.calls, result.unit_text)
    assert not found, "RestrictAddressFamilies= refuses:\n  " + "\n  ".join(found)


@pytest.mark.slow
def test_the_run_went_through_what_it_says(traced: dict[str, Traced]) -> None:
    """The traces hold what the run claims: a clean stop of both, the daemon's reader
    process and threads, the socket given to the viewer group, the companion on the socket."""
    daemon, companion = traced["daemon"], traced["surveillance"]
    assert daemon.exit_code == 0
    assert companion.exit_code in (0, -signal.SIGTERM)
    execs = [call for call in daemon.calls if call.name == "execve"]
    assert len(execs) >= 2  # the daemon, then its reader process (reads.py)
    assert len({call.pid for call in daemon.calls}) >= 3  # threads and the reader
    assert any(
        call.name in ("chown", "fchownat") and "control.sock" in call.args for call in daemon.calls
    )  # the socket given to the viewer group (fchownat: where there is no chown, arm64)
    assert any(call.name == "connect" and "control.sock" in call.args for call in companion.calls)


@pytest.mark.slow
def test_the_daemon_signed_its_checkpoints_under_the_filter(traced: dict[str, Traced]) -> None:
    """The key read in the sandbox as postinst leaves it, and checkpoints signed with it: at
    start-up, before the first card, and at the shoe's end (docs/journal.md "Checkpoints")."""
    journaled = traced["daemon"].journaled
    assert journaled is not None
    signed = journaled.checkpoints
    assert len(signed) >= 2, signed
    assert [problem for _, _, problem in signed if problem] == []
    assert signed[0][0] < min(journaled.seqs[EventType.ROUND_RESULT])  # the start-up one
    [ended] = journaled.seqs[EventType.SHOE_ENDED]
    assert any(checkpoint.seq >= ended for _, checkpoint, _ in signed)  # the shoe's end's


# ---------------------------------------------------------------------- the parts, alone


def test_the_filter_is_applied_in_order_as_systemd_does() -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    unit = "[Service]\nSystemCallFilter=@system-service\nSystemCallFilter=~@privileged @resources\n"
    rules = call_filter(unit)
    assert rules is not None
    assert rules.allow_list
    assert all(rules.allows(call) for call in ("read", "execve", "getrlimit"))
    assert not any(rules.allows(call) for call in ("chown", "setrlimit", "mbind", "mount"))
    assert "taken out by `~@privileged`" in rules.why_killed("chown")
    assert "@chown" in rules.why_killed("chown")
    assert "in none of the sets allowed" in rules.why_killed("mount")  # not in @system-service
    again = call_filter(unit + "SystemCallFilter=@chown\n")  # a later allow line re-adds
    assert again is not None
    assert all(again.allows(call) for call in ("chown", "fchown", "fchownat"))
    assert not again.allows("setuid")
    assert call_filter(unit + "SystemCallFilter=\n") is None  # an empty line resets it


def test_a_trace_counts_each_call_once_with_its_arguments(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    trace.write_text(
        '10 execve("/usr/bin/setpriv", ["setpriv"], 0x7ff /* 3 vars */) = 0\n'
        "10 setgroups(1, [4]) = 0\n"
        '10 execve("/nonexistent", ["x"], 0x7ff /* 3 vars */) = -1 ENOENT (No such file)\n'
        '10 execve("/usr/bin/python3", ["python3"], 0x7ff /* 3 vars */) = 0\n'
        "10 mmap(NULL, 4096, PROT_READ|PROT_WRITE|PROT_EXEC, MAP_PRIVATE, -1, 0 <unfinished ...>\n"
        "11 mprotect(0x7f00, 4096, PROT_READ) = 0\n"
        "10 <... mmap resumed>) = 0x7f00\n"
        "11 prlimit64(0, RLIMIT_NOFILE, {rlim_cur=8, rlim_max=8}, NULL) = 0\n"
        "11 prlimit64(0, RLIMIT_STACK, NULL, {rlim_cur=8192*1024, rlim_max=RLIM64_INFINITY}) = 0\n"
        "11 socket(AF_PACKET, SOCK_RAW, 768) = 3\n"
        '11 chown("/run/x.sock", -1, 1) = 0\n'
        "10 +++ exited with 0 +++\n"
    )
    calls = read_trace(trace, skip_execs=1)
    assert [call.name for call in calls] == [
        "execve", "mmap", "mprotect", "prlimit64", "prlimit64", "socket", "chown"
    ]  # fmt: skip
    assert split_args(calls[1].args)[2] == "PROT_READ|PROT_WRITE|PROT_EXEC"
    unit = (
        "[Service]\nSystemCallFilter=@system-service\nSystemCallFilter=~@privileged @resources\n"
        "MemoryDenyWriteExecute=yes\nRestrictAddressFamilies=AF_UNIX AF_INET\n"
    )
    assert [line.split(" (")[0] for line in write_and_execute(calls, unit)] == [
        "pid 10: mmap(NULL, 4096, PROT_READ|PROT_WRITE|PROT_EXEC, MAP_PRIVATE, -1, 0) = 0x7f00"
    ]
    assert len(resource_changes(calls, unit)) == 1  # the one that sets RLIMIT_NOFILE
    assert refused_families(calls, unit) == ["pid 11: socket(AF_PACKET, SOCK_RAW, 768) = 3"]
    if shutil.which("systemd-analyze") is not None:
        assert [line.split(" (")[0] for line in killed_calls(calls, unit)] == ["chown"]
