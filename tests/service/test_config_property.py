"""Every key of the configuration schema, broken in every way that applies, stops start-up with
one line naming it; no value whatever gets through the checks as anything but that line.

Values that passed the config check crashed the daemon at every restart. The cases
are generated from the schema (`config.schema()`: each section's dataclass fields and their
annotations) and go through `preflight.check(config.from_mapping(...))`, the steps
`shoe-controller run` takes after parsing the TOML; tests/system/test_startup_checks.py runs a
sample through the real process. docs/config.md lists the rules.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import socket
import tempfile
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shoe_testkit.config import Baseline

from shoe_controller.service.config import ConfigError, from_mapping, schema
from shoe_controller.service.preflight import Checked, check
from shoe_controller.store.checkpoint import public_pem
from shoe_controller.store.checkpoint_keys import load_signer

ROOT = os.geteuid() == 0
AS_ROOT = "root reads and writes whatever the mode says"

# Text keys that may be left empty ("" means "not given"); docs/config.md "Every key".
MAY_BE_EMPTY = {
    ("table", "controller_id"),
    *((device, key) for device in ("scanner", "shuffler") for key in ("usb", "usb_serial")),
    *((device, "registry") for device in ("scanner", "shuffler")),
    ("server", "ca_file"),
    ("server", "client_cert"),
    ("server", "client_key"),
    ("scoreboard", "listen"),  # empty: no page
    ("metrics", "listen"),  # empty: no metrics
    ("api", "listen"),  # empty: no inbound API
    ("api", "tls_cert"),  # empty: http
    ("api", "tls_key"),
    ("api", "client_ca"),  # empty: no client certificate asked
}
# The text keys that name something on disk, by what they name; every other text key is
# a name or a choice. A new text key must be listed in one of the two (test below).
FILE, SECRET, REGISTRY, JOURNAL, SOCKET = "file", "secret", "registry", "journal", "socket"
ABSENT_OR_SECRET = "absent or secret"  # the checkpoint key: absent, no checkpoints
PATH_KEYS = {
    ("server", "key_file"): SECRET,
    ("server", "ca_file"): FILE,
    ("server", "client_cert"): FILE,
    ("server", "client_key"): SECRET,
    ("scanner", "registry"): REGISTRY,
    ("shuffler", "registry"): REGISTRY,
    ("journal", "path"): JOURNAL,
    ("journal", "checkpoint_key"): ABSENT_OR_SECRET,
    ("control", "socket"): SOCKET,
    ("api", "key_file"): SECRET,
    ("api", "tls_cert"): FILE,
    ("api", "tls_key"): SECRET,
    ("api", "client_ca"): FILE,
}
NAME_KEYS = {
    ("table", "id"),
    ("table", "controller_id"),
    ("table", "burn"),
    ("table", "cut_card"),
    ("table", "mode"),
    *((device, key) for device in ("scanner", "shuffler") for key in ("port", "usb", "usb_serial")),
    ("server", "url"),
    ("server", "name"),  # refused in [server], whatever it is: that sink is "server"
    ("control", "supervisor_group"),
    ("control", "viewer_group"),
    ("log", "journal_socket"),  # journald's, absent off systemd: records fall back to stderr
    ("scoreboard", "listen"),
    ("metrics", "listen"),
    ("surveillance", "group"),
    ("table", "betting"),
    ("table", "early_card"),
    ("api", "listen"),
}
CHOICES = {  # str, one of a few
    ("table", "burn"),
    ("table", "cut_card"),
    ("table", "mode"),
    ("table", "betting"),
    ("table", "early_card"),
}


def schema_keys() -> list[tuple[str, str, Any]]:
    """(section, key, annotation) for every key of every section."""
    keys = []
    for section, classes in schema().items():
        for cls in classes:
            hints = typing.get_type_hints(cls)
            keys += [(section, spec.name, hints[spec.name]) for spec in dataclasses.fields(cls)]
    return keys


def breakages(section: str, key: str, hint: Any) -> Iterator[tuple[str, object]]:
    """(what is wrong, the value) for every way a key of this type can be wrong."""
    if typing.get_origin(hint) is Literal:
        yield "not one of the allowed values", "bogus"
        yield "wrong type", 7
    elif hint is str:
        yield "wrong type", 7
        yield "control character", "x\ny"
        yield "control character", "x\0y"
        if (section, key) not in MAY_BE_EMPTY:
            yield "empty", ""
        if (section, key) in CHOICES:
            yield "not one of the allowed values", "bogus"
    elif hint is bool:
        yield "wrong type", 1
        yield "wrong type", "yes"
    elif hint is int:
        yield "wrong type", "7"
        yield "wrong type", 7.5
        yield "out of range", -1
    elif typing.get_origin(hint) is tuple:  # a list of event type patterns
        yield "wrong type", "round.*"
        yield "wrong type", [7]
        yield "not a pattern", ["Round Result"]
        yield "control character", ["round.\n"]
    elif hint is float:
        yield "wrong type", "7"
        yield "wrong type", True
        for value in (-1.0, math.nan, math.inf, -math.inf):
            yield "out of range", value
    else:
        raise AssertionError(f"[{section}] {key}: no breakages for type {hint}")
    yield "wrong type", [1, 2]


VALUE_CASES = [
    pytest.param(section, key, value, id=f"{section}.{key}-{what}-{value!r}")
    for section, key, hint in schema_keys()
    for what, value in breakages(section, key, hint)
]


@pytest.fixture(scope="module")
def baseline() -> Iterator[Baseline]:
    with tempfile.TemporaryDirectory(prefix="cfgprop-") as name:  # short: socket paths
        yield Baseline.make(Path(name))


def refusal(raw: dict[str, dict[str, Any]]) -> str:
    """The one line the start-up checks refuse `raw` with."""
    with pytest.raises(ConfigError) as caught:
        check(from_mapping(raw))
    message = str(caught.value)
    assert not re.search(r"[\r\n]", message), message
    return message


def assert_names(message: str, section: str, key: str) -> None:
    assert f"[{section}]" in message, message
    assert re.search(rf"\b{re.escape(key)}\b", message), message


def test_the_baseline_passes_every_check(baseline: Baseline) -> None:
    checked = check(from_mapping(baseline.mapping()))
    assert isinstance(checked, Checked)
    assert set(checked.registries) == {"scanner", "shuffler"}
    assert checked.registries["scanner"].decks() == {"SIM0000-01": 52}


def test_every_text_key_is_classified() -> None:
    """A new text key must say whether it names a file (then it gets file breakages below)."""
    text_keys = {(section, key) for section, key, hint in schema_keys() if hint is str}
    assert text_keys <= set(PATH_KEYS) | NAME_KEYS, sorted(text_keys - set(PATH_KEYS) - NAME_KEYS)
    assert text_keys >= set(PATH_KEYS) | NAME_KEYS  # and none left over


@pytest.mark.parametrize(("section", "key", "value"), VALUE_CASES)
def test_every_key_broken_is_refused_naming_it(
    baseline: Baseline, section: str, key: str, value: object
) -> None:
    raw = baseline.mapping()
    raw.setdefault(section, {})[key] = value
    assert_names(refusal(raw), section, key)


# ---------------------------------------------------------------- keys that name files

# Makes a broken value in a fresh directory, given the baseline's valid file for the key.
Maker = Callable[[Path, Path], str]


def _missing(directory: Path, _original: Path) -> str:
    return str(directory / "not-there")


def _a_directory(directory: Path, _original: Path) -> str:
    (directory / "a-directory").mkdir()
    return str(directory / "a-directory")


def _under_a_file(directory: Path, _original: Path) -> str:
    (directory / "a-file").write_text("a file where a directory should be\n")
    return str(directory / "a-file" / "inside")


def _a_fifo(directory: Path, _original: Path) -> str:
    os.mkfifo(directory / "a-fifo")  # reading it would block start-up
    return str(directory / "a-fifo")


def _file(text: str | bytes, mode: int = 0o600) -> Maker:
    def make(directory: Path, _original: Path) -> str:
        path = directory / "given"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        path.chmod(mode)
        return str(path)

    return make


def _copy(mode: int) -> Maker:
    """The baseline's own (valid) file, with another mode."""

    def make(directory: Path, original: Path) -> str:
        path = directory / "copy"
        path.write_bytes(original.read_bytes())
        path.chmod(mode)
        return str(path)

    return make


