"""What a unit's seccomp settings allow, and what a process traced with `strace -f` did:
the system-call test's two halves, tests/system/test_syscall_filter.py.

The unit's side is read from the unit file itself, with systemd's own sets
(`systemd-analyze syscall-filter`), in systemd's order: the first `SystemCallFilter=` line
says allow-list or deny-list (an allow-list starts from `@default`, which systemd always
allows), each later line adds to it or takes from it, an empty one resets it
(systemd.exec(5)). `MemoryDenyWriteExecute=` and `RestrictAddressFamilies=` are checked on
the calls' arguments, as systemd's seccomp rules do (src/shared/seccomp-util.c).

The process's side is strace's output (`-f -o FILE`: one line per call, `PID name(args) =
result`; a call another thread interrupted is split in `<unfinished ...>` and `<... name
resumed>`): every call counted once, with its arguments joined again.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

# mmap's and mprotect's protection bits, shmat's flag (linux/mman.h, linux/shm.h)
PROT_WRITE = 0x2
PROT_EXEC = 0x4
SHM_EXEC = 0o100000
FLAG_VALUES = {"PROT_NONE": 0, "PROT_READ": 0x1, "PROT_WRITE": PROT_WRITE,
               "PROT_EXEC": PROT_EXEC, "SHM_EXEC": SHM_EXEC}  # fmt: skip

_LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. (\w+) resumed>(.*)|(\w+)\((.*))$")
_UNFINISHED = " <unfinished ...>"


# ---------------------------------------------------------------------- systemd's sets


@cache
def systemd_sets() -> dict[str, frozenset[str]]:
    """Each set `systemd-analyze syscall-filter` prints, with its members as printed (calls
    and @sets). The machine's systemd, so the sets are those the unit would get here."""
    binary = shutil.which("systemd-analyze")
    if binary is None:
        raise FileNotFoundError("systemd-analyze")
    text = subprocess.run(
        [binary, "syscall-filter"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    sets: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in text.splitlines():
        if line.startswith("@"):
            current = sets.setdefault(line.split()[0], set())
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.add(line.strip())
        elif not line.strip():
            current = None
    return {name: frozenset(members) for name, members in sets.items()}


def expand(item: str, sets: Mapping[str, frozenset[str]] | None = None) -> frozenset[str]:
    """A call's name as itself, a @set as every call in it (its sets' too)."""
    sets = systemd_sets() if sets is None else sets
    if not item.startswith("@"):
        return frozenset({item})
    if item not in sets:
        raise ValueError(f"systemd knows no system call set {item}")
    calls: set[str] = set()
    for member in sets[item]:
        calls |= expand(member, sets)
    return frozenset(calls)


def groups_of(call: str, sets: Mapping[str, frozenset[str]] | None = None) -> list[str]:
    """The smallest sets that list `call` themselves (e.g. `@chown` for chown), @known aside."""
    sets = systemd_sets() if sets is None else sets
    return sorted(name for name, members in sets.items() if call in members and name != "@known")


# ---------------------------------------------------------------------- the unit


def unit_values(unit_text: str, key: str) -> list[str]:
    """Every value of `key=` in the unit's [Service] section, in order (comments aside)."""
    values, section = [], ""
    for raw in unit_text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line
        elif section == "[Service]" and line.startswith(f"{key}="):
            values.append(line.split("=", 1)[1].strip())
    return values


@dataclass
class CallFilter:
    """A unit's SystemCallFilter=, computed as systemd does it."""

    allow_list: bool  # the first line's kind: True, the calls listed are those allowed
    listed: set[str] = field(default_factory=set)
    removed_by: dict[str, str] = field(default_factory=dict)  # call: the line item that took it
    lines: list[str] = field(default_factory=list)

    def allows(self, call: str) -> bool:
        return (call in self.listed) == self.allow_list

    def why_killed(self, call: str) -> str:
        """Why the filter kills `call`, naming the sets that hold it."""
        held = ", ".join(groups_of(call)) or "no set of systemd's"
        if call in self.removed_by:
            return f"{call} (in {held}): taken out by `~{self.removed_by[call]}`"
        if self.allow_list:
            return f"{call} (in {held}): in none of the sets allowed"
        return f"{call} (in {held}): on the unit's deny-list"


def call_filter(unit_text: str) -> CallFilter | None:
    """The unit's SystemCallFilter= (None when it has none: every call allowed)."""
    result: CallFilter | None = None
    for value in unit_values(unit_text, "SystemCallFilter"):
        if not value:
            result = None  # an empty assignment resets the filter
            continue
        deny = value.startswith("~")
        items = [item.split(":", 1)[0] for item in value.lstrip("~").split()]  # `:errno` aside
        if result is None:
            result = CallFilter(allow_list=not deny)
            if result.allow_list:
                result.listed |= expand("@default")  # always allowed (systemd.exec(5))
        result.lines.append(value)
        adding = deny != result.allow_list  # a line of the first line's kind adds to the list
        for item in items:
            for call in expand(item):
                if adding:
                    result.listed.add(call)
                    result.removed_by.pop(call, None)
                else:
                    result.listed.discard(call)
                    result.removed_by.setdefault(call, item)
    return result


def address_families(unit_text: str) -> tuple[bool, set[str]] | None:
    """RestrictAddressFamilies=: (allow-list?, the families), None when not set."""
    result: tuple[bool, set[str]] | None = None
    for value in unit_values(unit_text, "RestrictAddressFamilies"):
        if not value:
            result = None
            continue
        deny = value.startswith("~")
        families = set(value.lstrip("~").split()) - {"none"}
        if result is None:
            result = (not deny, families)
        elif deny != result[0]:  # a line of the first line's kind adds to the list
            result[1].update(families)
        else:
            result[1].difference_update(families)
    return result


def unit_flag(unit_text: str, key: str) -> bool:
    values = unit_values(unit_text, key)
    return bool(values) and values[-1].lower() in ("yes", "true", "on", "1")


# ---------------------------------------------------------------------- the trace


@dataclass(frozen=True)
class Call:
    pid: int
    name: str
    args: str  # as strace printed them, then ") = result"

    def arg(self, index: int) -> str:
        return split_args(self.args)[index]


def split_args(text: str) -> list[str]:
    """strace's argument list split on its top-level commas (strings and braces kept)."""
    parts, depth, current, quoted, escaped = [], 0, [], False, False
    for char in text:
        if quoted:
            current.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:  # the call's closing parenthesis: the rest is its result
                break
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return parts


def flag_bits(text: str) -> int:
    """PROT_READ|PROT_EXEC (or a number strace printed) as its value."""
    value = 0
    for token in (part.strip() for part in text.split("|")):
        if token in FLAG_VALUES:
            value |= FLAG_VALUES[token]
        elif re.fullmatch(r"0x[0-9a-fA-F]+|\d+", token):
            value |= int(token, 0)
    return value


def read_trace(path: Path, skip_execs: int = 0) -> list[Call]:
    """Every call in strace's output, once each. `skip_execs`: the traced command's first
    process starts with that many programs that are not the one checked (setpriv, standing in
    for what systemd does before the service's own execve): their calls are left out, up to
    the execve that starts the checked program (counted: systemd's filter sees it)."""
    calls: list[Call] = []
    pending: dict[int, tuple[str, str]] = {}  # pid: a call another thread interrupted
    first_pid: int | None = None
    execs_left = skip_execs + 1
    for line in path.read_text(errors="replace").splitlines():
        match = _LINE.match(line)
        if match is None:
            continue  # `+++ exited +++`, `--- SIGCHLD ---`, ...
        pid = int(match[1])
        if first_pid is None:
            first_pid = pid
        if match[2] is not None:  # the rest of an interrupted call
            name, start = pending.pop(pid, (match[2], ""))
            text = start + match[3]
        else:
            name, text = match[4], match[5]
            if text.endswith(_UNFINISHED):
                pending[pid] = (name, text[: -len(_UNFINISHED)])
                text = ""  # joined again at `resumed`; counted now
        if pid == first_pid and execs_left:
            if name == "execve" and text and not re.search(r"\)\s+= -1", text):
                execs_left -= 1
                if execs_left:
                    continue
            else:
                continue
        if match[2] is not None:
            calls = _completed(calls, pid, name, text)
        else:
            calls.append(Call(pid, name, text))
    return calls


def _completed(calls: list[Call], pid: int, name: str, text: str) -> list[Call]:
    """The interrupted call's entry (appended at its start) with its whole argument text."""
    for index in range(len(calls) - 1, -1, -1):
        call = calls[index]
        if call.pid == pid and call.name == name and not call.args:
            calls[index] = Call(pid, name, text)
            break
    return calls


def counts(calls: Iterable[Call]) -> Counter[str]:
    return Counter(call.name for call in calls)


def table(counted: Counter[str]) -> str:
    """`name count` lines, the most frequent first."""
    width = max((len(name) for name in counted), default=0)
    return "\n".join(f"{name:<{width}}  {n}" for name, n in counted.most_common())


# ---------------------------------------------------------------------- the checks


def killed_calls(calls: Sequence[Call], unit_text: str) -> list[str]:
    """Each call the unit's SystemCallFilter= would kill the process on, with its sets and
    how often it was made."""
    rules = call_filter(unit_text)
    if rules is None:
        return []
    counted = counts(calls)
    return [
        f"{rules.why_killed(name)}; made {n} time(s)"
        for name, n in sorted(counted.items())
        if not rules.allows(name)
    ]


def write_and_execute(calls: Sequence[Call], unit_text: str) -> list[str]:
    """MemoryDenyWriteExecute=yes: the calls systemd refuses (EPERM), as its rules say: an
    mmap writable and executable, an mprotect or pkey_mprotect that asks for execute at all
    (the filter cannot see what the pages were), a shmat with SHM_EXEC."""
    if not unit_flag(unit_text, "MemoryDenyWriteExecute"):
        return []
    found = []
    for call in calls:
        if call.name == "mmap" and call.args:
            prot = flag_bits(call.arg(2))
            if prot & PROT_WRITE and prot & PROT_EXEC:
                found.append(f"pid {call.pid}: mmap({call.args} (writable and executable)")
        elif call.name in ("mprotect", "pkey_mprotect") and call.args:
            if flag_bits(call.arg(2)) & PROT_EXEC:
                found.append(f"pid {call.pid}: {call.name}({call.args} (makes pages executable)")
        elif call.name == "shmat" and call.args and flag_bits(call.arg(2)) & SHM_EXEC:
            found.append(f"pid {call.pid}: shmat({call.args} (SHM_EXEC)")
    return found


def resource_changes(calls: Sequence[Call], unit_text: str) -> list[str]:
    """`~@resources` in the unit: no limit, priority, affinity or policy changed. The calls of
    @resources are the filter's (killed_calls); prlimit64 is not among them in systemd 252 (it
    is in @default, since glibc's getrlimit() is a prlimit64 with no new limit), so the filter
    lets a prlimit64 that *sets* a limit through: it is listed here, against the unit's intent
    (its limits are the unit's own, LimitNOFILE=)."""
    rules = call_filter(unit_text)
    if rules is None or rules.allows("setrlimit"):
        return []  # the unit lets resources be changed
    return [
        f"pid {call.pid}: prlimit64({call.args} (sets a limit)"
        for call in calls
        if call.name == "prlimit64" and call.args and call.arg(2) != "NULL"
    ]


def refused_families(calls: Sequence[Call], unit_text: str) -> list[str]:
    """RestrictAddressFamilies=: the socket() calls of a family the unit refuses."""
    families = address_families(unit_text)
    if families is None:
        return []
    allow, listed = families
    found = []
    for call in calls:
        if call.name == "socket" and call.args:
            family = call.arg(0)
            if (family in listed) != allow:
                found.append(f"pid {call.pid}: socket({call.args}")
    return found
