"""Holds: why dealing stops until a supervisor acts, and the holds machine kept in line with them.

A hold is a `books.Hold` in the shoe's list; the holds machine (lifecycle.py) is `held` while
any stands. `hold` adds one and says so; `settle_holds` brings the machine back in line after
a change; `lift` lets a supervisor's action step beneath the holds (void, change shoe, a
squeezed card confirmed) without resolving them.
"""

from __future__ import annotations

from typing import Any

from shoe_controller.table.books import Hold, HoldKind
from shoe_controller.table.context import Context
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.protocol import HOST_FAULT_BASE


def hold(
    ctx: Context,
    code: str,
    text: str,
    *,
    kind: HoldKind = HoldKind.PLAIN,
    security: bool = False,
    details: dict[str, Any] | None = None,
    fault: tuple[str, int] | None = None,
) -> None:
    """Stop the table for the supervisor: a security.alert, or a procedure.alert that needs
    the supervisor."""
    if not ctx.held:
        ctx.hold_go("hold")
    # A fault the host raised itself has no device to clear it: the supervisor's resume does.
    device_fault = fault is not None and fault[1] < HOST_FAULT_BASE
    ctx.book.holds.append(Hold(code, text, ctx.at, kind, security, fault, device_fault))
    if security:
        ctx.emit(EventType.SECURITY_ALERT, {"code": code, "details": details or {}})
    else:
        ctx.alert(code, text, True)


def fault_cleared(ctx: Context, key: tuple[str, int]) -> None:
    """A fault ended (the device's FAULT_CLEARED, or the supervisor for a host's own fault):
    `device.fault_cleared`, and the holds behind it may be resumed."""
    ctx.devices.faults.pop(key, None)
    # FAULT_CLEARED carries only the code: no severity or text to report (a replay must
    # give the same event, whatever the device status before the shoe).
    data = {"device": key[0], "code": key[1], "severity": None, "text": ""}
    ctx.emit(EventType.DEVICE_FAULT_CLEARED, data)
    for standing in ctx.book.holds:
        if standing.fault == key:
            standing.fault_active = False


def host_faults_behind(holds: list[Hold]) -> list[tuple[str, int]]:
    """The faults the host raised itself behind these holds: the supervisor clears them."""
    keys = [hold.fault for hold in holds if hold.fault is not None]
    return list(dict.fromkeys(key for key in keys if key[1] >= HOST_FAULT_BASE))


def has_hold(ctx: Context, code: str, fault: tuple[str, int] | None = None) -> bool:
    return any(
        hold.code == code and (fault is None or hold.fault == fault) for hold in ctx.book.holds
    )


def held_text(ctx: Context) -> str:
    codes = ", ".join(hold.code for hold in ctx.book.holds)
    return f"the table is held ({codes}): the supervisor resolves the hold first"


def lift(ctx: Context) -> None:
    """Let the lifecycle step beneath the holds; `settle_holds` holds the table again after."""
    if ctx.held:
        ctx.hold_go("lift")


def settle_holds(ctx: Context) -> bool:
    """Bring the holds machine in line with the holds; True while the table stays held."""
    if ctx.book.holds:
        if not ctx.held:
            ctx.hold_go("hold")
        return True
    if ctx.held:
        ctx.hold_go("release")
    return False


def hold_after_bug(ctx: Context) -> None:
    """The table could not rebuild itself after a bug: stop it for a person to look."""
    ctx.book.holds.append(Hold("internal_error", "internal error", ctx.at))
    if not ctx.held:
        ctx.hold_go("hold")
