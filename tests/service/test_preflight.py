"""The start-up checks' one line, word for word (service/preflight.py, docs/config.md): for
each thing a configuration names that the daemon cannot use, the line names the section, the
key, the value and what is wrong with it, as the technician reads it before systemd does.

test_config_property.py breaks every key and checks the line names it; these read the whole
line. What only a user without root's rights meets (a file this user may not read, a
directory it may not write) is checked as the daemon's own kind of user: when the tests run
as root, in a child process that became `nobody`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shoe_testkit.config import Baseline

from shoe_controller.service.config import ConfigError, from_mapping, load
from shoe_controller.service.journal_lock import lock_path
from shoe_controller.service.preflight import check, load_checked

NOBODY = 65534
LOOP = "cannot be examined: Too many levels of symbolic links"


@pytest.fixture
def base() -> Iterator[Baseline]:
    directory = Path(tempfile.mkdtemp(prefix="pf-"))  # short: the control socket's path
    directory.chmod(0o755)
    try:
        yield Baseline.make(directory / "b")
    finally:
        shutil.rmtree(directory)


def refusal(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        check(from_mapping(raw))
    return str(caught.value)


def _checked_by(uid: int, raw: dict[str, Any]) -> str:
    """check() run by `uid` in a child process: its one line, or "passed"."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            try:
                check(from_mapping(raw))
                text = "passed"
            except ConfigError as error:
                text = str(error)
            os.write(write, text.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        text = answer.read().decode()
    os.waitpid(pid, 0)
    return text


def refusal_as_user(base: Baseline, raw: dict[str, Any]) -> tuple[str, int]:
    """The line as a user without root's rights gets it, and that user's uid; the baseline's
    files are that user's (as the daemon's are its own)."""
    check(from_mapping(base.mapping()))  # the files as made pass
    if os.geteuid() != 0:
        return refusal(raw), os.getuid()
    for path in [base.directory, *base.directory.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    return _checked_by(NOBODY, raw), NOBODY


def _loop(path: Path) -> str:
    """A symbolic link to itself: stat() cannot resolve it."""
    path.symlink_to(path.name)
    return str(path)


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return str(path)


# ---------------------------------------------------------------- [server], [[sink]], [api]


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda d: str(d / "absent.key"), "no such file"),
        (str, "is a directory, not a file"),
        (lambda d: _fifo(d / "key.fifo"), "is not a regular file"),
        (lambda d: _loop(d / "loop.key"), LOOP),
    ],
    ids=["missing", "directory", "fifo", "loop"],
)
def test_a_key_file_that_is_no_file_is_refused_saying_what_it_is(
    base: Baseline, make: Any, problem: str
) -> None:
    raw = base.mapping()
    value = make(base.directory)
    raw["server"]["key_file"] = value
    assert refusal(raw) == f"[server] key_file = {value!r}: {problem}"


def test_a_secret_others_may_read_is_refused_with_the_mode_to_give() -> None:
    directory = Path(tempfile.mkdtemp(prefix="pf-"))
    try:
        base = Baseline.make(directory / "b")
        raw = base.mapping()
        key = base.directory / "client.key"
        key.chmod(0o644)
        assert refusal(raw) == (
            f"[server] client_key = '{key}': others may use it (mode 0644); allowed: owner and"
            " group only, e.g. chmod 640 (docs/install.md)"
        )
    finally:
        shutil.rmtree(directory)


def test_an_empty_signing_key_is_refused_for_the_sink_and_for_the_api(base: Baseline) -> None:
    empty = base.directory / "empty.key"
    empty.write_text("")
    empty.chmod(0o640)
    raw = base.mapping()
    raw["server"]["key_file"] = str(empty)
    assert refusal(raw) == f"[server] key_file = '{empty}': key file {empty} is empty"
    raw = base.mapping()
    raw["api"]["key_file"] = str(empty)
    assert refusal(raw) == f"[api] key_file = '{empty}': key file {empty} is empty"


