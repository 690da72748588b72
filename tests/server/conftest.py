"""Fixtures for the review-server tests: an in-process app + httpx client, and an in-process
SSE reader (httpx's ASGI transport buffers whole responses, so streams are read from the ASGI
app directly)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from conftest import StoreFactory, require_postgres
from interlock import Agent, Checkpointer
from interlock.server import create_app

from .server_agents import EXECUTED, make_agent

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
CAROL = "carol-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"
TOKENS = {
    ALICE: {"id": "alice", "roles": ["dba", "ops"]},
    BOB: {"id": "bob", "roles": ["ops"]},
    CAROL: {"id": "carol", "roles": []},
    ADMIN: {"id": "root", "roles": ["admin"]},
}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _postgres_ready() -> None:
    require_postgres()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    if request.param == "postgres":
        _postgres_ready()
    factory = StoreFactory(str(request.param), tmp_path)
    yield factory
    factory.cleanup()


@pytest.fixture(autouse=True)
def _clean_slate() -> None:
    EXECUTED.clear()
    # HTTP clients that earlier tests left open (the provider SDKs') close themselves on the
    # *running* event loop when garbage-collected; collect them now, while no loop runs, so
    # that cannot happen inside (and fail) these tests.
    gc.collect()


@pytest.fixture
def agent(store_factory: StoreFactory) -> Agent:
    return make_agent(store_factory())


@dataclass
class Server:
    app: Any
    client: httpx.AsyncClient
    agent: Agent


@contextlib.asynccontextmanager
async def running(agent: Agent, **options: Any) -> AsyncIterator[Server]:
    options.setdefault("use_env_tokens", False)
    options.setdefault("poll_interval", 0.05)
    options.setdefault("expiry_interval", None)
    app = create_app(agent, **options)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            yield Server(app, c, agent)


@pytest.fixture
async def local(agent: Agent) -> AsyncIterator[Server]:
    """The server in local mode (no tokens)."""
    async with running(agent) as s:
        yield s


@pytest.fixture
async def secured(agent: Agent) -> AsyncIterator[Server]:
    """The server with the three reviewer tokens."""
    async with running(agent, tokens=TOKENS) as s:
        yield s


# -- SSE ----------------------------------------------------------------------------------


@dataclass
class SSEStream:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    events: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    seen: list[dict[str, Any]] = field(default_factory=list)
    _buf: str = ""

    def feed(self, chunk: str) -> None:
        self._buf += chunk
        while "\n\n" in self._buf:
            block, self._buf = self._buf.split("\n\n", 1)
            ev: dict[str, Any] = {}
            for line in block.split("\n"):
                if line.startswith(":") or ":" not in line:
                    continue
                key, _, value = line.partition(":")
                ev[key] = value.lstrip(" ")
            if "event" in ev:
                ev["data"] = json.loads(ev.get("data", "null"))
                self.events.put_nowait(ev)

    async def next(self, within: float = 10.0) -> dict[str, Any]:
        ev = await asyncio.wait_for(self.events.get(), within)
        self.seen.append(ev)
        return ev

    async def until(self, pred: Callable[[dict[str, Any]], bool],
                    within: float = 10.0) -> dict[str, Any]:
        """The first event matching ``pred`` (events before it are kept in ``seen``)."""
        async def go() -> dict[str, Any]:
            while True:
                ev = await self.next(within)
                if pred(ev):
                    return ev
        return await asyncio.wait_for(go(), within)


@contextlib.asynccontextmanager
async def sse(app: Any, url: str, headers: dict[str, str] | None = None,
              client: tuple[str, int] = ("127.0.0.1", 5000)) -> AsyncIterator[SSEStream]:
    parts = urlsplit(url)
    hdrs = [(b"host", b"127.0.0.1")] + [
        (k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": parts.path, "raw_path": parts.path.encode(),
        "query_string": parts.query.encode(), "root_path": "", "headers": hdrs,
        "client": client, "server": ("127.0.0.1", 80),
    }
    stream = SSEStream()
    started = asyncio.Event()
    gone = asyncio.Event()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            stream.status = message["status"]
            stream.headers = {k.decode(): v.decode() for k, v in message["headers"]}
            started.set()
        elif message["type"] == "http.response.body":
            stream.feed(message.get("body", b"").decode())

    task = asyncio.create_task(app(scope, receive, send))
    await asyncio.wait_for(started.wait(), 10)
    try:
        yield stream
    finally:
        gone.set()
        try:
            await asyncio.wait_for(task, 5)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    """Poll ``check`` until it is true (API tests only; the browser tests use Playwright's
    auto-waiting assertions)."""
    deadline = asyncio.get_running_loop().time() + within
    for _ in itertools.count():
        if await check():
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {within} s")
        await asyncio.sleep(0.02)


__all__ = ["ADMIN", "ALICE", "BOB", "CAROL", "TOKENS", "Checkpointer", "bearer", "eventually",
           "running", "sse"]


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page of Debian's chromium that fails the test on a script error or a CSP violation
    (``live.watched_page``); a module may define its own."""
    from .live import watched_page

    with watched_page(browser) as page:
        yield page


@pytest.fixture
def local_inbox(tmp_path: Path) -> Iterator[Any]:
    """The review server of ``server_agents`` on a fresh SQLite file, without tokens (local
    mode), in this process."""
    from interlock import SqliteCheckpointer

    from .live import LiveServer

    server = LiveServer(make_agent(SqliteCheckpointer(tmp_path / "inbox.db")))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def langgraph_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The review server of ``server_agents`` with the LangGraph API and tokens, on a fresh
    SQLite file, in this process; one per test module."""
    from interlock import SqliteCheckpointer

    from .live import LiveServer

    path = tmp_path_factory.mktemp("langgraph-local") / "threads.db"
    server = LiveServer(make_agent(SqliteCheckpointer(path)), tokens=TOKENS, langgraph_api=True)
    yield server
    server.stop()


@pytest.fixture
def langgraph_alice(langgraph_local: Any) -> Any:
    """``langgraph-sdk``'s sync client on ``langgraph_local``'s ``/langgraph``, as alice."""
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=f"{langgraph_local.url}/langgraph", api_key=ALICE)
