"""Golden scenario files: table inputs as short lines, the events they must give, checked.

The format is documented in docs/table.md ("Scenario files"); a pit boss reads it as a log:

    # rules: R10.5 R16.9
    config decks=8
    shoe loaded
    deal 3H 9C 2D KS
    -> shoe.burned 1 count=4 first=3H cards=3H,9C,2D,KS
    card QH
    -> round.started 1
    -> card.dealt P1 QH
    supervisor resume by=sup7 reason="cover checked"
    check state=dealing indicator=5,2

`python -m shoe_controller.testing.scenario FILE...` runs files; `--update` rewrites their expected
lines from what the table does now (review the diff before keeping it).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shoe_controller.table.config import TableConfig
from shoe_controller.table.procedures import Table
from shoe_controller.vocab.cards import CardError, parse_card
from shoe_controller.vocab.events import Event, EventType
from shoe_controller.vocab.inputs import (
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


# ---------------------------------------------------------------------------- rendering


def _value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_value(item) for item in value) or "none"
    if isinstance(value, dict):
        return ",".join(f"{key}:{_value(item)}" for key, item in sorted(value.items())) or "none"
    text = str(value)
    return f'"{text}"' if (" " in text or not text) else text


def _pairs(data: dict[str, Any], skip: tuple[str, ...] = ()) -> str:
    return " ".join(f"{key}={_value(data[key])}" for key in sorted(data) if key not in skip)


def _cards(cards: list[str | None]) -> str:
    return ",".join(card or "hidden" for card in cards) or "none"


def render_event(event: Event) -> str:
    """The event as one short, canonical line."""
    data = event.data
    kind = event.type
    if kind == EventType.CARD_DEALT:
        face = " face_up" if data["face_up"] else ""
        return f"card.dealt {data['position']} {data['card'] or 'hidden'}{face}"
    if kind == EventType.CARD_REVEALED:
        return f"card.revealed {data['position']} {data['card']}"
    if kind == EventType.CARD_EXTRA:
        return f"card.extra {data['card'] or '?'}"
    if kind == EventType.ROUND_STARTED:
        words = [f"round.started {event.round}"]
        if data["trial"]:
            words.append("trial")
        if not data["big_small_open"]:
            words.append("big_small_closed")
        return " ".join(words)
    if kind == EventType.ROUND_RESULT:
        words = [
            f"round.result {event.round} {data['winner']}",
            f"P:{','.join(data['player'])}={data['player_total']}",
            f"B:{','.join(data['banker'])}={data['banker_total']}",
        ]
        if data["natural"]:
            words.append(f"natural={data['natural']}")
        words += [name for name in ("player_pair", "banker_pair", "perfect_pair") if data[name]]
        if data["lucky6"]:
            words.append(f"lucky6={data['lucky6']}")
        return " ".join(words)
    if kind == EventType.ROUND_VOIDED:
        return f"round.voided {event.round} reason={data['reason']} cards={_cards(data['cards'])}"
    if kind == EventType.INSURANCE_OFFERED:
        return (
            f"insurance.offered {data['side']} stage={data['stage']} odds={data['odds']}"
            f" B={data['banker_total']} P={data['player_total']}"
        )
    if kind in (EventType.INSURANCE_CLOSED, EventType.INSURANCE_VOIDED):
        return f"{kind} {data['side']} stage={data['stage']} reason={data['reason']}"
    if kind == EventType.SHOE_BURNED:
        first = f" first={data['first_card']}" if data["first_card"] else ""
        return (
            f"shoe.burned {event.shoe} count={data['count']}{first} cards={_cards(data['cards'])}"
        )
    if kind == EventType.SHOE_SHUFFLED:
        verdict = "ok" if data["ok"] else f"failed problems={_value(data['problems'])}"
        return f"shoe.shuffled {event.shoe} decks={data['decks']} total={data['total']} {verdict}"
    if kind in (EventType.SHOE_CUT, EventType.SHOE_CUT_CARD, EventType.SHOE_ENDED):
        return f"{kind} {event.shoe} {_pairs(data)}"
    if kind == EventType.PROCEDURE_ALERT:
        who = " supervisor" if data["needs_supervisor"] else ""
        return f'procedure.alert {data["code"]}{who} "{data["text"]}"'
    if kind == EventType.SECURITY_ALERT:
        details = _pairs(data["details"])
        return f"security.alert {data['code']}" + (f" {details}" if details else "")
    if kind == EventType.SUPERVISOR_ACTION:
        details = _pairs(data["details"])
        return f"supervisor.action {data['action']} by={data['by']}" + (
            f" {details}" if details else ""
        )
    return f"{kind} {_pairs(data)}".rstrip()


def _without_text(line: str) -> str:
    """An alert line without its quoted text: expected lines may leave the text out."""
    if line.startswith("procedure.alert ") and line.endswith('"') and ' "' in line:
        return line[: line.index(' "')]
    return line


def lines_match(expected: str, actual: str) -> bool:
    expected, actual = " ".join(expected.split()), " ".join(actual.split())
    if expected == actual:
        return True
    return _without_text(expected) == expected and _without_text(actual) == expected


# ---------------------------------------------------------------------------- parsing


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
            raise ScenarioError(f"{where}: button takes reveal or call_supervisor") from None
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


# ---------------------------------------------------------------------------- running


def _check_value(table: Table, key: str) -> str:
    view = table.view()
    if key == "indicator":
        return ",".join(str(part) for part in table.indicator)
    if key == "holds":
        return ",".join(hold["code"] for hold in view["holds"]) or "none"
    if key == "next":
        return view["next_position"] or "none"
    if key == "round":
        return str(view["round"]["number"]) if view["round"] else "none"
    if key == "insurance":
        return ",".join(f"{o['side']}/{o['stage']}" for o in view["insurance"]) or "none"
    if key == "road":
        return ",".join(str(entry["winner"]) for entry in view["road"]) or "none"
    if key == "cards":
        cards = view["round"]["cards"] if view["round"] else {}
        return ",".join(f"{position}:{card}" for position, card in cards.items()) or "none"
    if key == "queued":
        return str(view["queued_cards"])
    if key in view:
        return _value(view[key])
    raise ScenarioError(f"unknown check {key!r}")


def run_steps(scenario: Scenario) -> Iterator[tuple[Step, list[str], Table]]:
    """Apply each step's inputs to a fresh table; yields the rendered events per step."""
    table = Table(scenario.config, last_shoe=scenario.last_shoe)
    for step in scenario.steps:
        rendered: list[str] = []
        for item in step.inputs:
            rendered += [render_event(event) for event in table.apply(item)]
        yield step, rendered, table


