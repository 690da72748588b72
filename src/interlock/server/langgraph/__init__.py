"""A LangGraph-compatible API for ``langgraph-sdk`` clients and LangChain's Agent Inbox.

Mounted by ``create_app(agent, langgraph_api=True)`` (``interlock serve --langgraph-api``)
under ``/langgraph``: assistants, threads, thread state with ``__interrupt__``, runs
(create / wait / stream) with ``input`` and ``command.resume``. The same routes under
``/langgraph/agent-inbox`` give interrupts in Agent Inbox's ``HumanInterrupt`` shape.
Everything goes through the review server's runner, authentication and the core's validation;
see docs/langgraph-clients.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from ... import __version__
from .. import errors
from ..state import ServerState
from .routes import LangGraphAPI, build_router

MOUNT = "/langgraph"
INBOX_PREFIX = "/agent-inbox"


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
    errors.install(app)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(cors_origins), allow_methods=["*"],
            allow_headers=["*"], expose_headers=["Content-Location", "X-Pagination-Next"],
            max_age=600)
    return app


__all__ = ["INBOX_PREFIX", "MOUNT", "create_langgraph_app"]
