"""When the daemon journals a signed checkpoint of its hash chain.

At every start-up, at every shoe's end, and every `[journal] checkpoint_every_s` while the
table deals (while records are stored: an idle table is not checkpointed again and again), the
daemon signs where the chain stands (store/checkpoint.py) and journals it through its one
`submit` as a `journal_checkpoint` input, so it is chained and goes to every sink as a
`journal.checkpoint` event: copies off the table PC from the moment they are delivered
(docs/journal.md "Checkpoints"). Never while a squeezed card is unrevealed (R15): the chain's
head then covers a card the table may not show, and the checkpoint waits for the reveal.

One signature (tens of microseconds) and one commit every few minutes, on the loop between two
inputs: the timer is the daemon's upkeep (service/upkeep.py), the shoe's end a commit listener.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog

from shoe_controller.service.config import Config, JournalSection
from shoe_controller.store.checkpoint import Signer
from shoe_controller.store.checkpoint_keys import load_signer
from shoe_controller.store.controller import Controller
from shoe_controller.store.journal import ChainPoint, JournalError, StoredEvent
from shoe_controller.vocab.events import EventType, iso_time
from shoe_controller.vocab.inputs import Input, JournalCheckpoint

log = structlog.get_logger("checkpoints")

START_UP, SHOE_END, PERIODIC = "start-up", "shoe end", "periodic"


def signer_of(section: JournalSection) -> Signer | None:
    """The checkpoints' key as `[journal] checkpoint_key` names it; None when the file is
    absent (no checkpoints: daemon_checkpoints says so); CheckpointError when it cannot be
    used. Silent: the daemon reads it before it holds the journal's lock, and a second
    daemon's one line is its refusal (service/journal_lock.py)."""
    path = Path(section.checkpoint_key)
    try:
        path.lstat()
    except FileNotFoundError:
        return None
    except OSError:
        pass  # load_signer names it
    return load_signer(path)


def daemon_checkpoints(
    signer: Signer | None,
    controller: Controller,
    submit: Callable[[Sequence[Input]], object],
    config: Config,
    *,
    clock: Callable[[], float],
    listen: Callable[[Callable[[list[StoredEvent]], None]], None],
) -> Checkpoints | None:
    """The daemon's checkpoints, told of every commit by `listen`; None without a key, said
    in the log at every start."""
    if signer is None:
        path = config.journal.checkpoint_key
        fix = f"shoe-controller key --new {path} (docs/journal.md, Checkpoints)"
        log.error("journal checkpoints are off: no key", checkpoint_key=path, fix=fix)
        return None
    checkpoints = Checkpoints(
        signer, controller, submit, controller_id=config.controller_id,
        every_s=config.journal.checkpoint_every_s, clock=clock,
    )  # fmt: skip
    listen(checkpoints.on_stored)
    return checkpoints


class Checkpoints:
    """The daemon's checkpoints: `tick()` from the upkeep, `on_stored` after every commit."""

    def __init__(
        self,
        signer: Signer,
        controller: Controller,
        submit: Callable[[Sequence[Input]], object],
        *,
        controller_id: str,
        every_s: float,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`submit(inputs)` journals (Daemon.submit: JournalError when it cannot); `clock` is
        the journal's time, `monotonic` the timer's."""
        self._signer = signer
        self._controller = controller
        self._submit = submit
        self._controller_id = controller_id
        self._every_s = every_s
        self._clock = clock
        self._monotonic = monotonic
        self._due: str | None = START_UP  # why the next one is to be taken, None: none due
        self._taken_at: float | None = None  # monotonic
        self._after: ChainPoint | None = None  # where the chain stood after the last one
        self.taken = 0

    @property
    def due(self) -> str | None:
        """Why a checkpoint waits to be taken (`start-up`, `shoe end`, `periodic`), or None."""
        return self._due

    def tick(self) -> None:
        """The upkeep's call, every few seconds: the periodic checkpoint, and any that waits."""
        taken_at = self._taken_at
        if (
            self._due is None
            and taken_at is not None
            and self._monotonic() - taken_at >= self._every_s
            and self._controller.journal.chain_point != self._after  # the table dealt on
        ):
            self._due = PERIODIC
        self._take()

    def on_stored(self, events: Sequence[StoredEvent]) -> None:
        """A commit's events: a shoe's end asks for a checkpoint; one that waited for a
        reveal, or for the journal, is taken now if it may be."""
        if any(event.type == EventType.SHOE_ENDED for event in events):
            self._due = SHOE_END
        self._take()

    def _take(self) -> None:
        reason = self._due
        if reason is None:
            return
        if self._controller.table.holds_unrevealed_cards:  # R15: the head covers them
            return  # still due: taken after the reveal
        point = self._controller.journal.chain_point
        self._due = None  # before the commit: its own listeners must not take it again
        try:
            at = self._clock()
            checkpoint = self._signer.sign(self._controller_id, point, iso_time(at))
            self._submit([JournalCheckpoint(at=at, **checkpoint.to_json())])
        except (JournalError, ValueError) as error:
            # The journal's faults are reported by submit; the checkpoint stays due.
            self._due = reason
            log.warning("journal checkpoint not stored; tried again", reason=reason,
                        error=str(error))  # fmt: skip
            return
        except Exception:
            # A checkpoint must never stop the table (nor the listeners after this one):
            # said, and tried again at the next interval or shoe's end.
            log.exception("journal checkpoint failed", reason=reason)
            self._taken_at = self._monotonic()  # the interval from now
            return
        self._taken_at = self._monotonic()
        self._after = self._controller.journal.chain_point
        self.taken += 1
        log.info("journal checkpoint", reason=reason, records=point.records,
                 input_no=point.input_no, seq=point.seq, head=point.head)  # fmt: skip
