"""The daemon: devices → table → journal → sinks, on one asyncio loop, under systemd.

Data flows one way (docs/architecture.md): a device runner turns frames into inputs and hands them
to
`submit` (through the store `_store_for` gives each runner), which applies and journals them
in one step (Controller) and only then lets the runner ACK; every commit wakes the sinks,
feeds the control socket's followers and updates the shoe's indicator. Nothing else writes
the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from drivers.session.spec import DeviceRole, DeviceTimings
from drivers.translate.registry import DeckRegistry
from shoe_controller import __version__
from shoe_controller.delivery.sink import Sink, SinkFault
from shoe_controller.service import journal_lock, logs, sink_kinds
from shoe_controller.service.checkpoints import daemon_checkpoints, signer_of
from shoe_controller.service.config import Config
from shoe_controller.service.control import ControlService
from shoe_controller.service.devices import DeviceRunner, StorageFailedError, Store
from shoe_controller.service.health import summary
from shoe_controller.service.inbound import serve_api
from shoe_controller.service.looplag import LoopLag
from shoe_controller.service.outcome import WRITTEN_ELSEWHERE, OutcomeUnknownExit
from shoe_controller.service.reload import reloaded_logs
from shoe_controller.service.sdnotify import Notifier
from shoe_controller.service.servers import (
    close_all,
    serve_control,
    serve_metrics,
    serve_scoreboard,
)
from shoe_controller.service.upkeep import Upkeep
from shoe_controller.store.controller import Controller
from shoe_controller.store.errors import JournalOutcomeUnknown, JournalWrittenElsewhere
from shoe_controller.store.journal import Journal, JournalError, StoredEvent
from shoe_controller.vocab.events import EventType
from shoe_controller.vocab.inputs import Input

if TYPE_CHECKING:
    from shoe_controller.service.metrics import DaemonMetrics

log = structlog.get_logger("daemon")
_T = TypeVar("_T")

JOURNAL_RETRY_S = 10.0  # a journal that cannot be opened is tried again this often


def _needs_a_person(event: StoredEvent) -> bool:
    if event.type == EventType.SECURITY_ALERT:
        return True
    return event.type == EventType.PROCEDURE_ALERT and bool(event.data.get("needs_supervisor"))


async def wait_pinging(notifier: Notifier, stop: asyncio.Event, seconds: float) -> None:
    """Wait `seconds` or until `stop`, pinging systemd's watchdog meanwhile: the daemon's
    wait before it tries a journal again. Upkeep starts only with a journal; without these
    pings WatchdogSec would kill a daemon that is only waiting for its disk, and the
    technician would read "watchdog timeout" instead of the journal's fault."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    step = notifier.watchdog_interval
    while not stop.is_set() and (left := deadline - loop.time()) > 0:
        if step is not None:
            notifier.watchdog()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), left if step is None else min(step, left))


class StartupError(Exception):
    """A configuration the daemon cannot run with (a bad key file); one clear line."""


