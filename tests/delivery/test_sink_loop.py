"""What every sink's loop does (delivery/sink.py), with a consumer scripted here: its backoff,
faults, log lines and status as the pit boss and technician see them, partial confirms, a
consumer that goes back or runs ahead, a journal that cannot store a mark, and a stop at any
point. The kinds (push, amqp) have their own tests against real consumers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import structlog
from shoe_testkit.delivery import CONTROLLER_ID
from shoe_testkit.one_server import SERVER, delivered, open_journal
from shoe_testkit.waiting import PATIENCE_S, eventually

from shoe_controller.delivery.sink import (
    Backoff,
    Confirmed,
    RetryableError,
    Sink,
    SinkFault,
    SinkStatus,
)
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.store.journal import BacklogEvent, Journal, JournalError
from shoe_controller.vocab.events import iso_time

NOW = 1000.0  # the sink's clock: every time it notes is this
BACKOFF = Backoff(0.0123, 0.05)  # with rand 0.5: waits 0.0123, 0.01845, 0.0369 s

Answer = Any  # an int (resync), a Confirmed, an exception, or a callable giving one of them


class Scripted(Sink):
    """A kind whose consumer answers from a script, one answer per exchange."""

    kind = "scripted"
    resync_key = "holds_through"

    def __init__(self, backlog: Any, script: list[Answer], **options: Any) -> None:
        options.setdefault("clock", lambda: NOW)
        options.setdefault("rand", lambda: 0.5)
        super().__init__("consumer", backlog, backoff=BACKOFF, **options)
        self.script = script
        self.batches: list[list[int]] = []
        self.closed = False
        self.close_fails = False

    @property
    def target(self) -> str:
        return "scripted://consumer"

    def _batch_size(self) -> int:
        return 2

    async def _resync(self) -> int:
        return self._next()

    async def _send(self, batch: list[BacklogEvent]) -> Confirmed:
        self.batches.append([event.seq for event in batch])
        return self._next()

    def _next(self) -> Any:
        if not self.script:
            raise AssertionError("the consumer's script ran out")
        answer = self.script.pop(0)
        if callable(answer):
            answer = answer()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def _close(self) -> None:
        self.closed = True
        if self.close_fails:
            raise ConnectionResetError("the consumer hung up first")


class Backlog(SinkBacklog):
    """The journal's backlog, whose marks can be refused (a full disk) and whose reads can
    have something happen meanwhile."""

    def __init__(self, journal: Journal) -> None:
        super().__init__(journal, SERVER)
        self.refuse_marks = False
        self.unreadable: set[str] = set()  # of "last_seq", "delivered_through", "events"
        self.while_reading: Callable[[], None] | None = None

    def last_seq(self) -> int:
        if "last_seq" in self.unreadable:
            raise JournalError("database disk image is malformed")
        return super().last_seq()

    def delivered_through(self) -> int:
        if "delivered_through" in self.unreadable:
            raise JournalError("database disk image is malformed")
        return super().delivered_through()

    async def events_after(self, seq: int, limit: int) -> list[BacklogEvent]:
        if "events" in self.unreadable:
            raise JournalError("database disk image is malformed")
        events = await super().events_after(seq, limit)
        if self.while_reading is not None:
            self.while_reading()
        return events

    def mark_delivered(self, through: int) -> None:
        if self.refuse_marks:
            raise JournalError("disk full")
        super().mark_delivered(through)


def record(journal: Journal, count: int, shoe: int = 1) -> None:
    for _ in range(count):
        n = journal.reads.last_input() + 1
        event = {"type": "card.dealt", "at": iso_time(1_800_000_000 + n), "shoe": shoe,
                 "round": n, "data": {"input": n}}  # fmt: skip
        journal.record({"type": "card", "n": n}, [event], shoe)


@pytest.fixture
def journal(tmp_path: Path):
    with open_journal(tmp_path / "journal.db", CONTROLLER_ID) as opened:
        yield opened


async def _finish(sink: Sink, task: asyncio.Task[None]) -> SinkStatus:
    sink.stop()
    await asyncio.wait_for(task, PATIENCE_S)
    return sink.status()


def test_failures_back_off_raise_a_fault_once_and_clear_it_all_in_the_log(
    journal: Journal,
) -> None:
    record(journal, 3)
    refused = ("consumer_401", "the consumer refused our key")
    faults: list[SinkFault | None] = []
    confirmed: list[int] = []
    seen: set[tuple[str, int, float | None]] = set()
    now = [NOW]
    shown: list[SinkStatus] = []

    def stall() -> Confirmed:
        now[0] = NOW + 500
        return Confirmed(3)

    async def scenario() -> tuple[Scripted, SinkStatus]:
        sink = Scripted(
            Backlog(journal),
            [
                RetryableError("the consumer is down"),
                RetryableError("refused", fault=refused),
                RetryableError("refused again", fault=refused),
                0,
                Confirmed(2),
                Confirmed(3),
                Confirmed(1, gap=True),  # the consumer asks for 2.. again (a 409)
                Confirmed(3),
                stall,  # later, it takes nothing new
                lambda: (shown.append(sink.status()), Confirmed(5))[1],
            ],
            clock=lambda: now[0],
            on_fault=faults.append,
            on_delivered=confirmed.append,
        )
        assert repr(sink) == "Scripted('consumer', 'scripted://consumer')"
        task = asyncio.create_task(sink.run())
        while (status := sink.status()).delivered_through != 3:  # watch every turn
            seen.add((status.state, status.consecutive_failures, status.next_attempt_at))
            await asyncio.sleep(0)
        await eventually(lambda: sink.status().state == "idle", "idle")
        record(journal, 2)
        sink.notify()
        await eventually(lambda: sink.status().delivered_through == 5, "5 confirmed")
        await eventually(lambda: sink.status().state == "idle", "idle again")
        status = sink.status()
        await _finish(sink, task)
        return sink, status

    with structlog.testing.capture_logs() as logs:
        sink, status = asyncio.run(scenario())
    waits = [BACKOFF.delay(n, 0.5) for n in (1, 2, 3)]
    assert waits == [0.0123, 0.01845, 0.0369]
    assert logs == [
        {"sink": "consumer", "reason": "the consumer is down", "failures": 1, "delay_s": 0.012,
         "event": "delivery.retry", "log_level": "warning"},
        {"sink": "consumer", "code": "consumer_401", "text": "the consumer refused our key",
         "event": "delivery.fault", "log_level": "error"},
        {"sink": "consumer", "reason": "refused", "failures": 2, "delay_s": 0.018,
         "event": "delivery.retry", "log_level": "warning"},
        {"sink": "consumer", "reason": "refused again", "failures": 3, "delay_s": 0.037,
         "event": "delivery.retry", "log_level": "warning"},
        {"sink": "consumer", "code": "consumer_401", "event": "delivery.fault_cleared",
         "log_level": "info"},
        {"sink": "consumer", "holds_through": 0, "event": "delivery.resynced",
         "log_level": "info"},
        {"sink": "consumer", "was": 3, "now": 1, "event": "delivery.consumer_went_back",
         "log_level": "warning"},
        {"sink": "consumer", "reason": "the consumer confirmed nothing new", "failures": 1,
         "delay_s": 0.012, "event": "delivery.retry", "log_level": "warning"},
    ]  # fmt: skip
    # A confirmation of nothing new is no delivery: the last one stays the one before.
    assert shown[0].last_delivered_at == NOW
    assert shown[0].state == "sending"  # asked while the batch was out
    assert (shown[0].consecutive_failures, shown[0].delivered_through) == (1, 3)
    # While it waited, the status said so, and when the next attempt comes.
    for failures, wait in enumerate(waits, start=1):
        assert ("backoff", failures, NOW + wait) in seen
    fault = SinkFault("consumer_401", "the consumer refused our key", NOW)
    assert faults == [fault, None]  # raised once, though refused twice; then cleared
    assert fault.to_json() == {"code": "consumer_401", "text": fault.text, "since": NOW}
    assert confirmed == [0, 2, 3, 1, 3, 3, 5]
    assert sink.batches == [[1, 2], [3], [4, 5], [2, 3], [4, 5], [4, 5]]
    assert status == SinkStatus(
        name="consumer",
        kind="scripted",
        target="scripted://consumer",
        state="idle",
        delivered_through=5,
        last_seq=5,
        backlog=0,
        last_error="the consumer confirmed nothing new",
        last_error_at=NOW + 500,
        consecutive_failures=0,
        last_delivered_at=NOW + 500,
        next_attempt_at=None,
        fault=None,
    )
    assert sink.closed
    assert delivered(journal) == 5


def test_what_a_failed_send_confirmed_is_taken_and_not_sent_again(journal: Journal) -> None:
    record(journal, 3)

    async def scenario() -> tuple[Scripted, SinkStatus]:
        sink = Scripted(
            Backlog(journal),
            [0, RetryableError("the broker confirmed one of two", through=1), Confirmed(3)],
        )
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().delivered_through == 3, "3 confirmed")
        return sink, await _finish(sink, task)

    sink, status = asyncio.run(scenario())
    assert sink.batches == [[1, 2], [2, 3]]
    assert (status.last_error, status.consecutive_failures) == (
        "the broker confirmed one of two",
        0,
    )


def test_a_consumer_ahead_of_the_journal_is_a_fault_saying_so(journal: Journal) -> None:
    record(journal, 3)
    faults: list[SinkFault | None] = []

    async def scenario() -> SinkStatus:
        sink = Scripted(Backlog(journal), [9, 3], on_fault=faults.append)
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().state == "idle", "idle")
        return await _finish(sink, task)

    status = asyncio.run(scenario())
    assert status.last_error == "confirmed through 9 beyond last seq 3"
    assert faults == [
        SinkFault(
            "server_ahead",
            "consumer confirms through seq 9 but its last seq in the journal is 3: another"
            " controller or a replaced journal",
            NOW,
        ),
        None,
    ]
    assert status.delivered_through == 3


def test_a_mark_the_journal_cannot_store_is_kept_and_stored_later(journal: Journal) -> None:
    record(journal, 3)

    async def scenario() -> tuple[SinkStatus, SinkStatus]:
        backlog = Backlog(journal)
        sink = Scripted(backlog, [0, Confirmed(2), Confirmed(3), Confirmed(5)])
        task = asyncio.create_task(sink.run())
        await eventually(lambda: delivered(journal) == 3, "3 stored")
        await eventually(lambda: sink.status().state == "idle", "idle")
        backlog.refuse_marks = True
        sink.notify()  # nothing new: the stored mark is not written again
        await asyncio.sleep(0.05)
        quiet = sink.status()
        record(journal, 2)
        sink.notify()
        await eventually(lambda: sink.status().delivered_through == 5, "5 confirmed")
        await eventually(lambda: sink.status().state == "idle", "idle again")
        refused = sink.status()
        backlog.refuse_marks = False
        sink.notify()
        await eventually(lambda: delivered(journal) == 5, "5 stored")
        await _finish(sink, task)
        return quiet, refused

    quiet, refused = asyncio.run(scenario())
    assert (quiet.state, quiet.last_error, quiet.last_error_at) == ("idle", None, None)
    assert (refused.last_error, refused.last_error_at) == (
        "cannot store delivered_through: disk full",
        NOW,
    )
    assert refused.consecutive_failures == 0  # a delay in storing, not a failed delivery


def test_a_stop_while_it_reads_the_journal_ends_the_run(journal: Journal) -> None:
    async def scenario() -> SinkStatus:
        backlog = Backlog(journal)
        sink = Scripted(backlog, [0])
        backlog.while_reading = sink.stop  # nothing to send: it would go idle
        task = asyncio.create_task(sink.run())
        await asyncio.wait_for(task, PATIENCE_S)
        return sink.status()

    assert asyncio.run(scenario()).state == "stopped"


def test_a_stop_while_it_sends_after_a_wake_up_ends_the_run_after_that_batch(
    journal: Journal,
) -> None:
    async def scenario() -> Scripted:
        sink = Scripted(Backlog(journal), [0])
        sink.script.append(lambda: (sink.stop(), Confirmed(2))[1])
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().state == "idle", "idle")
        record(journal, 4)
        sink.notify()
        await asyncio.wait_for(task, PATIENCE_S)
        return sink

    sink = asyncio.run(scenario())
    assert sink.batches == [[1, 2]]  # not 3 and 4: it was asked to stop
    assert (sink.status().state, sink.status().delivered_through) == ("stopped", 2)


def test_a_sink_stopped_before_it_runs_does_nothing(journal: Journal) -> None:
    async def scenario() -> Scripted:
        sink = Scripted(Backlog(journal), [])  # any exchange would run out of script
        sink.notify()
        sink.stop()
        await asyncio.wait_for(sink.run(), PATIENCE_S)
        return sink

    sink = asyncio.run(scenario())
    assert (sink.batches, sink.status().state, sink.closed) == ([], "stopped", True)


def test_a_notify_from_another_thread_wakes_an_idle_loop_at_once(journal: Journal) -> None:
    """The daemon's commits come from the journal's thread: the sink must not wait for
    anything else to wake its loop (here nothing else would, for three seconds)."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        arrived: asyncio.Future[int] = loop.create_future()

        def on_delivered(through: int) -> None:
            if through == 2 and not arrived.done():
                arrived.set_result(through)

        sink = Scripted(Backlog(journal), [0, Confirmed(2)], on_delivered=on_delivered)
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().state == "idle", "idle")
        record(journal, 2)
        await asyncio.sleep(0.7)  # the backlog's timer for storing marks has fired
        asked = loop.time()
        threading.Timer(0.1, sink.notify).start()  # while the loop waits in its selector
        assert await asyncio.wait_for(arrived, 3.0) == 2
        assert loop.time() - asked < 1.5  # woken by the notify, not by the 3 s timeout
        await _finish(sink, task)

    asyncio.run(scenario())