def run_scenario(scenario: Scenario) -> list[str]:
    """Every difference between the scenario's expectations and what the table does."""
    problems: list[str] = []
    for step, actual, table in run_steps(scenario):
        expected = step.expected
        for index in range(max(len(expected), len(actual))):
            want = expected[index][1] if index < len(expected) else None
            got = actual[index] if index < len(actual) else None
            if want is not None and got is not None and lines_match(want, got):
                continue
            line = expected[index][0] if index < len(expected) else step.line
            problems.append(
                f"{scenario.name} line {line} (after `{step.text}`):\n"
                f"    expected: {want or '(no more events)'}\n"
                f"    got:      {got or '(no more events)'}"
            )
            break
        for line, key, want in step.checks:
            try:
                got = _check_value(table, key)
            except ScenarioError as error:
                problems.append(f"{scenario.name} line {line}: {error}")
                continue
            if got != want:
                problems.append(
                    f"{scenario.name} line {line}: check {key}: expected {want}, got {got}"
                )
    return problems


def update_text(text: str, name: str = "<scenario>", *, with_text: bool = False) -> str:
    """The scenario with its expected lines replaced by what the table does now.

    An expected line that still matches is kept as written, unless `with_text` asks for the
    alerts' texts to be written out.
    """
    scenario = parse_scenario(text, name)
    actual_by_line = {step.line: (step, actual) for step, actual, _ in run_steps(scenario)}
    out: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip().startswith(EXPECT):
            continue
        out.append(raw)
        if number in actual_by_line:
            step, actual = actual_by_line[number]
            kept = [want for _, want in step.expected]
            for index, got in enumerate(actual):
                keep = index < len(kept) and lines_match(kept[index], got) and not with_text
                line = kept[index] if keep else (got if with_text else _without_text(got))
                out.append(f"{EXPECT} {line}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run scenario files (or rewrite their expectations with --update)."""
    args = sys.argv[1:] if argv is None else argv
    update = "--update" in args
    with_text = "--with-text" in args
    paths = [Path(arg) for arg in args if arg not in ("--update", "--with-text")]
    if not paths:
        print(
            "usage: python -m shoe_controller.testing.scenario [--update [--with-text]] FILE...",
            file=sys.stderr,
        )
        return 2
    failed = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if update:
            path.write_text(update_text(text, str(path), with_text=with_text), encoding="utf-8")
            print(f"updated {path}")
            continue
        problems = run_scenario(parse_scenario(text, str(path)))
        failed += bool(problems)
        print("\n".join(problems) if problems else f"ok {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
