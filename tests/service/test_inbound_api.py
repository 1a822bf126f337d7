"""The inbound API's parts (docs/inbound-api.md): the request checks without I/O
(path, signature, window, nonce, body), the configuration it needs, and the server itself on
127.0.0.1 over TLS (mutual, from the test PKI) in front of a real controller and journal.
The whole daemon over HTTP is tests/system/test_inbound_api_live.py."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from shoe_testkit.net import free_port
from shoe_testkit.pki import make_pki

from shoe_controller.delivery.pushapi import SigningKey
from shoe_controller.service.config import ApiSection, ConfigError, from_mapping
from shoe_controller.service.inbound.requests import InboundChecks, Refused
from shoe_controller.service.inbound.server import InboundServer
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import Journal
from shoe_controller.table.config import TableConfig
from shoe_controller.vocab.inputs import BetsState, BettingChanged, SupervisorCommand

KEY = SigningKey(b"the table's key")
NOW = 1_800_000_000.0
PATH = "/v1/tables/07/betting"


def _body(**fields: Any) -> bytes:
    document = {"table_id": "07", "shoe": 1, "round": 1, "state": "closed",
                "nonce": "nonce-0001", **fields}  # fmt: skip
    return json.dumps({k: v for k, v in document.items() if v is not None}).encode()


def _headers(body: bytes, stamp: float = NOW, key: SigningKey = KEY) -> dict[str, str]:
    timestamp = str(int(stamp))
    return {"X-Shoe-Timestamp": timestamp, "X-Shoe-Signature": key.sign(timestamp, body)}


def _refusal(checks: InboundChecks, path: str, headers: dict[str, str], body: bytes) -> Refused:
    with pytest.raises(Refused) as caught:
        checks.check("POST", path, headers, body, NOW)
    return caught.value


def test_a_signed_message_becomes_the_betting_input() -> None:
    checks = InboundChecks("07", KEY, 300)
    body = _body(server_round="G-1")
    accepted = checks.check("POST", PATH, {**_headers(body), "X-Shoe-Server": "s1"}, body, NOW)
    assert accepted.item == BettingChanged(NOW, BetsState.CLOSED, 1, 1, "G-1", "nonce-0001", "s1")
    checks.taken(accepted.nonce, NOW)
    assert _refusal(checks, PATH, _headers(body), body).code == "replayed"
    # Kept while its timestamp could pass; forgotten after, when the timestamp cannot.
    later = NOW + 700
    with pytest.raises(Refused) as caught:
        checks.check("POST", PATH, _headers(body), body, later)
    assert caught.value.code == "stale_timestamp"
    assert checks.check("POST", PATH, _headers(body, later), body, later).nonce == "nonce-0001"


@pytest.mark.parametrize(
    ("path", "headers", "body", "status", "code"),
    [
        ("/v1/tables/07/bogus", None, _body(), 404, "not_found"),
        ("/v1/tables/99/betting", None, _body(table_id="99"), 404, "wrong_table"),
        (PATH, {}, _body(), 401, "unsigned"),
        (
            PATH,
            {"X-Shoe-Timestamp": "soon", "X-Shoe-Signature": "v1=00"},
            _body(),
            401,
            "bad_timestamp",
        ),
        (PATH, _headers(_body(), NOW - 301), _body(), 401, "stale_timestamp"),
        (PATH, _headers(_body(), NOW + 301), _body(), 401, "stale_timestamp"),
        (PATH, _headers(_body(), key=SigningKey(b"other")), _body(), 401, "bad_signature"),
        (PATH, _headers(_body(round=2)), _body(), 401, "bad_signature"),  # body changed
        (PATH, None, b"[1]", 400, "bad_request"),
        (PATH, None, _body(table_id="08"), 400, "bad_request"),
        (PATH, None, _body(nonce="short"), 400, "bad_request"),
        (PATH, None, _body(state="maybe"), 400, "bad_request"),
        (PATH, None, _body(round=0), 400, "bad_request"),
        (PATH, None, _body(round=True), 400, "bad_request"),
        (PATH, None, _body(extra=1), 400, "bad_request"),
        (PATH, None, _body(server_round="two words"), 400, "bad_request"),
        (PATH, None, b"x" * 20000, 413, "too_large"),
    ],
)
def test_what_is_refused_before_the_table(
    path: str, headers: dict[str, str] | None, body: bytes, status: int, code: str
) -> None:
    refused = _refusal(InboundChecks("07", KEY, 300), path, _headers(body) if headers is None
                       else headers, body)  # fmt: skip
    assert (refused.status, refused.code) == (status, code), refused.text


def test_a_dealer_message_is_the_dealer_action_keyed_by_its_nonce() -> None:
    checks = InboundChecks("07", KEY, 300)
    body = json.dumps({"table_id": "07", "dealer": "D-1", "signed": "in",
                       "nonce": "nonce-dealer"}).encode()  # fmt: skip
    path = "/v1/tables/07/dealer"
    item = checks.check("POST", path, _headers(body), body, NOW).item
    assert isinstance(item, SupervisorCommand)
    assert (item.action, item.by, item.args, item.key) == (
        "dealer",
        "server",
        {"id": "D-1", "out": False},
        "nonce-dealer",
    )
    out = json.dumps({"table_id": "07", "signed": "out", "nonce": "nonce-dealer2"}).encode()
    assert checks.check("POST", path, _headers(out), out, NOW).item.args == {"out": True}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"table": {"betting": "server"}}, "[api] listen must be set"),
        (
            {"table": {"betting": "button"}, "scanner": {"protocol": "beetek", "port": "/dev/x"}},
            "has no NO_MORE_BETS button",
        ),
        ({"api": {"listen": "127.0.0.1:9", "tls_cert": "c.pem"}}, "go together"),
        ({"api": {"listen": "127.0.0.1:9", "client_ca": "ca.pem"}}, "needs tls_cert"),
        ({"api": {"window_s": 5}}, "window_s must be 30 to 3600"),
        (
            {"api": {"listen": "127.0.0.1:9"}, "metrics": {"listen": "127.0.0.1:9"}},
            "[metrics] listen too",
        ),
        ({"table": {"early_card": "maybe"}}, "early_card must be one of hold, void"),
    ],
)
def test_the_configuration_the_api_needs(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        from_mapping(raw)
    assert message in str(caught.value)


def test_a_server_betting_table_with_its_api_is_a_configuration() -> None:
    config = from_mapping({"table": {"betting": "server"}, "api": {"listen": "127.0.0.1:9"}})
    assert config.procedures.betting == "server"
    assert config.api == ApiSection(listen="127.0.0.1:9")


# ---------------------------------------------------------------------- the server, over TLS


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, Path]:
    return make_pki(tmp_path)


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    with Journal.open(tmp_path / "journal.db", "tbl-07-shoe") as journal:
        yield Controller(TableConfig(betting="server"), journal)


def test_over_mutual_tls_a_signed_message_reaches_the_journal(
    pki: dict[str, Path], controller: Controller
) -> None:
    port = free_port()
    section = ApiSection(
        listen=f"127.0.0.1:{port}",
        tls_cert=str(pki["server.pem"]),
        tls_key=str(pki["server.key"]),
        client_ca=str(pki["ca.pem"]),
    )
    body = _body()
    url = f"https://127.0.0.1:{port}{PATH}"

    async def scenario() -> tuple[httpx.Response, Exception | None, httpx.Response]:
        server = InboundServer(section, "07", KEY, controller.submit_many, lambda: NOW)
        await server.start()
        try:
            assert server.url == f"https://127.0.0.1:{port}"
            with_cert = ssl.create_default_context(cafile=pki["ca.pem"])
            with_cert.load_cert_chain(pki["client.pem"], pki["client.key"])
            async with httpx.AsyncClient(verify=with_cert) as client:
                taken = await client.post(url, content=body, headers=_headers(body))
                again = await client.post(url, content=body, headers=_headers(body))
            refused: Exception | None = None
            try:  # no client certificate: the handshake fails, nothing is read
                without = ssl.create_default_context(cafile=pki["ca.pem"])
                async with httpx.AsyncClient(verify=without) as anonymous:
                    await anonymous.post(url, content=body, headers=_headers(body))
            except (httpx.TransportError, ssl.SSLError) as error:
                refused = error
            return taken, refused, again
        finally:
            await server.close()

    taken, refused, again = asyncio.run(scenario())
    assert taken.status_code == 200, taken.text
    assert taken.json()["events"] == ["bets.closed"]
    assert again.status_code == 401
    assert again.json()["error"] == "replayed"
    assert refused is not None
    (stored,) = [e for e in controller.journal.reads.events_after(0) if e.type == "bets.closed"]
    assert stored.data["round"] == 1
    assert controller.table.view()["betting"]["closed"] is True  # for round 1 of shoe 1


# ------------------------------------------------------- what a refused request is told, whole


def _refused_at(
    checks: InboundChecks,
    body: bytes,
    *,
    path: str = PATH,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    now: float = NOW,
) -> Refused:
    with pytest.raises(Refused) as caught:
        checks.check(method, path, _headers(body) if headers is None else headers, body, now)
    return caught.value


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/v1/tables/07/bogus", "no such path '/v1/tables/07/bogus'; see docs/inbound-api.md"),
        ("/v1/tables//betting", "no such path '/v1/tables//betting'; see docs/inbound-api.md"),
        ("v1/tables/07/betting", "no such path 'v1/tables/07/betting'; see docs/inbound-api.md"),
        (
            "x/v1/tables/07/betting",
            "no such path 'x/v1/tables/07/betting'; see docs/inbound-api.md",
        ),
        ("/v2/tables/07/betting", "no such path '/v2/tables/07/betting'; see docs/inbound-api.md"),
        ("/v1/table/07/betting", "no such path '/v1/table/07/betting'; see docs/inbound-api.md"),
        (
            "/v1/tables/07/betting/",
            "no such path '/v1/tables/07/betting/'; see docs/inbound-api.md",
        ),
        ("/v1/tables/07", "no such path '/v1/tables/07'; see docs/inbound-api.md"),
        ("/" + "a" * 300, f"no such path {('/' + 'a' * 199)!r}; see docs/inbound-api.md"),
    ],
)
def test_a_path_that_is_not_the_apis_is_404_naming_it(path: str, text: str) -> None:
    refused = _refused_at(InboundChecks("07", KEY, 300), _body(), path=path)
    assert (refused.status, refused.code, refused.text) == (404, "not_found", text)
    assert str(refused) == f"404 not_found: {text}"


def test_each_check_says_what_is_wrong_in_words() -> None:
    checks = InboundChecks("07", KEY, 300)
    body = _body()
    cases = [
        (
            _refused_at(checks, _body(table_id="99"), path="/v1/tables/99/dealer"),
            (404, "wrong_table", "this is table 07, not 99"),
        ),
        (
            _refused_at(checks, body, method="GET"),
            (405, "method_not_allowed", "/v1/tables/07/betting takes POST"),
        ),
        (
            _refused_at(checks, b"x" * (16 * 1024 + 1)),
            (413, "too_large", "a body of at most 16384 bytes"),
        ),
        (
            _refused_at(
                checks, body, headers={"X-Shoe-Signature": _headers(body)["X-Shoe-Signature"]}
            ),
            (401, "unsigned", "X-Shoe-Timestamp and X-Shoe-Signature are required"),
        ),
        (
            _refused_at(checks, body, headers={"X-Shoe-Timestamp": str(int(NOW))}),
            (401, "unsigned", "X-Shoe-Timestamp and X-Shoe-Signature are required"),
        ),
        (
            _refused_at(checks, body, headers={**_headers(body), "X-Shoe-Timestamp": "1.5"}),
            (401, "bad_timestamp", "X-Shoe-Timestamp must be unix seconds"),
        ),
        (
            _refused_at(checks, body, headers=_headers(body, NOW - 301)),
            (
                401,
                "stale_timestamp",
                f"timestamp {int(NOW) - 301} is more than 300 s from the controller's clock"
                f" ({int(NOW)})",
            ),
        ),
        (
            _refused_at(checks, body, headers=_headers(body, key=SigningKey(b"other"))),
            (401, "bad_signature", "the signature does not match the table's key"),
        ),
        (_refused_at(checks, b"[1]"), (400, "bad_request", "the body must be a JSON object")),
        (_refused_at(checks, b"{nope"), (400, "bad_request", "the body must be a JSON object")),
        (
            _refused_at(checks, b'{"a": "\xff"}'),
            (400, "bad_request", "the body must be a JSON object"),
        ),
        (
            _refused_at(checks, _body(table_id="08")),
            (400, "bad_request", "table_id differs from the URL"),
        ),
        (
            _refused_at(checks, _body(nonce="short")),
            (400, "bad_request", "nonce must be 8-128 letters, digits, . _ : -"),
        ),
        (
            _refused_at(checks, _body(nonce=12345678)),
            (400, "bad_request", "nonce must be 8-128 letters, digits, . _ : -"),
        ),
        (
            _refused_at(checks, body, headers={**_headers(body), "X-Shoe-Server": "two words"}),
            (400, "bad_request", "X-Shoe-Server must be 1-64 letters, digits"),
        ),
        (
            _refused_at(checks, _body(extra=1, more=2)),
            (
                400,
                "bad_request",
                "unknown field(s) ['extra', 'more']; allowed: ['nonce', 'round', 'server_round',"
                " 'shoe', 'state', 'table_id']",
            ),
        ),
        (
            _refused_at(checks, _body(state="maybe")),
            (400, "bad_request", "state must be 'open' or 'closed'"),
        ),
        (
            _refused_at(checks, _body(shoe=0)),
            (400, "bad_request", "shoe must be a whole number from 1"),
        ),
        (
            _refused_at(checks, _body(round=10**9 + 1)),
            (400, "bad_request", "round must be a whole number from 1"),
        ),
        (
            _refused_at(checks, _body(round=1.0)),
            (400, "bad_request", "round must be a whole number from 1"),
        ),
        (
            _refused_at(checks, _body(server_round="")),
            (400, "bad_request", "server_round must be 1-64 letters, digits, . _ @ : -"),
        ),
        (
            _refused_at(checks, _body(server_round=7)),
            (400, "bad_request", "server_round must be 1-64 letters, digits, . _ @ : -"),
        ),
    ]
    for refused, expected in cases:
        assert (refused.status, refused.code, refused.text) == expected


def test_the_window_is_inclusive_and_a_nonce_is_kept_twice_as_long() -> None:
    checks = InboundChecks("07", KEY, 300)
    body = _body()
    for stamp in (NOW - 300, NOW + 300):  # exactly the window away: still on time
        assert checks.check("POST", PATH, _headers(body, stamp), body, NOW).nonce == "nonce-0001"
    checks.taken("nonce-0001", NOW)
    # Refused while a message with that nonce could still be on time: up to 2 windows later.
    just_before = NOW + 599
    again = _refused_at(checks, body, headers=_headers(body, just_before), now=just_before)
    assert (again.status, again.code, again.text) == (
        401,
        "replayed",
        "the message with nonce nonce-0001 was taken before",
    )
    at_the_end = NOW + 600
    taken = checks.check("POST", PATH, _headers(body, at_the_end), body, at_the_end)
    assert taken.nonce == "nonce-0001"


def test_a_window_full_of_nonces_is_busy_then_frees_as_they_age() -> None:
    checks = InboundChecks("07", KEY, 300)
    for n in range(100_000 - 1):
        checks.taken(f"nonce-{n:08}", NOW)
    body = _body(nonce="nonce-last-one")
    assert checks.check("POST", PATH, _headers(body), body, NOW).nonce == "nonce-last-one"
    checks.taken("nonce-last-one", NOW + 1)
    busy = _refused_at(checks, _body(nonce="nonce-too-many"))
    assert (busy.status, busy.code, busy.text) == (
        503,
        "busy",
        "too many messages in the window; send again later",
    )
    # Two windows on, the first 99 999 are forgotten, the last (taken a second later) kept.
    later = NOW + 600
    fresh = _body(nonce="nonce-too-many")
    assert (
        checks.check("POST", PATH, _headers(fresh, later), fresh, later).nonce == "nonce-too-many"
    )
    last = _body(nonce="nonce-last-one")
    assert _refused_at(checks, last, headers=_headers(last, later), now=later).code == "replayed"


def test_the_largest_body_and_numbers_pass_and_the_source_defaults_to_the_server() -> None:
    checks = InboundChecks("07", KEY, 300)
    body = _body(shoe=10**9, round=1, state="open", server_round="a" * 64)
    body += b" " * (16 * 1024 - len(body))  # exactly the largest body
    item = checks.check("POST", PATH, _headers(body), body, NOW).item
    assert item == BettingChanged(NOW, BetsState.OPEN, 10**9, 1, "a" * 64, "nonce-0001", "server")
    blank = _body(nonce="nonce-0002")
    item = checks.check("POST", PATH, {**_headers(blank), "X-Shoe-Server": ""}, blank, NOW).item
    assert isinstance(item, BettingChanged)
    assert (item.source, item.server_round) == ("server", "")


def test_a_controller_without_a_clock_takes_no_message() -> None:
    checks = InboundChecks("07", KEY, 300)
    body = _body()
    refused = _refused_at(checks, body, now=float("nan"))
    assert (refused.status, refused.code, refused.text) == (
        503,
        "no_clock",
        "the controller's clock gave no time",
    )
    dealer = json.dumps({"table_id": "07", "signed": "out", "nonce": "nonce-dealer"}).encode()
    refused = _refused_at(checks, dealer, path="/v1/tables/07/dealer", now=float("nan"))
    assert refused.code == "no_clock"


def test_a_dealer_message_is_the_servers_action_with_its_reason_and_checks() -> None:
    checks = InboundChecks("07", KEY, 300)
    path = "/v1/tables/07/dealer"

    def dealer(**fields: Any) -> bytes:
        return json.dumps({"table_id": "07", "nonce": "nonce-dealer", **fields}).encode()

    signed_in = dealer(dealer="D-1", signed="in")
    headers = {**_headers(signed_in), "X-Shoe-Server": "pit-7"}
    item = checks.check("POST", path, headers, signed_in, NOW).item
    assert item == SupervisorCommand(
        NOW,
        "dealer",
        "pit-7",
        "the table server signs the dealer in",
        {"id": "D-1", "out": False},
        key="nonce-dealer",
    )
    out = dealer(dealer="D-1", signed="out")
    item = checks.check("POST", path, _headers(out), out, NOW).item
    assert isinstance(item, SupervisorCommand)
    assert (item.by, item.reason, item.args) == (
        "server",
        "the table server signs the dealer out",
        {"id": "D-1", "out": True},
    )
    refusals = [
        (dealer(signed="in"), "dealer must be 1-64 letters, digits, . _ @ : -"),
        (dealer(dealer="", signed="in"), "dealer must be 1-64 letters, digits, . _ @ : -"),
        (dealer(dealer="D-1", signed="yes"), "signed must be 'in' or 'out'"),
        (
            dealer(dealer="D-1", signed="in", state="open"),
            "unknown field(s) ['state']; allowed: ['dealer', 'nonce', 'signed', 'table_id']",
        ),
    ]
    for body, text in refusals:
        refused = _refused_at(checks, body, path=path)
        assert (refused.status, refused.code, refused.text) == (400, "bad_request", text)
