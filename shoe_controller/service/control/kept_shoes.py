"""What a surveillance desk keeps of the latest shoes, so that `edge --shoe` and
`shuffle --shoe` still show a shoe's reports after it ended (until a restart)."""

from __future__ import annotations

from typing import Generic, TypeVar

KEPT_SHOES = 3  # the ended shoes kept besides the one in the book

T = TypeVar("T")


class KeptShoes(Generic[T]):
    """A value per shoe, for the KEPT_SHOES latest shoes."""

    def __init__(self) -> None:
        self._by_shoe: dict[int, T] = {}

    def __bool__(self) -> bool:
        return bool(self._by_shoe)

    def get(self, shoe: int) -> T | None:
        return self._by_shoe.get(shoe)

    def put(self, shoe: int, value: T) -> None:
        """Keep `value` for `shoe`; the oldest shoes beyond KEPT_SHOES are let go."""
        self._by_shoe[shoe] = value
        for old in sorted(self._by_shoe)[:-KEPT_SHOES]:
            del self._by_shoe[old]

    def shoe_asked(self, asked: int | None, in_book: int, book_has_one: bool) -> int:
        """The shoe a request means: the one it names; else the shoe in the book if it has
        a report or nothing is kept; else the latest kept."""
        if asked is not None:
            return asked
        if book_has_one or not self._by_shoe:
            return in_book
        return max(self._by_shoe)
