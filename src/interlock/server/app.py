"""``create_app(agent)``: the review server as an ASGI application (FastAPI)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import timedelta
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

from .. import __version__
from .._failures import FailureLog, stop_if_cancelled
from ..agent import Agent
from ..authz import check_distinct_ids
from ..errors import ConfigurationError
from ..notify import Dispatcher, NotifyConfig, build_channels, load_config
from ..result import RunResult
from ..storage.base import RunQueue
from . import errors
from .api import router
from .auth import FailureThrottle, TokenConfig, load_tokens
from .hub import Hub
from .limits import Limits
from .notify_routes import router as notify_router
from .redact import redact_access_log
from .runner import Runner
from .security import SecurityMiddleware
from .state import ServerState
from .watcher import InboxWatcher

log = logging.getLogger("interlock.server")
STATIC = Path(__file__).parent / "static"
MOUNT_PREFIX = "/langgraph/"
IMMUTABLE = "public, max-age=31536000, immutable"


class _Static(StaticFiles):
    """The inbox's files with a ``Cache-Control`` header (ETag and Last-Modified come from
    StaticFiles, so a ``no-cache`` file is revalidated with a 304)."""

    def __init__(self, cache_control: str) -> None:
        super().__init__(directory=STATIC)
        self.cache_control = cache_control

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            response.headers["Cache-Control"] = self.cache_control
        return response


def static_version() -> str:
    """A digest of the inbox's files: the path segment under which they are served as
    immutable (``/static/<version>/inbox.js``), so an upgrade changes every URL."""
    digest = hashlib.sha256()
    for f in sorted(STATIC.iterdir()):
        if f.is_file():
            digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


async def _repeat(what: str, job: Callable[[], Awaitable[list[RunResult]]],
                  watcher: InboxWatcher, interval: float | None, *, at_start: bool) -> None:
    """Run ``job`` every ``interval`` seconds (first at once when ``at_start``; None: only
    that once); poke the inbox when it changed threads. Failures are logged and retried."""
    first = at_start
    failures = FailureLog(log, what)
    retry = f"retrying every {interval:g} s" if interval is not None else "not retried"
    while True:
        if not first:
            if interval is None:
                return
            await asyncio.sleep(interval)
        first = False
        try:
            changed = await job()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failures.failed(exc, retry)
            changed = []
        else:
            failures.worked()
        stop_if_cancelled()
        if changed:
            watcher.poke()


def create_app(
    agent: Agent,
    *,
    tokens: TokenConfig | None = None,
    use_env_tokens: bool = True,
    poll_interval: float = 0.5,
    expiry_interval: timedelta | None = timedelta(seconds=30),
    recovery_interval: timedelta | None = timedelta(seconds=30),
    recover: bool = True,
    sse_keepalive: float = 15.0,
    shutdown_grace: float = 5.0,
    inbox: bool = True,
    title: str = "interlock review server",
    limits: Limits | None = None,
    notify: NotifyConfig | str | Path | None = None,
    dispatch: bool = True,
    langgraph_api: bool = False,
    langgraph_origins: Sequence[str] = (),
    api_only: bool = False,
) -> FastAPI:
    """Build the review server for ``agent``.

    ``tokens``: a :class:`TokenAuth`, a path to a TOML/JSON token file or the parsed
    configuration; ``None`` reads ``INTERLOCK_TOKENS`` / ``INTERLOCK_TOKENS_FILE`` (unless
    ``use_env_tokens=False``) and, when neither is set, runs in local mode: no tokens, reviewer
    ``local`` with every role, loopback clients only.
    ``poll_interval``: seconds between checkpointer polls feeding the inbox stream (changes made
    by other processes appear within it). ``expiry_interval``: how often pending requests are
    checked against their deadline (``None`` disables the sweeper). ``recover``: continue
    threads whose process stopped mid-run (a crash, a killed server), at start and every
    ``recovery_interval`` (``None``: only at start); a call that was running becomes an
    "outcome unknown" request unless its tool is idempotent. ``shutdown_grace``: seconds the
    runs still going get to finish at shutdown before they are cancelled (a cancelled run
    waits for a tool that is running, up to the agent's ``tool_grace``, and stores its
    outcome). ``inbox``: serve the web inbox at ``/``. ``limits``: request sizes and the
    failed-token throttle (:class:`Limits`; the defaults suit most deployments). ``notify``:
    the notification configuration (a :class:`NotifyConfig` or a TOML file, see
    docs/notifications.md): enables the Slack and e-mail decision routes and, unless
    ``dispatch=False``, delivers the outbox from this process.
    ``langgraph_api``: also serve the LangGraph-compatible API under ``/langgraph`` (for
    ``langgraph-sdk`` and Agent Inbox; docs/langgraph-clients.md); ``langgraph_origins``:
    browser origins (e.g. Agent Inbox's) allowed to call it.
    ``api_only``: run nothing in this process — input and decisions are stored with the run
    put on the store's run queue (one commit) for ``interlock worker`` processes, which also
    run the expiry and recovery sweeps (so ``expiry_interval`` and ``recover`` do not apply).
    Needs a store with a run queue (Postgres); see docs/deploying.md.
    """
    if api_only and not isinstance(agent.checkpointer, RunQueue):
        raise ConfigurationError(
            f"An API-only server hands every run to worker processes through the store's run "
            f"queue, which {type(agent.checkpointer).__name__} does not have: use a Postgres "
            f"database (--db postgresql://...) for separate API and worker processes, or "
            f"drop --api-only to run the agent in this process (the default, and the way to "
            f"run with SQLite).")
    limits = limits or Limits()
    redact_access_log()  # tokens of old e-mail links (in the path) never reach the log
    auth = load_tokens(tokens, use_env=use_env_tokens)
    notify_config = load_config(notify) if notify is not None else None
    if auth is not None and notify_config is not None:  # one spelling per person everywhere
        check_distinct_ids([*{i.id for i in auth.identities},
                            *{p.id for p in notify_config.reviewers}],
                           "The reviewer tokens and the notification configuration together")
    dispatcher: Dispatcher | None = None
    if notify_config is not None and dispatch:
        role_of = {i.id: i.roles for i in auth.identities} if auth is not None else {}
        dispatcher = Dispatcher(
            agent.checkpointer,
            build_channels(notify_config, agent.checkpointer, role_of=role_of),
            settings=notify_config.dispatch)
    hub = Hub()
    watcher = InboxWatcher(agent, hub, interval=poll_interval)

    def changed() -> None:
        watcher.poke()
        if dispatcher is not None:
            dispatcher.poke()

    runner = Runner(agent, hub, changed, handoff=api_only)
    state = ServerState(agent=agent, auth=auth, hub=hub, watcher=watcher, runner=runner,
                        limits=limits,
                        throttle=FailureThrottle(limits.failed_token_attempts,
                                                 limits.failed_token_window),
                        sse_keepalive=sse_keepalive, notify=notify_config,
                        dispatcher=dispatcher)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        state.loop = asyncio.get_running_loop()
        try:  # follow the change feed from this moment (retried by the watcher on failure)
            await watcher.prime()
        except Exception as exc:
            watcher.failures.failed(exc)
        background = [asyncio.create_task(watcher.run(), name="interlock-inbox-watcher")]
        # review deadlines (InterruptOn(expires_after=...)); workers run them for API-only
        if expiry_interval is not None and not api_only:
            background.append(asyncio.create_task(_repeat(
                "expiry sweep", agent.aexpire_due, watcher, expiry_interval.total_seconds(),
                at_start=False), name="interlock-expiry-sweeper"))
        if recover and not api_only:  # threads whose process stopped mid-run: periodically
            every = recovery_interval.total_seconds() if recovery_interval else None
            background.append(asyncio.create_task(_repeat(
                "recovery sweep", agent.arecover_stale, watcher, every, at_start=True),
                name="interlock-recovery"))
        if dispatcher is not None:
            background.append(asyncio.create_task(dispatcher.run(),
                                                  name="interlock-outbox-dispatcher"))
        mode = f"{len(auth)} reviewer token(s)" if auth else "local mode (no tokens)"
        if api_only:
            mode += "; API only (runs go to interlock worker processes)"
        log.info("interlock review server for %r: %s", agent, mode)
        try:
            yield
        finally:
            hub.close()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await runner.aclose(shutdown_grace)

    app = FastAPI(
        title=title, version=__version__, lifespan=lifespan,
        description="Review and resume paused agent runs. Authenticate with "
        "'Authorization: Bearer <token>' unless the server runs in local mode.",
        openapi_url="/api/openapi.json", docs_url=None, redoc_url=None,
    )
    app.state.interlock = state
    app.include_router(router)
    app.include_router(notify_router)
    errors.install(app)
    if inbox:
        # the page names its files under a versioned path, cached for good (the modules'
        # relative imports stay under it); /static/<file> stays for other users, revalidated
        version = static_version()
        page = (STATIC / "index.html").read_text().replace('"static/', f'"static/{version}/')
        etag = f'"{hashlib.sha256(page.encode()).hexdigest()[:16]}"'
        app.mount(f"/static/{version}", _Static(IMMUTABLE), name="static-versioned")
        app.mount("/static", _Static("no-cache"), name="static")

        @app.get("/", include_in_schema=False)
        async def index(request: Request) -> Response:
            headers = {"Cache-Control": "no-cache", "ETag": etag}
            if request.headers.get("if-none-match") == etag:
                return Response(status_code=304, headers=headers)
            return HTMLResponse(page, headers=headers)

    trusted: tuple[str, ...] = ()
    if langgraph_api:
        from .langgraph import MOUNT, create_langgraph_app

        app.mount(MOUNT, create_langgraph_app(state, cors_origins=langgraph_origins))
        trusted = tuple(langgraph_origins)
    app.add_middleware(SecurityMiddleware, local_only=auth is None,
                       max_body_bytes=limits.max_body_bytes, trusted_origins=trusted,
                       trusted_prefix=MOUNT_PREFIX)
    return app
