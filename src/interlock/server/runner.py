"""Background runs for the HTTP API.

A request that starts or resumes a run waits only until its input (message, decisions,
answer) is durably stored — validation errors, conflicts and authorization failures are
therefore still reported synchronously — and then returns while the run continues in an
``asyncio`` task. The task's events are published on the thread's SSE topic; the inbox
watcher is poked so that every process's inbox sees the change promptly.

In an API-only server (``handoff``) the run is not run here: the input is stored with the run
put on the store's run queue in the same commit, and a worker process runs it. The task then
follows the thread through the inbox watcher (which sees the worker's commits) until the run
pauses or ends, and publishes ``run_completed`` / ``run_failed`` as a local run would; the
token-level events of the run (model text, tool started) happen in the worker and are not
streamed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..agent import Agent
from ..authz import ThreadFacts
from ..decisions import Reviewer
from ..errors import InterlockError
from ..events import Event, RunCompleted, event_to_json
from ..result import RunResult, result_of
from .hub import Hub, Subscription, readers_now, thread_topic

log = logging.getLogger("interlock.server")

Sink = Callable[[Event], Awaitable[None]]
Step = Callable[[Callable[[], None], Sink], Awaitable[RunResult]]
"""Starts the run through the agent's public API: ``(on_stored, on_event) -> result``."""


