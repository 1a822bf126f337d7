"""A shoe's order held against the previous shoe's as its cards come: the live slug, the report.

docs/shuffle.md. `ShuffleWatch` is given the reference (the previous shoe's cards in
dealt order, burn included, and their RFID identities when the shoe reads tags) and is then
fed this shoe's cards one at a time, in dealt order. It keeps every statistic of
`shuffle_order` up to date in O(copies) per card, and says:
- (a) live, from `feed`: `SlugNotice("slug")` when the cards just dealt repeat a run of the
  reference `live_threshold` cards long (the run length a fair shuffle shows in fewer than
  `live_rate` of its shoes, 1 in 10,000 by default), with where it is in both shoes and the
  reference's next cards (what a team betting the slug expects); `SlugNotice("slug_ended")`
  when a card breaks it. `live` is the slug as it stands (it grows with every card that goes on).
- (b) at any moment, `report()`: each test with its value, p-value and threshold, the longest
  runs with their places, and the verdict (`verdict` below); `ShuffleReport.to_json()` is the
  `shoectl shuffle --json` object.

The verdict, from the tests of the report:
- `unshuffled`: some p-value below `unshuffled_rate` (1e-6): an order a fair shuffle gives in
  fewer than one shoe in a million;
- `suspect`: else some test at or past its threshold (every threshold is set for a per-shoe
  false-alarm rate of at most `alarm_rate`, 1e-3); a live slug is always one (its threshold
  is the longer run);
- `fair`: neither.
The thresholds of the run and new-deck-order tests are those of the whole shoe (the cards
expected, `shoe_cards`, or as many as the reference): those statistics only grow as cards
come, so an alarm mid-shoe stands at the end and the false-alarm rate holds for the shoe. The
identity tests (successions, rising sequences) are judged on the cards shared so far.

Squeeze (R15): the watch knows a card only once the caller passes it and computes nothing
from any card it was not given. The caller passes a card only when it is public (in squeeze
mode after its reveal, as the companion reads the journal's events), in dealt order (the burn,
then each round's P1 B1 P2 B2 P3 B3, R7), `None` for a card that left the shoe without a public
identity. What it names ahead of the cards (a slug's next cards) is the previous shoe's,
dealt and public already. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shoe_controller.game.surveillance.shuffle_null import FairShuffle
from shoe_controller.game.surveillance.shuffle_order import (
    CommonRun,
    Span,
    Stretch,
    diagonal_step,
    factory_step,
    longest_first,
    reference_places,
    rising_sequences_of,
    run_at,
    successions_of,
)
from shoe_controller.game.surveillance.shuffle_rates import ALARM_RATE, LIVE_RATE, UNSHUFFLED_RATE
from shoe_controller.vocab.cards import Card

FAIR, SUSPECT, UNSHUFFLED = "fair", "suspect", "unshuffled"
SLUG, SLUG_ENDED = "slug", "slug_ended"  # the events surveillance.slug, surveillance.slug_ended
LONGEST_RUN, FACTORY_STRETCH = "longest_run", "factory_stretch"
SUCCESSIONS, RISING_SEQUENCES = "successions", "rising_sequences"
RUN_LISTED = 3  # the report lists common runs from 3 cards (a fair shoe shows ~60 of 2)


@dataclass(frozen=True, slots=True)
class ShuffleSettings:
    """What the watch alarms at; every rate is per shoe, under a fair shuffle."""

    live_rate: float = LIVE_RATE
    alarm_rate: float = ALARM_RATE
    unshuffled_rate: float = UNSHUFFLED_RATE
    run_length: int = 2  # k of the common k-runs test (docs/shuffle.md: why 2)
    lookahead: int = 8  # the reference's cards a slug names as next
    runs_listed: int = 5  # the longest common runs in a report
    shoe_cards: int | None = None  # cards this shoe will deal; None: as many as the reference

    def __post_init__(self) -> None:
        for name in ("live_rate", "alarm_rate", "unshuffled_rate"):
            rate = getattr(self, name)
            if not (isinstance(rate, float | int) and 0 < rate < 1):
                raise ValueError(f"{name} must be a rate between 0 and 1, got {rate!r}")
        for name, low in (("run_length", 1), ("lookahead", 0), ("runs_listed", 0)):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= low):
                raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
        if self.shoe_cards is not None and not (
            isinstance(self.shoe_cards, int) and self.shoe_cards >= 1
        ):
            raise ValueError(f"shoe_cards must be None or >= 1, got {self.shoe_cards!r}")


@dataclass(frozen=True, slots=True)
class Slug:
    """A run of this shoe repeating the reference, long enough to alarm, as it stands."""

    length: int
    this: Span  # positions in this shoe, from 1
    previous: Span  # positions in the reference
    next_cards: tuple[Card | None, ...]  # the reference's cards after the run

    def to_json(self) -> dict[str, Any]:
        return {
            "length": self.length,
            "this": list(self.this),
            "previous": list(self.previous),
            "next": [None if card is None else str(card) for card in self.next_cards],
        }


@dataclass(frozen=True, slots=True)
class SlugNotice:
    """A slug began (`slug`) or a card broke it (`slug_ended`); `card`: that card's position."""

    kind: str
    slug: Slug
    card: int


