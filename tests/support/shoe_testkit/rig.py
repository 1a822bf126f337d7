"""The kit's TableRig for tests: its daemon's groups are the test's, never the host's.

shoe_controller.kit.rig's TableRig leaves the [control] and [surveillance] groups at the
daemon's defaults (shoe-viewers, ...), which a machine that had the package still has. This
one gives the absent groups of shoe_testkit.groups for every key the test leaves out (in its
RigOptions' `control` or in `write_config`'s sections). Tests import the rig from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shoe_controller.kit import rig
from shoe_controller.kit.rig import TABLE_ID, Dealt, RigError, RigOptions
from shoe_testkit.groups import CONTROL, SURVEILLANCE

__all__ = ["TABLE_ID", "Dealt", "RigError", "RigOptions", "TableRig"]


class TableRig(rig.TableRig):
    """A TableRig whose configuration names no group of the host's unless the test does."""

    def write_config(self, **sections: Any) -> Path:
        control = {**CONTROL, **self.options.control, **sections.get("control", {})}
        surveillance = {**SURVEILLANCE, **sections.get("surveillance", {})}
        sections = {**sections, "control": control, "surveillance": surveillance}
        return super().write_config(**sections)
