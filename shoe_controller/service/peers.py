"""Who is at the other end of the control socket, and whether they may act as supervisor.

The kernel says who (SO_PEERCRED and SO_PEERGROUPS), never anything the client says.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_SO_PEERGROUPS = getattr(socket, "SO_PEERGROUPS", 59)  # Linux 4.13+; Python lacks the name


@dataclass(frozen=True, slots=True)
class Peer:
    """The process at the other end of a connection, as the kernel reports it."""

    pid: int
    uid: int
    gid: int
    groups: tuple[int, ...]  # supplementary groups (SO_PEERGROUPS, else /proc/<pid>/status)
    user: str  # the uid's name, or "uid N" when it has none

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "uid": self.uid,
            "gid": self.gid,
            "groups": list(self.groups),
            "user": self.user,
        }


def peer_of(sock: socket.socket) -> Peer:
    """The peer's credentials from the kernel (SO_PEERCRED, SO_PEERGROUPS)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return Peer(pid, uid, gid, _peer_groups(sock, pid), _user_name(uid))


def _peer_groups(sock: socket.socket, pid: int) -> tuple[int, ...]:
    size = 64 * 4
    while size <= 65536 * 4:  # NGROUPS_MAX
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, _SO_PEERGROUPS, size)
        except OSError as error:
            if error.errno == errno.ERANGE:
                size *= 4
                continue
            break  # an older kernel: ask /proc
        return struct.unpack(f"{len(raw) // 4}I", raw)
    return _proc_groups(pid)


def _proc_groups(pid: int) -> tuple[int, ...]:
    """Supplementary groups from /proc (invisible under ProtectProc=invisible: then none)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Groups:"):
                    return tuple(int(value) for value in line.split()[1:])
    except (OSError, ValueError):
        pass
    return ()


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def authorize(
    peer: Peer,
    group_name: str,
    lookup: Callable[[str], Any] = grp.getgrnam,
) -> str | None:
    """None when `peer` may act as supervisor, else why not (R10: actions need authority).

    Root may; otherwise the peer's primary or supplementary group must be the supervisor
    group, as the kernel reported them at connect time (like a file permission check: a user
    added to the group acts once logged in again).
    """
    if peer.uid == 0:
        return None
    return group_refusal(peer, group_name, "supervisor", "only root may act", lookup)


def group_refusal(
    peer: Peer,
    group_name: str,
    role: str,
    until_created: str,
    lookup: Callable[[str], Any] = grp.getgrnam,
) -> str | None:
    """None when `peer` is in the `role` group `group_name` (primary or supplementary, as
    the kernel reported them at connect time), else why not, with what to do about it;
    `until_created` says who may meanwhile when the group does not exist."""
    try:
        group = lookup(group_name)
    except KeyError:
        return (
            f"the {role} group {group_name!r} does not exist on this machine;"
            f" {until_created} until it is created"
        )
    if peer.gid == group.gr_gid or group.gr_gid in peer.groups:
        return None
    return (
        f"user {peer.user} (uid {peer.uid}) is not in the {role} group {group_name!r};"
        f" an administrator can add it (usermod -aG {group_name} {peer.user}), then log in again"
    )


def may_look(
    peer: Peer,
    viewer_group: str,
    supervisor_group: str,
    lookup: Callable[[str], Any] = grp.getgrnam,
) -> str | None:
    """None when `peer` may use the socket at all, else why not: root, the daemon's own
    user, and members of the viewer or the supervisor group (the socket's mode says the
    same; this holds even if someone loosens the mode)."""
    if peer.uid in (0, os.geteuid()):
        return None
    for name in (viewer_group, supervisor_group):
        try:
            group = lookup(name)
        except KeyError:
            continue
        if peer.gid == group.gr_gid or group.gr_gid in peer.groups:
            return None
    return (
        f"user {peer.user} (uid {peer.uid}) is not in the viewer group {viewer_group!r};"
        f" an administrator can add it (usermod -aG {viewer_group} {peer.user})"
    )


def os_user_note(peer: Peer) -> str:
    """What the journal keeps of the OS user behind a supervisor action (docs/control.md)."""
    return f"{peer.user} (uid {peer.uid})"
