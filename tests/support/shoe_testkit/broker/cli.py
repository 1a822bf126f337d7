"""The test broker's command line: rabbitmqctl and rabbitmq-upgrade against its one node,
and the readings they give (memory, queue lengths, alarms)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shoe_testkit.broker.node import NodeFiles

CLI_TIMEOUT_S = 60.0


class BrokerError(RuntimeError):
    """The broker could not be started, stopped or commanded; the message says why."""


class NodeCli:
    """The node's CLI tools, run with its environment; BrokerError when one fails."""

    def __init__(
        self,
        scripts: Path,
        files: NodeFiles,
        env: dict[str, str],
        vhost: str,
        running: Callable[[], bool],
    ) -> None:
        self._scripts = scripts
        self._files = files
        self._env = env
        self._vhost = vhost
        self._running = running

    def run(self, tool: str, *args: str) -> str:
        """Run `tool` (e.g. rabbitmq-upgrade) against this node; its stdout."""
        if not self._running():
            raise BrokerError(f"{self._files.node} is not running")
        argv = [str(self._scripts / tool), "-n", self._files.node, "-q", *args]
        try:
            done = subprocess.run(
                argv,
                env=self._env,
                cwd=self._files.directory,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise BrokerError(f"{tool} {' '.join(args)} timed out") from error
        if done.returncode != 0:
            raise BrokerError(
                f"{tool} {' '.join(args)} failed ({done.returncode}): "
                f"{done.stderr.strip() or done.stdout.strip()}"
            )
        return done.stdout

    def ctl(self, *args: str) -> str:
        """Run `rabbitmqctl` against this node; its stdout."""
        return self.run("rabbitmqctl", *args)

    def status(self) -> dict[str, Any]:
        return json.loads(self.ctl("status", "--formatter", "json"))

    def memory_bytes(self) -> int:
        """The node's total memory as it reports it (by its calculation strategy, RSS here)."""
        memory = self.status()["memory"]
        return int(memory["total"][memory.get("strategy", "rss")])

    def memory_alarm(self) -> tuple[bool, list[Any]]:
        """Whether the memory alarm is raised, and every alarm the node reports."""
        alarms = self.status()["alarms"]
        raised = any(
            isinstance(alarm, dict) and alarm.get("resource") == "memory" for alarm in alarms
        )
        return raised, alarms

    def queue_messages(self, queue: str, vhost: str | None = None) -> int:
        """Messages in `queue` (ready + unacknowledged); KeyError if there is no such queue."""
        vhost = vhost or self._vhost
        listed = self.ctl("list_queues", "-p", vhost, "name", "messages", "--formatter", "json")
        for row in json.loads(listed):
            if row["name"] == queue:
                return int(row["messages"])
        raise KeyError(f"no queue {queue!r} in vhost {vhost!r} on {self._files.node}")