def test_a_stop_while_it_backs_off_leaves_no_next_attempt(journal: Journal) -> None:
    async def scenario() -> SinkStatus:
        sink = Scripted(Backlog(journal), [])
        sink.script.append(lambda: (sink.stop(), RetryableError("down"))[1])
        task = asyncio.create_task(sink.run())
        await asyncio.wait_for(task, PATIENCE_S)
        return sink.status()

    status = asyncio.run(scenario())
    assert (status.state, status.consecutive_failures, status.next_attempt_at) == (
        "stopped",
        1,
        None,
    )
    assert (status.last_error, status.last_error_at) == ("down", NOW)


def test_before_it_runs_the_status_shows_the_journals_backlog(journal: Journal) -> None:
    record(journal, 5)
    journal.sinks.mark_delivered(SERVER, 2)
    backlog = Backlog(journal)
    sink = Scripted(backlog, [])
    fresh = SinkStatus(
        name="consumer",
        kind="scripted",
        target="scripted://consumer",
        state="starting",
        delivered_through=None,  # the consumer was not asked yet
        last_seq=5,
        backlog=3,  # from the journal's mark
        last_error=None,
        last_error_at=None,
        consecutive_failures=0,
        last_delivered_at=None,
        next_attempt_at=None,
        fault=None,
    )
    assert sink.status() == fresh
    assert sink.status().to_json()["backlog"] == 3
    # The journal unreadable: what was last known (nothing yet: none of its marks).
    backlog.unreadable = {"delivered_through"}
    assert Scripted(backlog, []).status() == replace(fresh, backlog=5)
    backlog.unreadable = {"last_seq", "delivered_through"}
    assert Scripted(backlog, []).status() == replace(fresh, last_seq=0, backlog=0)
    assert sink.status() == fresh  # it keeps what it read before
    backlog.close()


