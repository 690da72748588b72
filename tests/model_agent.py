"""The agent of the model-based test (``tests/test_model_exactly_once.py``), for the test's own
process and, as ``model_agent:make_agent``, for ``interlock serve`` / ``interlock worker``
processes.

The model asks for one ``transfer`` to the account named by the thread's first message, then
answers "done". ``transfer`` is not idempotent: it appends ``start`` (with the process id) to
the effects file before its work and ``end`` after it, so that the test can count executions
across processes and tell a tool that never started from one a killed process was running.
``INTERLOCK_MODEL_EFFECTS`` names the file; ``INTERLOCK_MODEL_TOOL_SECONDS`` how long the work
takes (a process killed in that window was killed mid-tool).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from interlock import (
    Agent,
    Checkpointer,
    HumanInTheLoop,
    ScriptedModel,
    ToolMessage,
    UserMessage,
    tool,
)

EFFECTS_ENV = "INTERLOCK_MODEL_EFFECTS"
SECONDS_ENV = "INTERLOCK_MODEL_TOOL_SECONDS"


def build(effects: Path, checkpointer: Checkpointer | None = None, *,
          lease: timedelta = timedelta(minutes=5), seconds: float = 0.0) -> Agent:
    @tool
    def transfer(account: str, amount: int) -> str:
        """Move money (not idempotent). Sync: a cancelled run waits for it, so its outcome
        is always observed (an async tool cancelled at an await has an unknown one)."""
        log(effects, "start", account, amount)
        time.sleep(seconds + 0.007 * (amount % 4))
        log(effects, "end", account, amount)
        return f"moved {amount} to {account}"

    def reply(messages: Any) -> Any:
        user = next(m for m in messages if isinstance(m, UserMessage))
        if any(isinstance(m, ToolMessage) for m in messages):
            return "done"
        return {"name": "transfer", "args": {"account": user.content,
                                             "amount": 3 + len(user.content) % 4}}

    return Agent(model=ScriptedModel(reply), tools=[transfer],
                 middleware=[HumanInTheLoop({"transfer": True})],
                 checkpointer=checkpointer, lease=lease)


def log(effects: Path, phase: str, account: str, amount: int) -> None:
    with open(effects, "a", encoding="utf-8") as f:
        f.write(json.dumps({"phase": phase, "account": account, "amount": amount,
                            "pid": os.getpid()}) + "\n")


def effects_of(effects: Path) -> list[dict[str, Any]]:
    """Every line of the effects file (a line cut short by a killed process is left out)."""
    out = []
    for line in effects.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def counts(effects: Path, phase: str = "start") -> Counter[str]:
    """How many times the tool reached ``phase`` for each account (thread)."""
    return Counter(e["account"] for e in effects_of(effects) if e["phase"] == phase)


def make_agent() -> Agent:
    """For ``interlock serve`` / ``interlock worker`` (their ``--db`` gives the store)."""
    return build(Path(os.environ[EFFECTS_ENV]),
                 seconds=float(os.environ.get(SECONDS_ENV, "0")))
