"""Agents as tools of other agents: :meth:`interlock.Agent.as_tool`.

A sub-agent call runs the child agent in a thread of its own, on the parent's checkpointer.
The child's thread id is derived from the parent's thread id and the parent's tool-call id
(:func:`child_thread_id`), so running the call again (after a crash) continues the same child
instead of starting another; if someone else created a thread with that id first, the child
runs under an id nobody without the audit key can compute (:func:`reserved_child_thread_id`).
When the child waits for someone, the parent's call is ``waiting`` and the parent's thread
shows the child's requests as its own, each with its :class:`~interlock.interrupts.PathStep`
path; decisions and answers given on the parent go to
the child, which validates them by its own rules and continues. The child's final answer is
the parent call's result. The engine side lives in :mod:`interlock._subagents`.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .audit.key import load_key
from .authz import Reviewer
from .errors import ConfigurationError, SubAgentThread, ThreadBusy
from .interrupts import Interrupt
from .storage.base import Checkpointer, ParentLink
from .text import THREAD_ID
from .tools import Tool, ToolContext, ToolError

ChildStatus = Literal["completed", "waiting", "busy", "cancelled"]


@dataclass(frozen=True)
class ChildState:
    """Where a sub-agent's thread stands, as its parent needs it.

    ``completed``: ``output`` is the final answer. ``waiting``: ``pending`` are its requests.
    ``busy``: another process advances it right now (it settles the parent when it is done, or
    recovery does). ``cancelled``: its run was cancelled."""

    thread_id: str
    agent: str
    status: ChildStatus
    output: str | None = None
    pending: list[Interrupt] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """Tool names of the child's open calls by call id (for the paths of its questions)."""


@dataclass(frozen=True)
class Caller:
    """The parent call a sub-agent runs for (set by the engine around each tool call)."""

    link: ParentLink
    starter: Reviewer | None
    created_by: str | None


CALLER: ContextVar[Caller | None] = ContextVar("interlock_subagent_caller", default=None)


class ChildWaiting(BaseException):
    """Raised by a sub-agent call whose child waits: the parent's call becomes ``waiting``.
    A ``BaseException`` so that a middleware's ``except Exception`` cannot swallow it."""

    def __init__(self, state: ChildState) -> None:
        super().__init__(f"sub-agent thread {state.thread_id!r} waits")
        self.state = state


class ChildRunner(Protocol):
    """What the engine needs from the agent behind a sub-agent tool."""

    @property
    def name(self) -> str: ...

    @property
    def checkpointer(self) -> Checkpointer: ...

    async def start_child(self, thread_id: str, task: str, caller: Caller) -> ChildState: ...

    async def resume_child(self, thread_id: str, spec: Any) -> ChildState:
        """Apply a ``ResumeSpec`` routed from the parent (validated by the child's rules)."""
        ...

    async def settle_child(self, thread_id: str) -> ChildState:
        """Recover the child if its run stopped, apply its deadlines, settle its own
        sub-agents; then its state (``busy`` when another process advances it)."""
        ...

    async def cancel_child(self, thread_id: str, reason: str | None,
                           reviewer: Reviewer | None) -> None: ...


def child_thread_id(parent_thread_id: str, tool_call_id: str) -> str:
    """The thread a sub-agent call runs in: ``<parent>@<call id>`` when that is a valid
    thread id (at most 128 characters of the documented charset), else ``sub-`` followed by
    the first 40 hex digits of the SHA-256 of ``<parent>\\n<call id>``."""
    readable = f"{parent_thread_id}@{tool_call_id}"
    if THREAD_ID.fullmatch(readable):
        return readable
    digest = hashlib.sha256(f"{parent_thread_id}\n{tool_call_id}".encode()).hexdigest()
    return f"sub-{digest[:40]}"


def reserved_child_thread_id(parent_thread_id: str, tool_call_id: str) -> str:
    """Where a sub-agent call runs when its :func:`child_thread_id` was taken first by a
    thread that is not its child (someone created it, e.g. through the API, to make the call
    fail): ``sub-`` followed by 40 hex digits of an HMAC under the audit key of the parent's
    thread id and call id. Every process of the deployment computes the same id (they share
    the key), so the call continues the same child after a crash; nobody without the key can
    compute it, so it cannot be taken first."""
    key = load_key(create=True)
    assert key is not None
    mac = key.sign(f"interlock-subagent-thread\0{parent_thread_id}\n{tool_call_id}".encode())
    return f"sub-{mac[:40]}"


def _task(task: str) -> str:  # the schema of a sub-agent call; never called
    return task


class SubAgentTool(Tool):
    """An agent used as a tool (``agent.as_tool(name=..., description=...)``): one string
    argument, ``task``, sent to the child agent as its user message; the result is the
    child's final answer. Declared idempotent: running the call again continues the same
    child thread, it never starts the child over."""

    def __init__(self, runner: ChildRunner, *, name: str, description: str) -> None:
        super().__init__(_task, name=name, description=description, idempotent=True)
        self.runner = runner
        self.is_async = True  # run() is the call: the child runs on the caller's event loop

    async def run(self, args: dict[str, Any], context: ToolContext) -> Any:
        task = self.validate_args(args)["task"]
        caller = CALLER.get()
        if caller is None or caller.link.tool_call_id != context.tool_call_id:
            raise ConfigurationError(
                f"Sub-agent tool {self.name!r} runs only as a tool of an Agent: pass it in "
                f"Agent(tools=[...]) instead of calling it directly."
            )
        thread_id = child_thread_id(context.thread_id, context.tool_call_id)
        try:
            try:
                state = await self.runner.start_child(thread_id, task, caller)
            except SubAgentThread:  # the id is taken by a thread this call did not start
                thread_id = reserved_child_thread_id(context.thread_id, context.tool_call_id)
                state = await self.runner.start_child(thread_id, task, caller)
        except ThreadBusy:
            state = ChildState(thread_id, self.runner.name, "busy")
        if state.status == "completed":
            return state.output or ""
        if state.status == "cancelled":
            raise ToolError(f"The run of sub-agent {self.name!r} was cancelled.")
        raise ChildWaiting(state)
