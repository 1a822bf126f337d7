"""The device monitor as a real process against simulators on real ptys, and its line forms."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from shoe_testkit.device_kit import encode_message

from drivers.adapters import GARBLED
from drivers.monitor import Monitor, describe, input_record
from drivers.sim import ascii as sim
from drivers.sim.process import SimProcess
from drivers.translate.registry import DeckRegistry
from drivers.transports.serial import SerialTransport
from drivers.wire import messages as m
from drivers.wire.framing import encode_frame
from shoe_controller.cli.monitor import monitor_command
from shoe_controller.vocab.cards import parse_card
from shoe_controller.vocab.inputs import CardDrawn, CardsMissed, DeviceFault

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "config" / "decks"
MONITOR = (sys.executable, "-m", "shoe_controller.cli.monitor")
GUARD = 60  # seconds: only so a broken run cannot hang the suite


def monitor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MONITOR, *args],
        capture_output=True,
        text=True,
        timeout=GUARD,
        cwd=ROOT,
        check=False,
    )


@contextmanager
def monitor_process(*args: str, cli: bool = False) -> Iterator[subprocess.Popen[str]]:
    """The monitor running in the background, its stdout a pipe; killed if a test fails.
    `cli`: started as `shoe-controller monitor` is (python -m shoe_controller.cli monitor)."""
    command = (sys.executable, "-m", "shoe_controller.cli", "monitor") if cli else MONITOR
    process = subprocess.Popen([*command, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    guard = threading.Timer(GUARD, process.kill)  # only so a broken run cannot hang
    guard.start()
    try:
        yield process
    finally:
        guard.cancel()
        if process.poll() is None:
            process.kill()
            process.communicate()


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_input_record_collapses_card_flags() -> None:
    drawn = CardDrawn(at=1.5, device="scanner", card=parse_card("QH"), counter=12, face_up=True)
    assert input_record(drawn) == {
        "type": "card",
        "at": 1.5,
        "device": "scanner",
        "card": "QH",
        "counter": 12,
        "flags": ["face_up"],
    }
    unread = CardDrawn(at=2.0, device="scanner", card=None, uid="0A0B0C0D", foreign=True)
    record = input_record(unread)
    assert record["card"] is None
    assert record["uid"] == "0A0B0C0D"
    assert record["flags"] == ["foreign"]
    assert "counter" not in record


def test_describe_is_one_readable_line() -> None:
    lines = [
        describe(CardDrawn(at=0.0, device="scanner", card=parse_card("TD"), counter=3, multi=True)),
        describe(CardsMissed(at=0.0, device="scanner", count=2, after_counter=7)),
        describe(DeviceFault(at=0.0, device="shuffler", code=0x102, severity=3, text="dropped")),
    ]
    assert all("\n" not in line for line in lines)
    assert "card TD #3 MULTI" in lines[0]
    assert "MISSED 2 card(s) after #7" in lines[1]
    assert "FAULT 0x0102 severity 3: dropped" in lines[2]


def test_beetek_shoe_json_lines() -> None:
    deal = "burn:AS,4S,10H,unread,alarm:E3 Card Not Read,warn:1,raw: [Game]<Card:ZZ> ,QD"
    with sim.spawn(
        "--protocol", "beetek", "--cards", deal, "--pace", "0", "--chunk-max", "3",
        "--chunk-gap", "0.0005", "--noise", "0.5", "--seed", "2",
    ) as running:  # fmt: skip
        result = monitor("--protocol", "beetek", "--port", running.path, "--json", "--count", "9")
        assert running.wait_done() == 8
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    assert lines[0] == {"type": "link", "status": "connected", "detail": running.path}
    records = lines[1:-1]
    assert [r["type"] for r in records] == ["device_connected"] + ["card"] * 4 + ["fault"] * 3 + [
        "card"
    ]
    assert records[0]["vendor"] == "Beetek"
    cards = [(r["card"], r["flags"]) for r in records if r["type"] == "card"]
    assert cards == [("AS", ["burn"]), ("4S", []), ("TH", []), (None, []), ("QD", [])]
    faults = [(r["code"], r["severity"]) for r in records if r["type"] == "fault"]
    assert faults == [(0x0002, 2), (0x8201, 1), (GARBLED, 2)]
    assert "[Game]<Card:ZZ>" in records[7]["text"]
    stats = lines[-1]
    assert stats["type"] == "stats"
    assert stats["inputs"] == 9
    assert stats["adapter"]["cards"] == 4
    assert stats["adapter"]["unreadable"] == 1
    assert stats["adapter"]["garbled"] == 1


def test_linecode_shoe_text_lines() -> None:
    expected = sim.shuffled_shoe(1, seed=4)
    with sim.spawn(
        "--protocol", "linecode", "--decks", "1", "--seed", "4", "--pace", "0",
        "--end", "mixed", "--chunk-max", "4", "--chunk-gap", "0.0002",
    ) as running:  # fmt: skip
        result = monitor("--protocol", "linecode", "--port", running.path, "--count", "53")
    assert result.returncode == 0, result.stderr
    card_lines = [line for line in result.stdout.splitlines() if " card " in line]
    assert [line.split(" card ")[1].split()[0] for line in card_lines] == [
        str(card) for card in expected
    ]
    statistics = result.stdout.split("statistics: ", 1)[1].splitlines()
    assert statistics[0] == f"linecode on {running.path}"
    assert statistics[1] == "  inputs     53 (card 52, device_connected 1)"
    [adapter] = [line for line in statistics if line.startswith("  adapter    ")]
    assert ", cards 52, " in adapter
    assert ", garbled 0, " in adapter
    assert "{" not in result.stdout  # counters for a person, not a dict


def test_reference_protocol_rfid_shoe_with_the_registry(tmp_path: Path) -> None:
    """helper-1's SLP simulator (another process, real pty): every tag known, counters 1..52."""
    with SimProcess(
        "--device", "shoe", "--kind", "rfid", "--decks", "1", "--pace", "0.002", "--seed", "0",
        directory=tmp_path,
    ) as device:  # fmt: skip
        result = monitor(
            "--protocol", "slp", "--port", device.path, "--kind", "rfid",
            "--registry", str(SAMPLE), "--json", "--count", "56",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    records = [line for line in lines[:-1] if line["type"] != "link"]
    assert records[0]["type"] == "device_connected"
    assert records[0]["kind"] == "rfid"
    assert records[1] == {**records[1], "type": "shoe_state", "state": "loaded"}
    cards = [r for r in records if r["type"] == "card"]
    assert [c["counter"] for c in cards] == list(range(1, 53))
    assert all(c["card"] is not None and c["flags"] == [] for c in cards)
    registry = DeckRegistry.load(SAMPLE)
    assert all(str(registry.lookup(c["uid"]).card) == c["card"] for c in cards)
    assert len({c["card"] for c in cards}) == 52  # one deck: every card once
    assert not [r for r in records if r["type"] == "cards_missed"]
    stats = lines[-1]
    assert stats["link"]["delivered"] >= 56
    assert stats["link"]["acks_out"] >= stats["link"]["delivered"]
    assert stats["translator"]["uids_seen"] == 52


def test_without_a_registry_tags_are_shown_as_foreign(tmp_path: Path) -> None:
    with SimProcess(
        "--device", "shoe", "--kind", "rfid", "--decks", "1", "--pace", "0.002",
        directory=tmp_path,
    ) as device:  # fmt: skip
        result = monitor("--protocol", "slp", "--port", device.path, "--json", "--count", "5")
    records = [r for r in json_lines(result.stdout) if r["type"] == "card"]
    assert records
    assert all(r["card"] is None and r["flags"] == ["foreign"] and r["uid"] for r in records)


def test_sigterm_stops_and_prints_statistics() -> None:
    with (
        sim.spawn("--protocol", "linecode", "--cards", "AS,QH", "--pace", "0") as running,
        monitor_process("--protocol", "linecode", "--port", running.path, "--json") as process,
    ):
        assert process.stdout is not None
        seen = [json.loads(process.stdout.readline()) for _ in range(4)]
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=GUARD)
    assert [r.get("card") for r in seen if r["type"] == "card"] == ["AS", "QH"]
    assert process.returncode == 0
    stats = json.loads(rest.splitlines()[-1])
    assert stats["type"] == "stats"
    assert stats["adapter"]["cards"] == 2


