"""The thin sync layer: run the async core on a per-thread event loop."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

from .errors import InterlockError

T = TypeVar("T")
_local = threading.local()
_runners: list[asyncio.Runner] = []


def _runner() -> asyncio.Runner:
    runner: asyncio.Runner | None = getattr(_local, "runner", None)
    if runner is None:
        runner = asyncio.Runner()
        _local.runner = runner
        _runners.append(runner)
    return runner


@atexit.register
def _close_runners() -> None:
    for r in _runners:
        with contextlib.suppress(Exception):
            r.close()


def _check_no_loop(name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise InterlockError(
        f"Agent.{name}() is the blocking form and cannot run inside a running event loop "
        f"(e.g. in async code, Jupyter or a server). Use `await agent.a{name}(...)` instead."
    )


async def _into(coro: Coroutine[Any, Any, T], box: list[T]) -> None:
    box.append(await coro)


def run_blocking(coro: Coroutine[Any, Any, T], name: str) -> T:
    try:
        _check_no_loop(name)
    except InterlockError:
        coro.close()
        raise
    # The task's own result stays None: asyncio.Runner formats repr(task) (result included)
    # when it restores the SIGINT handler, which for a RunResult means the whole transcript.
    box: list[T] = []
    _runner().run(_into(coro, box))
    return box[0]


def iterate_blocking(agen: AsyncIterator[T], name: str) -> Iterator[T]:
    _check_no_loop(name)
    runner = _runner()

    async def step() -> tuple[bool, T | None]:
        try:
            return True, await agen.__anext__()
        except StopAsyncIteration:
            return False, None

    try:
        while True:
            ok, item = runner.run(step())
            if not ok:
                return
            yield item  # type: ignore[misc]
    finally:
        aclose = getattr(agen, "aclose", None)
        if aclose is not None:
            runner.run(aclose())