def _public_key_file(directory: Path, original: Path) -> str:
    """The checkpoint key's public half where the signing key belongs."""
    path = directory / "public.pem"
    path.write_text(public_pem(load_signer(original).public_key))
    path.chmod(0o600)
    return str(path)


def _decks(*files: tuple[str, str | bytes], mode: int = 0o755) -> Maker:
    def make(directory: Path, _original: Path) -> str:
        folder = directory / "decks"
        folder.mkdir()
        for name, text in files:
            data = text if isinstance(text, bytes) else text.encode()
            (folder / name).write_bytes(data)
        folder.chmod(mode)
        return str(folder)

    return make


def _in_read_only_directory(directory: Path, _original: Path) -> str:
    (directory / "read-only").mkdir(mode=0o555)
    return str(directory / "read-only" / "journal.db")


def _sample_deck() -> str:
    return (Path(__file__).resolve().parents[2] / "config/decks/SIM0000-01.csv").read_text()


def _long_socket(directory: Path, _original: Path) -> str:
    return str(directory / ("s" * 120))


def _a_regular_file_at(directory: Path, _original: Path) -> str:
    (directory / "control.sock").write_text("not a socket\n")
    return str(directory / "control.sock")


FILE_BREAKAGES: dict[str, list[tuple[str, Maker, str | None]]] = {
    # kind: (what, make the value in a fresh directory, why it is skipped or None)
    FILE: [
        ("missing", _missing, None),
        ("a directory", _a_directory, None),
        ("under a file", _under_a_file, None),
        ("a fifo", _a_fifo, None),
        ("unreadable", _copy(0o000), AS_ROOT if ROOT else None),
    ],
    SECRET: [
        ("missing", _missing, None),
        ("a directory", _a_directory, None),
        ("under a file", _under_a_file, None),
        ("a fifo", _a_fifo, None),
        ("unreadable", _copy(0o000), AS_ROOT if ROOT else None),
        ("others may read", _copy(0o644), None),  # the valid file: only its mode is wrong
        ("others may write", _copy(0o602), None),
        ("others may execute", _copy(0o601), None),
    ],
    ABSENT_OR_SECRET: [
        ("a directory", _a_directory, None),
        ("under a file", _under_a_file, None),
        ("a fifo", _a_fifo, None),
        ("unreadable", _copy(0o000), AS_ROOT if ROOT else None),
        ("others may read", _copy(0o644), None),
        ("others may write", _copy(0o602), None),
        ("others may execute", _copy(0o601), None),
    ],
    REGISTRY: [
        ("missing", _missing, None),
        ("a file", _file(_sample_deck(), 0o644), None),
        ("no csv files", _decks(("readme.txt", "decks go here\n")), None),
        (
            "a bad row",
            _decks(("d.csv", "uid_hex,rank,suit,deck_serial\n04AABBCCDD,14,0,D\n")),
            None,
        ),
        ("too few fields", _decks(("d.csv", "04AABBCCDD,1,0\n")), None),
        ("no card rows", _decks(("d.csv", "uid_hex,rank,suit,deck_serial\n")), None),
        ("not UTF-8", _decks(("d.csv", b"04AABBCCDD,1,0,D\xff\n")), None),
        ("one deck twice", _decks(("a.csv", _sample_deck()), ("b.csv", _sample_deck())), None),
        ("unreadable", _decks(("d.csv", _sample_deck()), mode=0o000), AS_ROOT if ROOT else None),
    ],
    JOURNAL: [
        ("a directory", _a_directory, None),
        ("a fifo", _a_fifo, None),
        ("its directory missing", lambda d, _: str(d / "no-such-dir" / "journal.db"), None),
        ("its directory a file", _under_a_file, None),
        ("read-only directory", _in_read_only_directory, AS_ROOT if ROOT else None),
    ],
    SOCKET: [
        ("too long", _long_socket, None),
        ("its directory missing", lambda d, _: str(d / "no-such-dir" / "control.sock"), None),
        ("its directory a file", _under_a_file, None),
        ("a regular file there", _a_regular_file_at, None),
        ("a directory there", _a_directory, None),
    ],
}

