"""The typed inputs of the table (from devices, supervisors and the daemon) and their JSON form.

Every input carries its own time (`at`, unix seconds) so that the table never reads a clock
and replaying a journal gives the same events. The JSON form is what the journal stores and
what `shoe-controller replay` reads: one object per input with a `type` key (docs/inputs.md).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from shoe_controller.vocab.cards import Card, CardError, parse_card


class InputError(ValueError):
    """A JSON object that is not a valid input."""


class ShoeState(StrEnum):
    """docs/spec-protocol.md SHOE states."""

    REMOVED = "removed"
    LOADED = "loaded"
    EMPTY = "empty"
    COVER_OPEN = "cover_open"
    COVER_CLOSED = "cover_closed"


class Button(StrEnum):
    """docs/spec-protocol.md BUTTON: the dealer confirms the cards are open, calls the supervisor,
    or
    closes betting for the next round."""

    REVEAL = "reveal"
    CALL_SUPERVISOR = "call_supervisor"
    NO_MORE_BETS = "no_more_bets"


class BetsState(StrEnum):
    """What the table server says of betting on a round: open, or closed (deal now)."""

    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class CardDrawn:
    """A card left the shoe (or the shuffler-dealer machine).

    `card` is None when the card passed but could not be identified: unreadable, or an RFID
    UID the deck registry does not know (`foreign`).
    """

    TYPE: ClassVar[str] = "card"
    at: float
    device: str
    card: Card | None
    counter: int | None = None
    uid: str | None = None
    face_up: bool = False  # R4: left the shoe face up
    low_confidence: bool = False  # optical read unsure: held for confirmation
    multi: bool = False  # R10.2: more than one card sensed in the same draw
    burn: bool = False  # the shoe itself reported the card as burned (its burn mode)
    foreign: bool = False  # RFID UID not in the deck registry (security)
    duplicate: bool = False  # RFID UID already seen in this shoe (security)


@dataclass(frozen=True, slots=True)
class CardsMissed:
    """The device's card counter jumped: `count` cards left unseen after `after_counter` (R10.5)."""

    TYPE: ClassVar[str] = "cards_missed"
    at: float
    device: str
    count: int
    after_counter: int | None = None


@dataclass(frozen=True, slots=True)
class CutCardSeen:
    """The cut card came out after the card numbered `counter` (R3.1)."""

    TYPE: ClassVar[str] = "cut_card"
    at: float
    device: str
    counter: int | None = None


@dataclass(frozen=True, slots=True)
class ShoeStateChanged:
    TYPE: ClassVar[str] = "shoe_state"
    at: float
    device: str
    state: ShoeState


@dataclass(frozen=True, slots=True)
class ButtonPressed:
    TYPE: ClassVar[str] = "button"
    at: float
    device: str
    button: Button


@dataclass(frozen=True, slots=True)
class ShuffleStarted:
    TYPE: ClassVar[str] = "shuffle_started"
    at: float
    device: str
    shuffle_id: int
    decks: int


@dataclass(frozen=True, slots=True)
class ShuffleDone:
    """The shuffler finished; `problems` says which cards the deck check found missing or extra."""

    TYPE: ClassVar[str] = "shuffle_done"
    at: float
    device: str
    shuffle_id: int
    ok: bool
    decks: int
    total: int
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceFault:
    TYPE: ClassVar[str] = "fault"
    at: float
    device: str
    code: int
    severity: int  # 1 warning, 2 error, 3 critical
    text: str


@dataclass(frozen=True, slots=True)
class DeviceFaultCleared:
    TYPE: ClassVar[str] = "fault_cleared"
    at: float
    device: str
    code: int


@dataclass(frozen=True, slots=True)
class DeviceConnected:
    TYPE: ClassVar[str] = "device_connected"
    at: float
    device: str
    kind: str  # "rfid", "optical", "shuffler", "shuffler_dealer"
    vendor: str = ""
    model: str = ""
    serial: str = ""
    firmware: str = ""


@dataclass(frozen=True, slots=True)
class DeviceLost:
    TYPE: ClassVar[str] = "device_lost"
    at: float
    device: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ControllerStarted:
    """The daemon started; `recovered` when the table state was rebuilt from the journal."""

    TYPE: ClassVar[str] = "controller_started"
    at: float
    version: str
    boot: int
    recovered: bool


