"""A real review server (uvicorn) on 127.0.0.1, in a background thread, for browser tests."""

from __future__ import annotations

import os
import shutil
import threading
from typing import Any

import pytest

from interlock import Agent
from interlock.server import build_server
from interlock.server.state import ServerState

CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]


def chromium_path() -> str:
    """Debian's chromium, or fail (CI) / skip (elsewhere) with how to install it."""
    path = os.environ.get("INTERLOCK_CHROMIUM") or shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if path is None:
        message = ("the browser tests need Debian's chromium: apt-get install -y chromium "
                   "(or set INTERLOCK_CHROMIUM to a Chromium binary)")
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return path


class LiveServer:
    def __init__(self, agent: Agent, **options: Any) -> None:
        self.agent = agent
        ready = threading.Event()
        self.url = ""

        def started(url: str) -> None:
            self.url = url.rstrip("/")
            ready.set()

        options.setdefault("expiry_interval", None)
        options.setdefault("poll_interval", 0.1)
        self.server = build_server(agent, host="127.0.0.1", port=0, log_level="warning",
                                   on_started=started, **options)
        self.thread = threading.Thread(target=self.server.run, daemon=True,
                                       name="interlock-live-server")
        self.thread.start()
        if not ready.wait(20):
            raise RuntimeError("the review server did not start")

    @property
    def state(self) -> ServerState:
        state = self.server.config.app.state.interlock
        assert isinstance(state, ServerState)
        return state

    def stop(self) -> None:
        self.state.end_streams()
        self.server.should_exit = True
        self.thread.join(20)
        if self.thread.is_alive():
            raise RuntimeError("the review server did not stop")