def test_a_brokers_password_file_is_a_secret_that_must_be_there(base: Baseline) -> None:
    raw = base.mapping()
    password = base.directory / "broker.password"
    sink = {"kind": "amqp", "name": "studio", "key_file": raw["server"]["key_file"]}
    raw["sink"] = [{**sink, "password_file": str(password)}]
    assert refusal(raw) == f"[sink studio] password_file = '{password}': no such file"
    password.write_text("secret\n")
    password.chmod(0o644)
    assert refusal(raw).startswith(
        f"[sink studio] password_file = '{password}': others may use it (mode 0644)"
    )


def test_a_file_this_user_may_not_read_is_refused_naming_the_user(base: Baseline) -> None:
    raw = base.mapping()
    (base.directory / "client.pem").chmod(0o000)
    line, uid = refusal_as_user(base, raw)
    assert line == (
        f"[server] client_cert = '{base.directory / 'client.pem'}': cannot be read by this"
        f" user (uid {uid})"
    )


# ---------------------------------------------------------------- [journal], [control]


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (str, "is a directory; give the journal's file"),
        (lambda d: _fifo(d / "journal.fifo"), "is not a regular file"),
        (lambda d: _loop(d / "loop.db"), LOOP),
        (lambda d: str(d / "absent" / "journal.db"), "{parent} does not exist"),
        (lambda d: str(d / "table.key" / "journal.db"), "{parent} is not a directory"),
    ],
    ids=["directory", "fifo", "loop", "no-directory", "file-for-directory"],
)
def test_a_journal_path_that_cannot_be_a_journal_is_refused(
    base: Baseline, make: Any, problem: str
) -> None:
    raw = base.mapping()
    value = make(base.directory)
    raw["journal"]["path"] = value
    expected = problem.format(parent=Path(value).parent)
    assert refusal(raw) == f"[journal] path = {value!r}: {expected}"


def test_a_journal_this_user_may_not_write_is_refused(base: Baseline) -> None:
    raw = base.mapping()
    journal = Path(raw["journal"]["path"])
    journal.write_bytes(b"")
    journal.chmod(0o444)
    line, _ = refusal_as_user(base, raw)
    assert line == f"[journal] path = '{journal}': cannot be read and written by this user"


def test_a_directory_this_user_may_not_write_is_refused(base: Baseline) -> None:
    raw = base.mapping()
    folder = base.directory / "state"
    folder.mkdir()
    raw["journal"]["path"] = str(folder / "journal.db")
    folder.chmod(0o555)
    line, _ = refusal_as_user(base, raw)
    assert line == (
        f"[journal] path = '{folder / 'journal.db'}': directory {folder} is not writable by"
        " this user"
    )


def test_a_journal_lock_file_that_is_no_file_is_refused(base: Baseline) -> None:
    """The lock a daemon takes beside its journal (service/journal_lock.py) must be lockable."""
    raw = base.mapping()
    journal = Path(raw["journal"]["path"])
    lock_path(journal).mkdir()
    assert refusal(raw) == (
        f"[journal] path = '{journal}': lock file {lock_path(journal)} is not a regular file"
    )


def test_a_journal_lock_file_this_user_may_not_write_is_refused(base: Baseline) -> None:
    """Left by a daemon another user ran by hand: every start would be refused by it."""
    raw = base.mapping()
    journal = Path(raw["journal"]["path"])
    lock_path(journal).write_text("1234\n")
    lock_path(journal).chmod(0o444)
    line, _ = refusal_as_user(base, raw)
    assert line == (
        f"[journal] path = '{journal}': lock file {lock_path(journal)} cannot be read and"
        " written by this user (left by another user's daemon?)"
    )


