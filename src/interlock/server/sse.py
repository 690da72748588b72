"""``text/event-stream`` responses fed by the hub."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from fastapi.responses import StreamingResponse

from .hub import Subscription
from .state import ServerState

RESYNC = b'event: resync\ndata: {"reason":"the stream fell behind; reload the state"}\n\n'


def stream(state: ServerState, topic: str, after: str | None) -> StreamingResponse:
    """Subscribe to ``topic``. Events published after ``after`` (or after this call) are
    delivered; a comment line every ``sse_keepalive`` seconds keeps proxies from timing out."""
    hub = state.hub
    start = after or hub.last_id()
    keepalive = state.sse_keepalive

    async def body() -> AsyncIterator[bytes]:
        sub: Subscription = hub.subscribe(topic, after=start)
        try:
            yield b"retry: 2000\n: connected\n\n"
            while True:
                if sub.queue.empty():
                    # asyncio.wait, not wait_for: a cancellation (client gone, shutdown) is
                    # never lost
                    getter = asyncio.ensure_future(sub.queue.get())
                    try:
                        done, _ = await asyncio.wait({getter}, timeout=keepalive)
                    finally:
                        getter.cancel()
                    if not done:
                        yield b": keepalive\n\n"
                        continue
                    ev = getter.result()
                else:
                    ev = sub.queue.get_nowait()
                if ev is None:
                    return
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