def test_a_missing_port_is_retried_until_the_time_is_up(tmp_path: Path) -> None:
    result = monitor(
        "--protocol", "beetek", "--port", str(tmp_path / "no-such-tty"), "--json",
        "--seconds", "0.8",
    )  # fmt: skip
    assert result.returncode == 1  # the port never opened
    lines = json_lines(result.stdout)
    assert lines[0]["status"] == "open_failed"
    assert "no-such-tty" in lines[0]["detail"]
    assert lines[-1]["connection"]["open_failures"] >= 1
    assert lines[-1]["connection"]["opens"] == 0
    assert [line["status"] for line in lines[:-1]] == ["open_failed"]  # said once, not per retry


def test_no_time_to_watch_prints_only_the_statistics(tmp_path: Path) -> None:
    port = str(tmp_path / "no-such-tty")
    result = CliRunner().invoke(
        monitor_command, ["--protocol", "linecode", "--port", port, "--json", "--seconds", "0"]
    )
    assert result.exit_code == 1, result.output  # never opened
    [stats] = json_lines(result.output)
    assert stats["type"] == "stats"
    assert stats["connection"]["opens"] == stats["connection"]["open_failures"] == 0


def test_a_silent_slp_device_is_shown_as_lost_and_reopened() -> None:
    """docs/spec-protocol.md: no frame within the silence timeout is a lost device (here 0.2 s, not
    3)."""
    records: list[dict[str, Any]] = []

    def emit(record: dict[str, Any], _text: str) -> None:
        records.append(record)
        if sum(r.get("status") == "connected" for r in records) == 2:
            watcher.connection.stop()  # reopened: enough seen

    watcher = Monitor(
        "slp",
        SerialTransport("loop://"),  # opens fine, and no device ever speaks
        kind=None,
        registry=None,
        device=None,
        emit=emit,
        silence_timeout=0.2,
    )
    watcher.run(count=None, seconds=GUARD)  # the time limit only guards against a hang
    statuses = [(r["status"], r["detail"]) for r in records if r["type"] == "link"]
    assert [status for status, _ in statuses] == ["connected", "lost", "connected"]
    assert statuses[0][1] == "loop://"
    assert statuses[1][1].startswith("no frame for ")  # the port is named by "connected"
    stats = watcher.statistics()["connection"]
    assert (stats["opens"], stats["losses"], stats["silences"]) == (2, 1, 1)
    assert stats["last_error"] == statuses[1][1]


