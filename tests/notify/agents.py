"""A small agent for the notification tests: one SQL tool whose executions are counted in a
file (so that a count survives and spans processes)."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from interlock import Agent, Checkpointer, HumanInTheLoop, InterruptOn, ScriptedModel, tool

QUERY = "DELETE FROM orders WHERE id = 7 \u202e-- harmless"


def runs_file() -> Path:
    return Path(os.environ.get("INTERLOCK_TEST_RUNS", "/tmp/interlock-notify-runs.txt"))


@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement against the orders database."""
    with runs_file().open("a", encoding="utf-8") as f:
        f.write(query.replace("\n", " ") + "\n")
    return "1 row deleted"


def executions() -> list[str]:
    p = runs_file()
    return p.read_text(encoding="utf-8").splitlines() if p.exists() else []


def make_agent(store: Checkpointer, policy: InterruptOn | None = None,
               clock: Callable[[], datetime] | None = None, model: Any = None,
               **kw: Any) -> Agent:
    policy = policy or InterruptOn(allowed_decisions=["approve", "reject"], reviewers=["dba"])
    extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
    return Agent(
        model=model or ScriptedModel([{"name": "execute_sql", "args": {"query": QUERY}},
                                      "Done."]),
        tools=[execute_sql],
        middleware=[HumanInTheLoop(interrupt_on={"execute_sql": policy})],
        checkpointer=store, **extra, **kw)


def escalating_agent(store: Checkpointer, now: list[datetime]) -> Agent:
    """dba reviews; escalated to on-call after 30 minutes; rejected after an hour; the clock
    is ``now[0]``."""
    from datetime import timedelta

    return make_agent(store, InterruptOn(
        reviewers=["dba"], escalate_to=["oncall"], escalate_after=timedelta(minutes=30),
        expires_after=timedelta(hours=1)), clock=lambda: now[0])


def notify_agent() -> Agent:
    """For ``interlock serve tests.notify.agents:notify_agent --db ...`` (the store is
    replaced by --db)."""
    from interlock import MemoryCheckpointer

    return make_agent(MemoryCheckpointer(),
                      InterruptOn(allowed_decisions=["approve", "reject"]))


def make_team(store: Checkpointer, policy: InterruptOn | None = None,
              clock: Callable[[], datetime] | None = None) -> Agent:
    """An ``orchestrator`` whose sub-agent ``sqlbot`` (call id ``ask_sqlbot``) runs the gated
    ``execute_sql`` (role ``dba`` by default); the orchestrator answers ``done: <result>``."""
    from interlock import ToolMessage, UserMessage

    def sqlbot_script(messages: list[Any]) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "execute_sql", "args": {"query": messages[-1].content}}
        return f"sqlbot: {messages[-1].content}"

    def lead_script(messages: list[Any]) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "sqlbot", "args": {"task": QUERY}, "id": "ask_sqlbot"}
        last = messages[-1]
        return f"done: {last.content}" if isinstance(last, ToolMessage) else "done"

    extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
    sqlbot = make_agent(store, policy, clock=clock, model=ScriptedModel(sqlbot_script),
                        name="sqlbot")
    return Agent(name="orchestrator", model=ScriptedModel(lead_script),
                 tools=[sqlbot.as_tool(description="Runs SQL for the orchestrator.")],
                 checkpointer=store, **extra)
