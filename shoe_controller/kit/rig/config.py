"""What table the rig builds (`RigOptions`), and the TOML writer of the daemon's configuration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

TABLE_ID = "07"


@dataclass(frozen=True)
class RigOptions:
    """What table to build. The defaults are the demo's: an optical shoe, no shuffler."""

    pace: float = 0.002  # the simulated shoe's seconds between cards
    seed: int = 1  # the simulated shoe's shuffle
    decks: int = 8
    cut_after: int = 400  # the cut card comes out after this many cards
    squeeze: bool = False
    insurance: bool = False
    scanner_kind: Literal["optical", "rfid"] = "optical"
    batch_shuffler: bool = False  # add a batch shuffler; [table] mode = "batch_shuffler"
    autoload: bool = True  # the simulated shoe loads itself at start (else: dealer.load_shoe)
    shuffle_time: float = 0.2  # the shuffler's seconds from SHUFFLE_STARTED to SHUFFLE_DONE
    receiver_control: bool = False  # the receiver's /control endpoints (fault injection)
    checkpoints: bool = False  # a checkpoint key in the rig's directory: signed checkpoints
    table: Mapping[str, Any] = field(default_factory=dict)  # more [table] keys
    control: Mapping[str, Any] = field(default_factory=dict)  # more [control] keys
    journal: Mapping[str, Any] = field(default_factory=dict)  # more [journal] keys
    log: Mapping[str, Any] = field(default_factory=dict)  # more [log] keys
    metrics: Mapping[str, Any] = field(default_factory=dict)  # a [metrics] section, when given
    log_level: str = "info"


def toml_text(config: Mapping[str, Mapping[str, Any]]) -> str:
    """A TOML document of flat sections with string, number and boolean values."""
    lines: list[str] = []
    for section, keys in config.items():
        lines.append(f"[{section}]")
        for key, value in keys.items():
            lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'