class Daemon:
    """One table's controller process."""

    def __init__(
        self,
        config: Config,
        *,
        clock: Callable[[], float] = time.time,
        notifier: Notifier | None = None,
        device_options: DeviceTimings | None = None,
        usb_backend: Any = None,
        config_path: Path | None = None,
        registries: Mapping[str, DeckRegistry] | None = None,
    ) -> None:
        self._recovery = OutcomeUnknownExit()  # from the process's start: its minimum life
        self.config = config
        self._config_path = config_path  # SIGHUP reads its [log] section again
        self._registries = dict(registries or {})  # loaded by preflight, by device section
        self._clock = clock
        self._notifier = notifier or Notifier()
        self._device_options = device_options
        self._usb_backend = usb_backend
        self._stop = asyncio.Event()
        self._journal_fault: str | None = None
        self._control_fault: str | None = None
        self._service: ControlService | None = None  # the control answers, once serving
        self._told_ready = False
        self._listeners: list[Callable[[list[StoredEvent]], None]] = []
        self.failed = False  # a part of the daemon died: exit non-zero for systemd to restart
        self.controller: Controller | None = None
        self.sinks: list[Sink] = []
        self.devices: dict[DeviceRole, DeviceRunner] = {}
        self.metrics = self._make_metrics()  # None while [metrics] listen is empty
        self.loop_lag = LoopLag(on_lag=self.metrics.observe_loop_lag if self.metrics else None)
        # Checked at once: a key file that cannot be read is a configuration error.
        try:
            sink_kinds.check_secrets(config)
            self._signer = signer_of(config.journal)  # the checkpoints' (None: no key)
        except ValueError as error:
            raise StartupError(str(error)) from None

    # ---------------------------------------------------------------- life cycle

    def add_listener(self, listener: Callable[[list[StoredEvent]], None]) -> None:
        """Call `listener` with the events of every commit (control socket followers, demo)."""
        self._listeners.append(listener)

    def stop(self) -> None:
        if self._recovery.pending:
            return  # exiting for recovery: a clean stop would close (checkpoint) the journal
        self._stop.set()

    async def run(self) -> None:
        """Run until stop(), SIGTERM or SIGINT; a clean stop leaves nothing half-stored.
        JournalInUse, before anything is opened, while another daemon holds the journal."""
        with journal_lock.take(Path(self.config.journal.path)):  # for the process's whole life
            await self._run_locked()

    async def _run_locked(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop)
        loop.add_signal_handler(signal.SIGHUP, self._reopen_logs)
        journal = await self._open_journal()
        if journal is None:
            return
        try:
            await self._run_with(journal)
        finally:
            journal.close()
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(signum)

    async def _open_journal(self) -> Journal | None:
        """Open the journal, retrying while it cannot be (no crash loop: systemd sees us up)."""
        path = Path(self.config.journal.path)
        routes = sink_kinds.routes(self.config)
        return await self._retrying(
            lambda: Journal.open(path, self.config.controller_id, routes=routes),
            "journal cannot be opened",
        )

    async def _retrying(self, attempt: Callable[[], _T], failure: str) -> _T | None:
        """`attempt()` until the journal lets it through, or None once stopped meanwhile.

        A full disk or a damaged file must not become a crash loop: the daemon stays up,
        tells systemd (READY, with the fault as STATUS) and tries again every few seconds.
        """
        while not self._stop.is_set():
            try:
                result = attempt()
            except (JournalOutcomeUnknown, JournalWrittenElsewhere) as error:
                # Retrying through this connection would never settle it: the
                # same way out as while dealing, the exit, paced by the process's start.
                self._outcome_unknown(error)
                await asyncio.get_running_loop().create_future()  # the exit ends the process
            except JournalError as error:
                self._journal_fault = str(error)
                log.error(failure, error=str(error))
                status = f"journal fault: {error}"
                if not (self._told_ready and self._notifier.status(status)):
                    self._told_ready = self._notifier.ready(status) or self._told_ready
                await wait_pinging(self._notifier, self._stop, JOURNAL_RETRY_S)
                continue
            self._journal_fault = None
            return result
        return None

    async def _run_with(self, journal: Journal) -> None:
        on_commit_time = self.metrics.observe_commit if self.metrics else None
        controller = await self._retrying(
            lambda: Controller(
                self.config.procedures,
                journal,
                on_stored=self._after_commit,
                on_commit_time=on_commit_time,
            ),
            "journal cannot be read back",
        )
        if controller is None:
            return
        self.controller = controller
        recovery = controller.recovery
        if recovery.mismatch:
            log.warning("replay differs from the journal", detail=recovery.mismatch)
        log.info(
            "table rebuilt from the journal",
            inputs=len(recovery.inputs),
            shoe=recovery.shoe,
            state=controller.table.state,
        )
        self.sinks = sink_kinds.build(self.config, journal, on_fault=self._on_sink_fault)
        self._make_devices(journal, recovery.inputs)
        self._service = self._control_service(controller)
        self.add_listener(self._service.publish)
        control, self._control_fault = await serve_control(self.config, self._service)
        scoreboard = await serve_scoreboard(self.config, journal, self._listeners)
        metrics = await serve_metrics(self.config, self.metrics, self._listeners)
        api = None  # the inbound API (docs/inbound-api.md): its inputs come after the start
        try:
            started = await self._retrying(
                lambda: controller.start(__version__, self._clock()),
                "controller.started not stored",
            )
            if started is not None:
                api = await serve_api(self.config, self.submit, self._clock)
                await self._serve()
        finally:
            await close_all((api, control, scoreboard, metrics))

    def _control_service(self, controller: Controller) -> ControlService:
        """The control socket's answers, from the daemon's live parts."""
        return ControlService(
            controller,
            lambda: [sink.status() for sink in self.sinks],
            lambda: [runner.stats() for runner in self.devices.values()],
            self.config,
            self._clock,
            journal_fault=lambda: self._journal_fault,
            submit=lambda command: self.submit([command]),
            loop_stats=self.loop_lag.to_json,
        )

    def _make_devices(self, journal: Journal, history: Sequence[Input]) -> None:
        saved = journal.reads.link_states()
        for role in DeviceRole:
            section = getattr(self.config, role.value)
            if section is not None:
                self.devices[role] = DeviceRunner(
                    role,
                    section,
                    self._store_for(role.value),
                    saved.get(role),
                    history=history,
                    options=self._device_options,
                    clock=self._clock,
                    usb_backend=self._usb_backend,
                    registry=self._registries.get(role),
                    on_card_acked=self.metrics.observe_card_ack if self.metrics else None,
                )

    def _make_metrics(self) -> DaemonMetrics | None:
        """The Prometheus collector and its hooks, if [metrics] listen is set."""
        if not self.config.metrics.listen:
            return None
        # prometheus_client is loaded only by a daemon that serves metrics.
        from shoe_controller.service.metrics import DaemonMetrics  # noqa: PLC0415

        return DaemonMetrics(
            lambda: self._service.health_status() if self._service is not None else None,
            lambda: self.loop_lag,
            journal_fault=lambda: self._journal_fault,
            version=__version__,
            table_id=self.config.table.id,
            controller_id=self.config.controller_id,
        )

    async def _serve(self) -> None:
        """Run every part until stop(), or until one of them dies."""
        tasks = [asyncio.create_task(sink.run(), name=f"sink-{sink.name}") for sink in self.sinks]
        tasks += [
            asyncio.create_task(runner.run(), name=f"device-{name}")
            for name, runner in self.devices.items()
        ]
        assert self.controller is not None
        # The chain's signed checkpoints (docs/journal.md "Checkpoints"); None without a key.
        checkpoints = daemon_checkpoints(self._signer, self.controller, self.submit, self.config,
                                         clock=self._clock, listen=self.add_listener)  # fmt: skip
        upkeep = Upkeep(  # watchdog, STATUS, retention, the journal disk's space, checkpoints
            self.config.journal, self.controller, self._notifier, devices=self.devices,
            status_line=self.status_line, submit=self.submit, clock=self._clock,
            on_outcome_unknown=self._outcome_unknown, checkpoints=checkpoints,
        )  # fmt: skip
        tasks.append(asyncio.create_task(upkeep.run(self._stop), name="housekeeping"))
        lag = asyncio.create_task(self.loop_lag.run(), name="loop-lag")
        tasks.append(lag)
        # What start-up built (the modules, the rebuilt table) lives as long as the process:
        # kept out of the cycle collector's sight, so that its full passes, which stop the
        # loop and with it a card's ACK, stay short while dealing.
        gc.collect()
        gc.freeze()
        self._told_ready = self._notifier.ready(self.status_line()) or self._told_ready
        log.info(
            "running",
            table=self.config.table.id,
            devices=sorted(role.value for role in self.devices),
        )
        stop = asyncio.create_task(self._stop.wait(), name="stop")
        finished, _ = await asyncio.wait([stop, *tasks], return_when=asyncio.FIRST_COMPLETED)
        if stop not in finished:
            # A part of the daemon died: stop whole (watchdog pings end with the loop) so that
            # systemd restarts it and the journal rebuilds the table, rather than run half.
            broken = next(iter(finished))
            error = None if broken.cancelled() else broken.exception()
            log.critical("part of the daemon stopped", task=broken.get_name(), error=repr(error))
            self.failed = True
            self._stop.set()
        await stop
        self._notifier.stopping()
        log.info("stopping")
        for runner in self.devices.values():
            runner.stop()
        for sink in self.sinks:
            sink.stop()
        lag.cancel()  # it measures until cancelled; nothing of it is left to finish
        done, pending = await asyncio.wait(tasks, timeout=5.0)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.error("task failed", task=task.get_name(), error=repr(task.exception()))

    # ---------------------------------------------------------------- inputs in

    def _store_for(self, device: str) -> Store:
        def store(inputs: Sequence[Input], link_state: Mapping[str, Any] | None) -> None:
            try:
                self.submit(inputs, {device: link_state} if link_state is not None else None)
            except JournalError as error:
                raise StorageFailedError(str(error)) from error

        return store

    def submit(
        self, inputs: Sequence[Input], link_state: Mapping[str, Mapping[str, Any]] | None = None
    ) -> list[StoredEvent]:
        """Apply and journal inputs (devices and the control socket both come here, so the
        journal's faults show in one place); JournalError when they were not stored."""
        assert self.controller is not None
        if not inputs and link_state is None:
            return []
        try:
            stored = self.controller.submit_many(inputs, link_state)
        except (JournalOutcomeUnknown, JournalWrittenElsewhere) as error:
            self._outcome_unknown(error)  # the controller stores nothing more meanwhile
            raise
        except JournalError as error:
            self._journal_fault = str(error)
            log.error("journal cannot store; device not acknowledged", error=str(error))
            self._notifier.status(f"journal fault: {error}")
            raise
        if self._journal_fault is not None:
            log.info("journal stores again")
            self._journal_fault = None
        return stored

    def _outcome_unknown(self, error: JournalError) -> None:
        """A commit the disk failed: this connection cannot tell whether it is on disk, so
        never trust it nor do more I/O through it. Exit without closing, as PostgreSQL
        panics (service/outcome.py): systemd starts us afresh and recovery reads the file.
        The same for a file another process wrote: our counters no longer match it."""
        if isinstance(error, JournalWrittenElsewhere):
            self._journal_fault = f"written by another process, restarting: {error}"
            self._recovery.schedule(error, asyncio.get_running_loop(), why=WRITTEN_ELSEWHERE)
        else:
            self._journal_fault = f"a commit's outcome is unknown, restarting: {error}"
            self._recovery.schedule(error, asyncio.get_running_loop())
        self._notifier.status(f"journal fault: {self._journal_fault}")

    # ---------------------------------------------------------------- events out

    def _after_commit(self, stored: list[StoredEvent]) -> None:
        """What follows a commit runs after the device's ACK has gone: the
        listeners (delivery, the control socket's followers, logs, the shoe's lights) in
        the loop's next turn, in commit order."""
        asyncio.get_running_loop().call_soon(self._on_stored, stored)

    def _on_stored(self, stored: list[StoredEvent]) -> None:
        assert self.controller is not None
        for sink in self.sinks:
            sink.notify()
        squeeze = self.config.procedures.squeeze
        for event in stored:
            # What needs a person is a warning (journalctl -p warning shows the pit's alerts).
            report = log.warning if _needs_a_person(event) else log.info
            where = {"seq": event.seq, "type": event.type, "shoe": event.shoe, "round": event.round}
            if squeeze:  # R15: no card at info level, not even revealed ones or results
                code = event.data.get("code")
                report("event", **where, **({"code": code} if code else {}))
                log.debug("event data", seq=event.seq, data=event.data)
            else:
                report("event", **where, data=event.data)
        for listener in self._listeners:
            listener(stored)
        self._follow_indicator()
        if any(event.type == EventType.SHOE_ENDED for event in stored):
            self._ask_for_shuffle()

    def _follow_indicator(self) -> None:
        assert self.controller is not None
        for runner in self.devices.values():  # the one that shows lights keeps and compares
            runner.indicate(*self.controller.table.indicator)

    def _ask_for_shuffle(self) -> None:
        if self.config.procedures.mode == "batch_shuffler":
            for runner in self.devices.values():
                runner.shuffle(self.config.procedures.decks)

    def _on_sink_fault(self, fault: SinkFault | None) -> None:
        if fault is not None:  # the health model shows it from the sink's status
            log.error("a sink refuses our events", code=fault.code, text=fault.text)

    # ---------------------------------------------------------------- logs and status

    def _reopen_logs(self) -> None:
        """SIGHUP (`systemctl reload`): set the logs up again with the file's [log] section,
        so a technician can turn on debug without a restart; the rest needs a restart: the
        table settings in force (and journaled) stay those of the start (docs/config.md)."""
        settings = reloaded_logs(self.config, self._config_path)
        logs.apply(settings, squeeze=self.config.procedures.squeeze, table=self.config.table.id)
        log.warning("logs reopened", level=settings.level, format=settings.format)

    def status_line(self) -> str:
        """systemd's STATUS: the health model's verdict (as `shoectl check`), the devices and
        the loop's worst recent stall."""
        if self._service is None:
            return (
                "starting" if not self._journal_fault else f"JOURNAL FAULT: {self._journal_fault}"
            )
        status = self._service.health_status()
        parts = [f"{status['health']['status']}: {summary(status)}"]
        parts += [f"{name} {runner.status}" for name, runner in self.devices.items()]
        parts.append(f"loop lag {self.loop_lag.recent_worst * 1000:.0f} ms")
        if self._control_fault is not None:
            parts.append("no control socket")
        return "; ".join(parts)