@dataclass(frozen=True, slots=True)
class TableSettings:
    """The table settings in force from this input on: every field of the table's
    `TableConfig` (decks, burn, squeeze, the pay table's rules ...), as the daemon read them.

    Journaled at start-up and as the first input of every shoe (docs/journal.md "The table
    settings"), inside the hash chain, so that a replay anywhere uses the settings in force
    that night, not a configuration handed over later. It yields no event.
    """

    TYPE: ClassVar[str] = "table_settings"
    at: float
    settings: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SupervisorCommand:
    """A supervisor's action, already authorized by the control socket (R10, R3.2).

    `by` is the supervisor's id and `reason` why; `args` depends on the action
    (docs/inputs.md), e.g. {"card": "QH"} to enter a missed card. `os_user` is who was
    logged in to the table PC when it was given, as the kernel told the control socket;
    `key` the client's own name for this one command (shoectl makes one per invocation).
    """

    TYPE: ClassVar[str] = "supervisor"
    at: float
    action: str
    by: str
    reason: str
    args: Mapping[str, Any] = field(default_factory=dict)
    os_user: str = ""  # the login the control socket saw (peer credentials), not a claim
    key: str = ""  # the client's idempotency key: the same command sent again is done once


@dataclass(frozen=True, slots=True)
class SurveillanceReport:
    """The exact worth of every bet on the next round, from the surveillance companion (issue
    15, docs/surveillance.md), computed on the cards not yet seen in the shoe.

    `round` is the round the bets are for, `after_seq` the journal event the analysis is
    of (the shoe just after it), `cards_left` the cards not seen by rank (`A`..`K`), `bets`
    per bet name (as `payouts.Bet`) its `probability`, `payout` and `player_edge`. The control
    socket adds `threshold` (the house's [surveillance] threshold: above it a bet is
    reported) and `os_user` (who sent it, from the kernel), so replay gives the same events.
    """

    TYPE: ClassVar[str] = "surveillance_report"
    at: float
    shoe: int
    round: int
    after_seq: int
    cards_left: Mapping[str, Any]
    bets: Mapping[str, Any]
    threshold: float = 0.0
    os_user: str = ""


@dataclass(frozen=True, slots=True)
class ShuffleFindings:
    """What the surveillance companion found holding this shoe's order against the previous
    shoe's (docs/shuffle.md), after a round, a burn or the shoe's end.

    `against` is the previous shoe's number, `round` the last round whose cards were compared
    (0: the burn only), `after_seq` the journal event the findings are of. `findings` holds
    `report` (`ShuffleReport.to_json()`: shoe, against, cards_compared, tests, runs, verdict)
    `notices` (the slug notices since the last findings: kind `slug` / `slug_ended`, the
    `card` that raised or broke it, the `slug`'s length, places and next cards, a slug's
    `next_round` worth) and, while a slug is under way, `live` (it as it stands, with the next
    round's worth). `final`: at the shoe's end. The control socket adds `os_user` (who sent
    it, from the kernel).
    """

    TYPE: ClassVar[str] = "shuffle_findings"
    at: float
    shoe: int
    against: int
    round: int
    after_seq: int
    findings: Mapping[str, Any]
    final: bool = False
    os_user: str = ""


@dataclass(frozen=True, slots=True)
class BettingChanged:
    """The table server says bets are open, or closed, for round `round` of shoe `shoe` (the
    table's numbers), on the daemon's inbound API (docs/inbound-api.md); `server_round` is
    the server's own name for the round, carried into the round's events. `nonce` is the
    signed message's own (a message sent again is refused), `source` who sent it."""

    TYPE: ClassVar[str] = "betting"
    at: float
    state: BetsState
    shoe: int
    round: int
    server_round: str = ""
    nonce: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class PreviousShoe:
    """The shoe before this one (`shoe`) ended at `at`: recorded by the controller, under the
    next shoe, with the input that ended it, so that the next shoe's inputs alone tell its
    downtime (a table that keeps the round's clock; docs/table.md "Betting")."""

    TYPE: ClassVar[str] = "previous_shoe"
    at: float
    shoe: int


