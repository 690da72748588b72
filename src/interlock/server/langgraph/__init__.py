"""A LangGraph-compatible API for ``langgraph-sdk`` clients and LangChain's Agent Inbox.

Mounted by ``create_app(agent, langgraph_api=True)`` (``interlock serve --langgraph-api``)
under ``/langgraph``: assistants, threads, thread state with ``__interrupt__``, runs
(create / wait / stream) with ``input`` and ``command.resume``. The same routes under
``/langgraph/agent-inbox`` give interrupts in Agent Inbox's ``HumanInterrupt`` shape, and under
``/langgraph/per-turn`` one interrupt per turn listing every call, as LangChain's middleware.
Everything goes through the review server's runner, authentication and the core's validation;
see docs/langgraph-clients.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.middleware.cors import CORSMiddleware

from ... import __version__
from ...errors import NoPendingInterrupt, ThreadInterrupted, ThreadNotFound, in_other_terms
from .. import errors
from ..state import ServerState
from .routes import LangGraphAPI, build_router

MOUNT = "/langgraph"
INBOX_PREFIX = "/agent-inbox"
PER_TURN_PREFIX = "/per-turn"


def create_langgraph_app(state: ServerState, *, cors_origins: Sequence[str] = ()) -> FastAPI:
    """The sub-application (mount it at :data:`MOUNT`). ``cors_origins``: browser origins
    allowed to call it, e.g. where Agent Inbox runs (``http://localhost:3000``)."""
    app = FastAPI(
        title="interlock: LangGraph-compatible API", version=__version__, docs_url=None,
        redoc_url=None, openapi_url="/openapi.json",
        description="The subset of the LangGraph server API used by langgraph-sdk and Agent "
        "Inbox. Authenticate with 'x-api-key: <token>' or 'Authorization: Bearer <token>'.",
    )
    app.state.interlock = state
    app.state.langgraph = LangGraphAPI(state)
    app.include_router(build_router("hitl"))
    app.include_router(build_router("inbox"), prefix=INBOX_PREFIX)
    app.include_router(build_router("turn"), prefix=PER_TURN_PREFIX)
    errors.install(app)
    app.add_exception_handler(ThreadNotFound, _in_http_terms)
    app.add_exception_handler(NoPendingInterrupt, _in_http_terms)
    app.add_exception_handler(ThreadInterrupted, _in_http_terms)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(cors_origins), allow_methods=["*"],
            allow_headers=["*"], expose_headers=["Content-Location", "X-Pagination-Next"],
            max_age=600)
    return app


def http_message(exc: ThreadNotFound | NoPendingInterrupt | ThreadInterrupted) -> str:
    """The core's message for these errors names Python methods; an HTTP client is told the
    request to send instead."""
    return in_other_terms(
        exc,
        not_found="Thread {thread!r} does not exist. Create it with POST /threads "
                  "(client.threads.create), or start a run on it with if_not_exists='create'.",
        no_pending="Thread {thread!r} has no pending interrupt, so there is nothing to resume. "
                   "Start a run with input={{'messages': [{{'role': 'user', 'content': ...}}]}} "
                   "instead.",
        waiting="Thread {thread!r} is waiting for a decision on interrupt(s) {interrupts}; it "
                "cannot take a new message now. Answer them with a run whose command is "
                "{{'resume': ...}}, or mark the thread as resolved.")


async def _in_http_terms(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ThreadNotFound | NoPendingInterrupt | ThreadInterrupted)
    return JSONResponse(errors.body(type(exc).__name__, http_message(exc)),
                        status_code=errors.status_for(exc))


__all__ = ["INBOX_PREFIX", "MOUNT", "PER_TURN_PREFIX", "create_langgraph_app"]
