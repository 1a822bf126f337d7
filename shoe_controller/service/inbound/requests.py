"""What an inbound API request may be (docs/inbound-api.md), checked without I/O: its path,
its docs/spec-push-api.md-style signature and timestamp, its nonce, its body; the input it becomes.

`InboundChecks.check(...)` gives the table input of a request or raises `Refused` (an HTTP
status, a code, a line of text); `taken(nonce)` remembers a nonce once its input was stored,
for as long as its timestamp is in the window, so that a message sent again is refused
before the journal sees it. The table refuses a nonce it took in the shoe itself too: that
covers a restart, which forgets this memory.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shoe_controller.delivery.pushapi import (
    API_VERSION,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    SigningKey,
)
from shoe_controller.vocab.inputs import BetsState, BettingChanged, Input, SupervisorCommand

HEADER_SERVER = "X-Shoe-Server"  # who sends (optional): journaled as the input's source
MAX_BODY = 16 * 1024
MAX_NONCES = 100_000  # nonces kept at once; more within one window is refused (503)
KINDS = ("betting", "dealer")
_NONCE = re.compile(r"[A-Za-z0-9_.:-]{8,128}")
_NAME = re.compile(r"[A-Za-z0-9_.@:-]{1,64}")  # a server round id, a dealer id, a server id
_STAMP = re.compile(r"[0-9]{1,12}")


@dataclass(frozen=True, slots=True)
class Refused(Exception):  # noqa: N818 - an HTTP answer, not a crash
    """The request is refused before the table sees it: answered `status` with the code and
    text as JSON, logged, nothing journaled."""

    status: int
    code: str
    text: str

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.text}"


@dataclass(frozen=True, slots=True)
class Accepted:
    """A request that passed every check: the input to journal and its nonce."""

    item: Input
    nonce: str


def route(path: str) -> tuple[str, str]:
    """(table_id, kind) of an inbound API path; Refused 404 for any other."""
    parts = path.split("/")
    if (
        len(parts) == 5
        and parts[0] == ""
        and parts[1:3] == [API_VERSION, "tables"]
        and parts[3]
        and parts[4] in KINDS
    ):
        return parts[3], parts[4]
    raise Refused(404, "not_found", f"no such path {path[:200]!r}; see docs/inbound-api.md")


class InboundChecks:
    """One table's inbound checks: its id, its key, the replay window, the nonces taken."""

    def __init__(self, table_id: str, key: SigningKey, window_s: float) -> None:
        self.table_id = table_id
        self._key = key
        self._window_s = window_s
        self._nonces: dict[str, float] = {}  # nonce -> until when it is kept

    def check(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes, now: float
    ) -> Accepted:
        """The input a request stands for; Refused says why not (the order: where, whether
        signed, when, the signature, the body, the nonce)."""
        table_id, kind = route(path)
        if table_id != self.table_id:
            raise Refused(404, "wrong_table", f"this is table {self.table_id}, not {table_id}")
        if method != "POST":
            raise Refused(405, "method_not_allowed", f"{path} takes POST")
        if len(body) > MAX_BODY:
            raise Refused(413, "too_large", f"a body of at most {MAX_BODY} bytes")
        stamp, signature = headers.get(HEADER_TIMESTAMP), headers.get(HEADER_SIGNATURE)
        if not stamp or not signature:
            raise Refused(
                401, "unsigned", f"{HEADER_TIMESTAMP} and {HEADER_SIGNATURE} are required"
            )
        if not _STAMP.fullmatch(stamp):
            raise Refused(401, "bad_timestamp", f"{HEADER_TIMESTAMP} must be unix seconds")
        if abs(now - int(stamp)) > self._window_s:
            raise Refused(
                401,
                "stale_timestamp",
                f"timestamp {stamp} is more than {self._window_s:g} s from the controller's"
                f" clock ({int(now)})",
            )
        if not self._key.verify(stamp, body, signature):
            raise Refused(401, "bad_signature", "the signature does not match the table's key")
        document = _document(body)
        if document.get("table_id") != self.table_id:
            raise Refused(400, "bad_request", "table_id differs from the URL")
        nonce = document.get("nonce")
        if not isinstance(nonce, str) or not _NONCE.fullmatch(nonce):
            raise Refused(400, "bad_request", "nonce must be 8-128 letters, digits, . _ : -")
        self._forget(now)
        if nonce in self._nonces:
            raise Refused(401, "replayed", f"the message with nonce {nonce} was taken before")
        if len(self._nonces) >= MAX_NONCES:
            raise Refused(503, "busy", "too many messages in the window; send again later")
        source = headers.get(HEADER_SERVER) or "server"
        if not _NAME.fullmatch(source):
            raise Refused(400, "bad_request", f"{HEADER_SERVER} must be 1-64 letters, digits")
        maker = _betting if kind == "betting" else _dealer
        return Accepted(maker(document, now, nonce, source), nonce)

    def taken(self, nonce: str, now: float) -> None:
        """The nonce's message was stored: the same message again is refused (`replayed`)
        while its timestamp could still pass."""
        self._nonces[nonce] = now + 2 * self._window_s

    def _forget(self, now: float) -> None:
        """Drop the nonces whose messages are out of the window (a few hundred at most)."""
        if any(until <= now for until in self._nonces.values()):
            self._nonces = {n: until for n, until in self._nonces.items() if until > now}


