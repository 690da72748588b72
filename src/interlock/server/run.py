"""``serve(agent, ...)``: run the review server with uvicorn (used by ``interlock serve``)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

from ..agent import Agent
from ..authz import read_keys
from ..errors import MissingDependency
from ..notify import NotifyConfig
from ..storage import from_url
from ..subagent_tree import use_store
from .app import create_app
from .auth import TokenConfig, check_bind, load_tokens
from .limits import Limits
from .state import ServerState

log = logging.getLogger("interlock.server")


def build_server(
    agent: Agent,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    db_url: str | None = None,
    tokens: TokenConfig | None = None,
    poll_interval: float = 0.5,
    expiry_interval: timedelta | None = timedelta(seconds=30),
    recovery_interval: timedelta | None = timedelta(seconds=30),
    log_level: str = "info",
    on_started: Callable[[str], None] | None = None,
    limits: Limits | None = None,
    notify: NotifyConfig | str | Path | None = None,
    dispatch: bool = True,
    langgraph_api: bool = False,
    langgraph_origins: Sequence[str] = (),
    api_only: bool = False,
    **uvicorn_options: Any,
) -> Any:
    """A configured ``uvicorn.Server`` (not started).

    ``tokens`` as for :func:`create_app` (``None``: the ``INTERLOCK_TOKENS`` /
    ``INTERLOCK_TOKENS_FILE`` environment, else local mode); a non-loopback ``host`` is refused
    without tokens. ``db_url`` replaces the agent's checkpointer (``sqlite:///file.db``,
    ``postgresql://...``). ``on_started`` is called with the base URL once the socket is bound
    (useful with ``port=0``). ``notify`` / ``dispatch`` and ``langgraph_api`` /
    ``langgraph_origins`` and ``api_only`` as for :func:`create_app`."""
    try:
        import uvicorn
    except ImportError:
        raise MissingDependency("The review server", "server", "uvicorn") from None
    auth = load_tokens(tokens)
    check_bind(host, auth)
    if db_url is not None:
        # its sub-agents' threads go there too
        use_store(agent, from_url(db_url, read_keys=read_keys))
    app = create_app(agent, tokens=auth, use_env_tokens=False, poll_interval=poll_interval,
                     expiry_interval=expiry_interval, recovery_interval=recovery_interval,
                     limits=limits, notify=notify, dispatch=dispatch, langgraph_api=langgraph_api,
                     langgraph_origins=langgraph_origins, api_only=api_only)
    state = app.state.interlock
    assert isinstance(state, ServerState)
    uvicorn_options.setdefault("timeout_graceful_shutdown", 5)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, **uvicorn_options)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if on_started is not None and self.started and self.servers:
                bound = self.servers[0].sockets[0].getsockname()
                shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
                on_started(f"http://{shown}:{bound[1]}/")

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            state.end_streams()  # open SSE streams would otherwise hold the shutdown
            super().handle_exit(sig, frame)

    return Server(config)


def serve(agent: Agent, **options: Any) -> None:
    """Serve the API and the web inbox until interrupted (Ctrl-C). Options as
    :func:`build_server`."""
    server = build_server(agent, **options)
    server.run()
