"""`InboundServer`: the daemon's inbound API on `[api] listen` (aiohttp, over TLS when set),
where the table server says bets are open or closed and dealers sign in (docs/inbound-api.md).

A request is checked by `requests.InboundChecks` (path, signature, timestamp, nonce, body);
what passes is one input, stored through the daemon's `submit` like a card, so it is
journaled and replayed as every input is. Refused requests are logged and change nothing.
Answers: 200 when the table took it, 409 when the table refused it (its alert is journaled:
the wrong round, bets closed already ...), 401 / 400 / 404 / 413 before the table, 503 when
the journal cannot store.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from typing import Any

import structlog
from aiohttp import web

from shoe_controller.delivery.pushapi import KeyFileError, SigningKey
from shoe_controller.service.config import ApiSection, Config, listen_address
from shoe_controller.service.http_site import serve
from shoe_controller.service.inbound.requests import MAX_BODY, InboundChecks, Refused
from shoe_controller.store.journal import JournalError, StoredEvent
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import Input

log = structlog.get_logger("inbound")

Submit = Callable[[Sequence[Input]], list[StoredEvent]]
# The table's refusals of an inbound message: answered 409 with the journaled alert's text.
TABLE_REFUSALS = frozenset(
    {"betting_off", "wrong_round", "repeated_message", "bets_already_closed", "command_refused"}
)


class InboundServer:
    """The inbound API of one table on `section.listen`."""

    def __init__(
        self,
        section: ApiSection,
        table_id: str,
        key: SigningKey,
        submit: Submit,
        clock: Callable[[], float],
    ) -> None:
        self.host, self.port = listen_address(section.listen)
        self._section = section
        self._checks = InboundChecks(table_id, key, section.window_s)
        self._submit = submit
        self._clock = clock
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self._section.tls_cert else "http"
        return f"{scheme}://{host}:{self.port}"

    async def start(self) -> None:
        """Listen; OSError if the address is taken, ssl.SSLError for TLS files it cannot use."""
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = await serve(
            app, self.host, self.port, ssl_context=tls_context(self._section)
        )
        log.info("inbound API", url=self.url)

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        now = self._clock()
        try:
            accepted = self._checks.check(request.method, request.path, request.headers, body, now)
        except Refused as refused:
            log.warning(
                "inbound request refused",
                status=refused.status,
                code=refused.code,
                text=refused.text,
                peer=request.remote,
                path=request.path[:200],
            )
            return _answer(refused.status, {"error": refused.code, "text": refused.text})
        try:
            stored = self._submit([accepted.item])
        except JournalError as error:  # not stored: the server may send it again
            log.error("inbound message not stored", error=str(error))
            return _answer(503, {"error": "journal", "text": "not stored; send it again later"})
        self._checks.taken(accepted.nonce, now)
        refusal = next((event for event in stored if _refusal(event)), None)
        if refusal is not None:
            log.warning("inbound message refused by the table", code=refusal.data["code"],
                        text=refusal.data["text"], seq=refusal.seq)  # fmt: skip
            document = {"error": refusal.data["code"], "text": refusal.data["text"]}
            return _answer(409, {**document, "seq": refusal.seq})
        return _answer(
            200,
            {"accepted": True, "seqs": [event.seq for event in stored],
             "events": [event.type for event in stored]},
        )  # fmt: skip


def _refusal(event: StoredEvent) -> bool:
    return event.type == EventType.PROCEDURE_ALERT and event.data.get("code") in TABLE_REFUSALS


def _answer(status: int, document: dict[str, Any]) -> web.Response:
    return web.json_response(document, status=status)


def tls_context(section: ApiSection) -> ssl.SSLContext | None:
    """The server's TLS, when `tls_cert` is set; with `client_ca`, clients must show a
    certificate it signed (mutual TLS)."""
    if not section.tls_cert:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(section.tls_cert, section.tls_key)
    if section.client_ca:
        context.load_verify_locations(section.client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


async def serve_api(
    config: Config, submit: Submit, clock: Callable[[], float]
) -> InboundServer | None:
    """The inbound API, if `[api] listen` is set; the table runs without it rather than not
    at all (the start-up checks read its files before: docs/config.md)."""
    section = config.api
    if not section.listen:
        return None
    try:
        key = SigningKey.from_file(section.key_file)
        server = InboundServer(section, config.table.id, key, submit, clock)
        await server.start()
    except (KeyFileError, OSError, ssl.SSLError) as error:
        log.error("inbound API not available", listen=section.listen, error=str(error))
        return None
    return server
