"""`verify ... --checkpoints CP`: a file's hash chain held against signed checkpoints.

CP is a file of JSON lines holding `journal.checkpoint` events exactly as a sink received them
(the reference receiver's `GET /v1/tables/{table_id}/checkpoints`, docs/delivery.md); other
events in it are passed over, and said so. Every checkpoint's signature is checked with the
table's public key (`--public-key FILE`, else the one the file's own checkpoints carry, and
said so: that key comes from the file under dispute), each must be of the file's controller,
and the file's chain must pass through every one that falls inside it: the same head after the
input it names. A checkpoint the file contradicts is named with its time, the record and
both heads. The file's own checkpoints (the events inside it) are held against its chain too,
with or without CP. docs/journal.md "Checkpoints" is the threat model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from shoe_controller.cli.json_lines import numbered_json
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.store.chain import InputEnd
from shoe_controller.store.checkpoint import (
    Checkpoint,
    CheckpointError,
    Comparison,
    Held,
    compare,
    key_text,
    public_key_from_text,
    signature_problem,
)
from shoe_controller.store.checkpoint_keys import read_public_key
from shoe_controller.vocab.events import EventType

CHECKPOINT = str(EventType.JOURNAL_CHECKPOINT)
SHOWN = 3  # refusals named one by one; the rest counted


class CheckpointFileError(click.ClickException):
    """A CP file that cannot be read, or a line that is not a checkpoint; names the line."""


@dataclass(frozen=True)
class Copies:
    """The checkpoints a CP file holds, and how many other events it held."""

    name: str
    held: tuple[Held, ...]
    passed_over: int


@dataclass(frozen=True)
class GivenKeys:
    """The public keys given apart from the file (--public-key), by their hex, and where."""

    keys: Mapping[str, Ed25519PublicKey]
    files: tuple[str, ...]


def read_copies(lines: Iterable[str], name: str) -> Copies:
    """The checkpoints of a CP file; CheckpointFileError naming the line of one that is not."""
    held: list[Held] = []
    passed_over = 0
    for where, event in numbered_json(lines, name, CheckpointFileError):
        if not isinstance(event, dict) or "type" not in event:
            raise CheckpointFileError(f"{where}: not an event (no type)")
        if event["type"] != CHECKPOINT:
            passed_over += 1
            continue
        try:
            checkpoint = Checkpoint.from_json(event.get("data"))
        except CheckpointError as error:
            raise CheckpointFileError(f"{where}: {error}") from None
        held.append(Held(checkpoint, where, _text(event.get("id"))))
    return Copies(name, tuple(held), passed_over)


def read_copies_file(path: Path) -> Copies:
    try:
        with path.open(encoding="utf-8") as stream:
            return read_copies(stream, str(path))
    except UnicodeDecodeError:
        raise CheckpointFileError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise CheckpointFileError(f"{path}: cannot read: {error.strerror}") from None


def read_given_keys(paths: Sequence[Path]) -> GivenKeys | None:
    """--public-key FILE, each; None when none was given."""
    if not paths:
        return None
    keys: dict[str, Ed25519PublicKey] = {}
    for path in paths:
        try:
            key = read_public_key(path)
        except CheckpointError as error:
            raise click.ClickException(str(error)) from None
        keys[key_text(key)] = key
    return GivenKeys(keys, tuple(str(path) for path in paths))


def own_checkpoints(events: Iterable[Mapping[str, Any]]) -> list[Held | str]:
    """The file's own `journal.checkpoint` events (export records, or events as stored):
    each a Held, or the text of why it is not a checkpoint (a refusal, not a file error: the
    file under dispute says it)."""
    found: list[Held | str] = []
    for event in events:
        if event.get("type") != CHECKPOINT:
            continue
        place = f"the file's event seq {event.get('seq')}"
        try:
            checkpoint = Checkpoint.from_json(event.get("data"))
        except CheckpointError as error:
            found.append(f"{place}: {error}")
            continue
        found.append(Held(checkpoint, place, _text(event.get("id"))))
    return found


def check_checkpoints(
    verdict: Any,
    *,
    controller_id: str,
    ends: Mapping[int, InputEnd],
    own: Sequence[Held | str],
    copies: Copies | None,
    given: GivenKeys | None,
    times: Times,
    last_input: int | None = None,
) -> None:
    """The checkpoints' lines of the verdict (`Verdict.say`); nothing when the file holds
    none and no CP was given. `last_input`: the file is a whole journal, which must reach
    every checkpoint (one beyond its end: records removed from it, or an older copy)."""
    if copies is None and not own:
        return
    own_held = [item for item in own if isinstance(item, Held)]
    refused = [(item, "") for item in own if isinstance(item, str)]
    keys, source = _keys(given, own_held)
    if not keys:
        verdict.say(
            "checkpoints",
            "NOT DONE: no key to check them with: the file carries no checkpoint; give"
            " --public-key FILE (`shoe-controller key --public` on the table PC)",
            good=False,
        )
        return
    copied = copies.held if copies is not None else ()
    own_good = _signed(own_held, controller_id, keys, refused)
    copies_good = _signed(copied, controller_id, keys, refused)
    total, signed = len(own_held) + len(copied), len(own_good) + len(copies_good)
    verdict.say("signed", f"{signed} of {total} checkpoint(s) by {source}")
    if refused:
        shown = "; ".join(f"{where}: {why}" if why else where for where, why in refused[:SHOWN])
        more = f"; and {len(refused) - SHOWN} more" if len(refused) > SHOWN else ""
        verdict.say("checkpoints", f"REFUSED: {shown}{more}", good=False)
    mine = compare(own_good, ends)
    theirs = compare(copies_good, ends)
    if mine.contradicted:
        verdict.say("checkpoints", _rewritten(mine, times, "the file's own checkpoint says"),
                    good=False)  # fmt: skip
    if theirs.contradicted:
        verdict.say("checkpoints", _rewritten(theirs, times, "the table server holds"),
                    good=False)  # fmt: skip
    beyond = [item for item in theirs.outside if last_input is not None
              and item.checkpoint.input_no > last_input]  # fmt: skip
    if beyond:
        item = max(beyond, key=lambda held: held.checkpoint.records)
        checkpoint = item.checkpoint
        verdict.say(
            "checkpoints",
            f"CUT: the journal ends at input {last_input}, but {item.name} of"
            f" {times.stamp(checkpoint.time)} ({item.where}) had it through input"
            f" {checkpoint.input_no} ({checkpoint.records} records): records removed from its"
            " end, or an older copy of it",
            good=False,
        )
    if mine.contradicted or theirs.contradicted or refused or beyond:
        return
    text, passed = _agreed(copies, theirs, mine, times)
    verdict.say("checkpoints", text, good=passed)


def _agreed(
    copies: Copies | None, theirs: Comparison, mine: Comparison, times: Times
) -> tuple[str, bool]:
    own = f"the file's own {len(mine.matched)} agree with its chain" if mine.matched else ""
    if copies is None:
        return (
            f"{own} (they are the file's word: --checkpoints CP holds it to the copies the"
            " table server keeps)",
            True,
        )
    passed = f"; {copies.passed_over} other event(s) in it passed over" * bool(copies.passed_over)
    if not theirs.matched:
        return (
            f"NOT DONE: none of the {len(copies.held)} checkpoint(s) of {copies.name} falls in"
            f" the file's stretch: the file is held to none of them{passed}",
            False,
        )
    last = max(theirs.matched, key=lambda item: item.checkpoint.records).checkpoint
    outside = f"; {len(theirs.outside)} outside the file, not compared" if theirs.outside else ""
    return (
        f"agree: the chain passes through all {len(theirs.matched)} checkpoint(s) of"
        f" {copies.name} that fall in the file (the last at record {last.records}, of"
        f" {times.stamp(last.time)}){outside}{passed}{'; ' + own if own else ''}",
        True,
    )


def _rewritten(comparison: Comparison, times: Times, holder: str) -> str:
    ordered = sorted(comparison.contradicted, key=lambda pair: pair[0].checkpoint.records)
    item, end = ordered[0]
    checkpoint = item.checkpoint
    at = end.name or "the link the file follows"
    later = f" ({len(ordered) - 1} later checkpoint(s) contradicted too)" * (len(ordered) > 1)
    seq = (
        f" (after event seq {end.seq}, the checkpoint says {checkpoint.seq})"
        if end.seq not in (None, checkpoint.seq)
        else ""
    )
    return (
        f"REWRITTEN: the journal was rewritten after {item.name} of"
        f" {times.stamp(checkpoint.time)} ({item.where}): at record {checkpoint.records}"
        f" ({at}) the head is {end.head}{seq}, {holder} {checkpoint.head}{later}"
    )


def _keys(given: GivenKeys | None, own: Sequence[Held]) -> tuple[dict[str, Ed25519PublicKey], str]:
    if given is not None:
        shown = ", ".join(f"{key[:16]}..." for key in given.keys)
        return dict(given.keys), f"the key(s) of --public-key {', '.join(given.files)} ({shown})"
    carried: dict[str, Ed25519PublicKey] = {}
    for item in own:
        try:
            carried.setdefault(item.checkpoint.key, public_key_from_text(item.checkpoint.key))
        except (CheckpointError, ValueError):
            continue
    shown = ", ".join(f"{key[:16]}..." for key in carried)
    return carried, (
        f"the key the file's own checkpoints carry ({shown}), which comes from the file itself:"
        " give --public-key FILE for a key known apart from it"
    )


def _signed(
    held: Sequence[Held],
    controller_id: str,
    keys: Mapping[str, Ed25519PublicKey],
    refused: list[tuple[str, str]],
) -> list[Held]:
    """The checkpoints of `controller_id` signed by one of `keys`; the others noted in
    `refused` with why."""
    good = []
    for item in held:
        problem = _refusal(item, controller_id, keys)
        if problem is None:
            good.append(item)
        else:
            refused.append((f"{item.where} ({item.name})", problem))
    return good


def _refusal(item: Held, controller_id: str, keys: Mapping[str, Ed25519PublicKey]) -> str | None:
    if item.checkpoint.controller_id != controller_id:
        return (
            f"a checkpoint of controller {item.checkpoint.controller_id}, not of"
            f" {controller_id}: another table's"
        )
    return signature_problem(item.checkpoint, keys)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
