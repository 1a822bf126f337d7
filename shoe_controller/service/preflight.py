"""Start-up checks: what the configuration names on disk, checked before the daemon starts.

`config.load` checks each value by itself (types, ranges, URLs, lengths). This module checks
what the values name: each sink's key file and its mode, its TLS and password files, the
inbound API's key and TLS files, the journal's file, directory and lock file and its
checkpoint key, the control socket's directory, the devices' URL schemes, and the deck
registries, which it loads once for the daemon to use. A value the daemon cannot run with must
stop start-up with one line naming the key and exit status 1, before systemd hears READY: a
traceback at every restart is a crash loop, and a daemon that runs without its control socket
or retries a journal that can never open is a table that looks up and is not.
docs/config.md lists the rules.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import stat
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import serial

from drivers.translate.registry import DeckRegistry, RegistryError
from shoe_controller.delivery.http_client import parse_base_url
from shoe_controller.delivery.pushapi import KeyFileError, SigningKey
from shoe_controller.service import journal_lock, sink_kinds
from shoe_controller.service.config import Config, ConfigError, DeviceSection, ServerSection, load
from shoe_controller.store.checkpoint import CheckpointError
from shoe_controller.store.checkpoint_keys import load_signer

OTHERS = stat.S_IRWXO  # a secret's mode may give others nothing (docs/install.md: 0640)
DEVICE_SECTIONS = ("scanner", "shuffler")


@dataclass(frozen=True)
class Checked:
    """A configuration that passed every start-up check, and the deck registries the checks
    loaded (by device section name), for the daemon to use rather than load again."""

    config: Config
    registries: Mapping[str, DeckRegistry]


def load_checked(path: Path | str) -> Checked:
    """`config.load` and `check`: what `shoe-controller run` does before it starts anything.

    ConfigError's message is one line: the file, the key and what is allowed.
    """
    config = load(path)
    try:
        return check(config)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def check(config: Config) -> Checked:
    """Check everything `config` names that can be checked before starting; ConfigError with
    one line naming the first key at fault. Reads files, writes nothing."""
    _check_sinks(config)
    _check_api(config)
    _check_journal(config.journal.path)
    _check_checkpoint_key(config.journal.checkpoint_key)
    _check_socket(config.control.socket)
    registries: dict[str, DeckRegistry] = {}
    for name in DEVICE_SECTIONS:
        section: DeviceSection | None = getattr(config, name)
        if section is None:
            continue
        _check_port(name, section.port)
        if section.registry:
            registries[name] = _load_registry(name, section.registry)
    return Checked(config, MappingProxyType(registries))


def _fault(section: str, key: str, value: str, problem: str) -> ConfigError:
    return ConfigError(f"[{section}] {key} = {value!r}: {problem}")


# ---------------------------------------------------------------- [server], [[sink]]


def _check_sinks(config: Config) -> None:
    for sink in config.sinks:
        label = sink.label
        _check_file(label, "key_file", sink.key_file, secret=True)
        try:
            SigningKey.from_file(sink.key_file)
        except KeyFileError as error:  # empty, or not UTF-8
            raise _fault(label, "key_file", sink.key_file, str(error)) from None
        secrets = ("client_key", "password_file")
        for key in ("ca_file", "client_cert", "client_key", "password_file"):
            value = getattr(sink, key, "")
            if value:  # given, so it must be there, even while the URL is http://
                _check_file(label, key, value, secret=key in secrets)
        if isinstance(sink, ServerSection):
            try:
                parse_base_url(sink.url)  # what the sink connects with: a last word on urlsplit
            except ValueError as error:
                problem = f"not a URL the sink can use ({error})"
                raise _fault(label, "url", sink.url, problem) from None
    try:
        sink_kinds.check_secrets(config)  # what building the sinks reads: TLS, a password file
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _check_file(section: str, key: str, value: str, *, secret: bool) -> None:
    """A file the daemon reads: there, a regular file (a FIFO would block start-up), readable;
    a secret also with no permission for others."""
    try:
        info = os.stat(value)
    except (FileNotFoundError, NotADirectoryError):
        raise _fault(section, key, value, "no such file") from None
    except OSError as error:
        raise _fault(section, key, value, f"cannot be examined: {error.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise _fault(section, key, value, "is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise _fault(section, key, value, "is not a regular file")
    if not os.access(value, os.R_OK):
        raise _fault(section, key, value, f"cannot be read by this user (uid {os.getuid()})")
    mode = stat.S_IMODE(info.st_mode)
    if secret and mode & OTHERS:
        raise _fault(
            section,
            key,
            value,
            f"others may use it (mode {mode:04o}); allowed: owner and group only, "
            f"e.g. chmod 640 (docs/install.md)",
        )


def _check_api(config: Config) -> None:
    """[api]'s files, once the inbound API is on: the table's key, the TLS files."""
    api = config.api
    if not api.listen:
        return
    _check_file("api", "key_file", api.key_file, secret=True)
    try:
        SigningKey.from_file(api.key_file)
    except KeyFileError as error:
        raise _fault("api", "key_file", api.key_file, str(error)) from None
    for key, secret in (("tls_cert", False), ("tls_key", True), ("client_ca", False)):
        value = getattr(api, key)
        if value:
            _check_file("api", key, value, secret=secret)


# ---------------------------------------------------------------- [journal], [control]


def _check_journal(value: str) -> None:
    """The journal's file: absent (it is created) or a regular file this user may read and
    write, in a directory this user may write (SQLite keeps its -wal and -shm files there)."""
    path = Path(value)
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        info = None  # a new journal; its directory is checked below
    except OSError as error:
        raise _fault("journal", "path", value, f"cannot be examined: {error.strerror}") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise _fault("journal", "path", value, "is a directory; give the journal's file")
        if not stat.S_ISREG(info.st_mode):
            raise _fault("journal", "path", value, "is not a regular file")
        if not os.access(path, os.R_OK | os.W_OK):
            raise _fault("journal", "path", value, "cannot be read and written by this user")
    _check_directory("journal", "path", value, path.parent)
    _check_lock_file(value, journal_lock.lock_path(path))


def _check_lock_file(value: str, lock: Path) -> None:
    """The journal's lock file (service/journal_lock.py), if there is one already: a regular
    file this user may open to lock (one another user left, root's, would refuse every start)."""
    try:
        info = lock.stat()
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as error:
        raise _fault("journal", "path", value, f"lock file {lock} cannot be examined: "
                     f"{error.strerror}") from None  # fmt: skip
    if not stat.S_ISREG(info.st_mode):
        raise _fault("journal", "path", value, f"lock file {lock} is not a regular file")
    if not os.access(lock, os.R_OK | os.W_OK):
        problem = "cannot be read and written by this user (left by another user's daemon?)"
        raise _fault("journal", "path", value, f"lock file {lock} {problem}")


def _check_checkpoint_key(value: str) -> None:
    """The checkpoints' signing key: absent, the daemon takes no checkpoint (and says so at
    every start: service/checkpoints.py); there, a secret as the table's key is, and a key."""
    try:
        os.lstat(value)
    except FileNotFoundError:
        return
    except OSError:
        pass  # under a file, not searchable ...: named below
    _check_file("journal", "checkpoint_key", value, secret=True)
    try:
        load_signer(value)
    except CheckpointError as error:
        raise _fault("journal", "checkpoint_key", value, str(error)) from None


def _check_socket(value: str) -> None:
    """The control socket: its directory there and writable, and nothing but a (stale)
    socket at its path; the control server would leave anything else alone and run without."""
    path = Path(value)
    _check_directory("control", "socket", value, path.parent)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError as error:
        raise _fault("control", "socket", value, f"cannot be examined: {error.strerror}") from None
    if not stat.S_ISSOCK(info.st_mode):
        raise _fault("control", "socket", value, "exists and is not a socket (left alone)")


def _check_directory(section: str, key: str, value: str, directory: Path) -> None:
    """The directory a file is made in: there (systemd's StateDirectory= and RuntimeDirectory=
    make the default ones; the daemon makes none) and writable by this user."""
    if not directory.is_dir():
        problem = "is not a directory" if directory.exists() else "does not exist"
        raise _fault(section, key, value, f"{directory} {problem}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise _fault(section, key, value, f"directory {directory} is not writable by this user")


# ---------------------------------------------------------------- [scanner], [shuffler]


def _check_port(section: str, port: str) -> None:
    """A pyserial URL's scheme must be one pyserial has; socket:// and rfc2217:// need
    host:port. A device path is not checked: a device may be plugged in later."""
    scheme, sep, _ = port.partition("://")
    if not sep:
        return
    known = _url_schemes()
    if scheme.lower() not in known:
        allowed = ", ".join(f"{name}://" for name in sorted(known))
        raise _fault(section, "port", port, f"pyserial knows no URL scheme {scheme!r}; "
                     f"allowed: a device path or {allowed}")  # fmt: skip
    if scheme.lower() in ("socket", "rfc2217"):
        try:
            parts = urllib.parse.urlsplit(port)
            usable = bool(parts.hostname) and bool(parts.port)  # port: ValueError beyond 65535
        except ValueError:
            usable = False
        if not usable:
            raise _fault(section, "port", port, f"{scheme}:// needs host:port, port 1 to 65535")


def _url_schemes() -> set[str]:
    """The URL schemes pyserial's serial_for_url finds a handler for."""
    schemes: set[str] = set()
    for package_name in serial.protocol_handler_packages:
        try:
            package = importlib.import_module(package_name)
        except ImportError:
            continue
        for module in pkgutil.iter_modules(getattr(package, "__path__", [])):
            match = re.fullmatch(r"protocol_(\w+)", module.name)
            if match:
                schemes.add(match.group(1))
    return schemes


def _load_registry(section: str, value: str) -> DeckRegistry:
    """The deck registry, loaded whole (a bad row stops loading, never half-loads)."""
    folder = Path(value)
    if not folder.is_dir():
        problem = "is not a directory" if folder.exists() else "no such directory"
        raise _fault(section, "registry", value, problem)
    if not os.access(folder, os.R_OK | os.X_OK):
        raise _fault(section, "registry", value, "cannot be read by this user")
    try:
        return DeckRegistry.load(folder)
    except RegistryError as error:
        raise _fault(section, "registry", value, str(error)) from None
    except OSError as error:
        raise _fault(section, "registry", value, f"cannot be read: {error.strerror}") from None