def test_a_control_socket_path_taken_or_without_its_directory_is_refused(
    base: Baseline,
) -> None:
    raw = base.mapping()
    taken = Path(raw["control"]["socket"])
    taken.write_text("not a socket")
    assert refusal(raw) == (
        f"[control] socket = '{taken}': exists and is not a socket (left alone)"
    )
    raw["control"]["socket"] = str(base.directory / "run" / "c.sock")
    assert refusal(raw) == (
        f"[control] socket = '{base.directory / 'run' / 'c.sock'}':"
        f" {base.directory / 'run'} does not exist"
    )


# ---------------------------------------------------------------- [scanner], [shuffler]


def test_the_shuffler_is_checked_without_a_scanner(base: Baseline) -> None:
    raw = base.mapping()
    del raw["scanner"]
    raw["shuffler"]["port"] = "foo://x"
    line = refusal(raw)
    prefix = "[shuffler] port = 'foo://x': pyserial knows no URL scheme 'foo'; allowed:"
    assert line.startswith(prefix)
    allowed = line.removeprefix(prefix)
    assert re.fullmatch(r" a device path or \w+://(, \w+://)+", allowed), allowed
    assert {"loop://", "rfc2217://", "socket://"} <= set(allowed[20:].split(", "))


def test_a_url_port_is_known_by_the_scheme_before_its_first_separator(base: Baseline) -> None:
    raw = base.mapping()
    raw["scanner"]["port"] = "loop://?logging=debug&x=a://b"
    checked = check(from_mapping(raw))
    assert checked.config.scanner is not None
    assert checked.config.scanner.port == "loop://?logging=debug&x=a://b"


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda d: str(d / "absent"), "no such directory"),
        (lambda d: str(d / "table.key"), "is not a directory"),
    ],
    ids=["missing", "a-file"],
)
def test_a_registry_that_is_no_directory_is_refused(
    base: Baseline, make: Any, problem: str
) -> None:
    raw = base.mapping()
    value = make(base.directory)
    raw["shuffler"]["registry"] = value
    assert refusal(raw) == f"[shuffler] registry = {value!r}: {problem}"


def test_a_registry_with_a_bad_deck_file_is_refused_with_the_registrys_words(
    base: Baseline,
) -> None:
    raw = base.mapping()
    decks = base.directory / "shuffler-decks"
    (decks / "SIM0000-01.csv").unlink()
    line = refusal(raw)
    assert line == (
        f"[shuffler] registry = '{decks}': deck registry directory {decks} holds no *.csv files"
    )


def test_a_registry_this_user_may_not_read_is_refused(base: Baseline) -> None:
    raw = base.mapping()
    decks = base.directory / "scanner-decks"
    decks.chmod(0o300)
    line, _ = refusal_as_user(base, raw)
    assert line == f"[scanner] registry = '{decks}': cannot be read by this user"
    decks.chmod(0o755)
    (decks / "SIM0000-01.csv").chmod(0o000)
    line, _ = refusal_as_user(base, raw)
    deck = decks / "SIM0000-01.csv"
    assert line == (
        f"[scanner] registry = '{decks}': {deck}: cannot read deck file: permission denied"
    )


# ---------------------------------------------------------------- the file as run reads it


def _toml(base: Baseline) -> Path:
    raw = base.mapping()
    lines = []
    for section, values in raw.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            lines.append(f"{key} = {value!r}".replace("'", '"'))
    path = base.directory / "shoe-controller.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_file_that_passes_gives_its_configuration_and_registries(base: Baseline) -> None:
    path = _toml(base)
    checked = load_checked(path)
    assert checked.config == load(path)
    assert checked.registries["scanner"].decks() == {"SIM0000-01": 52}
    assert check(checked.config).config is checked.config


def test_a_file_refused_names_itself_first(base: Baseline) -> None:
    path = _toml(base)
    (base.directory / "table.key").unlink()
    with pytest.raises(ConfigError) as caught:
        load_checked(path)
    assert str(caught.value) == (
        f"{path}: [server] key_file = '{base.directory / 'table.key'}': no such file"
    )