# What the file holds, for the keys whose content is read at start-up.
CONTENT_BREAKAGES: dict[tuple[str, str], list[tuple[str, Maker, str | None]]] = {
    ("server", "key_file"): [
        ("empty", _file(""), None),
        ("only white space", _file(" \n\t\n"), None),
        ("not UTF-8", _file(b"\xff\xfe secret\n"), None),
    ],
    ("journal", "checkpoint_key"): [
        ("not a key", _file("not a key\n"), None),
        ("a public key", _public_key_file, None),
        ("not UTF-8", _file(b"\xff\xfe key\n"), None),
    ],
    ("server", "ca_file"): [("not PEM", _file("not a certificate\n"), None)],
    ("server", "client_cert"): [("not PEM", _file("not a certificate\n"), None)],
    ("server", "client_key"): [("not PEM", _file("not a key\n"), None)],
}

FILE_CASES = [
    pytest.param(
        section,
        key,
        make,
        id=f"{section}.{key}-{what}",
        marks=[pytest.mark.skip(reason=skip)] if skip else [],
    )
    for (section, key), kind in PATH_KEYS.items()
    for what, make, skip in FILE_BREAKAGES[kind] + CONTENT_BREAKAGES.get((section, key), [])
]


@pytest.fixture
def fresh() -> Iterator[Path]:
    """A new short directory (socket paths) for one case's files, removed after it."""
    with tempfile.TemporaryDirectory(prefix="cfgcase-") as name:
        yield Path(name)
        for path in Path(name).iterdir():  # a case's 0000 directory must go too
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)


