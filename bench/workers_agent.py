"""The agent ``bench/workers.py`` serves and runs in its workers: one gated tool whose side
effect is a line appended to the file ``INTERLOCK_BENCH_EXEC_LOG`` (``S <call>`` when it starts,
``F <call>`` when it finishes, with the process id and the wall-clock time), so that the
benchmark counts executions across processes and times a decision to its tool's start. A
message ``go ID`` plans ``record(ID)``; ``slow ID`` plans it with a tool that takes
``INTERLOCK_BENCH_SLOW`` seconds (default 0.2)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from interlock import (
    Agent,
    AssistantMessage,
    HumanInTheLoop,
    Message,
    ScriptedModel,
    ToolMessage,
    UserMessage,
    tool,
)


def _log(line: str) -> None:
    path = os.environ.get("INTERLOCK_BENCH_EXEC_LOG")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            # one write: atomic with O_APPEND
            os.write(fd, f"{line} {os.getpid()} {time.time():.6f}\n".encode())
        finally:
            os.close(fd)


@tool
def record(key: str, seconds: float = 0.0) -> str:
    """Record that this call ran (the benchmark's side effect)."""
    _log(f"S {key}")
    if seconds:
        time.sleep(seconds)
    _log(f"F {key}")
    return f"recorded {key}"


def script(messages: Sequence[Message]) -> Any:
    user = next(m for m in reversed(messages) if isinstance(m, UserMessage))
    word, _, key = user.content.partition(" ")
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"Done: {last.content}"
    if isinstance(last, AssistantMessage):  # not reached: a reply ends the run
        return "Done."
    seconds = float(os.environ.get("INTERLOCK_BENCH_SLOW", "0.2")) if word == "slow" else 0.0
    return ("Recording.", [{"name": "record", "args": {"key": key, "seconds": seconds}}])


agent = Agent(model=ScriptedModel(script), tools=[record],
              middleware=[HumanInTheLoop(interrupt_on={"record": True})])
