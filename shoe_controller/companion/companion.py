"""The surveillance companion: follows the table's events, analyses the next round exactly on the
cards not seen, and reports it to the controller (docs/surveillance.md).

`shoe-controller surveillance --config FILE` runs this in a process of its own, so that the
daemon never loads numpy and the analysis (a few milliseconds a round) never stands between
a card and its ACK. It reads only what the control socket shows: the journal's events, which
name a card only once it is public (R15), through one connection that follows them
(`events` with `follow`, from the end of the last shoe before the one in play), and sends a
`report` on a second connection after every round, after a burn and when a shoe opens
(`sightings.DUE_AFTER`). The daemon journals it; the table raises `surveillance.edge` when a
bet's player edge rises above the threshold. Catching up (at start, or after the daemon
restarted) analyses only the latest state; events that come together are analysed once.

`Analyst` is the part without I/O: events in, report requests out.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import structlog

from shoe_controller.companion.shuffle_feed import ShuffleAnalyst
from shoe_controller.game.odds import CARD_KINDS, Composition, OddsError
from shoe_controller.game.payouts import pay_table
from shoe_controller.game.surveillance.edge import bet_edges, cards_left_by_rank
from shoe_controller.game.surveillance.shuffle_watch import SLUG
from shoe_controller.game.surveillance.sightings import ShoeSightings
from shoe_controller.game.surveillance.slug_edge import next_round_worth
from shoe_controller.service.config import Config
from shoe_controller.service.control_client import AnswerError, Client, UnreachableError
from shoe_controller.table.config import SHUFFLER_DEALER
from shoe_controller.vocab.backoff import backoff_delay
from shoe_controller.vocab.cards import Card, parse_card
from shoe_controller.vocab.events import EventType

log = structlog.get_logger("surveillance")

RECONNECT_MIN_S, RECONNECT_MAX_S = 0.5, 10.0


# ---------------------------------------------------------------------- the analysis


@dataclass
class Analyst:
    """Events of the table in, the next round's report out (no I/O, no clock).

    `decks` and `table` (the pay table with the house's overrides, R14.2) say what a full shoe
    holds and what each bet pays; `big_small_last_round` is R14.1's round (config).
    """

    decks: int
    table: Mapping[str, Decimal]
    big_small_last_round: int
    shoes: dict[int, ShoeSightings] = field(default_factory=dict)
    due: int | None = None  # the shoe whose next round waits for an analysis

    def feed(self, event: Mapping[str, Any]) -> None:
        """One event of the stream (docs/spec-push-api.md form), in seq order."""
        shoe = event.get("shoe")
        if not isinstance(shoe, int) or str(event.get("type", "")).startswith("surveillance."):
            return
        sightings = self.shoes.get(shoe)
        if sightings is None:
            sightings = self.shoes[shoe] = ShoeSightings(shoe)
            for old in [number for number in self.shoes if number < shoe - 1]:
                del self.shoes[old]  # a batch shuffler's next shoe may come before the end
        if sightings.feed(event):
            self.due = shoe
        elif event.get("type") == EventType.SHOE_ENDED and self.due == shoe:
            self.due = None

    def composition(self, seen: Counter[Card]) -> Composition:
        """The cards not seen: a full shoe less every card out with a public identity. A
        card seen more often than the shoe holds (a confirmed duplicate) leaves none of it."""
        counts = [self.decks] * CARD_KINDS
        for card, times in seen.items():
            counts[card.index] = max(0, counts[card.index] - times)
        return Composition(tuple(counts))

    def report(self) -> dict[str, Any] | None:
        """The `report` request for the shoe that is due, of the moment it became due, or
        None (nothing due; fewer than the six cards a round can take). Clears what was due."""
        shoe, self.due = self.due, None
        sightings = self.shoes.get(shoe) if shoe is not None else None
        basis = sightings.basis if sightings is not None else None
        if sightings is None or basis is None:
            return None
        composition = self.composition(basis.seen)
        try:
            edges = bet_edges(
                composition,
                self.table,
                big_small_open=basis.big_small_open(self.big_small_last_round),
            )
        except OddsError:
            return None
        request = {
            "cmd": "report",
            "shoe": sightings.shoe,
            "round": basis.next_round,
            "after_seq": basis.seq,
            "cards_left": cards_left_by_rank(composition),
            "bets": {name: edge.to_json() for name, edge in edges.items()},
        }
        return request


def add_slug_worth(request: dict[str, Any], analyst: Analyst) -> None:
    """Each slug's notice of a `shuffle_report` request, and the slug under way (`live`), get
    the next round's worth of every bet, plain on the cards `analyst` saw and if the slug goes
    on (slug_edge.py)."""
    sightings = analyst.shoes.get(request["shoe"])
    basis = sightings.basis if sightings is not None else None
    composition = analyst.composition(basis.seen) if basis is not None else None
    big_small_open = basis is None or basis.big_small_open(analyst.big_small_last_round)
    holders = [notice for notice in request["notices"] if notice["kind"] == SLUG]
    if request.get("live"):
        holders.append(request["live"])
    for holder in holders:
        following = [None if text is None else parse_card(text) for text in holder["slug"]["next"]]
        holder["next_round"] = next_round_worth(
            composition, following, analyst.table, big_small_open=big_small_open
        )


def analyst_for(config: Config) -> Analyst:
    procedures = config.procedures
    return Analyst(procedures.decks, pay_table(config.payouts), procedures.big_small_last_round)


class Companion:
    """Follows one controller's events and reports each next round (the process's loop)."""

    def __init__(
        self,
        config: Config,
        *,
        socket_path: str | None = None,
        on_report: Callable[[Mapping[str, Any], Mapping[str, Any] | None], None] | None = None,
    ) -> None:
        self._config = config
        self._path = socket_path or config.control.socket
        self._on_report = on_report
        self._stopped = False
        self.analyst = analyst_for(config)
        self.shuffle = ShuffleAnalyst(config.procedures.decks)  # the shuffle watch

    def stop(self) -> None:
        self._stopped = True

    def run(self) -> None:
        """Follow and report until stopped; a lost controller is reached again (backoff)."""
        failures = 0  # sessions that ended since the last one that ran its course
        while not self._stopped:
            # No jitter: one companion, one controller; nobody else retries in step.
            delay = backoff_delay(failures + 1, 0.0, RECONNECT_MIN_S, RECONNECT_MAX_S)
            try:
                self._session()
                failures, delay = 0, RECONNECT_MIN_S
            except AnswerError as error:
                if error.code == "not_authorized":
                    raise
                log.warning("controller refused", code=error.code, text=error.text)
            except (UnreachableError, OSError, ValueError) as error:
                log.warning("controller not reachable", error=str(error), retry_s=delay)
            if self._stopped:
                return
            time.sleep(delay)
            failures += 1

    def _session(self) -> None:
        """One stretch with the controller: catch up on the shoe in play, then follow."""
        self.analyst = analyst_for(self._config)  # every session starts from the journal
        self.shuffle = ShuffleAnalyst(self._config.procedures.decks)
        after = self._start_after()
        following = Client(self._path)
        try:
            first = following.request({"cmd": "events", "follow": True, "after": after})
            live_from = int(first.get("from_seq", 0))
            caught_up = live_from <= after
            log.info("following", after_seq=after, live_from=live_from)
            while not self._stopped:
                for line in following.lines(wait=1.0):
                    event = line.get("event")
                    if isinstance(event, dict):
                        self.analyst.feed(event)
                        self.shuffle.feed(event)
                        caught_up = caught_up or int(event.get("seq", 0)) >= live_from
                if caught_up and self.analyst.due is not None:
                    self._report()
                if caught_up and self.shuffle.due is not None:
                    self._shuffle_report()
        finally:
            following.close()

    def _start_after(self) -> int:
        """Where to read from: the events since the end of the shoe before the one in play
        (the edge's: a shoe's first events come after it), and from before the previous
        shoe's `shoe.shuffled` (the shuffle watch's reference); a journal with fewer
        shoes is read from its start."""
        ended = self._ask({"cmd": "events", "types": ["shoe.ended"], "limit": 1})
        after = max((event["seq"] for event in ended.get("events", ())), default=0)
        shuffled = self._ask({"cmd": "events", "types": ["shoe.shuffled"], "limit": 2})
        seqs = [event["seq"] for event in shuffled.get("events", ())]
        return min(after, min(seqs) - 1) if len(seqs) == 2 else 0

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One request on a fresh connection (a report may come minutes after the last one:
        longer than the socket lets a connection idle)."""
        connection = Client(self._path)
        try:
            return connection.request(request)
        finally:
            connection.close()

    def _report(self) -> None:
        request = self.analyst.report()
        if request is None:
            return
        try:
            result: Mapping[str, Any] | None = self._ask(request)
        except AnswerError as error:
            if error.code != "stale":
                raise
            log.debug("report stale", shoe=request["shoe"], text=error.text)
            result = None
        else:
            assert result is not None
            raised = [e["data"]["bet"] for e in result.get("events", ()) if "data" in e]
            log.info("reported", shoe=request["shoe"], round=request["round"], events=raised)
        if self._on_report is not None:
            self._on_report(request, result)

    def _shuffle_report(self) -> None:
        request = self.shuffle.request()
        if request is None:
            return
        add_slug_worth(request, self.analyst)
        try:
            result = self._ask(request)
        except AnswerError as error:
            if error.code != "stale":
                raise
            log.debug("shuffle findings stale", shoe=request["shoe"], text=error.text)
            return
        self.shuffle.accepted(request)
        kinds = [event["type"] for event in result.get("events", ())]
        log.info("shuffle findings", shoe=request["shoe"], round=request["round"], events=kinds)


def nothing_to_watch(config: Config) -> str | None:
    """Why there is nothing to analyse at this table, or None."""
    if config.procedures.mode == SHUFFLER_DEALER:
        return (
            "a continuous shuffler-dealer puts every round's cards back (R2.5): each round is"
            " dealt from the full set, so no bet's edge ever moves"
        )
    return None