def test_a_logger_given_is_the_one_it_logs_to(journal: Journal) -> None:
    capturing = structlog.testing.CapturingLogger()
    logger = structlog.wrap_logger(capturing, processors=[])

    async def scenario() -> None:
        sink = Scripted(Backlog(journal), [RetryableError("down"), 0], logger=logger)
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().state == "idle", "idle")
        await _finish(sink, task)

    with structlog.testing.capture_logs() as elsewhere:
        asyncio.run(scenario())
    assert elsewhere == []
    assert [(call.method_name, call.kwargs.get("event")) for call in capturing.calls] == [
        ("warning", "delivery.retry"),
        ("info", "delivery.resynced"),
    ]
    assert capturing.calls[0].kwargs["sink"] == "consumer"


def test_a_journal_it_cannot_read_is_a_fault_until_it_reads_again(journal: Journal) -> None:
    record(journal, 2)
    faults: list[SinkFault | None] = []

    async def scenario() -> SinkStatus:
        backlog = Backlog(journal)
        backlog.unreadable = {"events"}
        sink = Scripted(backlog, [0, Confirmed(2)], on_fault=faults.append)
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().consecutive_failures >= 2, "2 failed reads")
        failing = sink.status()
        backlog.unreadable = set()
        await eventually(lambda: sink.status().delivered_through == 2, "2 confirmed")
        await _finish(sink, task)
        return failing

    failing = asyncio.run(scenario())
    assert faults == [
        SinkFault("journal", "cannot read the journal: database disk image is malformed", NOW),
        None,
    ]
    assert failing.last_error == "journal: database disk image is malformed"
    assert failing.state == "backoff"


