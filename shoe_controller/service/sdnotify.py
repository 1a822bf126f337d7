"""systemd's notify protocol in a few lines: READY, STATUS, WATCHDOG, STOPPING (sd_notify(3))."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping


class Notifier:
    """Sends state lines to systemd when started with Type=notify; does nothing otherwise."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        # An address starting with "@" is in the abstract namespace (a leading NUL byte).
        self._address = "\0" + address[1:] if address.startswith("@") else address
        watchdog_usec = env.get("WATCHDOG_USEC", "")
        watchdog_pid = env.get("WATCHDOG_PID", "")
        owned = not watchdog_pid or watchdog_pid == str(os.getpid())
        self.watchdog_interval: float | None = (
            int(watchdog_usec) / 1e6 / 2 if watchdog_usec.isdigit() and owned else None
        )

    def notify(self, *lines: str) -> bool:
        """Send `KEY=value` lines; False when there is no systemd to tell or it cannot hear."""
        if not self._address:
            return False
        message = "\n".join(lines).encode("utf-8", "replace")
        # Non-blocking: a listener that does not read (systemd busy or hung) fills the
        # socket's small queue (net.unix.max_dgram_qlen, 10 by default), and a blocking send
        # would then freeze the daemon's loop, devices and all. Better to drop one line.
        flags = socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
        try:
            with socket.socket(socket.AF_UNIX, flags) as sock:
                sock.sendto(message, self._address)
        except OSError:
            return False  # systemd gone (shutting down) or not reading: nothing to do about it
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")
