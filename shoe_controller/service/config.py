"""Reading and checking the daemon's TOML configuration (config/shoe-controller.toml documents it).

Every section is a frozen dataclass (config_sections.py); its fields are the allowed keys,
their annotations the allowed types, and `Literal` annotations the allowed values. A wrong key,
type or value stops start-up with one line naming the key and what is allowed (ConfigError).
The sections are imported from here, with the `Config` that holds them.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from shoe_controller.service.config_sections import (
    SINK_KINDS,
    AmqpSinkSection,
    ApiSection,
    ControlSection,
    DeviceSection,
    HealthSection,
    JournalSection,
    LogSection,
    MetricsSection,
    ScoreboardSection,
    ServerSection,
    SinkSection,
    SurveillanceSection,
    TableSection,
    listen_address,
)
from shoe_controller.store.schema import LEGACY_SINK
from shoe_controller.table.config import TableConfig

__all__ = [
    "DEFAULT_PATH",
    "AmqpSinkSection",
    "ApiSection",
    "Config",
    "ConfigError",
    "ControlSection",
    "DeviceSection",
    "HealthSection",
    "JournalSection",
    "LogSection",
    "MetricsSection",
    "ScoreboardSection",
    "ServerSection",
    "SinkSection",
    "SurveillanceSection",
    "TableSection",
    "from_mapping",
    "listen_address",
    "load",
    "schema",
]

_T = TypeVar("_T")

DEFAULT_PATH = Path("/etc/shoe-controller/shoe-controller.toml")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message is one line naming the key."""


@dataclass(frozen=True)
class Config:
    table: TableSection
    procedures: TableConfig
    scanner: DeviceSection | None
    shuffler: DeviceSection | None
    sinks: tuple[SinkSection, ...]  # [server] and every [[sink]], each with its own outbox
    journal: JournalSection
    control: ControlSection
    log: LogSection
    payouts: Mapping[str, Any] = field(default_factory=dict)
    health: HealthSection = field(default_factory=HealthSection)
    scoreboard: ScoreboardSection = field(default_factory=ScoreboardSection)
    surveillance: SurveillanceSection = field(default_factory=SurveillanceSection)
    metrics: MetricsSection = field(default_factory=MetricsSection)
    api: ApiSection = field(default_factory=ApiSection)

    @property
    def controller_id(self) -> str:
        return self.table.controller_id or f"tbl-{self.table.id}-shoe"


_SECTIONS: dict[str, type] = {
    "scanner": DeviceSection,
    "shuffler": DeviceSection,
    "server": ServerSection,
    "journal": JournalSection,
    "control": ControlSection,
    "log": LogSection,
    "health": HealthSection,
    "scoreboard": ScoreboardSection,
    "surveillance": SurveillanceSection,
    "metrics": MetricsSection,
    "api": ApiSection,
}


def schema() -> dict[str, tuple[type, ...]]:
    """Every section and the dataclasses whose fields are its keys; [payouts] aside (its keys
    are the pay table's entries, checked by game.payouts)."""
    return {
        "table": (TableSection, TableConfig),
        **{name: (cls,) for name, cls in _SECTIONS.items()},
    }


