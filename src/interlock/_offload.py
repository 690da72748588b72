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

BLOCKING_CALLER: ContextVar[bool] = ContextVar("interlock_blocking_caller", default=False)
"""True inside a call of the blocking API (set by ``_sync``)."""


async def offload(executor: Executor, fn: Callable[[], T]) -> T:
    """Run the blocking ``fn``: inline for a blocking-API caller, else in ``executor``."""
    if BLOCKING_CALLER.get():
        return fn()
    return await asyncio.get_running_loop().run_in_executor(executor, fn)
