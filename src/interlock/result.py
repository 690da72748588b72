"""``RunResult``: how a run ended (the seed's AgentFinished / AgentInterrupted in one type)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from .interrupts import Interrupt
from .messages import Message

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