def test_the_count_can_end_the_monitor_in_the_middle_of_one_message() -> None:
    """--count 3 ends after the cards_missed of a card whose counter jumped (two inputs)."""
    frames = [
        encode_frame(seq, *encode_message(message))
        for seq, message in enumerate(
            [
                m.Hello(m.DeviceKind.OPTICAL_SHOE, 7, "sim", "loop", "SN", "1"),
                m.Card(1, rank=1, suit=0),
                m.Card(4, rank=12, suit=1),  # counters 2 and 3 missed
            ],
            start=1,
        )
    ]
    records: list[dict[str, Any]] = []

    def emit(record: dict[str, Any], _text: str) -> None:
        records.append(record)
        if record.get("status") == "connected":  # loop:// gives them back as the device's
            watcher.transport.write(b"".join(frames))

    watcher = Monitor(
        "slp",
        SerialTransport("loop://"),
        kind="optical",
        registry=None,
        device=None,
        emit=emit,
    )
    guard_fired = threading.Event()

    def guard() -> None:  # only so a broken run cannot hang: SIGINT stops the monitor
        guard_fired.set()
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(GUARD, guard)
    timer.start()
    try:
        watcher.run(count=3, seconds=None)
    finally:
        timer.cancel()
    assert not guard_fired.is_set()
    assert [r["type"] for r in records] == ["link", "device_connected", "card", "cards_missed"]
    assert watcher.statistics()["inputs"] == 3


