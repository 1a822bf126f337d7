"""The groups a test's daemon uses: names of the test's own, never the host's.

A machine where the package was ever installed keeps its groups after a purge (shoe-viewers,
shoe-supervisors, shoe-surveillance, Debian policy), and `.ci/run` makes them first so that
every run is such a machine. The daemon's defaults name them, so a test that leaves the
group settings at their defaults means one thing there and another where they never were.
Every daemon the test kit configures (LiveTable, TableRig, Baseline) is therefore given:

- `NO_VIEWERS`, `NO_SUPERVISORS`, `NO_SURVEILLANCE`: names of this run that no group on this
  machine has (checked), unless the test names groups of its own. The socket is then 0600
  (root and the daemon's user), as on a machine without the package; a test about a missing
  group passes them (or `absent_group`) too.
- `temporary_group()`: a group made for one test, under a name of its own, and deleted after
  it, also when the test fails. The only place the suite makes groups (groupadd/groupdel).
"""

from __future__ import annotations

import contextlib
import grp
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest

RUN = uuid.uuid4().hex[:8]  # this run's: two runs, or two sessions on one machine, never meet


def absent_group(role: str) -> str:
    """A group name of this run that does not exist here (e.g. "shoe-t1a2b3c4d-no-viewers")."""
    name = f"shoe-t{RUN}-no-{role}"
    with contextlib.suppress(KeyError):
        grp.getgrnam(name)
        raise RuntimeError(f"the group {name} exists on this machine: the test kit made none")
    return name


NO_VIEWERS = absent_group("viewers")
NO_SUPERVISORS = absent_group("supervisors")
NO_SURVEILLANCE = absent_group("surveillance")
# The keys of the daemon's configuration that name a group, each with its absent name.
# read-only: a test that changes its configuration changes a copy, never these
CONTROL: Mapping[str, str] = MappingProxyType(
    {"viewer_group": NO_VIEWERS, "supervisor_group": NO_SUPERVISORS}
)
SURVEILLANCE: Mapping[str, str] = MappingProxyType({"group": NO_SURVEILLANCE})


def without_host_groups(config: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """`config` (sections of parsed TOML) with every group key it leaves out set to an absent
    group: the daemon reads none of the host's groups."""
    done = {name: dict(keys) for name, keys in config.items()}
    done["control"] = {**CONTROL, **done.get("control", {})}
    done["surveillance"] = {**SURVEILLANCE, **done.get("surveillance", {})}
    return done


# The same for a configuration written by hand: lines for its [control] section, a section.
CONTROL_TOML = "".join(f'{key} = "{value}"\n' for key, value in CONTROL.items())
SURVEILLANCE_TOML = f'[surveillance]\ngroup = "{NO_SURVEILLANCE}"\n'


def can_make_groups() -> bool:
    """Whether `temporary_group` can: root, with groupadd (shadow's passwd package)."""
    return os.geteuid() == 0 and shutil.which("groupadd") is not None


@contextlib.contextmanager
def temporary_group() -> Iterator[tuple[str, int]]:
    """(name, gid) of a group made for the test (root only; skips elsewhere), deleted after."""
    name = f"shoe-t{RUN}-{uuid.uuid4().hex[:6]}"  # 21 characters: groupadd takes 32
    made = subprocess.run(["groupadd", name], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot create a group for the test: {made.stderr.strip()}")
    try:
        yield name, grp.getgrnam(name).gr_gid
    finally:
        deleted = subprocess.run(["groupdel", name], capture_output=True, text=True, check=False)
        if deleted.returncode != 0:
            raise RuntimeError(f"the test's group {name} is left: {deleted.stderr.strip()}")
