"""``RunResult``: how a run ended (the seed's AgentFinished / AgentInterrupted in one type)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from .interrupts import Interrupt
from .messages import AssistantMessage, Message, ToolMessage

RunStatus = Literal["completed", "interrupted", "queued"]
"""``queued``: the input is stored and the run waits on the run queue for a worker process
(``handoff=True``, an API-only server)."""


@dataclass(frozen=True)
class RunResult:
    thread_id: str
    status: RunStatus
    messages: list[Message] = field(default_factory=list)
    interrupts: list[Interrupt] = field(default_factory=list)
    output: str | None = None
    """The final assistant text when ``status == "completed"``."""
    version: int | None = field(default=None, compare=False)
    """The thread's stored version when the result was made (set for ``queued`` results)."""

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted"

    def to_json(self) -> dict[str, Any]:
        out = to_jsonable_python(
            {
                "thread_id": self.thread_id,
                "status": self.status,
                "output": self.output,
                "interrupts": [i.model_dump(mode="json") for i in self.interrupts],
                "messages": [m.model_dump(mode="json") for m in self.messages],
            }
        )
        assert isinstance(out, dict)
        return out


def final_output(messages: Sequence[Message], *, completed: bool = False) -> str | None:
    """The answer of a thread whose run has ended: its last message when that is the model's
    text without tool calls, or, when the run is stored as ``completed``, its last tool
    result (``return_direct`` tools gave the answer). ``None``: the thread has no answer."""
    last = messages[-1] if messages else None
    if isinstance(last, AssistantMessage) and not last.tool_calls:
        return last.content
    return last.content if completed and isinstance(last, ToolMessage) else None


def result_of(thread_id: str, messages: Sequence[Message], pending: Sequence[Interrupt], *,
              waiting: bool = False, completed: bool = False,
              version: int | None = None) -> RunResult:
    """How a run of the thread stands, from what is stored: ``interrupted`` while requests are
    pending (or ``waiting``: a turn is open whose sub-agents are advanced elsewhere), else
    ``completed`` with its :func:`final_output`. ``pending``: the interrupts as callers see
    them (typed values); ``completed``: the run is stored as completed (see
    :func:`final_output`)."""
    if pending or waiting:
        return RunResult(thread_id, "interrupted", list(messages), list(pending),
                         version=version)
    return RunResult(thread_id, "completed", list(messages), [],
                     final_output(messages, completed=completed), version=version)