@dataclass(frozen=True, slots=True)
class TestResult:
    """One test: its value, p-value (None: no null for it here) and alarm threshold."""

    value: int
    p_value: float | None
    threshold: int | None
    below: bool = False  # alarms at or below the threshold (rising sequences), else at or above

    @property
    def alarmed(self) -> bool:
        if self.threshold is None:
            return False
        return 0 < self.value <= self.threshold if self.below else self.value >= self.threshold

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "p_value": self.p_value, "threshold": self.threshold}


def verdict(tests: Mapping[str, TestResult], settings: ShuffleSettings) -> str:
    """`unshuffled`, `suspect` or `fair` (the rule in this module's docstring)."""
    p_values = [test.p_value for test in tests.values() if test.p_value is not None]
    if any(p < settings.unshuffled_rate for p in p_values):
        return UNSHUFFLED
    return SUSPECT if any(test.alarmed for test in tests.values()) else FAIR


@dataclass(frozen=True, slots=True)
class ShuffleReport:
    """Everything the watch can say at one moment of the shoe."""

    shoe: int | None
    against: int | None
    cards_compared: int
    tests: Mapping[str, TestResult]
    runs: tuple[CommonRun, ...]  # the longest common runs, longest first
    factory: tuple[Stretch, ...]  # stretches in new-deck order at or past their threshold
    live: Slug | None
    verdict: str

    def to_json(self) -> dict[str, Any]:
        """`{"shoe", "against", "cards_compared", "tests", "runs", "verdict"}`."""
        return {
            "shoe": self.shoe,
            "against": self.against,
            "cards_compared": self.cards_compared,
            "tests": {name: test.to_json() for name, test in self.tests.items()},
            "runs": [run.to_json() for run in self.runs],
            "verdict": self.verdict,
        }


