"""SIGHUP (`systemctl reload`): the configuration file read again for its [log] section, so a
technician can turn on debug without a restart; what else changed in it is only said.

The table settings in force (and journaled) stay those of the start: a change to them is
logged as in force from the next start (docs/config.md).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import structlog

from shoe_controller.service.config import Config, ConfigError, LogSection, load

log = structlog.get_logger("daemon")


def changed_settings(running: Config, loaded: Config) -> list[str]:
    """The table settings the file now gives otherwise than those in force, by name."""
    before, after = asdict(running.procedures), asdict(loaded.procedures)
    return sorted(key for key in after if after[key] != before.get(key))


def reloaded_logs(running: Config, path: Path | None) -> LogSection:
    """The [log] section to apply now: the file's, or the running one's when there is no
    file or it cannot be read (said in the log)."""
    if path is None:
        return running.log
    try:
        loaded = load(path)
    except ConfigError as error:
        log.error("config not reloaded; logs unchanged", error=str(error))
        return running.log
    changed = changed_settings(running, loaded)
    if changed:
        log.warning("table settings changed in the file: in force from the next"
                    " start, journaled then", changed=changed)  # fmt: skip
    return loaded.log
