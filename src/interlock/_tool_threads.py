"""The threads that run sync tools, and the hand-off of a call to them.

A sync tool must not run on the event loop's thread: that thread renews the run's lease,
bounds the tool's time and answers Ctrl-C while the tool runs. So each call goes to a worker
thread and its result comes back to the loop. ``loop.run_in_executor`` does this through a
``concurrent.futures`` future chained to an asyncio future; on a small virtual machine the
round trip costs about 100 µs of CPU, more than the rest of a quick tool's call. Here a call
is a :class:`_Job`: the worker thread takes it from a queue, runs it, releases the job's lock
and, only when the loop waits on an asyncio future, wakes the loop.

On a blocking call's own event loop (``agent.invoke`` ...; see :mod:`interlock._offload`)
the loop serves that call alone. When it has nothing ready to run, its thread waits on the
job's lock for a short while (:data:`QUICK_WAIT`, never past its next timer) instead of
going back to the loop's selector: a quick tool's result is then taken without waking the
loop at all (about a fifth of the round trip's CPU). A tool still running after that is
awaited on the loop as on any other, so a lease renewal, a timeout or a Ctrl-C is late by at
most :data:`QUICK_WAIT`. A loop that serves others (a server's, a worker's, the async API's)
never waits so.

The pool grows up to ``min(32, CPUs + 4)`` threads, like ``ThreadPoolExecutor``'s default,
reuses idle ones, and, like it, lets the calls still running finish when the interpreter
exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, Generic, TypeVar

from ._offload import BLOCKING_CALLER

T = TypeVar("T")

QUICK_WAIT = 0.002
"""Seconds a blocking call's loop waits on a sync tool before it awaits the tool on the loop."""

_MAX_THREADS = min(32, (os.cpu_count() or 1) + 4)
_allocate = threading.Lock


class _Job(Generic[T]):
    """One call of a sync function in a tool thread. ``done`` is held until the call ended
    (released under ``guard``, which also guards ``waiter``: the loop and future to wake
    then, once the loop awaits the call)."""

    __slots__ = ("call", "done", "error", "guard", "value", "waiter")

    def __init__(self, call: Callable[[], T]) -> None:
        self.call = call
        self.done = _allocate()
        self.done.acquire()
        self.guard = _allocate()
        self.value: T | None = None
        self.error: BaseException | None = None
        self.waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None

    def run(self) -> None:
        """In a tool thread: make the call, keep what it returned or raised, tell the loop."""
        try:
            self.value = self.call()
        except BaseException as exc:  # handed to the caller, as a future would
            self.error = exc
        with self.guard:
            waiter, self.waiter = self.waiter, None
            self.done.release()
        if waiter is not None:
            loop, fut = waiter
            # a loop closed meanwhile (RuntimeError) has nobody waiting any more
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_wake, fut)

    def outcome(self) -> T:
        error = self.error
        if error is not None:
            self.error = None  # no reference cycle through the traceback
            raise error
        return self.value  # type: ignore[return-value]

    def _wait_on(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None] | None:
        """A future the worker completes when the call ends; None if it has ended."""
        with self.guard:
            if not self.done.locked():
                return None
            fut = loop.create_future()
            self.waiter = (loop, fut)
            return fut

    async def wait(self, loop: asyncio.AbstractEventLoop) -> T:
        """The call's outcome, awaited on ``loop``. A function running in a thread cannot be
        stopped: a cancelled wait waits for its real end and returns (or raises) what the
        function did; the run engine bounds that wait (``Agent(tool_grace=...)``) and stores
        the outcome. A second cancellation goes on."""
        fut = self._wait_on(loop)
        if fut is not None:
            try:
                await fut
            except asyncio.CancelledError:
                fut = self._wait_on(loop)
                if fut is not None:
                    await fut
        return self.outcome()


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class _Threads:
    """Worker threads taking jobs from one queue; a new thread only when none is idle."""

    def __init__(self) -> None:
        self.jobs: SimpleQueue[_Job[Any] | None] = SimpleQueue()
        self.guard = _allocate()
        self.threads = 0
        self.idle = 0
        self.backlog = 0
        """Jobs queued while every thread was busy and no more could start."""
        self.closed = False

    def submit(self, job: _Job[Any]) -> None:
        with self.guard:
            if self.closed:
                raise RuntimeError("cannot run a sync tool: the interpreter is shutting down")
            if self.idle:
                self.idle -= 1
            elif self.threads < _MAX_THREADS:
                self._start()
            else:
                self.backlog += 1
        self.jobs.put(job)

    def start_one(self) -> None:
        """Start the first thread now, idle (see :func:`start_worker`)."""
        with self.guard:
            if self.threads == 0 and not self.closed:
                self._start()
                self.idle += 1

    def _start(self) -> None:
        threading.Thread(target=self._work, name=f"interlock-tool_{self.threads}",
                         daemon=_DAEMON).start()
        self.threads += 1

    def _work(self) -> None:
        jobs, guard = self.jobs, self.guard
        while True:
            job = jobs.get()
            if job is None:
                return
            job.run()
            del job
            with guard:
                if self.backlog:
                    self.backlog -= 1
                else:
                    self.idle += 1

    def close(self) -> None:
        """At interpreter exit: the threads end once the calls queued before have run (the
        interpreter then joins them, as it joins ``ThreadPoolExecutor``'s)."""
        with self.guard:
            self.closed = True
            n = self.threads
        for _ in range(n):
            self.jobs.put(None)


_register_atexit: Callable[[Callable[[], None]], None] | None = getattr(
    threading, "_register_atexit", None)
_DAEMON = _register_atexit is None
"""Without the hook that runs before the interpreter joins its threads, the pool's threads are
daemons (an idle one would otherwise keep the process from exiting)."""
_POOL = _Threads()


def _close_pool() -> None:
    _POOL.close()


if _register_atexit is not None:  # pragma: no branch - CPython 3.9+
    _register_atexit(_close_pool)


def _new_pool_after_fork() -> None:
    """A forked child has none of its parent's threads, but a pool that believes it has an
    idle one would queue the child's tool calls for a thread that never takes them."""
    global _POOL
    _POOL = _Threads()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_new_pool_after_fork)


def start_worker() -> None:
    """Start the tool pool's first thread now (once per process), not inside the first call
    of a sync tool: an agent with sync tools calls this when it is built, so that its first
    run does not wait for a new thread (0.5-3.5 ms on a busy two-core machine)."""
    _POOL.start_one()


def _quick_wait(loop: asyncio.AbstractEventLoop) -> float:
    """How long a blocking call's loop may wait on a tool without serving anything: nothing
    is ready to run, and not past the loop's next timer. 0 for a loop of another kind."""
    ready = getattr(loop, "_ready", None)
    if ready is None or ready:
        return 0.0
    scheduled = getattr(loop, "_scheduled", None)
    if scheduled:
        return float(min(QUICK_WAIT, scheduled[0].when() - loop.time()))
    return QUICK_WAIT


async def run_in_worker(call: Callable[[], T]) -> T:
    """Run a blocking tool function in a tool thread, with the caller's contextvars
    (``interrupt()`` needs them in the worker thread)."""
    loop = asyncio.get_running_loop()
    job = _Job(functools.partial(contextvars.copy_context().run, call))
    _POOL.submit(job)
    if BLOCKING_CALLER.get() is loop:
        wait = _quick_wait(loop)
        if wait > 0 and job.done.acquire(timeout=wait):
            return job.outcome()
    return await job.wait(loop)
