"""A test broker node's own files and environment, and where RabbitMQ and Erlang live.

Everything of the node is in one private directory: database, logs, configuration, plugins
file and the Erlang cookie (a private HOME). Nothing under /etc/rabbitmq or /var/lib/rabbitmq
is read or written, so it runs as root or as any user, next to a system broker.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import socket
import sys
from pathlib import Path

from shoe_testkit.broker.procs import LOOPBACK

DEBIAN_SCRIPTS = Path("/usr/lib/rabbitmq/bin")
_ERL_LOOPBACK = "-kernel inet_dist_use_interface {127,0,0,1}"


def scripts_dir(explicit: Path | None = None) -> Path | None:
    """The directory holding the real RabbitMQ scripts (rabbitmq-server, rabbitmqctl, ...)."""
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(Path(explicit))
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
    found = shutil.which("rabbitmq-server", path=search)
    if found:
        # Debian's /usr/sbin/rabbitmq-server is a symlink to a wrapper that lives next to the
        # real scripts; a generic install's sbin/ holds them directly.
        candidates.append(Path(os.path.realpath(found)).parent)
    candidates.append(DEBIAN_SCRIPTS)
    for candidate in candidates:
        if all((candidate / name).exists() for name in ("rabbitmq-env", "rabbitmq-server")):
            return candidate
    return None


def erlang_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    fallback = Path("/usr/lib/erlang/bin") / name
    return str(fallback) if fallback.exists() else None


def missing(explicit: Path | None = None) -> str | None:
    """Why no broker can be started here, or None when one can."""
    if sys.platform != "linux":
        return "the RabbitMQ test broker needs Linux (/proc)"
    if scripts_dir(explicit) is None:
        return "rabbitmq-server is not installed (Debian: apt-get install rabbitmq-server)"
    for tool in ("erl", "epmd"):
        if erlang_tool(tool) is None:
            return f"Erlang's {tool} is not installed"
    return None


@dataclasses.dataclass(frozen=True)
class NodeFiles:
    """The node's directory, name and ports on 127.0.0.1 (AMQP, distribution, epmd)."""

    directory: Path
    node: str
    port: int
    dist_port: int
    epmd_port: int
    stream_port: int = 0  # the stream protocol's port (rabbitmq_stream), 0: no streams

    @property
    def log_file(self) -> Path:
        return self.directory / "log" / f"{self.node}.log"

    def write(
        self,
        *,
        user: str,
        password: str,
        vhost: str,
        watermark: float,
        cookie: str | None = None,
        peers: tuple[str, ...] = (),
    ) -> None:
        """The files the node boots from: a private HOME with the cookie (a cluster's nodes
        share theirs), no plugins, the configuration; `peers`, the nodes a blank node joins
        as it first boots (classic peer discovery: a cluster's first node has none)."""
        home = self.directory / "home"
        home.mkdir(mode=0o700)
        cookie_file = home / ".erlang.cookie"
        cookie_file.write_text(cookie or secrets.token_hex(20), encoding="ascii")
        cookie_file.chmod(0o400)  # Erlang refuses a cookie others can read
        plugins = "[rabbitmq_stream]" if self.stream_port else "[]"
        (self.directory / "enabled_plugins").write_text(f"{plugins}.\n", encoding="ascii")
        (self.directory / "rabbitmq-env.conf").write_text("", encoding="ascii")
        # The default user/vhost are created on the first boot only, on an empty database;
        # restarts keep them (and everything else) from the database.
        config = [
            f"listeners.tcp.default = {LOOPBACK}:{self.port}",
            f"default_user = {user}",
            f"default_pass = {password}",
            f"default_vhost = {vhost}",
            "default_user_tags.administrator = true",
            "default_permissions.configure = .*",
            "default_permissions.read = .*",
            "default_permissions.write = .*",
            f"vm_memory_high_watermark.relative = {watermark!r}",
            # A nearly full CI disk must not raise the disk alarm and block publishers by
            # surprise; pause_confirms() is the one way publishers get blocked here.
            "disk_free_limit.absolute = 1MB",
            "log.console = false",
            "log.file.level = info",
        ]
        if self.stream_port:  # clients are sent to a stream's leader at this address
            config += [
                f"stream.listeners.tcp.default = {LOOPBACK}:{self.stream_port}",
                f"stream.advertised_host = {LOOPBACK}",
                f"stream.advertised_port = {self.stream_port}",
            ]
        if peers:
            config.append("cluster_formation.peer_discovery_backend = classic_config")
            config += [
                f"cluster_formation.classic_config.nodes.{n} = {peer}"
                for n, peer in enumerate(peers, 1)
            ]
        config.append("")
        (self.directory / "rabbitmq.conf").write_text("\n".join(config), encoding="utf-8")

    def environment(self) -> dict[str, str]:
        """The scripts' environment: ours without RABBITMQ_/ERL_ settings, then the node's."""
        directory = self.directory
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("RABBITMQ_", "ERL_"))
        }
        env.setdefault("LANG", "C.UTF-8")  # the CLI warns about latin1 otherwise
        env.update(
            HOME=str(directory / "home"),
            ERL_EPMD_PORT=str(self.epmd_port),
            ERL_EPMD_ADDRESS=LOOPBACK,
            ERL_CRASH_DUMP=str(directory / "erl_crash.dump"),
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_MNESIA_BASE=str(directory / "mnesia"),
            RABBITMQ_LOG_BASE=str(directory / "log"),
            RABBITMQ_CONFIG_FILE=str(directory / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(directory / "advanced.config"),
            RABBITMQ_CONF_ENV_FILE=str(directory / "rabbitmq-env.conf"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(directory / "enabled_plugins"),
            RABBITMQ_PID_FILE=str(directory / "node.pid"),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            # ALLOW_INPUT makes the script `exec` erl, so the VM is our child (kill() hits
            # beam.smp itself); -noinput keeps the Erlang shell off.
            RABBITMQ_ALLOW_INPUT="true",
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=f"-noinput {_ERL_LOOPBACK}",
            RABBITMQ_CTL_ERL_ARGS=_ERL_LOOPBACK,
        )
        return env

    def registered(self) -> bool:
        """True once the node's name is registered with its epmd."""
        short_name = self.node.split("@", 1)[0]
        try:
            with socket.create_connection((LOOPBACK, self.epmd_port), timeout=1.0) as sock:
                sock.sendall(b"\x00\x01n")  # NAMES_REQ: epmd answers and closes
                reply = b""
                while chunk := sock.recv(4096):
                    reply += chunk
        except OSError:
            return False
        names = reply[4:].decode("utf-8", errors="replace").splitlines()
        return any(line.split()[1:2] == [short_name] for line in names)
