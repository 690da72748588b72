"""Where blocking I/O of the storage backends runs.

The async API must keep its event loop responsive, so a backend's blocking call (SQLite,
psycopg) goes to a worker thread. A call of the blocking API (``agent.invoke``,
``agent.resume`` ...) is different: its thread waits for the result anyway, and the event
loop it runs on is a private one with nothing else to serve. There the call runs in the
caller's thread, which saves two thread switches per storage operation — on a virtual
machine a wake-up can cost more than the SQLite statement itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

BLOCKING_CALLER: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar(
    "interlock_blocking_caller", default=None)
"""Inside a call of the blocking API: the private loop that call runs on (set by ``_sync``).
A task or thread that inherits the context but runs elsewhere is not affected."""


async def offload(executor: Executor, fn: Callable[[], T]) -> T:
    """Run the blocking ``fn``: inline on a blocking call's own loop, else in ``executor``."""
    loop = asyncio.get_running_loop()
    if BLOCKING_CALLER.get() is loop:
        return fn()
    return await loop.run_in_executor(executor, fn)
