"""The thin sync layer: run the async core on a per-thread event loop."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import signal
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

from ._offload import BLOCKING_CALLER
from .errors import InterlockError

try:  # the C module under `signal`: same functions without the enum conversions (~2 µs each)
    import _signal as _sig  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - interpreters without it
    _sig = signal

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


class _CtrlC:
    """SIGINT handler while a blocking call runs: the first Ctrl-C cancels the call at its
    next ``await`` (so no step is left half-applied), a second one raises at once."""

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.loop, self.task, self.count = loop, task, 0

    def __call__(self, signum: int, frame: object) -> None:
        self.count += 1
        if self.count == 1 and not self.task.done():
            self.task.cancel()
            self.loop.call_soon_threadsafe(lambda: None)  # wake the loop
            return
        raise KeyboardInterrupt()


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.Runner.run`` without its per-call overhead: the runner's loop runs the task,
    in the caller's context, with the same Ctrl-C behaviour (a cancelled call raises
    ``KeyboardInterrupt``). ``Runner.run`` formats ``repr()`` of the task twice per call
    while it swaps the SIGINT handler; this costs a few microseconds instead."""
    loop = _runner().get_loop()
    context = contextvars.copy_context()
    context.run(BLOCKING_CALLER.set, loop)
    task = loop.create_task(coro, context=context)
    handler: _CtrlC | None = None
    if (threading.current_thread() is threading.main_thread()
            and _sig.getsignal(signal.SIGINT) is signal.default_int_handler):
        handler = _CtrlC(loop, task)
        try:
            _sig.signal(signal.SIGINT, handler)
        except ValueError:  # pragma: no cover - e.g. signals unavailable here
            handler = None
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if handler is not None and handler.count:
            raise KeyboardInterrupt() from None
        raise
    finally:
        if handler is not None and _sig.getsignal(signal.SIGINT) is handler:
            _sig.signal(signal.SIGINT, signal.default_int_handler)


def run_blocking(coro: Coroutine[Any, Any, T], name: str) -> T:
    try:
        _check_no_loop(name)
    except InterlockError:
        coro.close()
        raise
    return _run(coro)


def iterate_blocking(agen: AsyncIterator[T], name: str) -> Iterator[T]:
    _check_no_loop(name)

    async def step() -> tuple[bool, T | None]:
        try:
            return True, await agen.__anext__()
        except StopAsyncIteration:
            return False, None

    try:
        while True:
            ok, item = _run(step())
            if not ok:
                return
            yield item  # type: ignore[misc]
    finally:
        aclose = getattr(agen, "aclose", None)
        if aclose is not None:
            _run(aclose())
