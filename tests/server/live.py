"""A real review server (uvicorn) on 127.0.0.1, in a background thread, for browser tests."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from conftest import unavailable
from interlock import Agent
from interlock.server import build_server
from interlock.server.state import ServerState

TESTS = Path(__file__).resolve().parents[1]
READY = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's headless chromium, driven by Playwright (a module-scoped fixture's body)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def watch(page: Any) -> list[str]:
    """The script errors and CSP violations of ``page`` from now on, as a list that grows
    (HTTP error statuses the page handles, like a 409, are logged by Chromium too: those are
    left out)."""
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error"
            and "Failed to load resource" not in m.text else None)
    return errors


@contextlib.contextmanager
def watched_page(browser: Any, width: int = 1360, height: int = 900) -> Iterator[Any]:
    """A page in a fresh browser context (a test's ``page`` fixture's body); the test fails
    when the page had a script error or a CSP violation (see :func:`watch`)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors = watch(page)
    try:
        yield page
    finally:
        context.close()
    assert errors == [], errors


def start_thread(url: str, message: str, thread_id: str,
                 token: str | None = None) -> dict[str, Any]:
    """Start ``thread_id`` with ``message`` through the HTTP API (as ``token``'s holder) and
    wait until its run pauses or ends: the thread as the API answers."""
    r = httpx.post(f"{url}/api/threads", params={"wait": "true"},
                   headers={"Authorization": f"Bearer {token}"} if token else {},
                   json={"message": message, "thread_id": thread_id}, timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def chromium_path() -> str:
    """Debian's chromium, or fail (CI) / skip (elsewhere) with how to install it."""
    path = os.environ.get("INTERLOCK_CHROMIUM") or shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if path is None:
        message = ("the browser tests need Debian's chromium: apt-get install -y chromium "
                   "(or set INTERLOCK_CHROMIUM to a Chromium binary)")
        unavailable("The browser tests", message)
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


class ServeProcess:
    """``interlock serve server.server_agents:make_agent`` as a real process on a free port;
    executions are appended to ``exec_log``."""

    def __init__(self, name: str, db_url: str | None, tokens: Path, exec_log: Path,
                 extra_args: Sequence[str] = (),
                 agent: str = "server.server_agents:make_agent",
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
            "PYTHONPATH", "")]), "INTERLOCK_TEST_EXEC_LOG": str(exec_log), **(env or {})}
        env.pop("INTERLOCK_TOKENS", None)
        env.pop("INTERLOCK_TOKENS_FILE", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "interlock.cli", "serve", agent,
             *(["--db", db_url] if db_url else []),  # None: the agent's own store
             "--host", "127.0.0.1", "--port", "0", "--tokens", str(tokens),
             "--poll-interval", "0.1", "--log-level", "info", *extra_args],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.lines: list[str] = []
        self.port: int | None = None
        found = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                m = READY.search(line)
                if m:
                    self.port = int(m.group(1))
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(30):
            self.stop()
            raise AssertionError(f"{name} did not start:\n{''.join(self.lines)}")
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                # a worker's stop is bounded by --shutdown-grace, the agent's tool_grace and
                # closing its pool (docs/cli.md "worker"), more than 20 s on a loaded machine
                return self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                raise AssertionError(f"{self.name} did not stop on SIGINT:\n"
                                     f"{''.join(self.lines)}") from None
        return int(self.proc.returncode)


def stop_all(processes: Sequence[ServeProcess]) -> list[tuple[str, int]]:
    """Stop every process still running, the last started first; their exit codes. Every one
    is stopped (or killed) even when another did not stop: one that hung is reported after all
    are down, so that no process outlives the test."""
    codes: list[tuple[str, int]] = []
    hung: list[str] = []
    for p in reversed(processes):
        if p.proc.poll() is None:
            try:
                codes.append((p.name, p.stop()))
            except AssertionError as exc:
                hung.append(str(exc))
    assert not hung, "\n".join(hung)
    return codes


@contextlib.contextmanager
def langgraph_serve(tmp: Path, *extra_args: str) -> Iterator[tuple[ServeProcess, Path]]:
    """``interlock serve --langgraph-api`` of ``server_agents`` on SQLite in ``tmp``, with the
    server tests' tokens; the process and its execution log, until the block ends."""
    from .conftest import TOKENS

    tokens = tmp / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    log = tmp / "exec.log"
    log.touch()
    proc = ServeProcess("serve", f"sqlite:///{tmp / 'lg.db'}", tokens, log,
                        extra_args=["--langgraph-api", "--expiry-interval", "0", *extra_args])
    try:
        yield proc, log
    finally:
        assert proc.stop() == 0


@contextlib.contextmanager
def gated_langgraph(model: Any, tool: Any, db: Path) -> Iterator[str]:
    """The ``/langgraph`` URL of a live server whose agent has ``model`` and the one gated
    ``tool``, on SQLite at ``db``."""
    from interlock import HumanInTheLoop, ScriptedModel, SqliteCheckpointer

    agent = Agent(model=ScriptedModel(model), tools=[tool],
                  middleware=[HumanInTheLoop(interrupt_on={tool.name: True})],
                  checkpointer=SqliteCheckpointer(db))
    server = LiveServer(agent, langgraph_api=True)
    try:
        yield server.url + "/langgraph"
    finally:
        server.stop()


def shown_box(locator: Any, timeout: float = 10.0) -> Any:
    """The bounding box of a shown element, read again while it is ``None``: a list the inbox
    renders anew (a live update) replaces its rows, and a box read in that instant is ``None``
    though the row is on screen before and after. ``None`` if it never is within ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        box = locator.bounding_box()
        if box is not None or time.monotonic() >= deadline:
            return box
        time.sleep(0.05)

