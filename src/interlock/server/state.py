"""What the routes share: the agent, the token store, the event hub, the watcher, the runner."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from fastapi import Request

from ..agent import Agent
from ..notify import Dispatcher, NotifyConfig
from .auth import FailureThrottle, TokenAuth
from .hub import Hub
from .limits import Limits
from .runner import Runner
from .shown import ShownRecord
from .watcher import InboxWatcher


@dataclass
class ServerState:
    agent: Agent
    auth: TokenAuth | None
    hub: Hub
    watcher: InboxWatcher
    runner: Runner
    limits: Limits = field(default_factory=Limits)
    throttle: FailureThrottle = field(default_factory=FailureThrottle)
    sse_keepalive: float = 15.0
    notify: NotifyConfig | None = None
    dispatcher: Dispatcher | None = None
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    shown: ShownRecord = field(default_factory=ShownRecord, repr=False)
    """What each reviewer was last shown of each thread's pending requests (for responses
    sent without an interrupt id)."""

    def end_streams(self) -> None:
        """End every open SSE stream; safe to call from any thread (used on shutdown so that
        the HTTP server need not wait for streaming clients)."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.hub.close)


def get_state(request: Request) -> ServerState:
    state = request.app.state.interlock
    assert isinstance(state, ServerState)
    return state