def load(path: Path | str) -> Config:
    """Read and check a configuration file; ConfigError names what is wrong."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    try:
        return from_mapping(raw)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def from_mapping(raw: Mapping[str, Any]) -> Config:
    """Check a parsed configuration; the device sections are optional, the others default."""
    known = {"table", "payouts", "sink", *_SECTIONS}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"unknown section [{unknown[0]}]; allowed: {', '.join(sorted(known))}")
    table_raw = dict(_section(raw, "table"))
    own = {name: table_raw.pop(name) for name in ("id", "controller_id") if name in table_raw}
    payouts = _section(raw, "payouts")
    _check_payouts(payouts)
    scoreboard = _build(ScoreboardSection, _section(raw, "scoreboard"), "scoreboard")
    metrics = _build(MetricsSection, _section(raw, "metrics"), "metrics")
    if metrics.listen and metrics.listen == scoreboard.listen:
        # Each has a server of its own (docs/metrics.md): the second bind would fail later.
        raise ConfigError(
            f"[metrics] listen = {metrics.listen!r} is [scoreboard] listen too: give the"
            " metrics another port"
        )
    api = _build(ApiSection, _section(raw, "api"), "api")
    taken = {scoreboard.listen: "[scoreboard]", metrics.listen: "[metrics]"}
    if api.listen and api.listen in taken:
        raise ConfigError(
            f"[api] listen = {api.listen!r} is {taken[api.listen]} listen too: give the"
            " inbound API another port"
        )
    procedures = _build(TableConfig, table_raw, "table")
    scanner = _build(DeviceSection, raw["scanner"], "scanner") if "scanner" in raw else None
    _check_betting(procedures, scanner, api)
    return Config(
        table=_build(TableSection, own, "table"),
        procedures=procedures,
        scanner=scanner,
        shuffler=_build(DeviceSection, raw["shuffler"], "shuffler") if "shuffler" in raw else None,
        sinks=_sinks(raw),
        journal=_build(JournalSection, _section(raw, "journal"), "journal"),
        control=_build(ControlSection, _section(raw, "control"), "control"),
        log=_build(LogSection, _section(raw, "log"), "log"),
        payouts=dict(payouts),
        health=_build(HealthSection, _section(raw, "health"), "health"),
        scoreboard=scoreboard,
        surveillance=_build(SurveillanceSection, _section(raw, "surveillance"), "surveillance"),
        metrics=metrics,
        api=api,
    )


def _check_betting(procedures: TableConfig, scanner: DeviceSection | None, api: ApiSection) -> None:
    """Who closes the bets must be able to (docs/table.md "Betting")."""
    if procedures.betting == "server" and not api.listen:
        raise ConfigError(
            "[table] betting = 'server': the table server closes the bets on the inbound API,"
            " so [api] listen must be set"
        )
    if procedures.betting == "button" and scanner is not None and scanner.protocol != "slp":
        raise ConfigError(
            f"[table] betting = 'button': a {scanner.protocol} shoe has no NO_MORE_BETS button"
            " (docs/drivers.md); use betting = 'server'"
        )


def _sinks(raw: Mapping[str, Any]) -> tuple[SinkSection, ...]:
    """[server] (when given, or when no [[sink]] is) and every [[sink]], names unique."""
    sinks: list[SinkSection] = []
    if "server" in raw or "sink" not in raw:
        server = _section(raw, "server")
        if "name" in server:
            raise ConfigError(f"[server] has no name: it is the sink named {LEGACY_SINK!r}")
        sinks.append(_build(ServerSection, server, "server"))
    listed = raw.get("sink", [])
    if not isinstance(listed, list) or not all(isinstance(item, Mapping) for item in listed):
        raise ConfigError("[[sink]] must be an array of tables, each with a kind and a name")
    for index, item in enumerate(listed, 1):
        values = dict(item)
        label = f"sink {values.get('name', index)!s}"
        kind = values.pop("kind", None)
        if kind not in SINK_KINDS:
            allowed = ", ".join(repr(name) for name in SINK_KINDS)
            raise ConfigError(f"[{label}] kind = {kind!r}: allowed values are {allowed}")
        if "name" not in values:
            raise ConfigError(f"[{label}] needs a name: its delivery mark in the journal")
        sinks.append(_build(SINK_KINDS[kind], values, label))
    names = [sink.name for sink in sinks]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"[sink {name}] name {name!r} is used by two sinks")
    return tuple(sinks)


def _section(raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"[{name}] must be a table of keys, got {_type_name(value)}")
    return value


def _check_payouts(payouts: Mapping[str, Any]) -> None:
    from shoe_controller.game.payouts import PayoutError, pay_table  # noqa: PLC0415 - a leaf import

    try:
        pay_table(payouts)
    except PayoutError as error:
        raise ConfigError(f"[payouts] {error}") from None


def _build(cls: type[_T], values: Mapping[str, Any], section: str) -> _T:
    """Construct a section's dataclass from its keys, naming the key at fault."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"[{section}] must be a table of keys, got {_type_name(values)}")
    fields = {spec.name: spec for spec in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        if key not in fields:
            allowed = ", ".join(sorted(name for name in fields if not name.startswith("_")))
            raise ConfigError(f"[{section}] unknown key {key!r}; allowed: {allowed}")
        problem = _type_problem(value, hints[key])
        if problem:
            raise ConfigError(f"[{section}] {key} = {value!r}: {problem}")
        default = fields[key].default
        # A key whose default is a text means something only with a text: empty, a path
        # would be the current directory and a group nobody's (docs/config.md).
        if value == "" and isinstance(default, str) and default:
            raise ConfigError(f"[{section}] {key} = '': must not be empty (default {default!r})")
    converted = {
        key: tuple(value) if isinstance(value, list) else value for key, value in values.items()
    }
    try:
        return cls(**converted)
    except (ValueError, TypeError) as error:
        raise ConfigError(f"[{section}] {error}") from None


def _type_problem(value: Any, hint: Any) -> str | None:
    """Why `value` does not fit the annotation, or None when it does."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value in allowed:
            return None
        return "allowed values are " + ", ".join(repr(option) for option in allowed)
    if origin in (types.UnionType, typing.Union):
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        problems = [_type_problem(value, option) for option in options]
        return None if None in problems else problems[0]
    if origin is tuple:  # tuple[str, ...]: a TOML list of strings
        if not isinstance(value, list):
            return 'must be a list of strings, like ["round.*"]'
        problems = [_type_problem(item, str) for item in value]
        return next((problem for problem in problems if problem), None)
    if hint is bool:
        return None if isinstance(value, bool) else "must be true or false"
    if hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else "must be a whole number"
    if hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else "must be a number"
    if hint is str:
        if not isinstance(value, str):
            return "must be a string in quotes"
        if re.search(r"[\x00-\x1f\x7f]", value):  # a path or name never needs one
            return "must not contain control characters (newline, tab, NUL ...)"
        return None
    return None


def _type_name(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
