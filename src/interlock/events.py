"""Typed events yielded by ``Agent.astream`` / ``Agent.stream`` (and relayed over SSE)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import to_jsonable_python

from .interrupts import Interrupt
from .messages import ToolCall, ToolMessage

if TYPE_CHECKING:
    from .result import RunResult


@dataclass(frozen=True)
class ModelTextDelta:
    """A piece of the model's text, in order."""

    thread_id: str
    text: str
    type: Literal["model_text_delta"] = "model_text_delta"


@dataclass(frozen=True)
class ToolCallProposed:
    """The model proposed a tool call (arguments complete)."""

    thread_id: str
    call: ToolCall
    type: Literal["tool_call_proposed"] = "tool_call_proposed"


@dataclass(frozen=True)
class InterruptRaised:
    """The run paused; ``interrupt`` waits for a decision or an answer."""

    thread_id: str
    interrupt: Interrupt
    type: Literal["interrupt_raised"] = "interrupt_raised"


@dataclass(frozen=True)
class ToolStarted:
    thread_id: str
    call: ToolCall
    """The call being executed (the reviewer's version when it was edited)."""
    type: Literal["tool_started"] = "tool_started"


@dataclass(frozen=True)
class ToolFinished:
    thread_id: str
    result: ToolMessage
    type: Literal["tool_finished"] = "tool_finished"


@dataclass(frozen=True)
class RunCompleted:
    """Always the last event of a run; ``result.status`` says how it ended."""

    thread_id: str
    result: RunResult
    type: Literal["run_completed"] = "run_completed"


Event = (
    ModelTextDelta | ToolCallProposed | InterruptRaised | ToolStarted | ToolFinished | RunCompleted
)


def event_to_json(event: Event) -> dict[str, Any]:
    """JSON form of an event (used by the server's SSE streams)."""
    if isinstance(event, RunCompleted):
        return {"type": event.type, "thread_id": event.thread_id, "result": event.result.to_json()}
    data = {k: getattr(event, k) for k in event.__dataclass_fields__}
    out = to_jsonable_python(data)
    assert isinstance(out, dict)
    return out
