"""The wire format of the table-server push API (docs/spec-push-api.md): keys, signatures, bodies.

Sans-I/O and shared by the table server's sink (client) and the reference receiver (server), so both
sides sign and check with the same few lines. Everything here follows docs/spec-push-api.md to the
byte.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

API_VERSION = "v1"
MAX_BATCH = 200  # events per request, docs/spec-push-api.md "at most 200 a request"
MAX_CLOCK_SKEW_S = 300  # a server rejects timestamps further than this from its clock
SIGNATURE_SCHEME = "v1="

HEADER_CONTROLLER = "X-Shoe-Controller"
HEADER_TIMESTAMP = "X-Shoe-Timestamp"
HEADER_SIGNATURE = "X-Shoe-Signature"
SIGNED_HEADERS = (HEADER_CONTROLLER, HEADER_TIMESTAMP, HEADER_SIGNATURE)

EVENT_FIELDS = ("seq", "id", "type", "at", "shoe", "round", "data")


class KeyFileError(ValueError):
    """The key file is missing, unreadable, not UTF-8 or empty."""


class SigningKey:
    """The table's shared secret. Its bytes never show in a repr, str or log line."""

    __slots__ = ("_secret",)

    def __init__(self, secret: bytes) -> None:
        if not secret:
            raise KeyFileError("the signing key is empty")
        self._secret = secret

    @classmethod
    def from_text(cls, text: str) -> SigningKey:
        """Key from the key file's text: leading and trailing white space removed, UTF-8."""
        return cls(text.strip().encode("utf-8"))

    @classmethod
    def from_file(cls, path: str | Path) -> SigningKey:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise KeyFileError(f"cannot read key file {path}: {exc.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise KeyFileError(f"key file {path} is not UTF-8 text") from None
        if not text.strip():
            raise KeyFileError(f"key file {path} is empty")
        return cls.from_text(text)

    def sign(self, timestamp: str, body: bytes) -> str:
        """The X-Shoe-Signature value: `v1=` + hex HMAC-SHA256(key, timestamp "." body)."""
        mac = hmac.new(self._secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256)
        return SIGNATURE_SCHEME + mac.hexdigest()

    def verify(self, timestamp: str, body: bytes, signature: str) -> bool:
        """Constant-time check of a received X-Shoe-Signature value."""
        try:
            expected = self.sign(timestamp, body)
        except UnicodeEncodeError:  # a non-ASCII timestamp cannot have been signed by us
            return False
        return hmac.compare_digest(expected.encode("ascii"), signature.encode("utf-8", "replace"))

    def __repr__(self) -> str:
        return "SigningKey(<hidden>)"

    __str__ = __repr__

    def __reduce__(self) -> Any:  # pickling would copy the secret somewhere unexpected
        raise TypeError("SigningKey cannot be pickled")


def events_path(table_id: str) -> str:
    return f"/{API_VERSION}/tables/{table_id}/events"


def ack_path(table_id: str) -> str:
    return f"/{API_VERSION}/tables/{table_id}/ack"


def encode_body(controller_id: str, table_id: str, events: list[dict[str, Any]]) -> bytes:
    """The POST body, compact UTF-8 JSON; the signature covers exactly these bytes."""
    body = {"controller_id": controller_id, "table_id": table_id, "events": events}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def signed_headers(
    key: SigningKey, controller_id: str, timestamp: float, body: bytes
) -> dict[str, str]:
    """The four request headers of docs/spec-push-api.md for one body, timestamp in unix seconds."""
    stamp = str(int(timestamp))
    return {
        "Content-Type": "application/json",
        HEADER_CONTROLLER: controller_id,
        HEADER_TIMESTAMP: stamp,
        HEADER_SIGNATURE: key.sign(stamp, body),
    }


def parse_acked_through(payload: bytes) -> int:
    """`acked_through` from a 200/409/GET answer; ValueError for anything else (garbage)."""
    try:
        document = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        raise ValueError("answer is not JSON") from None
    if not isinstance(document, dict) or "acked_through" not in document:
        raise ValueError("answer has no acked_through")
    value = document["acked_through"]
    # bool is an int subclass: `true` is garbage, not 1
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"acked_through is not a non-negative integer: {value!r}")
    return value
