"""Scenario text to a `Scenario`: its config, its input lines as table inputs, its expectations.

A line that is not in the format raises ScenarioError naming the file and line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.cards import CardError, parse_card
from shoe_controller.vocab.inputs import (
    BetsState,
    BettingChanged,
    Button,
    ButtonPressed,
    CardDrawn,
    CardsMissed,
    ControllerStarted,
    CutCardSeen,
    DeviceConnected,
    DeviceFault,
    DeviceFaultCleared,
    DeviceLost,
    Input,
    ShoeState,
    ShoeStateChanged,
    ShuffleDone,
    ShuffleStarted,
    SupervisorCommand,
)

EXPECT = "->"
START_TIME = 1_800_000_000.0
_RULE_ID = re.compile(r"R\d+(?:\.\d+)?")


class ScenarioError(ValueError):
    """A scenario line that is not in the format; names the file and line."""


@dataclass
class Step:
    """One input line (or a `deal` of several cards) and what it must give."""

    line: int
    text: str
    inputs: list[Input]
    expected: list[tuple[int, str]] = field(default_factory=list)
    checks: list[tuple[int, str, str]] = field(default_factory=list)


@dataclass
class Scenario:
    name: str
    config: TableConfig
    last_shoe: int
    rules: list[str]
    steps: list[Step]


def _words(text: str, where: str) -> tuple[list[str], dict[str, str]]:
    try:
        tokens = shlex.split(text, comments=False)
    except ValueError as error:
        raise ScenarioError(f"{where}: {error}") from None
    bare = [token for token in tokens if "=" not in token]
    pairs = dict(token.split("=", 1) for token in tokens if "=" in token)
    return bare, pairs


def _typed(value: str) -> Any:
    if value in ("true", "false"):
        return value == "true"
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    return value


def _int(value: str, where: str, name: str) -> int:
    try:
        return int(value, 0)
    except ValueError:
        raise ScenarioError(f"{where}: {name} must be a number, got {value!r}") from None


class _Parser:
    def __init__(self, name: str) -> None:
        self.name = name
        self.clock = START_TIME

    def tick(self) -> float:
        self.clock += 1.0
        return self.clock

    def inputs(self, keyword: str, rest: str, where: str) -> list[Input]:
        bare, pairs = _words(rest, where)
        device = pairs.pop("device", "scanner")
        maker = self._makers().get(keyword)
        if maker is None:
            raise ScenarioError(
                f"{where}: unknown line {keyword!r}; inputs are: "
                f"{', '.join(sorted(self._makers()))}"
            )
        try:
            return maker(bare, pairs, device, where)
        except CardError as error:
            raise ScenarioError(f"{where}: {error}") from None

    def _makers(self) -> dict[str, Callable[[list[str], dict[str, str], str, str], list[Input]]]:
        return {
            "card": self._card,
            "deal": self._deal,
            "missed": self._missed,
            "cut": self._cut,
            "shoe": self._shoe,
            "button": self._button,
            "reveal": self._reveal,
            "shuffle": self._shuffle,
            "fault": self._fault,
            "fault_cleared": self._cleared,
            "connected": self._connected,
            "lost": self._lost,
            "started": self._started,
            "supervisor": self._supervisor,
            "betting": self._betting,
        }

    def _card(self, bare: list[str], pairs: dict[str, str], device: str, where: str) -> list[Input]:
        if not bare:
            raise ScenarioError(f"{where}: card needs a card (QH), ? (unreadable) or foreign")
        flags = set(bare[1:])
        known = {"face_up", "low", "multi", "burn", "duplicate", "foreign"}
        if flags - known:
            raise ScenarioError(
                f"{where}: unknown card flag(s) {sorted(flags - known)};"
                f" known: {', '.join(sorted(known))}"
            )
        name = bare[0]
        foreign = name == "foreign" or "foreign" in flags
        card = None if name in ("?", "foreign") else parse_card(name)
        counter = _int(pairs["counter"], where, "counter") if "counter" in pairs else None
        return [
            CardDrawn(
                self.tick(),
                device,
                card,
                counter=counter,
                uid=pairs.get("uid"),
                face_up="face_up" in flags,
                low_confidence="low" in flags,
                multi="multi" in flags,
                burn="burn" in flags,
                foreign=foreign,
                duplicate="duplicate" in flags,
            )
        ]

    def _deal(self, bare: list[str], pairs: dict[str, str], device: str, where: str) -> list[Input]:
        if not bare or pairs:
            raise ScenarioError(f"{where}: deal takes cards only, e.g. deal QH 4S 9C 8D")
        return [CardDrawn(self.tick(), device, parse_card(name)) for name in bare]

    def _missed(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        count = _int(bare[0], where, "count") if bare else 1
        after = _int(pairs["after"], where, "after") if "after" in pairs else None
        return [CardsMissed(self.tick(), device, count, after)]

    def _cut(self, bare: list[str], pairs: dict[str, str], device: str, where: str) -> list[Input]:
        counter = _int(pairs["counter"], where, "counter") if "counter" in pairs else None
        return [CutCardSeen(self.tick(), device, counter)]

    def _shoe(self, bare: list[str], pairs: dict[str, str], device: str, where: str) -> list[Input]:
        try:
            state = ShoeState(bare[0])
        except (IndexError, ValueError):
            raise ScenarioError(
                f"{where}: shoe takes one of {', '.join(s.value for s in ShoeState)}"
            ) from None
        return [ShoeStateChanged(self.tick(), device, state)]

    def _button(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        try:
            button = Button(bare[0])
        except (IndexError, ValueError):
            raise ScenarioError(
                f"{where}: button takes reveal, call_supervisor or no_more_bets"
            ) from None
        return [ButtonPressed(self.tick(), device, button)]

    def _reveal(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        return [ButtonPressed(self.tick(), device, Button.REVEAL)]

    def _shuffle(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        device = "shuffler" if device == "scanner" else device
        shuffle_id = _int(pairs.get("id", "1"), where, "id")
        decks = _int(pairs.get("decks", "8"), where, "decks")
        if bare[:1] == ["started"]:
            return [ShuffleStarted(self.tick(), device, shuffle_id, decks)]
        if bare[:1] == ["done"] and len(bare) == 2 and bare[1] in ("ok", "failed"):
            total = _int(pairs.get("total", str(52 * decks)), where, "total")
            problems = tuple(p for p in pairs.get("problems", "").split(";") if p)
            return [
                ShuffleDone(
                    self.tick(), device, shuffle_id, bare[1] == "ok", decks, total, problems
                )
            ]
        raise ScenarioError(f"{where}: shuffle started [id= decks=] | shuffle done ok|failed")

    def _fault(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        if not bare:
            raise ScenarioError(f"{where}: fault CODE [severity=N] [text=...]")
        severity = _int(pairs.get("severity", "2"), where, "severity")
        return [
            DeviceFault(
                self.tick(), device, _int(bare[0], where, "code"), severity, pairs.get("text", "")
            )
        ]

    def _cleared(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        if not bare:
            raise ScenarioError(f"{where}: fault_cleared CODE")
        return [DeviceFaultCleared(self.tick(), device, _int(bare[0], where, "code"))]

    def _connected(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        name = bare[0] if bare else device
        return [
            DeviceConnected(
                self.tick(),
                name,
                pairs.get("kind", "rfid"),
                pairs.get("vendor", ""),
                pairs.get("model", ""),
                pairs.get("serial", ""),
                pairs.get("firmware", ""),
            )
        ]

    def _lost(self, bare: list[str], pairs: dict[str, str], device: str, where: str) -> list[Input]:
        return [DeviceLost(self.tick(), bare[0] if bare else device, pairs.get("reason", ""))]

    def _started(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        return [
            ControllerStarted(
                self.tick(),
                pairs.get("version", "0.1.0"),
                _int(pairs.get("boot", "1"), where, "boot"),
                "recovered" in bare,
            )
        ]

    def _supervisor(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        if not bare:
            raise ScenarioError(f"{where}: supervisor ACTION by=ID [reason=...] [arg=value ...]")
        by = pairs.pop("by", "")
        reason = pairs.pop("reason", "per procedure")
        args = {key: _typed(value) for key, value in pairs.items()}
        return [SupervisorCommand(self.tick(), bare[0], by, reason, args)]

    def _betting(
        self, bare: list[str], pairs: dict[str, str], device: str, where: str
    ) -> list[Input]:
        """`betting open|closed shoe=N round=N [server_round=..] [nonce=..] [source=..]`: the
        table server's word on a round."""
        if bare[:1] not in (["open"], ["closed"]) or "shoe" not in pairs or "round" not in pairs:
            raise ScenarioError(f"{where}: betting open|closed shoe=N round=N [server_round=..]")
        return [
            BettingChanged(
                self.tick(),
                BetsState(bare[0]),
                _int(pairs["shoe"], where, "shoe"),
                _int(pairs["round"], where, "round"),
                pairs.get("server_round", ""),
                pairs.get("nonce", ""),
                pairs.get("source", "server"),
            )
        ]


