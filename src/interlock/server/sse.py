"""``text/event-stream`` responses fed by the hub."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from fastapi.responses import StreamingResponse

from ..authz import Reviewer
from .hub import StreamEvent, Subscription
from .state import ServerState

RESYNC = b'event: resync\ndata: {"reason":"the stream fell behind; reload the state"}\n\n'


KEEPALIVE = b": keepalive\n\n"


async def next_event(sub: Subscription, keepalive: float) -> StreamEvent | bytes | None:
    """The subscription's next event; :data:`KEEPALIVE` after ``keepalive`` seconds without
    one; None when the stream ends (server shutdown)."""
    if not sub.queue.empty():
        return sub.queue.get_nowait()
    # asyncio.wait, not wait_for: a cancellation (client gone, shutdown) is never lost
    getter = asyncio.ensure_future(sub.queue.get())
    try:
        done, _ = await asyncio.wait({getter}, timeout=keepalive)
    finally:
        getter.cancel()
    return getter.result() if done else KEEPALIVE


def stream(state: ServerState, topic: str, after: str | None, reviewer: Reviewer | None, *,
           end_when_hidden: bool = False, who: str | None = None) -> StreamingResponse:
    """Subscribe to ``topic``. Events published after ``after`` (or after this call) are
    delivered; a comment line every ``sse_keepalive`` seconds keeps proxies from timing out.
    Events about threads ``reviewer`` may not read are left out (``end_when_hidden``: the
    stream ends instead, for a thread's own stream once its reader lost access). ``who``: the
    caller, whose record of what they were shown (:class:`~.shown.ShownRecord`) the events
    carrying pending requests update."""
    hub = state.hub
    start = after or hub.last_id()
    keepalive = state.sse_keepalive

    async def body() -> AsyncIterator[bytes]:
        sub: Subscription = hub.subscribe(topic, after=start)
        try:
            yield b"retry: 2000\n: connected\n\n"
            while True:
                ev = await next_event(sub, keepalive)
                if ev is KEEPALIVE:
                    yield KEEPALIVE
                    continue
                if ev is None:
                    return
                assert isinstance(ev, StreamEvent)
                if not ev.visible_to(reviewer):
                    if end_when_hidden:
                        return
                    continue
                if who is not None:
                    state.shown.note_event(who, ev.data)
                yield ev.encode()
                if sub.overflowed and sub.queue.empty():
                    yield RESYNC
                    return
        finally:
            hub.unsubscribe(sub)

    return StreamingResponse(
        body(), media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
