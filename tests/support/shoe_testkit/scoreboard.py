"""A real headless Chromium for the scoreboard tests, driven over the DevTools protocol, and
a TableRig whose daemon serves the scoreboard page.

`Browser` starts Debian's `chromium` (`--headless=new`, its own profile in a temporary
directory), finds its DevTools WebSocket on stderr and talks to one tab through aiohttp's
WebSocket client on a loop thread of its own: navigate, evaluate JavaScript, resize, take a
screenshot. Nothing of the page is faked: it loads the daemon's files and follows its event
stream as on the table's display.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from shoe_testkit.net import free_port
from shoe_testkit.rig import RigOptions, TableRig

GUARD_S = 60.0  # only stops a hung test; asserts nothing about speed


def chromium() -> str | None:
    """The browser's program, or None when it is not installed (the tests skip, saying so)."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def start_rig(directory: Path, options: RigOptions) -> tuple[TableRig, str]:
    """A TableRig whose daemon serves the scoreboard on a free loopback port; its URL."""
    rig = TableRig(directory, options)
    listen = f"127.0.0.1:{free_port()}"
    directory.mkdir(parents=True, exist_ok=True)
    rig.key_file.write_text(secrets.token_hex(32) + "\n")
    os.chmod(rig.key_file, 0o600)
    try:
        rig.start_receiver()
        rig.start_simulators()
        rig.write_config(scoreboard={"listen": listen})
        rig.start_daemon()
    except BaseException:
        rig.close()
        raise
    return rig, f"http://{listen}/"


class Browser:
    """One headless Chromium with one tab, driven over the DevTools protocol."""

    def __init__(self, width: int = 1920, height: int = 1080) -> None:
        program = chromium()
        if program is None:
            raise RuntimeError("chromium is not installed")
        self._profile = tempfile.mkdtemp(prefix="chromium-")
        args = [
            program,
            "--headless=new",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-renderer-backgrounding",
            "--disable-background-timer-throttling",
            "--mute-audio",
            "about:blank",
        ]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run its sandbox as root
        # Its own temporary files (a directory for its singleton socket, which it leaves
        # behind when it is terminated) in the profile, removed with it: not in /tmp.
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "TMPDIR": self._profile},
        )
        self._ids = itertools.count(1)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="cdp", daemon=True)
        self._thread.start()
        try:
            endpoint = self._devtools_endpoint()
            self._call(self._connect(endpoint))
            self.send("Page.enable")
            self.send("Runtime.enable")
            self.viewport(width, height)  # the page's own size, whatever the window's frame
        except BaseException:
            self.close()
            raise

    def _devtools_endpoint(self) -> str:
        assert self.process.stderr is not None
        deadline = time.monotonic() + GUARD_S
        while time.monotonic() < deadline:
            line = self.process.stderr.readline().decode(errors="replace")
            if not line and self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}")
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                # Keep reading its stderr so that it never blocks on a full pipe.
                threading.Thread(target=self._drain, daemon=True).start()
                return found.group(1)
        raise RuntimeError("chromium did not say where its DevTools listen")

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for _ in iter(self.process.stderr.readline, b""):
            pass

    async def _connect(self, browser_ws: str) -> None:
        base = browser_ws.split("/devtools/", 1)[0].replace("ws://", "http://")
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"{base}/json/list") as response:
            targets = await response.json()
        page = next(target for target in targets if target["type"] == "page")
        self._ws = await self._session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._ws:
            data = json.loads(message.data)
            future = self._waiting.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                if "error" in data:
                    future.set_exception(RuntimeError(f"DevTools: {data['error']}"))
                else:
                    future.set_result(data.get("result", {}))

    async def _send(self, method: str, params: dict[str, Any]) -> Any:
        number = next(self._ids)
        future = self.loop.create_future()
        self._waiting[number] = future
        await self._ws.send_str(json.dumps({"id": number, "method": method, "params": params}))
        return await future

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(GUARD_S)

    def send(self, method: str, **params: Any) -> Any:
        return self._call(self._send(method, params))

    # ------------------------------------------------------------------ the tab

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able)."""
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str) -> Any:
        """Poll until the expression is truthy (waiting, not timing: GUARD_S only stops a
        hung test)."""
        deadline = time.monotonic() + GUARD_S
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.01)
        raise AssertionError(f"the page never showed {what}")

    def viewport(self, width: int, height: int, *, mobile: bool = False) -> None:
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=2 if mobile else 1,
            mobile=mobile,
        )

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            if hasattr(self, "_session"):
                self._call(self._close_session())
        except Exception:  # the browser may be gone already: closing goes on
            pass
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(GUARD_S)
        shutil.rmtree(self._profile, ignore_errors=True)

    async def _close_session(self) -> None:
        await self._ws.close()
        self._reader.cancel()
        await self._session.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def wait(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"never got {what}")
