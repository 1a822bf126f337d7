"""`shoe-controller check`: the start-up checks of `run` alone, as `nginx -t` tests nginx's.

The configuration is read and everything it names checked exactly as `shoe-controller run`
does before it starts anything (service/config.py's `load`, service/preflight.py's
`load_checked`, and the sinks' secrets the daemon reads first: docs/config.md); nothing is
opened, created or started. Exit 0 when the daemon would start with it, 1 with the one line
that `run` would have refused with.

A daemon running on the configuration's journal is said in a line naming its PID, and is no
failure: the file is as good as it was, and the usual reason to check is a daemon that runs
(the service, before `systemctl restart`, as `nginx -t` beside nginx). It is what `run` would
meet now, so it is said: a second `run` is refused (exit 75) until that one stops. To tell,
`check` takes a shared lock on the lock file for an instant and makes no file
(service/journal_lock.py).
"""

from __future__ import annotations

from pathlib import Path

import click

from shoe_controller.cli.options import config_option
from shoe_controller.service import journal_lock
from shoe_controller.service.config import Config, ConfigError


@click.command("check")
@config_option("The TOML configuration to check (config/shoe-controller.toml documents every key).")
def check_command(config_path: Path) -> None:
    """Check a configuration as `run` does at start-up, and start nothing (like nginx -t)."""
    from shoe_controller.service import sink_kinds  # noqa: PLC0415 - the daemon's own checks
    from shoe_controller.service.preflight import load_checked  # noqa: PLC0415 - as run

    try:
        config = load_checked(config_path).config
        sink_kinds.check_secrets(config)
    except (ConfigError, ValueError) as error:
        text = str(error).replace("\r", "\\r").replace("\n", "\\n")
        if not isinstance(error, ConfigError):
            text = f"{config_path}: {text}"
        failed = f"shoe-controller: {config_path}: check failed"
        raise click.ClickException(f"{text}\n{failed}") from None
    for line in summary(config):
        click.echo(f"shoe-controller: {line}")
    warnings = absent_ports(config)
    for line in warnings:
        click.echo(f"shoe-controller: warning: {line}")
    running = running_on(Path(config.journal.path))
    if running:
        click.echo(f"shoe-controller: {running}")
    passed = (
        f"the start-up checks passed with {len(warnings)} warning(s)"
        if warnings
        else "every start-up check passed"
    )
    click.echo(
        f"shoe-controller: {config_path}: {passed}; `shoe-controller run` starts with it"
        + (" once that daemon has stopped" if running else "")
    )


def summary(config: Config) -> list[str]:
    """What the configuration sets up, one line a part, for the person who checks it."""
    lines = [f"table {config.table.id} ({config.controller_id}), mode {config.procedures.mode}"]
    for name, device in (("scanner", config.scanner), ("shuffler", config.shuffler)):
        if device is not None:
            where = device.port or f"usb {device.usb}"
            lines.append(f"{name}: {device.kind} ({device.protocol}) on {where}")
    for section in config.sinks:
        label = section.label
        lines.append("events to " + ("the table server ([server])" if label == "server" else label))
    lines.append(f"journal {config.journal.path}, control socket {config.control.socket}")
    journal = config.journal
    if Path(journal.checkpoint_key).exists():  # load_checked read it: a key, or refused
        lines.append(f"journal checkpoints signed with {journal.checkpoint_key}, every"
                     f" {journal.checkpoint_every_s:g} s while dealing")  # fmt: skip
    else:
        lines.append(f"journal checkpoints OFF: no key {journal.checkpoint_key}"
                     f" (shoe-controller key --new {journal.checkpoint_key})")  # fmt: skip
    return lines


def absent_ports(config: Config) -> list[str]:
    """A line for each device path that is not there now: no failure, since the daemon starts
    and waits for the device (plugged in later, a udev name not made yet), but no table
    deals until it comes. A pyserial URL (`socket://`, `rfc2217://`) is not looked for."""
    lines = []
    for name, device in (("scanner", config.scanner), ("shuffler", config.shuffler)):
        if device is None or not device.port or "://" in device.port:
            continue
        if not Path(device.port).exists():
            lines.append(
                f"{name} port {device.port} is not there now: the daemon starts and waits for"
                " it, and deals no card until it comes"
            )
    return lines


def running_on(journal: Path) -> str | None:
    """The line that says a daemon runs on `journal` now (None: none does)."""
    lock_file = journal_lock.lock_path(journal)
    held = journal_lock.holder(lock_file)
    if held is None:
        return None
    who = f"PID {held.pid}" if held.pid is not None else "a process (PID not written yet)"
    return (
        f"note: a daemon runs on journal {journal} now ({who} holds {lock_file}); the"
        f" configuration is not at fault, but a second `shoe-controller run` is refused"
        f" (exit {journal_lock.EXIT_IN_USE}) until that one stops"
    )