class Runner:
    def __init__(self, agent: Agent, hub: Hub, on_change: Callable[[], None], *,
                 handoff: bool = False, follow_interval: float = 5.0) -> None:
        self.agent = agent
        self.hub = hub
        self.on_change = on_change
        self.handoff = handoff
        self.follow_interval = follow_interval
        """Seconds between direct reads of a handed-off thread while no change arrives."""
        self.tasks: set[asyncio.Task[RunResult]] = set()

    # -- entry points ------------------------------------------------------------------------

    async def start(self, thread_id: str, message: str, *, reviewer: Reviewer | None,
                    wait: bool, metadata: dict[str, Any] | None = None) -> RunResult | None:
        """Send a user message (creating the thread if needed, with ``metadata``) as
        ``reviewer``."""
        return await self._launch(thread_id, lambda stored, sink: self.agent.ainvoke(
            message, thread_id=thread_id, reviewer=reviewer, on_stored=stored, on_event=sink,
            handoff=self.handoff, metadata=metadata), wait)

    async def resume(
        self, thread_id: str, decisions: Any, *, interrupt_id: str | None,
        reviewer: Reviewer | None, actor: str, wait: bool,
    ) -> RunResult | None:
        return await self._launch(thread_id, lambda stored, sink: self.agent.aresume(
            thread_id, decisions, interrupt_id=interrupt_id, reviewer=reviewer, actor=actor,
            on_stored=stored, on_event=sink, handoff=self.handoff), wait)

    async def answer(
        self, thread_id: str, value: Any, *, interrupt_id: str | None,
        reviewer: Reviewer | None, actor: str, wait: bool,
    ) -> RunResult | None:
        return await self._launch(thread_id, lambda stored, sink: self.agent.aresume(
            thread_id, value=value, interrupt_id=interrupt_id, reviewer=reviewer, actor=actor,
            on_stored=stored, on_event=sink, handoff=self.handoff), wait)

    # -- machinery ---------------------------------------------------------------------------

    async def _launch(self, thread_id: str, step: Step, wait: bool) -> RunResult | None:
        """Run ``step`` in a task; return None once its input is stored, or with ``wait`` its
        result. Errors raised before the input was stored (validation, conflicts, roles)
        propagate to the caller."""
        loop = asyncio.get_running_loop()
        accepted: asyncio.Future[None] = loop.create_future()
        topic = thread_topic(thread_id)

        readers: list[tuple[ThreadFacts, ...]] = []

        async def sink(event: Event) -> None:
            # a run's events go to the thread's readers as of its input's commit (a decision
            # may have left a reviewer who could read it while a call was pending without
            # access), read again when the run raises a request (its reviewers may read it)
            if not readers or event.type == "interrupt_raised":
                facts = await readers_now(self.agent.checkpointer, thread_id)
                if facts is None and not readers:
                    return  # not known who may see it: not published (the watcher's are)
                if facts is not None:
                    readers[:] = [facts]
            self.hub.publish(topic, event.type, event_to_json(event), readers[0])
            if event.type in ("interrupt_raised", "tool_finished"):
                self.on_change()

        def on_accepted() -> None:
            if not accepted.done():
                accepted.set_result(None)
            self.on_change()

        # subscribed before the input is stored, so that no change of the thread is missed
        follow = self.hub.subscribe(topic) if self.handoff else None
        task = asyncio.create_task(self._drive(thread_id, step(on_accepted, sink), accepted,
                                               follow),
                                   name=f"interlock-run:{thread_id}")
        self.tasks.add(task)
        task.add_done_callback(self._finished)
        waiters: set[asyncio.Future[Any]] = {task, accepted}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if accepted.done() and not wait:
            return None  # 202, even when the run already ended: one answer per request kind
        return await asyncio.shield(task)

    async def _drive(self, thread_id: str, run: Awaitable[RunResult],
                     accepted: asyncio.Future[None], follow: Subscription | None) -> RunResult:
        topic = thread_topic(thread_id)
        try:
            result = await run
            if follow is not None and result.status == "queued":
                result = await self._follow(thread_id, follow, result.version or 0)
        except asyncio.CancelledError:
            self.hub.publish(topic, "run_failed", {
                "type": "run_failed", "thread_id": thread_id, "error": "Cancelled",
                "message": "The server shut down while this run was in progress; it will be "
                "recovered when the thread is next touched."})
            raise
        except Exception as exc:
            if accepted.done():  # a refused request is answered by its HTTP error instead
                readers = await readers_now(self.agent.checkpointer, thread_id)
                if readers is not None:
                    self.hub.publish(topic, "run_failed", {
                        "type": "run_failed", "thread_id": thread_id,
                        "error": type(exc).__name__, "message": str(exc)}, readers)
            raise
        finally:
            if follow is not None:
                self.hub.unsubscribe(follow)
            self.on_change()
        # the run's result (its messages) goes to those who may read the thread now
        readers = await readers_now(self.agent.checkpointer, thread_id)
        if readers is not None:
            self.hub.publish(topic, "run_completed",
                             event_to_json(RunCompleted(thread_id, result)), readers)
        return result

    async def _follow(self, thread_id: str, sub: Subscription, version: int) -> RunResult:
        """Wait until the worker has paused or ended the run queued at ``version``: the first
        change of the thread past it that is not ``running`` (read directly every
        ``follow_interval`` seconds in case a change was not announced)."""
        while True:
            getter = asyncio.ensure_future(sub.queue.get())
            try:
                await asyncio.wait({getter}, timeout=self.follow_interval)
            finally:
                getter.cancel()
            event = getter.result() if getter.done() and not getter.cancelled() else "check"
            if event is None:  # the server shuts down
                raise asyncio.CancelledError()
            if event != "check":
                assert not isinstance(event, str)
                if event.event != "thread_updated":
                    continue
                seen = event.data.get("thread", {})
                if seen.get("version", 0) <= version or seen.get("status") == "running":
                    continue
            state = await self.agent.aget_thread(thread_id)
            if state.version <= version or state.status == "running":
                continue
            if state.status == "failed":
                raise InterlockError(f"The run of thread {thread_id!r} failed in a worker "
                                     f"process: {state.error or 'no reason stored'}")
            return result_of(thread_id, state.messages, state.interrupts,
                             completed=state.status == "completed",
                             version=state.version)

    def _finished(self, task: asyncio.Task[RunResult]) -> None:
        self.tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # retrieved here so it is never reported as unhandled
        if exc is not None:
            log.info("run %s ended with %s: %s", task.get_name(), type(exc).__name__, exc)

    async def aclose(self, grace: float = 5.0) -> None:
        """Let running tasks finish for ``grace`` seconds, then cancel them (an interrupted
        run is recovered by the core when its thread is next touched)."""
        if not self.tasks:
            return
        pending = set(self.tasks)
        _, still = await asyncio.wait(pending, timeout=grace)
        for t in still:
            t.cancel()
        if still:
            await asyncio.wait(still, timeout=grace)
