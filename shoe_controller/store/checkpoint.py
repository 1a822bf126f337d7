"""The journal's signed checkpoints: where the hash chain stood, signed with the table's key.

Pure: no file, no clock. A checkpoint says, for one controller, how many records the journal
had stored (`records`, the last input `input_no` and the last event `seq`), the link of the
last of them (`head`, store/chain.py), and when (`time`); the table's Ed25519 key signs those
fields. The daemon journals it as an ordinary input and event (`journal_checkpoint`,
`journal.checkpoint`: service/checkpoints.py says when), so the sinks carry copies of it off
the table PC; `shoe-controller verify --checkpoints` holds a file's chain against them.
docs/journal.md "Checkpoints" is the specification a second implementation is written from:

    message   = UTF-8(JSON ["shoe-controller checkpoint", version, controller_id, records,
                            input_no, seq, head, time, key])
    signature = hex(Ed25519(the table's private key, message))

JSON compact (separators "," and ":"), not ASCII-escaped, as the chain's canonical texts;
`key` is the signer's public key, 32 bytes in hex, `head` 64 hex digits, `time` in the form
of docs/spec-push-api.md. A key file is PKCS#8 PEM (what `openssl genpkey -algorithm ed25519`
writes), a public key SubjectPublicKeyInfo PEM (`openssl pkey -pubout`) or the 64 hex digits
of `key`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from shoe_controller.store.chain import ChainPoint, InputEnd

VERSION = 1
MESSAGE_TAG = "shoe-controller checkpoint"  # what the signature is of: nothing else signed
# The event's data, in this order; the message is all of them but the signature.
FIELDS = (
    "version", "controller_id", "records", "input_no", "seq", "head", "time", "key", "signature"
)  # fmt: skip
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class CheckpointError(ValueError):
    """Something that is not a checkpoint, or not a key; the text says which field."""


@dataclasses.dataclass(frozen=True, slots=True)
class Checkpoint:
    """One signed checkpoint, as the `journal.checkpoint` event's data carries it."""

    controller_id: str
    records: int  # input_no + seq: every record stored before the checkpoint's own input
    input_no: int  # the last input stored before it
    seq: int  # the last event seq stored before it (0: none)
    head: str  # the link of the last record stored before it
    time: str  # when, docs/spec-push-api.md's form (the event's `at`)
    key: str  # the signer's public key, hex
    signature: str  # hex
    version: int = VERSION

    @property
    def point(self) -> ChainPoint:
        return ChainPoint(self.input_no, self.seq, self.head)

    def message(self) -> bytes:
        """The bytes the signature is of (module docstring)."""
        fields = [MESSAGE_TAG, self.version, self.controller_id, self.records, self.input_no,
                  self.seq, self.head, self.time, self.key]  # fmt: skip
        return _ENCODE(fields).encode("utf-8")

    def to_json(self) -> dict[str, Any]:
        """The event's data: every field, in FIELDS order."""
        return {name: getattr(self, name) for name in FIELDS}

    @classmethod
    def from_json(cls, data: Any) -> Checkpoint:
        """A checkpoint read back from an event's data; CheckpointError naming the field."""
        if not isinstance(data, Mapping):
            raise CheckpointError("a checkpoint's data must be a JSON object")
        missing = [name for name in FIELDS if name not in data]
        if missing:
            raise CheckpointError(f"a checkpoint lacks {', '.join(missing)}")
        unknown = sorted(set(data) - set(FIELDS))
        if unknown:
            raise CheckpointError(f"a checkpoint has unknown fields: {', '.join(unknown)}")
        if data["version"] != VERSION:
            raise CheckpointError(
                f"checkpoint version {json.dumps(data['version'])}; this program reads {VERSION}"
            )
        for name in ("records", "input_no", "seq"):
            value = data[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise CheckpointError(f"a checkpoint's {name} must be a whole number >= 0")
        for name in ("controller_id", "time"):
            if not isinstance(data[name], str) or not data[name]:
                raise CheckpointError(f"a checkpoint's {name} must be a text")
        for name, pattern, digits in (("head", _HEX64, 64), ("key", _HEX64, 64),
                                      ("signature", _HEX128, 128)):  # fmt: skip
            if not isinstance(data[name], str) or not pattern.fullmatch(data[name]):
                raise CheckpointError(f"a checkpoint's {name} must be {digits} hex digits")
        if data["records"] != data["input_no"] + data["seq"]:
            raise CheckpointError("a checkpoint's records must be its input_no + seq")
        return cls(**{name: data[name] for name in FIELDS})


class Signer:
    """The table's signing key. It never shows in a repr, str or log line."""

    __slots__ = ("_key", "key")

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key
        self.key = key_text(key.public_key())  # the checkpoints' `key`

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self._key.public_key()

    def sign(self, controller_id: str, point: ChainPoint, time: str) -> Checkpoint:
        """The checkpoint of `point` (the chain after a whole input), signed."""
        unsigned = Checkpoint(
            controller_id, point.records, point.input_no, point.seq, point.head, time,
            self.key, signature="",
        )  # fmt: skip
        return dataclasses.replace(unsigned, signature=self._key.sign(unsigned.message()).hex())

    def __repr__(self) -> str:
        return f"Signer(key {self.key[:16]}..., private part hidden)"

    __str__ = __repr__

    def __reduce__(self) -> Any:  # pickling would copy the key somewhere unexpected
        raise TypeError("Signer cannot be pickled")


def signature_problem(checkpoint: Checkpoint, keys: Mapping[str, Ed25519PublicKey]) -> str | None:
    """Why `checkpoint` is not signed by one of `keys` (by their `key_text`), or None."""
    public = keys.get(checkpoint.key)
    if public is None:
        return f"signed by key {checkpoint.key[:16]}..., which is not the table's"
    try:
        public.verify(bytes.fromhex(checkpoint.signature), checkpoint.message())
    except InvalidSignature:
        return "bad signature: forged, or changed after it was signed"
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Held:
    """A checkpoint as a copy of it holds it: where (`CP line 3`), and its event's id."""

    checkpoint: Checkpoint
    where: str
    event_id: str | None = None

    @property
    def name(self) -> str:
        """`checkpoint tbl-07-shoe:812`, or where it was read when it has no id."""
        return f"checkpoint {self.event_id}" if self.event_id else f"the checkpoint of {self.where}"


@dataclasses.dataclass(frozen=True, slots=True)
class Comparison:
    """Checkpoints held against a stretch of the chain: those it passes through, those it
    contradicts (with where the stretch stands instead), those outside it."""

    matched: tuple[Held, ...]
    contradicted: tuple[tuple[Held, InputEnd], ...]
    outside: tuple[Held, ...]


def compare(held: Sequence[Held], ends: Mapping[int, InputEnd]) -> Comparison:
    """Each checkpoint against the stretch's head after the input it names (`chain.input_ends`):
    the same head (and seq, where the stretch tells it) is a match; another is a rewrite."""
    matched: list[Held] = []
    contradicted: list[tuple[Held, InputEnd]] = []
    outside: list[Held] = []
    for item in held:
        checkpoint = item.checkpoint
        end = ends.get(checkpoint.input_no)
        if end is None:
            outside.append(item)
        elif end.head == checkpoint.head and end.seq in (None, checkpoint.seq):
            matched.append(item)
        else:
            contradicted.append((item, end))
    return Comparison(tuple(matched), tuple(contradicted), tuple(outside))


# ---------------------------------------------------------------- keys, as bytes and text


def key_text(key: Ed25519PublicKey) -> str:
    """A public key as a checkpoint's `key`: its 32 bytes in hex."""
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def public_pem(key: Ed25519PublicKey) -> str:
    """A public key as PEM (SubjectPublicKeyInfo, as `openssl pkey -pubout` writes it)."""
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def public_key_from_text(text: str) -> Ed25519PublicKey:
    """A public key from PEM or from a checkpoint's `key` (64 hex digits)."""
    stripped = text.strip()
    if _HEX64.fullmatch(stripped.lower()):
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(stripped))
    try:
        key = serialization.load_pem_public_key(stripped.encode("utf-8"))
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise CheckpointError(
            "not a public key: give the PEM `shoe-controller key --public` prints, or the"
            " 64 hex digits of a checkpoint's key"
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise CheckpointError("not an Ed25519 public key")
    return key


def private_key_from_pem(data: bytes) -> Ed25519PrivateKey:
    """The table's signing key from its file's bytes (PKCS#8 PEM, not encrypted)."""
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise CheckpointError(
            "not a PEM private key (make one with `shoe-controller key --new FILE`)"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise CheckpointError("not an Ed25519 private key")
    return key


def new_private_pem() -> bytes:
    """A new signing key, as its file holds it."""
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
