"""An agent with one slow, synchronous tool, configured by environment variables, for the
ownership tests: run by a child process (``slow_run.py``) or by ``interlock serve``.

``SLOW_DB``       store URL (``sqlite:///...`` / ``postgresql://...?schema=...``)
``SLOW_COUNTER``  file the tool appends ``start <n>`` / ``done <n>`` to (one line each)
``SLOW_SECONDS``  how long the tool runs (default 2)
``SLOW_LEASE``    the agent's lease in seconds (default 300)
``SLOW_GATED``    "1": the tool pauses for review
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from interlock import Agent, HumanInTheLoop, Message, ScriptedModel, ToolMessage, tool
from interlock.storage import from_url

try:
    from .common import append
except ImportError:  # run as a script from tests/procs
    from common import append  # type: ignore[no-redef]

COUNTER = Path(os.environ.get("SLOW_COUNTER", "counter.txt"))
SECONDS = float(os.environ.get("SLOW_SECONDS", "2"))


@tool
def work(n: int) -> str:
    """Do slow work number n."""
    append(COUNTER, f"start {n}")
    time.sleep(SECONDS)
    append(COUNTER, f"done {n}")
    return f"worked {n}"


def reply(messages: Sequence[Message]) -> object:
    if isinstance(messages[-1], ToolMessage):
        return f"finished: {messages[-1].content}"
    return {"name": "work", "args": {"n": 1}, "id": "w1"}


def build() -> Agent:
    url = os.environ.get("SLOW_DB")
    return Agent(
        model=ScriptedModel(reply), tools=[work],
        middleware=[HumanInTheLoop({"work": True})] if os.environ.get("SLOW_GATED") == "1"
        else [],
        checkpointer=from_url(url) if url else None,
        lease=timedelta(seconds=float(os.environ.get("SLOW_LEASE", "300"))),
    )


agent = build()
