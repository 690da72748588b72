"""A model call that lasts longer than the lease is not taken over from its live process.

The lease is renewed while a tool runs; it is renewed while the model answers too. Before, a
run whose final model call outlasted its lease (a slow model, a long answer, a provider's
retries) was taken over by the recovery sweep of another process although its own process
was alive and waiting for the answer: the model was called a second time, and the caller
whose decision had been applied got ``ThreadBusy``. Real processes, SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, ToolMessage, tool

CHILD = """
import asyncio, json, os, sys
from datetime import timedelta
from test_model_lease import build
from interlock import AssistantMessage, InterlockError

agent = build(sys.argv[1], sys.argv[2], slow=float(sys.argv[3]))
agent.lease = timedelta(seconds=0.6)
try:
    result = agent.resume("t", [{"type": "approve"}])
    print(json.dumps({"status": result.status, "output": result.output}), flush=True)
except InterlockError as exc:
    print(json.dumps({"error": type(exc).__name__}), flush=True)
"""


class SlowFinalAnswer:
    """Asks for ``pay`` on the user's message; answers the tool's result after ``slow``
    seconds (awaited: the event loop stays free). Appends a line to ``calls`` per answer."""

    def __init__(self, calls: str, slow: float) -> None:
        self.calls, self.slow = calls, slow
        self.scripted = ScriptedModel(self.reply)

    def reply(self, messages: Any) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"done: {messages[-1].content}"
        return {"name": "pay", "args": {"amount": 3}, "id": "c1"}

    def count(self) -> None:
        with open(self.calls, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")

    async def generate(self, messages: Any, tools: Any) -> Any:
        import asyncio

        if isinstance(messages[-1], ToolMessage):
            self.count()
            await asyncio.sleep(self.slow)
        return await self.scripted.generate(messages, tools)

    def stream(self, messages: Any, tools: Any) -> Any:
        async def one() -> Any:
            yield await self.generate(messages, tools)
        return one()


def build(db: str, calls: str, *, slow: float = 0.0) -> Agent:
    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        return f"paid {amount}"

    return Agent(model=SlowFinalAnswer(calls, slow), tools=[pay],
                 middleware=[HumanInTheLoop({"pay": True})],
                 checkpointer=SqliteCheckpointer(db))


@pytest.mark.slow
def test_a_final_model_call_longer_than_the_lease_is_not_taken_over(tmp_path: Path) -> None:
    db, calls = str(tmp_path / "t.db"), tmp_path / "calls.txt"
    calls.touch()
    agent = build(db, str(calls))
    assert agent.invoke("pay", thread_id="t").interrupted
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, db, str(calls), "4"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([
            str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])})
    try:
        deadline = time.monotonic() + 60
        while not calls.read_text():  # the child's final model call began
            assert child.poll() is None and time.monotonic() < deadline, child.stderr
            time.sleep(0.05)
        taken: list[Any] = []
        while child.poll() is None:  # another process's recovery sweep, meanwhile
            taken += agent.recover_stale()
            time.sleep(0.2)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert taken == []  # the live run was left alone
    assert json.loads(out.strip().splitlines()[-1]) == {"status": "completed",
                                                        "output": "done: paid 3"}, err
    assert len(calls.read_text().split()) == 1  # the model answered once
    state = agent.get_thread("t")
    assert state.status == "completed" and state.messages[-1].content == "done: paid 3"
    assert agent.verify_audit("t").ok
    agent.close()