class ShuffleWatch:
    """This shoe's cards, fed in dealt order, against the previous shoe's (see the module)."""

    def __init__(
        self,
        reference: Sequence[Card | None],
        *,
        decks: int = 8,
        reference_uids: Sequence[Hashable | None] | None = None,
        settings: ShuffleSettings | None = None,
        null: FairShuffle | None = None,
    ) -> None:
        self.reference = tuple(reference)
        self.settings = settings or ShuffleSettings()
        self.null = null or FairShuffle.for_decks(decks)  # the shipped tables
        self._places = reference_places(self.reference)
        self._expected = self.settings.shoe_cards or len(self.reference)
        self.live_threshold = self.null.longest_run_threshold(
            self.settings.live_rate, self._expected, self.reference
        )
        self._count = 0
        self._last: Card | None = None
        # Common runs: those ending at the last card (reference end index -> length), the ones
        # closed (from RUN_LISTED cards), the longest closed, the count of k-runs.
        self._runs: dict[int, int] = {}
        self._closed: list[CommonRun] = []
        self._longest: CommonRun | None = None
        self._k_runs = 0
        self._slug: Slug | None = None
        self._slug_end = -1  # the reference index where the live slug ends
        # New-deck order: the open stretch (start index, direction), the longest closed, all
        # closed from 4 cards (a fair 8-deck shoe shows one in ~230).
        self._stretch_start, self._stretch_step = 0, 0
        self._stretches: list[Stretch] = []
        self._longest_stretch: Stretch | None = None
        # Identities: each reference tag's first index; tags seen here; the shared ones in
        # this shoe's order as reference indices.
        self._identified = reference_uids is not None
        self._reference_index: dict[Hashable, int] = {}
        for index, identity in enumerate(reference_uids or ()):
            if identity is not None:
                self._reference_index.setdefault(identity, index)
        self._seen: set[Hashable] = set()
        self._shared: list[int] = []
        self._thresholds: dict[int, tuple[int, int | None, int]] = {}

    @property
    def cards_compared(self) -> int:
        return self._count

    @property
    def live(self) -> Slug | None:
        """The slug under way, if any."""
        return self._slug

    def feed_many(
        self, cards: Sequence[Card | None], uids: Sequence[Hashable | None] | None = None
    ) -> list[SlugNotice]:
        """Feed a round's cards (or any number) in dealt order; the notices of them all."""
        if uids is not None and len(uids) != len(cards):
            raise ValueError(f"{len(cards)} cards but {len(uids)} identities")
        notices: list[SlugNotice] = []
        for index, card in enumerate(cards):
            notices += self.feed(card, None if uids is None else uids[index])
        return notices

    def feed(self, card: Card | None, uid: Hashable | None = None) -> list[SlugNotice]:
        """Take this shoe's next card (None: left unidentified) and its tag; what it raised."""
        if card is not None and not isinstance(card, Card):
            raise TypeError(f"a card or None, got {card!r}")
        index = self._count
        self._count += 1
        following = diagonal_step(self._runs, card, self._places)
        for place, length in self._runs.items():
            if place + 1 not in following:
                self._close_run(run_at(index - 1, place, length))
        self._runs = following
        self._k_runs += sum(length >= self.settings.run_length for length in following.values())
        notices = self._live_step(index)
        self._factory_step(index, card)
        self._last = card
        if self._identified and uid is not None and uid not in self._seen:
            self._seen.add(uid)
            if uid in self._reference_index:
                self._shared.append(self._reference_index[uid])
        return notices

    def _close_run(self, run: CommonRun) -> None:
        if run.length >= RUN_LISTED:
            self._closed.append(run)
        if self._longest is None or _run_key(run) < _run_key(self._longest):
            self._longest = run

    def _slug_at(self, index: int, place: int, length: int) -> Slug:
        run = run_at(index, place, length)
        following = self.reference[place + 1 : place + 1 + self.settings.lookahead]
        return Slug(length, run.this, run.previous, following)

    def _live_step(self, index: int) -> list[SlugNotice]:
        notices = []
        if self._slug is not None:
            if self._slug_end + 1 in self._runs:
                self._slug_end += 1
                self._slug = self._slug_at(index, self._slug_end, self._runs[self._slug_end])
                return notices
            notices.append(SlugNotice(SLUG_ENDED, self._slug, index + 1))
            self._slug = None
        long_enough = [
            (-length, place)
            for place, length in self._runs.items()
            if length >= self.live_threshold
        ]
        if long_enough:
            _, self._slug_end = min(long_enough)
            self._slug = self._slug_at(index, self._slug_end, self._runs[self._slug_end])
            notices.append(SlugNotice(SLUG, self._slug, index + 1))
        return notices

    def _factory_step(self, index: int, card: Card | None) -> None:
        step = factory_step(self._last, card)
        if step and self._stretch_step in (0, step):
            self._stretch_step = step
            return
        self._close_stretch(index)
        self._stretch_start, self._stretch_step = (index - 1, step) if step else (index, 0)

    def _close_stretch(self, end: int) -> None:
        """Close the open stretch, the cards from its start to index `end` - 1."""
        length = end - self._stretch_start
        if not end or self._last is None or length < 1:
            return
        step = self._stretch_step
        stretch = Stretch(length, (self._stretch_start + 1, end), None if step == 0 else step > 0)
        # Every stretch is kept (a shoe has a few hundred at most): the report lists those at or
        # past the threshold, which a small shoe's null can put below any fixed length.
        self._stretches.append(stretch)
        if self._longest_stretch is None or _stretch_key(stretch) < _stretch_key(
            self._longest_stretch
        ):
            self._longest_stretch = stretch

    # ------------------------------------------------------------------------- the report

    def _open_runs(self) -> list[CommonRun]:
        return [run_at(self._count - 1, place, length) for place, length in self._runs.items()]

    def longest_run(self) -> CommonRun | None:
        """The longest common run so far (ties: the earliest here), open ones included."""
        candidates = [run for run in (self._longest, *self._open_runs()) if run is not None]
        return min(candidates, key=_run_key) if candidates else None

    def longest_stretch(self) -> Stretch | None:
        """The longest stretch in new-deck order so far, the open one included."""
        candidates = [self._longest_stretch, self._open_stretch()]
        found = [stretch for stretch in candidates if stretch is not None]
        return min(found, key=_stretch_key) if found else None

    def _open_stretch(self) -> Stretch | None:
        if not self._count or self._last is None:
            return None
        step, length = self._stretch_step, self._count - self._stretch_start
        return Stretch(
            length, (self._stretch_start + 1, self._count), None if not step else step > 0
        )

    def position_map(self) -> list[int]:
        """The shared cards' ranks in the reference's order, in this shoe's order."""
        order = sorted(range(len(self._shared)), key=self._shared.__getitem__)
        ranks = [0] * len(order)
        for rank, index in enumerate(order):
            ranks[index] = rank
        return ranks

    def _whole_shoe_thresholds(self, cards: int) -> tuple[int, int | None, int]:
        if cards not in self._thresholds:
            rate, k = self.settings.alarm_rate, self.settings.run_length
            self._thresholds[cards] = (
                self.null.longest_run_threshold(rate, cards, self.reference),
                self.null.common_runs_threshold(k, rate, cards, len(self.reference)),
                self.null.factory_threshold(rate, cards),
            )
        return self._thresholds[cards]

    def tests(self) -> dict[str, TestResult]:
        """Every test as it stands: rank-and-suit ones always, identity ones with tags."""
        cards, null, k = self._count, self.null, self.settings.run_length
        run_threshold, k_threshold, factory_threshold = self._whole_shoe_thresholds(
            max(cards, self._expected)
        )
        longest = self.longest_run()
        run = longest.length if longest else 0
        stretch = self.longest_stretch()
        factory = stretch.length if stretch else 0
        tests = {
            LONGEST_RUN: TestResult(
                run, null.longest_run_p(run, cards, self.reference), run_threshold
            ),
            f"common_runs_{k}": TestResult(
                self._k_runs,
                null.common_runs_p(k, self._k_runs, cards, len(self.reference)),
                k_threshold,
            ),
            FACTORY_STRETCH: TestResult(factory, null.factory_p(factory, cards), factory_threshold),
        }
        if self._identified:
            shared, rate = len(self._shared), self.settings.alarm_rate
            permutation = self.position_map()
            succeeded, rising = successions_of(permutation), rising_sequences_of(permutation)
            tests[SUCCESSIONS] = TestResult(
                succeeded,
                null.successions_p(succeeded, shared),
                null.successions_threshold(rate, shared),
            )
            tests[RISING_SEQUENCES] = TestResult(
                rising, null.rising_p(rising, shared), null.rising_threshold(rate, shared), True
            )
        return tests

    def report(self, shoe: int | None = None, against: int | None = None) -> ShuffleReport:
        """The tests, the longest runs and the verdict now (`shoe`, `against`: for the JSON)."""
        tests = self.tests()
        listed = [run for run in self._open_runs() if run.length >= RUN_LISTED]
        runs = longest_first([*self._closed, *listed])[: self.settings.runs_listed]
        stretches = [*self._stretches, self._open_stretch()]
        factory_threshold = tests[FACTORY_STRETCH].threshold or 0
        factory = sorted(
            (s for s in stretches if s is not None and s.length >= factory_threshold),
            key=_stretch_key,
        )
        return ShuffleReport(
            shoe,
            against,
            self._count,
            tests,
            tuple(runs),
            tuple(factory),
            self._slug,
            verdict(tests, self.settings),
        )


def _run_key(run: CommonRun) -> tuple[int, Span, Span]:
    return (-run.length, run.this, run.previous)


def _stretch_key(stretch: Stretch) -> tuple[int, Span]:
    return (-stretch.length, stretch.this)


def judge(
    cards: Sequence[Card | None],
    reference: Sequence[Card | None],
    *,
    uids: Sequence[Hashable | None] | None = None,
    reference_uids: Sequence[Hashable | None] | None = None,
    decks: int = 8,
    settings: ShuffleSettings | None = None,
    null: FairShuffle | None = None,
) -> tuple[ShuffleReport, list[SlugNotice]]:
    """A whole shoe at once: its report and every slug notice its cards raised."""
    watch = ShuffleWatch(
        reference, decks=decks, reference_uids=reference_uids, settings=settings, null=null
    )
    notices = watch.feed_many(cards, uids)
    return watch.report(), notices
