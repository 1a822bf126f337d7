"""Simulated devices, sans-I/O: what each one says, in simulated time, against a real HostLink."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from drivers.sim.base import SimCard, SimConfig, SimDevice
from drivers.sim.devices import make_device
from drivers.sim.shoe import ShoeSim
from drivers.sim.shufflers import ShufflerDealerSim, ShufflerSim
from drivers.sim.uids import deck_serials, registry_rows, uid_for, write_registry
from drivers.wire.link import HostLink
from drivers.wire.link_state import LinkConfig
from drivers.wire.messages import (
    Button,
    ButtonId,
    Card,
    CardFlags,
    CutCard,
    DeviceKind,
    Fault,
    FaultCleared,
    Heartbeat,
    Hello,
    Indicate,
    IndicatePattern,
    Message,
    Severity,
    Shoe,
    ShoeState,
    Shuffle,
    ShuffleDone,
    ShuffleResult,
    ShuffleStarted,
    StatusRequest,
)
from shoe_controller.vocab.protocol import FaultCode


class Bench:
    """A device and a host link joined by a perfect wire, in simulated time."""

    def __init__(self, device: SimDevice) -> None:
        self.device = device
        self.host = HostLink()
        self.now = 0.0
        self.received: list[Message] = []
        device.connect(self.now)

    def run(self, seconds: float, step: float = 0.005) -> list[Message]:
        start = len(self.received)
        end = self.now + seconds
        while self.now < end:
            self.now += step
            self.exchange()
        return self.received[start:]

    def exchange(self) -> None:
        device, host = self.device, self.host
        device.tick(self.now)
        host.poll(self.now)
        for delivery in host.receive_data(device.output(self.now)):
            self.received.append(delivery.message)
            host.ack(delivery.handle)
        device.receive_bytes(host.bytes_to_send(), self.now)

    def send(self, message: Message) -> None:
        self.host.send(message)

    def cards(self) -> list[Card]:
        return [m for m in self.received if isinstance(m, Card)]


def config(**fields: object) -> SimConfig:
    base = {"pace": 0.01, "decks": 1, "seed": 5, "heartbeat": 1.0}
    base.update(fields)
    return SimConfig(**base)  # type: ignore[arg-type]


def test_optical_shoe_deals_a_whole_shuffled_shoe_with_cut_card() -> None:
    bench = Bench(make_device(config(kind=DeviceKind.OPTICAL_SHOE)))
    received = bench.run(1.0)
    assert received[0] == bench.device.hello()
    assert received[1] == Shoe(ShoeState.LOADED)
    cards = bench.cards()
    assert [c.counter for c in cards] == list(range(1, 53))
    assert sorted((c.rank, c.suit) for c in cards) == [
        (r, s) for r in range(1, 14) for s in range(4)
    ]
    cut_index = received.index(CutCard(52 - 14))
    assert received[cut_index - 1] == cards[52 - 14 - 1]  # right after card 38
    assert received[-1] == Shoe(ShoeState.EMPTY) or Shoe(ShoeState.EMPTY) in received


def test_same_seed_same_shoe_other_seed_other_shoe() -> None:
    def order(seed: int) -> list[tuple[int | None, int | None]]:
        bench = Bench(make_device(config(seed=seed)))
        bench.run(1.0)
        return [(c.rank, c.suit) for c in bench.cards()]

    assert order(1) == order(1)
    assert order(1) != order(2)


def test_rfid_shoe_sends_registry_uids(tmp_path: Path) -> None:
    device = make_device(config(kind=DeviceKind.RFID_SHOE, decks=2, pace=0.001))
    bench = Bench(device)
    bench.run(1.0)  # stop-and-wait: one frame per simulated step
    cards = bench.cards()
    assert len(cards) == 104
    assert all(c.uid is not None and c.rank is None for c in cards)
    paths = write_registry(tmp_path, device.config.deck_serials)
    registry: dict[str, tuple[int, int, str]] = {}
    for path in paths:
        with path.open(newline="") as handle:
            rows = list(csv.reader(handle))
        assert rows[0] == ["uid_hex", "rank", "suit", "deck_serial"]
        for uid_hex, rank, suit, serial in rows[1:]:
            registry[uid_hex] = (int(rank), int(suit), serial)
    seen = [registry[c.uid.hex().upper()] for c in cards if c.uid is not None]
    assert len(set(seen)) == 104  # every tag known, none twice: two full decks
    assert {serial for _, _, serial in seen} == set(device.config.deck_serials)


def test_uids_are_deterministic_and_distinct() -> None:
    serials = deck_serials("T", 8)
    uids = {
        uid_for(serial, rank, suit)
        for serial in serials
        for rank in range(1, 14)
        for suit in range(4)
    }
    assert len(uids) == 416
    assert uid_for("T-01", 1, 0) == uid_for("T-01", 1, 0)
    assert all(len(uid) == 7 and uid[0] == 0x04 for uid in uids)
    assert [row[1:3] for row in registry_rows("T-01")][:2] == [(1, 0), (1, 1)]


def test_scripted_cards_with_flags_gaps_and_cut() -> None:
    device = make_device(config(autoload=False))
    assert isinstance(device, ShoeSim)
    bench = Bench(device)
    device.load(
        [
            (1, 0),
            {"rank": 13, "suit": 3, "flags": ["FACE_UP"]},
            SimCard(5, 2, skip=2),
            {"rank": 9, "suit": 1, "flags": CardFlags.MULTI | CardFlags.LOW_CONFIDENCE},
        ],
        cut_after=2,
    )
    received = bench.run(0.2)
    assert [m for m in received if not isinstance(m, Heartbeat)][2:] == [
        Card(1, CardFlags.NONE, 1, 0),
        Card(2, CardFlags.FACE_UP, 13, 3),
        CutCard(2),
        Card(5, CardFlags.NONE, 5, 2),
        Card(6, CardFlags.MULTI | CardFlags.LOW_CONFIDENCE, 9, 1),
        Shoe(ShoeState.EMPTY),
    ]


def test_requested_flags_and_gap_apply_to_the_next_card_only() -> None:
    device = make_device(config(autodeal=False))
    assert isinstance(device, ShoeSim)
    bench = Bench(device)
    bench.run(0.1)
    device.flag_next(CardFlags.FACE_UP)
    device.skip_next(3)
    device.deal(2)
    bench.run(0.1)
    first, second = bench.cards()
    assert (first.counter, first.flags) == (4, CardFlags.FACE_UP)
    assert (second.counter, second.flags) == (5, CardFlags.NONE)
    assert len(device.cards) == 50


def test_script_repeating_a_card_gets_distinct_rfid_tags() -> None:
    device = make_device(config(kind=DeviceKind.RFID_SHOE, autoload=False, decks=8))
    assert isinstance(device, ShoeSim)
    bench = Bench(device)
    device.load([(1, 0), (1, 0), {"uid": "DEADBEEF"}])
    bench.run(0.1)
    uids = [c.uid for c in bench.cards()]
    serials = device.config.deck_serials
    assert uids == [uid_for(serials[0], 1, 0), uid_for(serials[1], 1, 0), bytes.fromhex("DEADBEEF")]


def test_bad_script_entries_are_refused() -> None:
    with pytest.raises(ValueError, match="rank and suit"):
        SimCard.parse({"rank": 3})
    device = make_device(config(autoload=False))
    assert isinstance(device, ShoeSim)
    with pytest.raises(ValueError, match="negative"):
        device.load([{"rank": 1, "suit": 0, "skip": -1}])


def test_heartbeat_every_second_while_idle_only() -> None:
    device = make_device(config(autoload=False))
    bench = Bench(device)
    received = bench.run(3.05)
    beats = [m for m in received if isinstance(m, Heartbeat)]
    assert len(beats) == 3
    assert [b.uptime_ms // 1000 for b in beats] == [1, 2, 3]
    assert isinstance(device, ShoeSim)
    device.load()  # dealing for 0.52 s: busy, no heartbeat
    assert not any(isinstance(m, Heartbeat) for m in bench.run(0.4))


def test_status_request_answers_shoe_then_active_faults() -> None:
    device = make_device(config(autoload=False))
    bench = Bench(device)
    device.raise_fault(FaultCode.JAM, Severity.ERROR, "jam")
    device.raise_fault(0x8001, Severity.WARNING, "vendor")
    device.clear_fault(FaultCode.JAM)
    bench.run(0.1)
    bench.send(StatusRequest())
    received = bench.run(0.1)
    assert received == [Shoe(ShoeState.REMOVED), Fault(0x8001, Severity.WARNING, "vendor")]
    assert FaultCleared(FaultCode.JAM) in bench.received


def test_indicate_is_recorded_and_button_sent() -> None:
    device = make_device(config(autoload=False))
    bench = Bench(device)
    bench.send(Indicate(IndicatePattern.DEAL, 3))
    device.press(ButtonId.REVEAL)
    received = bench.run(0.1)
    assert device.indication == Indicate(IndicatePattern.DEAL, 3)
    assert Button(ButtonId.REVEAL) in received


def test_the_shoe_shows_bets_open_and_sends_no_more_bets() -> None:
    # docs/spec-protocol.md: INDICATE 7 bets open, BUTTON 3 NO_MORE_BETS
    device = make_device(config(autoload=False))
    bench = Bench(device)
    bench.send(Indicate(IndicatePattern.BETS_OPEN, 0))
    device.press(ButtonId.NO_MORE_BETS)
    received = bench.run(0.1)
    assert device.indication == Indicate(IndicatePattern.BETS_OPEN, 0)
    assert device.status()["indication"] == [7, 0]
    assert Button(ButtonId.NO_MORE_BETS) in received
    assert Button(ButtonId.NO_MORE_BETS).encode_payload() == b"\x03"


def test_batch_shuffler_reports_the_deck_check() -> None:
    device = make_device(config(kind=DeviceKind.BATCH_SHUFFLER, shuffle_time=0.2, decks=8))
    assert isinstance(device, ShufflerSim)
    bench = Bench(device)
    bench.send(Shuffle(8))
    received = bench.run(0.5)
    assert ShuffleStarted(1, 8) in received
    done = next(m for m in received if isinstance(m, ShuffleDone))
    assert (done.shuffle_id, done.result, done.decks, done.total) == (1, ShuffleResult.OK, 8, 416)
    assert set(done.counts) == {8}
    device.set_next_check(missing=[(1, 0)], extra=[(13, 3), (13, 3)])
    device.start_shuffle(8)
    second = next(m for m in bench.run(0.5) if isinstance(m, ShuffleDone))
    assert second.result == ShuffleResult.CARDS_MISSING
    assert second.counts[ShuffleDone.index(1, 0)] == 7
    assert second.counts[ShuffleDone.index(13, 3)] == 10
    assert second.total == 417


def test_shuffler_dealer_shuffles_then_deals_face_up_without_cut_card() -> None:
    device = make_device(config(kind=DeviceKind.SHUFFLER_DEALER, shuffle_time=0.05, decks=1))
    assert isinstance(device, ShufflerDealerSim)
    bench = Bench(device)
    received = bench.run(1.3)
    assert isinstance(received[0], Hello)
    assert received[1] == ShuffleStarted(1, 1)
    assert isinstance(received[2], ShuffleDone)
    assert not any(isinstance(m, CutCard | Shoe) for m in received)
    cards = bench.cards()
    assert all(c.flags & CardFlags.FACE_UP for c in cards)
    # after 52 cards it shuffles again and the counter restarts at 1 after SHUFFLE_DONE
    second_done = [i for i, m in enumerate(received) if isinstance(m, ShuffleDone)][1]
    assert isinstance(received[second_done + 1], Card)
    assert received[second_done + 1].counter == 1  # type: ignore[union-attr]
    assert [c.counter for c in cards[:52]] == list(range(1, 53))


def test_reboot_sends_hello_with_a_new_boot_id_and_keeps_dealing() -> None:
    device = make_device(config(pace=0.02))
    bench = Bench(device)
    bench.run(0.3)
    old_boot = device.boot_id
    device.reboot(bench.now)
    bench.run(1.5)
    hellos = [m for m in bench.received if isinstance(m, Hello)]
    assert [h.boot_id for h in hellos] == [old_boot, device.boot_id]
    assert old_boot != device.boot_id
    counters = [c.counter for c in bench.cards()]
    assert sorted(set(counters)) == list(range(1, 53))  # nothing lost across the reboot


def test_device_recovers_after_link_down_with_the_same_boot_id() -> None:
    device = make_device(
        config(pace=0.02, link=LinkConfig(resend_after=0.05, max_resends=3), relink_after=0.2)
    )
    bench = Bench(device)
    bench.run(0.2)
    device.out_faults.silence(bench.now, 1.0)  # the host hears nothing for a second
    bench.run(2.0)
    assert device.link.stats.link_downs >= 1
    assert [c.counter for c in bench.cards()] == list(range(1, 53))
    assert len([m for m in bench.received if isinstance(m, Hello)]) == 1  # repeats are ACK-only
    assert bench.host.stats.hello_repeats >= 1


def test_line_faults_are_survived() -> None:
    device = make_device(config(pace=0.01))
    bench = Bench(device)
    device.out_faults.noise(200)
    device.out_faults.flip(5)
    device.out_faults.double(10)
    device.in_faults.drop(3)
    bench.run(1.5)
    assert [c.counter for c in bench.cards()] == list(range(1, 53))
    counters = device.out_faults.counters
    assert (counters.noise_bytes, counters.flipped_bytes, counters.doubled_frames) == (200, 5, 10)
    assert device.in_faults.counters.dropped_bytes == 3
