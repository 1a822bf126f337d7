"""The table's own count: every counter a device gives is checked before a card is believed.

Defence in depth (docs/table.md "Inputs the table checks"). The scanner driver already turns
a counter gap into `cards_missed`, but the table is also fed by the replay path (which is the
recovery path), by the vendor ASCII adapters (no counters at all) and, in a dispute, by a file
someone may have edited. So the table keeps the device's last counter itself and judges:
- a counter past the next one: the cards in between were not scanned (R10.5 placeholders);
- the last counter again with the same card: a double read, not dealt a second time;
- a counter going back, repeating for another card, or out of 1..cards in the shoe: refused;
- a cut card whose counter disagrees: reported, the table's own count stands (R2.1, R3.1);
- without counters, the same card read again within `double_read_window` seconds: held for
  the supervisor (the same card read twice, or a second copy?).
Pure: each check returns what is wrong (a `Refusal`) or what to do, and changes nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from shoe_controller.table.context import Context
from shoe_controller.vocab.inputs import CardDrawn, CardsMissed, CutCardSeen


class Refusal(NamedTuple):
    """Why an input is refused: the arguments of `Context.refuse`."""

    code: str
    text: str
    needs_supervisor: bool


def _out_of_range(ctx: Context, counter: int, what: str) -> Refusal | None:
    limit = ctx.config.cards_in_shoe
    if 1 <= counter <= limit:
        return None
    return Refusal(
        "invalid_counter",
        f"{what} counter {counter} is outside 1..{limit} (a {ctx.config.decks}-deck shoe):"
        " not dealt; supervisor: check the shoe, enter a real card with missed card=..",
        True,
    )


def card_gap(ctx: Context, item: CardDrawn) -> Refusal | int:
    """How many cards left unscanned just before this one (0 normally), or why it is refused."""
    counter = item.counter
    if counter is None:
        return 0
    refusal = _out_of_range(ctx, counter, "card")
    if refusal is not None:
        return refusal
    last = ctx.book.counter
    if last is None:
        return 0  # no base yet (a shoe opened by hand): the first counter sets it
    if counter == last and _same_read(ctx, item):
        return Refusal(
            "double_read",
            f"card counter {counter} came twice for the same card: a double read, not dealt again",
            False,
        )
    if counter <= last:
        return Refusal(
            "counter_went_back",
            f"card counter {counter} after {last} (the shoe counts +1 per card): not dealt;"
            " supervisor: if a card really left the shoe enter it with missed card=..;"
            " if the shoe keeps losing count, change_shoe",
            True,
        )
    return counter - last - 1


def _same_read(ctx: Context, item: CardDrawn) -> bool:
    last = ctx.book.last_read
    return last is not None and (last.card, last.uid) == (item.card, item.uid)


def missed_problem(ctx: Context, item: CardsMissed) -> Refusal | None:
    """Why a `cards_missed` report does not fit the table's count, or None."""
    last = ctx.book.counter
    if item.after_counter is None:
        return None
    if item.after_counter < 0:
        return _out_of_range(ctx, item.after_counter, "cards_missed after")
    refusal = _out_of_range(ctx, item.after_counter + item.count, "cards_missed last")
    if refusal is not None:
        return refusal
    if last is not None and item.after_counter != last:
        return Refusal(
            "counter_mismatch",
            f"the shoe reported {item.count} missed card(s) after card {item.after_counter},"
            f" but the last card it counted was {last}: not taken; the next card's counter"
            " shows any gap",
            True,
        )
    return None


def counter_after_missed(ctx: Context, item: CardsMissed) -> int | None:
    """The device's count once these missed cards are taken."""
    if item.after_counter is not None:
        return item.after_counter + item.count
    last = ctx.book.counter
    return None if last is None else last + item.count


def cut_disagreement(ctx: Context, item: CutCardSeen) -> str | None:
    """The alert text when the cut card's counter disagrees with the table's count.

    Either way the table's own count of cards out decides (R2.1): a counter ahead of it is not
    taken for missed cards here, since the driver reports those as `cards_missed` first.
    """
    book = ctx.book
    if item.counter is None:
        return None
    expected = book.counter if book.counter is not None else book.drawn
    if item.counter == expected:
        return None
    return (
        f"the cut card came out after card {item.counter} by the shoe's counter, but the"
        f" table counts {book.drawn} card(s) out: the table's count stands (R2.1, R3.1);"
        " supervisor: check the shoe"
    )


def suspected_double_read(ctx: Context, item: CardDrawn) -> bool:
    """Without a counter, the same card read again within the window looks like one card
    read twice. Off in squeeze mode: saying two reads are one card would tell a hidden card
    (R15); squeeze tables need a shoe that counts."""
    window = ctx.config.double_read_window
    if item.counter is not None or item.card is None or window <= 0:
        return False
    if ctx.config.squeeze and not ctx.continuous:
        return False
    last = ctx.book.last_read
    if last is None or last.at is None or last.counter is not None:
        return False
    return _same_read(ctx, item) and 0 <= item.at - last.at < window


def time_went_back(last_at: float | None, at: float) -> str | None:
    """The alert text when an input's time is before the last one's (a clock stepped back)."""
    if last_at is None or at >= last_at:
        return None
    return (
        f"this input's time is {last_at - at:.3f} s before the last input's: the clock went"
        " back; times in the journal are out of order from here; technician: check NTP"
    )