def parse_scenario(text: str, name: str = "<scenario>") -> Scenario:
    """Read a scenario; ScenarioError names the file and line of anything wrong."""
    parser = _Parser(name)
    settings: dict[str, Any] = {}
    last_shoe = 0
    rules: list[str] = []
    steps: list[Step] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        where = f"{name} line {number}"
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line[1:].strip().lower().startswith("rules:"):
                rules += _RULE_ID.findall(line)
            continue
        if line.startswith(EXPECT):
            if not steps:
                raise ScenarioError(f"{where}: an expected event before any input")
            steps[-1].expected.append((number, line[len(EXPECT) :].strip()))
            continue
        keyword, _, rest = line.partition(" ")
        if keyword == "config":
            if steps:
                raise ScenarioError(f"{where}: config comes before the first input")
            _, pairs = _words(rest, where)
            settings.update({key: _typed(value) for key, value in pairs.items()})
        elif keyword == "last_shoe":
            last_shoe = _int(rest.strip(), where, "last_shoe")
        elif keyword == "time":
            try:
                parser.clock = float(rest.strip())
            except ValueError:
                raise ScenarioError(f"{where}: time takes seconds, got {rest!r}") from None
        elif keyword == "check":
            if not steps:
                raise ScenarioError(f"{where}: a check before any input")
            _, pairs = _words(rest, where)
            if not pairs:
                raise ScenarioError(f"{where}: check takes key=value pairs")
            steps[-1].checks += [(number, key, value) for key, value in pairs.items()]
        else:
            steps.append(Step(number, line, parser.inputs(keyword, rest, where)))
    try:
        config = TableConfig.from_mapping(settings)
    except (TypeError, ValueError) as error:
        raise ScenarioError(f"{name}: config: {error}") from None
    return Scenario(name, config, last_shoe, rules, steps)