def test_a_consumer_needing_pruned_events_is_told_it_lost_them(journal: Journal) -> None:
    record(journal, 2, shoe=1)
    ended = {"type": "shoe.ended", "at": iso_time(1_800_000_100), "shoe": 1, "round": None,
             "data": {}}  # fmt: skip
    journal.record({"type": "end"}, [ended], 1)
    record(journal, 1, shoe=2)
    faults: list[SinkFault | None] = []

    async def scenario() -> SinkStatus:
        sink = Scripted(Backlog(journal), [0, Confirmed(2), Confirmed(4)])
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().state == "idle", "all confirmed")
        await _finish(sink, task)
        assert journal.prune(max_age_s=0).shoes == (1,)
        again = Scripted(Backlog(journal), [0], on_fault=faults.append)  # it lost everything
        task = asyncio.create_task(again.run())
        await eventually(lambda: again.status().fault is not None, "a fault")
        return await _finish(again, task)

    status = asyncio.run(scenario())
    assert faults == [
        SinkFault(
            "events_pruned",
            "consumer needs seq 1 but the journal holds only from 4 (pruned); the consumer lost"
            " events",
            NOW,
        )
    ]
    assert status.last_error == "journal no longer holds seq 1"


def test_a_connection_that_fails_to_close_still_stops_the_sink(journal: Journal) -> None:
    async def scenario() -> Scripted:
        sink = Scripted(Backlog(journal), [0])
        sink.close_fails = True
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().state == "idle", "idle")
        await _finish(sink, task)
        sink.notify()  # the daemon may still say a commit came: nothing happens
        sink.stop()
        return sink

    sink = asyncio.run(scenario())
    assert (sink.closed, sink.status().state) == (True, "stopped")
    threading.Thread(target=sink.notify).start()  # from another thread, after its loop ended
    sink.notify()


