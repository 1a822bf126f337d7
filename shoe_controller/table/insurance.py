"""Insurance (R16): the offers due at a stage of the round, and their windows closed or voided."""

from __future__ import annotations

from typing import Any

from shoe_controller.game.rules import InsuranceOffer, insurance_offers
from shoe_controller.table.books import Offer, RoundBook
from shoe_controller.table.context import Context
from shoe_controller.vocab.events import EventType


def due_offers(ctx: Context, current: RoundBook) -> list[InsuranceOffer]:
    """R16.1-R16.5: the insurance triggers of this stage; none in a trial or void round."""
    if not ctx.config.insurance or current.trial or current.insurance_void:
        return []
    count = len(current.draws)
    if count in current.stages_offered:
        return []
    current.stages_offered.append(count)
    return insurance_offers(current.cards())


def offer(ctx: Context, current: RoundBook, offers: list[InsuranceOffer]) -> None:
    for item in offers:
        current.offers.append(Offer(item))
        ctx.emit(EventType.INSURANCE_OFFERED, item.event_data())


def void_all(ctx: Context, reason: str) -> None:
    """R16.9: every offer of the round is void and no more are made this round."""
    current = ctx.book.round
    if current is None:
        return
    current.insurance_void = True
    _void(ctx, [item for item in current.offers if item.status != "voided"], reason)


def void_open(ctx: Context, reason: str) -> None:
    """The open windows are void: a card dealt into them (R16.8), or the round voided."""
    current = ctx.book.round
    if current is not None:
        _void(ctx, current.open_offers(), reason)


def close_open(ctx: Context, reason: str) -> None:
    """The open windows close: the dealer or the supervisor ends them; dealing goes on."""
    current = ctx.book.round
    if current is None:
        return
    for item in current.open_offers():
        item.status = "closed"
        ctx.emit(EventType.INSURANCE_CLOSED, _offer_data(item, reason))


def _void(ctx: Context, offers: list[Offer], reason: str) -> None:
    for item in offers:
        item.status = "voided"
        ctx.emit(EventType.INSURANCE_VOIDED, _offer_data(item, reason))


def _offer_data(item: Offer, reason: str) -> dict[str, Any]:
    return {"side": item.offer.side.value, "stage": item.offer.stage, "reason": reason}
