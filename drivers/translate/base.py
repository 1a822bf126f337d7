"""The `Translator` interface: what the daemon and the monitor need from a device's translator.

`ScannerTranslator` and `ShufflerTranslator` both fit it (structurally, no base class): a
reference-protocol message in, the table's inputs out, with a small memory of the device
(last card counter, RFID UIDs seen, the shuffle in progress) that can be exported, restored
and rebuilt from the journal's inputs. Commands only one kind of device takes
(`ScannerTranslator.indicate`, `ShufflerTranslator.shuffle`) are not part of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from drivers.wire import messages as m
from shoe_controller.vocab.inputs import Input


class Translator(Protocol):
    """One reference-protocol device's messages as table inputs."""

    @property
    def kind(self) -> str | None:
        """The device's kind (`scanner.KINDS`), None until configured or said by HELLO."""
        ...

    def translate(self, message: m.Message, now: float) -> list[Input]:
        """The inputs one message stands for (often one, none for HEARTBEAT)."""
        ...

    def status_request(self) -> m.StatusRequest:
        """STATUS_REQUEST for `link.send`: the device answers with its state and faults."""
        ...

    def export_state(self) -> dict[str, Any]:
        """What the translator keeps, as JSON values."""
        ...

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take up a state from `export_state`; ValueError if it is not one."""
        ...

    def replay(self, inputs: Iterable[Input]) -> None:
        """Rebuild the state from stored inputs (the journal's, oldest first) of this device."""
        ...
