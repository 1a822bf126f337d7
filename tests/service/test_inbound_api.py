"""The inbound API's parts (issue 29, docs/inbound-api.md): the request checks without I/O
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