def test_a_bad_registry_is_a_usage_error_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "deck.csv").write_text("uid_hex,rank,suit,deck_serial\n0A0B0C0D,99,0,D\n")
    result = CliRunner().invoke(
        monitor_command,
        ["--protocol", "slp", "--port", "loop://", "--registry", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert f"{tmp_path / 'deck.csv'}:2" in result.output


@pytest.mark.parametrize("port", ["usb:zz:1", "usb:1234"])
def test_bad_usb_port_is_a_usage_error(port: str) -> None:
    result = CliRunner().invoke(monitor_command, ["--protocol", "slp", "--port", port])
    assert result.exit_code == 2
    assert "usb:VID:PID" in result.output or "hex" in result.output


def test_unplug_and_replug_mid_shoe_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """The monitor reopens the vanished port with backoff; counters run on without a gap."""
    with (
        SimProcess(
            "--device", "shoe", "--kind", "optical", "--manual", "--decks", "1", "--seed", "3",
            "--pace", "0.01",
            directory=tmp_path,
        ) as device,
        monitor_process("--protocol", "slp", "--port", device.path, "--json") as process,
    ):  # fmt: skip
        assert process.stdout is not None
        records: list[dict[str, Any]] = []

        def read_cards(total: int) -> None:
            while sum(r["type"] == "card" for r in records) < total:
                records.append(json.loads(process.stdout.readline()))  # type: ignore[union-attr]

        read_cards(0)
        while not any(r.get("state") == "loaded" for r in records):
            records.append(json.loads(process.stdout.readline()))
        device.request("deal", count=10)
        read_cards(10)
        device.request("unplug", seconds=0.3)
        device.request("deal", count=10)
        read_cards(20)
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=GUARD)
    statuses = [r["status"] for r in records if r["type"] == "link"]
    assert statuses[0] == "connected"
    assert "lost" in statuses
    assert statuses[-1] == "connected"
    cards = [r for r in records if r["type"] == "card"]
    assert [c["counter"] for c in cards] == list(range(1, 21))
    assert not [r for r in records if r["type"] == "cards_missed"]
    stats = json.loads(rest.splitlines()[-1])
    assert stats["connection"]["opens"] >= 2
    assert stats["connection"]["losses"] >= 1


# ---- A held port named, exit status, --tap, --hex ------------------------------


def test_a_port_held_by_another_monitor_names_it_and_exits_1() -> None:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    try:
        with monitor_process("--protocol", "linecode", "--port", path, cli=True) as holder:
            assert holder.stdout is not None
            assert holder.stdout.readline() == f"-- connected: {path}\n"
            second = monitor("--protocol", "linecode", "--port", path, "--seconds", "0.6")
            third = monitor("--protocol", "linecode", "--port", path, "--json", "--seconds", "0.3")
            holder.send_signal(signal.SIGTERM)
            holder.communicate(timeout=GUARD)
    finally:
        os.close(master)
        os.close(slave)
    assert second.returncode == 1
    first_line = second.stdout.splitlines()[0]
    assert first_line.startswith(
        f"-- not opened: {path} is held by shoe-controller, pid {holder.pid} ("
    )
    assert "-m shoe_controller.cli monitor --protocol linecode" in first_line
    assert second.stdout.count("not opened") == 1  # not repeated at every retry
    [link] = [r for r in json_lines(third.stdout) if r["type"] == "link"]
    assert link["detail"].startswith(f"{path} is held by shoe-controller, pid {holder.pid}")
    assert link["error"].endswith("resource temporarily unavailable")  # the system's reason


def test_a_port_that_dies_is_exit_1_and_one_that_stays_is_0() -> None:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    os.close(slave)
    with monitor_process("--protocol", "linecode", "--port", path, "--json") as process:
        assert process.stdout is not None
        assert json.loads(process.stdout.readline())["status"] == "connected"
        os.write(master, b"A01\r\n")
        seen = [json.loads(process.stdout.readline()) for _ in range(2)]
        os.close(master)  # the cable pulled: the pty is gone
        lost = json.loads(process.stdout.readline())
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=GUARD)
    assert [r["type"] for r in seen] == ["device_connected", "card"]
    assert lost["status"] == "lost"
    assert process.returncode == 1
    assert json_lines(rest)[-1]["connection"]["losses"] >= 1


def slp_frames() -> list[bytes]:
    return [
        encode_frame(seq, *encode_message(message))
        for seq, message in enumerate(
            [
                m.Hello(m.DeviceKind.OPTICAL_SHOE, 7, "sim", "pty", "SN", "1"),
                m.Card(1, rank=12, suit=1),
            ],
            start=1,
        )
    ]


