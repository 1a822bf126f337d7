"""The daemon's inbound API (docs/inbound-api.md): the table server's word on the bets and the
dealers, signed as docs/spec-push-api.md signs; `requests` checks a request, `server` serves
them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shoe_controller.service.config import Config


async def serve_api(config: Config, submit: Callable[..., Any], clock: Callable[[], float]) -> Any:
    """The inbound API's server, started, if `[api] listen` is set (else None): aiohttp is
    loaded only by a daemon that serves it."""
    if not config.api.listen:
        return None
    from shoe_controller.service.inbound.server import serve_api as serve  # noqa: PLC0415

    return await serve(config, submit, clock)