def test_a_consumer_confirming_less_without_asking_for_it_again_took_nothing_new(
    journal: Journal,
) -> None:
    record(journal, 3)

    async def scenario() -> tuple[Scripted, SinkStatus]:
        sink = Scripted(Backlog(journal), [0, Confirmed(2), Confirmed(1), Confirmed(3)])
        task = asyncio.create_task(sink.run())
        await eventually(lambda: sink.status().delivered_through == 3, "3 confirmed")
        return sink, await _finish(sink, task)

    sink, status = asyncio.run(scenario())
    assert sink.batches == [[1, 2], [3], [2, 3]]  # 2 and 3 again, from where it stands
    assert (status.last_error, status.consecutive_failures) == (
        "the consumer confirmed nothing new",
        0,
    )


def test_a_backoff_needs_a_minimum_above_0_and_no_larger_than_its_maximum() -> None:
    assert Backoff(1.0, 1.0).delay(5, 0.0) == 1.0  # the same minimum and maximum: fixed
    for low, high in ((0.0, 1.0), (2.0, 1.0)):
        with pytest.raises(ValueError, match=r"^backoff needs 0 < backoff_min_s <= backoff_max_s$"):
            Backoff(low, high)


def test_a_kind_with_several_endpoints_shows_them_in_the_status(journal: Journal) -> None:
    class Clustered(Scripted):
        def _endpoint(self) -> dict[str, Any] | None:
            return {"node": "amqp://b", "failovers": ["amqp://a"]}

    status = Clustered(Backlog(journal), []).status()
    assert status.endpoint == {"node": "amqp://b", "failovers": ["amqp://a"]}
    assert status.to_json()["endpoint"] == {"node": "amqp://b", "failovers": ["amqp://a"]}