@dataclass(frozen=True, slots=True)
class JournalCheckpoint:
    """Where the journal's hash chain stood before this input, signed with the table's key
    (docs/journal.md "Checkpoints"): the daemon's, at start-up, at every shoe's end
    and every `[journal] checkpoint_every_s` while the table deals. The table only echoes it
    as a `journal.checkpoint` event (its fields, but `at`, as the data, unchanged); it names no
    card (R15) and belongs to no shoe: the journal stores it with none."""

    TYPE: ClassVar[str] = "journal_checkpoint"
    at: float
    version: int
    controller_id: str
    records: int  # input_no + seq
    input_no: int  # the last input stored before this one
    seq: int  # the last event seq stored before it (0: none)
    head: str  # the link of the last record stored before it
    time: str  # `at` in docs/spec-push-api.md's form, as signed
    key: str  # the signer's public key, hex
    signature: str  # hex Ed25519 over the fields above (store/checkpoint.py)


Input = (
    CardDrawn
    | CardsMissed
    | CutCardSeen
    | ShoeStateChanged
    | ButtonPressed
    | ShuffleStarted
    | ShuffleDone
    | DeviceFault
    | DeviceFaultCleared
    | DeviceConnected
    | DeviceLost
    | ControllerStarted
    | TableSettings
    | SupervisorCommand
    | SurveillanceReport
    | ShuffleFindings
    | BettingChanged
    | PreviousShoe
    | JournalCheckpoint
)

INPUT_TYPES: Mapping[str, type] = types.MappingProxyType(
    {cls.TYPE: cls for cls in typing.get_args(Input)}
)


def input_to_json(item: Input) -> dict[str, Any]:
    """The journal's and the replay file's form of an input: plain JSON values and a `type`."""
    out: dict[str, Any] = {"type": item.TYPE}
    for spec in dataclasses.fields(item):
        value = getattr(item, spec.name)
        if isinstance(value, Card):
            value = str(value)
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        out[spec.name] = value
    return out


def input_from_json(obj: Mapping[str, Any]) -> Input:
    """Read an input back; anything that is not a valid input raises InputError naming the fault."""
    if not isinstance(obj, Mapping):
        raise InputError(f"an input must be a JSON object, not {_json_kind(obj)}")
    kind = obj.get("type")
    cls = INPUT_TYPES.get(kind) if isinstance(kind, str) else None  # a list is unhashable
    if cls is None:
        raise InputError(
            (
                f"unknown input type {kind}"
                if isinstance(kind, str)
                else "an input without a type"
                if kind is None
                else f"an input's type must be a name, not {_json_kind(kind)}"
            )
            + f"; known: {', '.join(sorted(INPUT_TYPES))}"
        )
    hints = _field_types(cls)
    kwargs: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):
        if spec.name not in obj:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise InputError(f"{cls.TYPE} input lacks {spec.name!r}")
            continue
        try:
            kwargs[spec.name] = _convert(obj[spec.name], hints[spec.name])
        except (CardError, ValueError, TypeError) as error:
            raise InputError(f"{cls.TYPE} input, field {spec.name!r}: {error}") from None
    unknown = set(obj) - {spec.name for spec in dataclasses.fields(cls)} - {"type"}
    if unknown:
        raise InputError(f"{cls.TYPE} input has unknown fields: {', '.join(sorted(unknown))}")
    return cls(**kwargs)


@functools.cache
def _field_types(cls: type) -> Mapping[str, Any]:
    """The resolved annotations of an input class (resolving them is slow; replay reads many)."""
    return types.MappingProxyType(typing.get_type_hints(cls))


def _convert(value: Any, hint: Any) -> Any:
    """Check and convert one JSON value to the annotated field type."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (types.UnionType,) else (hint,)
    if value is None:
        if type(None) in options:
            return None
        raise ValueError("may not be null")
    for option in options:
        if option is type(None):
            continue
        if option is Card:
            return parse_card(value)
        if isinstance(option, type) and issubclass(option, StrEnum):
            return option(value)
        if option is bool:
            if isinstance(value, bool):
                return value
            continue
        if option is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            continue
        if option is float:
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
            continue
        if option is str:
            if isinstance(value, str):
                return value
            continue
        origin = typing.get_origin(option)
        if origin is tuple and isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        if origin is Mapping and isinstance(value, dict):
            return dict(value)
    raise ValueError(f"{value!r} is not of type {hint}")


def _json_kind(value: object) -> str:
    """What a JSON value is, in words: `a list`, `a number`, `text`."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "null" if value is None else "another value"