def _document(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise Refused(400, "bad_request", "the body must be a JSON object") from None
    if not isinstance(document, dict):
        raise Refused(400, "bad_request", "the body must be a JSON object")
    return document


def _fields(document: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(document) - allowed)
    if unknown:
        raise Refused(400, "bad_request", f"unknown field(s) {unknown}; allowed: {sorted(allowed)}")


def _whole(document: Mapping[str, Any], name: str) -> int:
    value = document.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10**9:
        raise Refused(400, "bad_request", f"{name} must be a whole number from 1")
    return value


def _name(document: Mapping[str, Any], name: str, *, required: bool) -> str:
    value = document.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise Refused(400, "bad_request", f"{name} must be 1-64 letters, digits, . _ @ : -")
    return value


def _betting(document: Mapping[str, Any], now: float, nonce: str, source: str) -> Input:
    """POST .../betting: {table_id, shoe, round, state open|closed, server_round?, nonce}."""
    _fields(document, {"table_id", "shoe", "round", "state", "server_round", "nonce"})
    state = document.get("state")
    if state not in (BetsState.OPEN, BetsState.CLOSED):
        raise Refused(400, "bad_request", "state must be 'open' or 'closed'")
    return BettingChanged(
        at=_finite(now),
        state=BetsState(state),
        shoe=_whole(document, "shoe"),
        round=_whole(document, "round"),
        server_round=_name(document, "server_round", required=False),
        nonce=nonce,
        source=source,
    )


def _dealer(document: Mapping[str, Any], now: float, nonce: str, source: str) -> Input:
    """POST .../dealer: {table_id, dealer?, signed in|out, nonce}: the supervisor action
    `dealer`, by the server, its nonce the command's key (carried out once)."""
    _fields(document, {"table_id", "dealer", "signed", "nonce"})
    signed = document.get("signed")
    if signed not in ("in", "out"):
        raise Refused(400, "bad_request", "signed must be 'in' or 'out'")
    dealer = _name(document, "dealer", required=signed == "in")
    args: dict[str, Any] = {"out": signed == "out"}
    if dealer:
        args["id"] = dealer
    reason = f"the table server signs the dealer {signed}"
    return SupervisorCommand(_finite(now), "dealer", source, reason, args, key=nonce)


def _finite(now: float) -> float:
    if not math.isfinite(now):
        raise Refused(503, "no_clock", "the controller's clock gave no time")
    return now