def read_all(fd: int, quiet_s: float) -> bytes:
    """What the other end wrote, until it has been quiet for `quiet_s`."""
    import select  # noqa: PLC0415 - only here

    data = b""
    while select.select([fd], [], [], quiet_s)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize("tap", [True, False])
def test_tap_listens_only_and_hex_shows_the_bytes(tap: bool) -> None:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    tty_raw(slave)
    frames = slp_frames()
    args = ["--protocol", "slp", "--port", path, "--kind", "optical", "--json", "--hex"]
    with monitor_process(*args, *(["--tap"] if tap else []), "--count", "2") as process:
        assert process.stdout is not None
        assert json.loads(process.stdout.readline())["status"] == "connected"
        for frame in frames:
            os.write(master, frame)
        out, _ = process.communicate(timeout=GUARD)
        answered = read_all(master, 0.3)
    os.close(master)
    os.close(slave)
    records = json_lines(out)
    assert process.returncode == 0
    rx = bytes.fromhex("".join(r["hex"] for r in records if r.get("direction") == "rx"))
    assert rx == b"".join(frames)
    assert all(isinstance(r["at"], float) for r in records if r["type"] == "bytes")
    cards = [r for r in records if r["type"] == "card"]
    assert [c["card"] for c in cards] == ["QH"]
    stats = records[-1]
    if tap:
        assert answered == b""  # no ACK, nothing at all written
        assert not [r for r in records if r.get("direction") == "tx"]
        assert stats["tap"]["held_back_bytes"] == 2 * len(
            encode_frame(0, m.MessageType.ACK, b"\x01")
        )
    else:
        acks = [encode_frame(0, m.MessageType.ACK, bytes([seq])) for seq in (1, 2)]
        assert answered == b"".join(acks)
        tx = bytes.fromhex("".join(r["hex"] for r in records if r.get("direction") == "tx"))
        assert tx == answered
        assert "tap" not in stats


def tty_raw(fd: int) -> None:
    import tty  # noqa: PLC0415 - only here

    tty.setraw(fd)


def test_hex_lines_look_like_pyserials_spy() -> None:
    from shoe_controller.cli.monitor import hex_lines  # noqa: PLC0415 - the function under test

    at = 1_800_000_000.25
    stamp = time.strftime("%H:%M:%S", time.localtime(at)) + ".250000"
    lines = hex_lines("rx", bytes(range(60, 80)), at)
    assert lines == [
        f"{stamp} RX 0000  3c 3d 3e 3f 40 41 42 43 44 45 46 47 48 49 4a 4b  <=>?@ABCDEFGHIJK",
        f"{stamp} RX 0010  4c 4d 4e 4f{' ' * 36}  LMNO",
    ]
    assert hex_lines("tx", b"\x00\x7f", at) == [f"{stamp} TX 0000  00 7f{' ' * 42}  .."]


def test_lock_holders_are_read_from_proc_locks() -> None:
    from drivers.transports.port_holder import lock_holders, program_name  # noqa: PLC0415 - under test

    locks = [
        "1: FLOCK  ADVISORY  WRITE 4242 00:1a:5 0 EOF",
        "1: -> FLOCK  ADVISORY  WRITE 77 00:1a:5 0 EOF",  # waiting, not holding
        "2: POSIX  ADVISORY  WRITE 99 00:1a:6 0 EOF",
        "3: FLOCK  ADVISORY  WRITE 4243 fd:01:5 0 EOF",
    ]
    assert lock_holders(locks, (0, 0x1A, 5)) == [4242]
    assert lock_holders(locks, (0xFD, 1, 5)) == [4243]
    assert lock_holders(locks, (0, 0x1A, 7)) == []
    assert program_name(["/usr/bin/python3", "-m", "shoe_controller.cli", "run"], "python3") == (
        "shoe-controller"
    )
    assert program_name(["/opt/shoe-controller/bin/shoe-controller", "run"], "shoe-controlle") == (
        "shoe-controller"
    )
    assert program_name(["minicom", "-D", "/dev/ttyUSB0"], "minicom") == "minicom"