@pytest.mark.parametrize(("section", "key", "make"), FILE_CASES)
def test_every_file_key_broken_is_refused_naming_it(
    baseline: Baseline, fresh: Path, section: str, key: str, make: Maker
) -> None:
    raw = baseline.mapping()
    value = make(fresh, Path(raw[section][key]))
    raw[section][key] = value
    message = refusal(raw)
    assert_names(message, section, key)
    assert value in message, message  # which file: the technician looks there


@pytest.mark.parametrize(
    ("section", "key", "make"),
    [
        ("server", "key_file", _file("secret\n", 0o600)),
        ("server", "key_file", _file("secret\n", 0o640)),
        ("server", "key_file", _file("secret\n", 0o660)),  # the group may write: allowed
        ("server", "key_file", _file("  secret with spaces around  \n", 0o400)),
        ("scanner", "registry", _decks(("a.csv", _sample_deck()), ("notes.txt", "x"))),
        ("journal", "path", lambda d, _: str(d / "journal.db")),  # a new one
        ("journal", "path", _file(b"", 0o600)),  # there (the journal opens it)
        ("journal", "checkpoint_key", _missing),  # absent: no checkpoints, said in the log
        ("journal", "checkpoint_key", _copy(0o640)),  # root:shoe-controller 0640 (postinst)
        ("journal", "checkpoint_key", _copy(0o400)),
    ],
)
def test_usable_files_are_accepted(
    baseline: Baseline, fresh: Path, section: str, key: str, make: Maker
) -> None:
    raw = baseline.mapping()
    raw[section][key] = make(fresh, Path(raw[section][key]))
    check(from_mapping(raw))


def test_a_dead_daemons_socket_is_accepted(baseline: Baseline, fresh: Path) -> None:
    path = fresh / "control.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens: the control server replaces it
    raw = baseline.mapping()
    raw["control"]["socket"] = str(path)
    check(from_mapping(raw))


# ---------------------------------------------------------------- any value at all

TOML_VALUES = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),  # TOML's integers
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
    st.sampled_from(["", "/", ".", "/dev/null", "/proc/self", "http://[::1", "socket://x:0"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
ANY_KEY = st.sampled_from(
    [(section, key) for section, key, _ in schema_keys()]
    + [("payouts", "tie"), ("payouts", "banker")]
)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.lists(st.tuples(ANY_KEY, TOML_VALUES), min_size=1, max_size=3))
def test_no_value_gets_past_the_checks_but_as_one_line(
    baseline: Baseline, keys: list[tuple[tuple[str, str], object]]
) -> None:
    """Whatever a key holds, the checks pass it or refuse it with one line naming its
    section; nothing else escapes them (each escape was a traceback at every restart)."""
    raw = baseline.mapping()
    for (section, key), value in keys:
        raw.setdefault(section, {})[key] = value
    try:
        check(from_mapping(raw))
    except ConfigError as error:
        message = str(error)
        assert not re.search(r"[\r\n]", message), message
        assert any(f"[{section}]" in message for (section, _), _ in keys), message


# ---------------------------------------------------------------- what the checks parse


@pytest.mark.parametrize(
    ("section", "key", "value", "fragment"),
    [
        # urlsplit takes it, the sink's client does not (a non-ASCII host is refused: its
        # xn-- form is asked for): a crash at the first delivery
        ("server", "url", "http://ab\u200b/", "not a URL the sink can use"),
        ("server", "url", "https://" + "\u00e4" * 70 + "/", "not a URL the sink can use"),
        ("server", "url", "http://999.0.0.1/", "not an IPv4 address"),
        ("scanner", "port", "sokcet://127.0.0.1:7000", "pyserial knows no URL scheme 'sokcet'"),
        ("shuffler", "port", "socket://127.0.0.1:99999", "needs host:port"),
        ("scanner", "port", "socket://:7000", "needs host:port"),
        ("scanner", "port", "rfc2217://shoe-server", "needs host:port"),
    ],
)
def test_urls_the_daemon_would_fail_on_are_refused(
    baseline: Baseline, section: str, key: str, value: str, fragment: str
) -> None:
    raw = baseline.mapping()
    raw[section][key] = value
    message = refusal(raw)
    assert message.startswith(f"[{section}] {key} = {value!r}: "), message
    assert fragment in message


@pytest.mark.parametrize(
    "port", ["/dev/ttyUSB9", "loop://", "rfc2217://shoe-server:7000", "spy:///dev/ttyUSB0"]
)
def test_device_ports_that_may_work_later_are_accepted(baseline: Baseline, port: str) -> None:
    raw = baseline.mapping()
    raw["scanner"]["port"] = port  # none of them is there now: the daemon reconnects
    check(from_mapping(raw))
