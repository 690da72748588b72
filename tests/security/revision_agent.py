"""The agent of the revision tests: a harmless ``lookup`` (one approval, edit allowed), a
strict ``drop_table`` (two dba approvals, no self-approval), a ``pay`` tool (two finance
approvals), ``note`` (one approval, not by the requester or the editor), and two tools whose
requests escalate to ``oncall`` after 30 minutes: ``prod_sql`` (one dba approval) and
``deploy`` (two dba approvals). The user message names the call the model proposes (JSON
``{"name": ..., "args": ...}``); every execution is appended to the runs file (so counts span
processes)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from interlock import (
    Agent,
    Checkpointer,
    HumanInTheLoop,
    InterruptOn,
    MemoryCheckpointer,
    ScriptedModel,
    ToolMessage,
    UserMessage,
    tool,
)
from notify.agents import executions, runs_file

__all__ = ["POLICIES", "executions", "make_agent", "proposal", "server_agent"]

POLICIES = {
    "lookup": InterruptOn(allowed_decisions=["approve", "edit", "reject"]),
    "drop_table": InterruptOn(reviewers=["dba"], approvals=2, self_approval=False),
    "pay": InterruptOn(reviewers=["finance"], approvals=2),
    "note": InterruptOn(self_approval=False),
    "prod_sql": InterruptOn(reviewers=["dba"], escalate_to=["oncall"],
                            escalate_after=timedelta(minutes=30)),
    "deploy": InterruptOn(reviewers=["dba"], approvals=2, escalate_to=["oncall"],
                          escalate_after=timedelta(minutes=30)),
}


def _ran(what: str) -> str:
    with runs_file().open("a", encoding="utf-8") as f:
        f.write(what + "\n")
    return "ok"


@tool
def lookup(table: str) -> str:
    """Read rows of a table."""
    return _ran(f"lookup {table}")


@tool
def drop_table(table: str) -> str:
    """Drop a table."""
    return _ran(f"drop_table {table}")


@tool
def pay(account: str, amount: int) -> str:
    """Pay an amount to an account."""
    return _ran(f"pay {account} {amount}")


@tool
def note(text: str) -> str:
    """Write a note."""
    return _ran(f"note {text}")


@tool
def prod_sql(query: str) -> str:
    """Run SQL on the production database."""
    return _ran(f"prod_sql {query}")


@tool
def deploy(service: str) -> str:
    """Deploy a service."""
    return _ran(f"deploy {service}")


def proposal(name: str, **args: Any) -> str:
    """The user message that makes the model propose ``name(**args)``."""
    return json.dumps({"name": name, "args": args})


def _script(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, UserMessage):
        return json.loads(str(last.content))
    return f"done: {last.content}" if isinstance(last, ToolMessage) else "done"


def make_agent(store: Checkpointer, **kw: Any) -> Agent:
    return Agent(model=ScriptedModel(_script), tools=[lookup, drop_table, pay, note, prod_sql, deploy],
                 middleware=[HumanInTheLoop(interrupt_on=dict(POLICIES))],
                 checkpointer=store, **kw)


def server_agent() -> Agent:
    """For ``interlock serve`` (the store is replaced by --db)."""
    return make_agent(MemoryCheckpointer())
