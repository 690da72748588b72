"""The run engine's side of an agent used as a sub-agent tool: its steps for the child
threads (start, resume, settle, cancel), run through the agent's own entry to the engine."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..authz import Reviewer
from ..errors import ThreadBusy, ThreadNotFound
from ..messages import Message, UserMessage
from ..storage.base import Checkpointer
from ..subagents import Caller, ChildState
from . import decide, loop
from .children import child_state, state_of
from .deps import RunDeps
from .perform import T
from .resume import ResumeSpec
from .txn import ThreadTxn


class Host(Protocol):
    """What the runner needs of the agent (:class:`interlock.Agent`)."""

    name: str
    checkpointer: Checkpointer

    async def _perform(self, thread_id: str,
                       step: Callable[[ThreadTxn, RunDeps], Awaitable[T]]) -> T: ...


class ChildRunner:
    """An agent behind a sub-agent tool, as the run engine drives it
    (:class:`interlock.subagents.ChildRunner`): every step goes through the agent's own
    ``_perform``, with its model, tools and policies."""

    def __init__(self, agent: Host) -> None:
        self.agent = agent

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def checkpointer(self) -> Checkpointer:
        return self.agent.checkpointer

    async def _state(self, thread_id: str,
                     run: Callable[[ThreadTxn, RunDeps], Awaitable[object]]) -> ChildState:
        async def step(txn: ThreadTxn, deps: RunDeps) -> ChildState:
            await run(txn, deps)
            return child_state(txn, self.agent.name)

        return await self.agent._perform(thread_id, step)

    async def start_child(self, thread_id: str, task: str, caller: Caller) -> ChildState:
        messages: list[Message] = [UserMessage(content=task)]
        return await self._state(
            thread_id, lambda txn, deps: loop.start_child(txn, deps, messages, caller))

    async def resume_child(self, thread_id: str, spec: Any) -> ChildState:
        assert isinstance(spec, ResumeSpec)
        return await self._state(thread_id, lambda txn, deps: loop.resume(txn, deps, spec))

    async def settle_child(self, thread_id: str) -> ChildState:
        try:
            return await self._state(thread_id, loop.recover)
        except ThreadBusy:
            snap = await self.agent.checkpointer.load(thread_id)
            if snap is None:
                raise ThreadNotFound(thread_id) from None
            return state_of(snap, self.agent.name, busy=True)

    async def cancel_child(self, thread_id: str, reason: str | None,
                           reviewer: Reviewer | None) -> None:
        await self.agent._perform(thread_id, lambda txn, deps: decide.cancel(
            txn, deps, reason, reviewer, routed=True))
