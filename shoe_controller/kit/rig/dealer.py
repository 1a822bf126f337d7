"""The dealer's part at the rig's table, in lock step with the journal: draw, reveal, change shoes.

A card is drawn only once the shoe's previous frames are acknowledged, which the daemon does
only after the journal stored them (docs/architecture.md), so no card is drawn into a shoe the
table has
closed. The simulators know no baccarat; the dealer does the rest (R15's REVEAL, a new shoe).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from drivers.sim.control import SimControlClient
from drivers.translate.registry import DeckRegistry
from shoe_controller.kit.rig.processes import START_TIMEOUT_S, RigError, RigProcesses
from shoe_controller.kit.rig.records import TableRecords
from shoe_controller.store.journal import StoredEvent
from shoe_controller.vocab.cards import Card, from_protocol
from shoe_controller.vocab.events import EventType


class Dealt(NamedTuple):
    """A card as the simulated shoe sent it: its counter and what it is."""

    counter: int
    card: Card


class Dealer:
    """Deals through the simulated shoe (and shuffler); waits on the records and the processes."""

    def __init__(
        self,
        shoe: SimControlClient,
        shuffler: SimControlClient | None,
        records: TableRecords,
        processes: RigProcesses,
        registry_dir: Path,
    ) -> None:
        self.shoe = shoe
        self.shuffler = shuffler
        self._records = records
        self._processes = processes
        self._registry_dir = registry_dir
        self._registry: DeckRegistry | None = None
        self._dealt_target = 0  # cards of this load the shoe was told to deal
        self._round = _RoundWatch()

    def deal(self, count: int = 1, *, wait: bool = True) -> list[StoredEvent]:
        """Draw `count` cards; returns the journal's new events.

        With `wait`, in lock step: each card is drawn once the shoe's last frame is
        acknowledged (so stored). Without, the shoe is told to deal them all at its pace
        and nothing waits (for a daemon that is down or a shoe that is unplugged); `settle()`
        waits for them afterwards.
        """
        if not wait:
            self._dealt_target = self.shoe.request("status")["dealt"] + count
            self.shoe.request("deal", count=count)
            return self._poll()
        events: list[StoredEvent] = []
        for _ in range(count):
            target = self.shoe.request("status")["dealt"] + 1
            self.shoe.request("deal", count=1)
            self._processes.wait_until(
                lambda n=target: self._stored(n), "the controller to store a card"
            )
            events += self._poll()
            if self._round.reveal_due:
                events += self.reveal()
        return events

    def reveal(self) -> list[StoredEvent]:
        """R15: the dealer presses REVEAL once the squeezed cards are open; returns the events."""
        self.shoe.request("button", button="REVEAL")
        return self.settle()

    def settle(self, timeout: float = START_TIMEOUT_S) -> list[StoredEvent]:
        """Wait until every card asked for is dealt and every device frame acknowledged."""

        def settled() -> bool:
            clients = [client for client in (self.shoe, self.shuffler) if client is not None]
            statuses = [client.request("status") for client in clients]
            if statuses[0]["dealt"] < self._dealt_target:
                return False
            return all(status["pending"] == 0 for status in statuses)

        self._processes.wait_until(settled, "the devices' frames to be acknowledged", timeout)
        return self._poll()

    def _stored(self, dealt: int) -> bool:
        status = self.shoe.request("status")
        return status["dealt"] >= dealt and status["pending"] == 0

    def _poll(self) -> list[StoredEvent]:
        """The journal's new events, followed by the dealer's eye on the round."""
        events = self._records.poll_journal()
        for event in events:
            self._round.follow(event)
        return events

    def deal_until_shoe_ends(self, max_cards: int = 1000) -> list[StoredEvent]:
        """Deal in lock step until the journal has one more shoe.ended; returns the events."""
        ended = self._records.shoes_ended
        events: list[StoredEvent] = []
        for _ in range(max_cards):
            events += self.deal(1)
            if self._records.shoes_ended > ended:
                return events
        raise RigError(
            f"no shoe.ended after {max_cards} cards; see the logs in {self._processes.directory}"
        )

    def change_shoe(self, *, load: bool = True) -> None:
        """The dealer's part at the end of a shoe: take it out and load the next one.

        With a batch shuffler the daemon asked it to shuffle at shoe.ended; the next shoe is
        loaded once that shuffle's deck check is stored.
        """
        self.shoe.request("remove")
        if load:
            self.load_shoe()

    def load_shoe(self) -> None:
        """Load a shoe; a batch-shuffler table first waits for a passing deck check."""
        if self.shuffler is not None:
            self._processes.wait_until(self._shuffled, "the shuffler's deck check")
        self.shoe.request("load")
        self._dealt_target = 0
        self.settle()

    def shuffle(self) -> None:
        """Start the shuffler by hand (a table's first shoe: nobody ended a shoe yet)."""
        assert self.shuffler is not None
        self.shuffler.request("shuffle")

    def _shuffled(self) -> bool:
        """A passing deck check is stored after the last shoe.ended (or ever, before one)."""
        events = self._records.journal_events()
        last_end = max((e.seq for e in events if e.type == EventType.SHOE_ENDED), default=0)
        return any(
            e.type == EventType.SHOE_SHUFFLED and e.seq > last_end and e.data["ok"] for e in events
        )

    def dealt_cards(self) -> list[Dealt]:
        """The cards of the shoe's current load as the simulator sent them (its `dealt`)."""
        return [
            Dealt(item["counter"], self._card(item)) for item in self.shoe.request("dealt")["cards"]
        ]

    def _card(self, item: Mapping[str, Any]) -> Card:
        if "uid" not in item:
            return from_protocol(item["rank"], item["suit"])
        if self._registry is None:
            self._registry = DeckRegistry.load(self._registry_dir)
        found = self._registry.lookup(item["uid"])
        if found is None:
            raise RigError(f"the simulator dealt UID {item['uid']}, not in its own registry")
        return found.card


class _RoundWatch:
    """What a squeeze dealer sees of the round: are there squeezed cards to open? (R15)"""

    def __init__(self) -> None:
        self.cards = 0
        self.hidden = 0

    def follow(self, event: StoredEvent) -> None:
        if event.type in (EventType.ROUND_STARTED, EventType.ROUND_RESULT, EventType.ROUND_VOIDED):
            self.cards = self.hidden = 0
        elif event.type == EventType.CARD_DEALT:
            self.cards += 1
            self.hidden += event.data.get("card") is None
        elif event.type == EventType.CARD_REVEALED:
            self.hidden = max(self.hidden - 1, 0)

    @property
    def reveal_due(self) -> bool:
        """The table waits for the reveal once four cards are out and some are hidden."""
        return self.cards >= 4 and self.hidden > 0
