"""Durable pauses: the :class:`Interrupt` type and the ``interrupt()`` primitive."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

InterruptKind = Literal["review", "input"]


class PathStep(BaseModel):
    """One step of the way from a thread to a request raised inside a sub-agent
    (:meth:`interlock.Agent.as_tool`): in thread ``thread_id``, run by the agent named
    ``agent``, the call ``tool_call_id`` of tool ``tool_name``.

    A path lists the steps from the thread that shows the request down to where the request
    was raised: for a call of a child agent ``[orchestrator's sub-agent call, child's gated
    call]``, for a grandchild's call three steps. The last step of a review interrupt's own
    path names the thread that raised it without a call (``tool_call_id`` ``None``)."""

    thread_id: str
    agent: str
    tool_call_id: str | None = None
    tool_name: str | None = None


class Interrupt(BaseModel):
    """A durable pause of a thread.

    ``kind="review"``: ``value`` is a :class:`~interlock.HITLRequest` (tool calls to decide).
    ``kind="input"``: ``value`` is whatever was passed to :func:`interrupt`; answer it with
    ``agent.resume(thread_id, value=...)``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    kind: InterruptKind
    value: Any = None
    created_at: datetime
    tool_call_id: str | None = None
    """For ``input`` interrupts raised inside a tool: the call that asked."""
    origin: str | None = None
    """``tool`` or ``after_model:<middleware>``, for ``input`` interrupts; ``per_call`` for a
    review interrupt that holds one call (``HumanInTheLoop(interrupt_mode="per_call")``)."""
    path: list[PathStep] | None = None
    """For a request raised inside a sub-agent and shown here: the steps from this thread to
    the thread that raised it (``path[0].tool_call_id`` is this thread's sub-agent call).
    ``None``: this thread's own request. The id is the same at every level."""


class PauseRun(BaseException):
    """Raised by :func:`interrupt` to pause the run. Derives from ``BaseException`` so that a
    tool's ``except Exception`` cannot swallow it."""

    def __init__(self, value: Any) -> None:
        super().__init__("interlock.interrupt() paused the run")
        self.value = value


@dataclass
class AnswerScope:
    """Answers already given to the ``interrupt()`` calls of one tool call or one hook."""

    answers: list[Any] = field(default_factory=list)
    used: int = 0


_scope: contextvars.ContextVar[AnswerScope | None] = contextvars.ContextVar(
    "interlock_interrupt_scope", default=None
)


def interrupt(value: Any) -> Any:
    """Pause the run until someone answers, then return the answer.

    Call it inside a tool or inside a middleware hook. The first time, the run pauses and
    ``value`` (JSON-serialisable) is shown to whoever resumes it. On
    ``agent.resume(thread_id, value=answer)`` the tool (or hook) is **called again from its
    start** and this time ``interrupt(...)`` returns ``answer``. Several ``interrupt()`` calls
    in one tool are answered in order. Code before ``interrupt()`` therefore runs again on
    resume: keep it free of side effects, or put side effects after the last ``interrupt()``.
    """
    scope = _scope.get()
    if scope is None:
        raise RuntimeError(
            "interlock.interrupt() was called outside a tool or middleware hook run by an "
            "Agent. Call it from inside a @tool function or a Middleware.after_model hook."
        )
    if scope.used < len(scope.answers):
        answer = scope.answers[scope.used]
        scope.used += 1
        return answer
    raise PauseRun(value)


def enter_scope(answers: list[Any]) -> contextvars.Token[AnswerScope | None]:
    return _scope.set(AnswerScope(answers=list(answers)))


def exit_scope(token: contextvars.Token[AnswerScope | None]) -> None:
    _scope.reset(token)
