"""Logs under journald: the native journal protocol on a datagram socket the test binds, each
record at its syslog priority with structured fields (docs/install.md "Logs")."""

from __future__ import annotations

import io
import os
import socket
import struct
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from shoe_testkit.rig import TABLE_ID, RigOptions, TableRig

from shoe_controller.service import logs

GUARD_S = 20.0


def parse(datagram: bytes) -> dict[str, str]:
    """The native protocol back into fields: KEY=value lines and KEY\\n<le64 size>value\\n."""
    fields, rest = {}, datagram
    while rest:
        line, sep, tail = rest.partition(b"\n")
        if b"=" in line:
            key, _, value = line.partition(b"=")
            fields[key.decode()] = value.decode()
            rest = tail
        else:
            (size,) = struct.unpack("<Q", tail[:8])
            fields[line.decode()] = tail[8 : 8 + size].decode()
            assert tail[8 + size : 9 + size] == b"\n"
            rest = tail[9 + size :]
        assert sep
    return fields


@pytest.fixture
def journal() -> Iterator[tuple[str, socket.socket]]:
    with tempfile.TemporaryDirectory(prefix="jd-") as name:
        path = str(Path(name) / "journal.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        sock.settimeout(GUARD_S)
        try:
            yield path, sock
        finally:
            sock.close()
            structlog.reset_defaults()


def test_a_record_carries_its_priority_and_fields(journal: tuple[str, socket.socket]) -> None:
    path, sock = journal
    logs.configure(format="journald", journal_socket=path, table="07")
    log = structlog.get_logger("daemon")
    log.warning("event", type="procedure.alert", shoe=3, round=12,
                data={"code": "missed_card", "text": "card #9\nwas not scanned"})  # fmt: skip
    log.info("device connected", device="scanner", key="s3cr3t")
    alert, connected = parse(sock.recv(65536)), parse(sock.recv(65536))
    assert alert["PRIORITY"] == "4"  # journalctl -p warning shows it
    assert (alert["TABLE"], alert["SHOE"], alert["ROUND"]) == ("07", "3", "12")
    assert (alert["EVENT"], alert["CODE"], alert["MESSAGE"]) == (
        "procedure.alert",
        "missed_card",
        "event",
    )
    assert "card #9\\nwas not scanned" in alert["DATA"]  # JSON inside one field
    assert alert["SYSLOG_IDENTIFIER"] == "shoe-controller"
    assert connected["PRIORITY"] == "6"
    assert connected["DEVICE"] == "scanner"
    assert connected["KEY"] == "[redacted]"  # no secret, as in every log form


def test_a_value_with_a_newline_goes_in_the_binary_form() -> None:
    datagram = logs.journal_datagram({"MESSAGE": "two\nlines", "PRIORITY": "3"})
    assert datagram.startswith(b"MESSAGE\n" + struct.pack("<Q", 9) + b"two\nlines\n")
    assert parse(datagram) == {"MESSAGE": "two\nlines", "PRIORITY": "3"}


def test_in_squeeze_mode_no_card_reaches_the_journal(journal: tuple[str, socket.socket]) -> None:
    path, sock = journal
    logs.configure(format="journald", journal_socket=path, squeeze=True)
    structlog.get_logger().info("event", type="card.dealt", card="QH", cards=["QH"])
    fields = parse(sock.recv(65536))
    assert (fields["CARD"], fields["CARDS"]) == ("[squeeze]", "[squeeze]")
    assert b"QH" not in logs.journal_datagram(fields)


def test_without_the_journal_a_record_is_a_json_line_not_lost(tmp_path: Path) -> None:
    stream = io.StringIO()
    logs.configure(format="journald", journal_socket=str(tmp_path / "none.sock"), stream=stream)
    structlog.get_logger().error("journal cannot store", error="disk full")
    assert '"PRIORITY": "3"' in stream.getvalue()
    assert "disk full" in stream.getvalue()
    structlog.reset_defaults()


def test_auto_uses_the_journal_when_systemd_connected_stderr_to_it(tmp_path: Path) -> None:
    with (tmp_path / "stream").open("w") as stream:
        info = os.fstat(stream.fileno())
        os.environ["JOURNAL_STREAM"] = f"{info.st_dev}:{info.st_ino}"
        try:
            assert logs.under_journald(stream)
            os.environ["JOURNAL_STREAM"] = f"{info.st_dev}:{info.st_ino + 1}"
            assert not logs.under_journald(stream)  # another stream (a pipe after exec)
        finally:
            del os.environ["JOURNAL_STREAM"]


def _read_until_started(sock: socket.socket, seen: list[dict[str, str]]) -> None:
    while not any(fields.get("EVENT") == "controller.started" for fields in seen):
        seen.append(parse(sock.recv(65536)))


@pytest.mark.slow
def test_the_daemon_logs_to_the_journal_with_table_and_priority(
    journal: tuple[str, socket.socket],
) -> None:
    path, sock = journal
    seen: list[dict[str, str]] = []
    reader = threading.Thread(target=_read_until_started, args=(sock, seen))
    reader.start()
    with tempfile.TemporaryDirectory(prefix="jdr-") as name:
        options = RigOptions(log={"format": "journald", "journal_socket": path})
        rig = TableRig(Path(name), options).start()
        try:
            reader.join(GUARD_S)
            started = next(f for f in seen if f.get("EVENT") == "controller.started")
            assert (started["TABLE"], started["PRIORITY"], started["SHOE"]) == (TABLE_ID, "6", "1")
            assert started["MESSAGE"] == "event"
            assert '"boot": 1' in started["DATA"]
            assert "rebuilt" in " ".join(f.get("MESSAGE", "") for f in seen)
        finally:
            rig.close()
