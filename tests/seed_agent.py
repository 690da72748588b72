"""The seed document's example, in Python: three tools with side-effect counters."""

from __future__ import annotations

from collections import Counter
from typing import Any

from interlock import (
    Agent,
    Checkpointer,
    HumanInTheLoop,
    InterruptOn,
    ScriptedModel,
    tool,
)

DELETE_QUERY = "DELETE FROM records WHERE created_at < NOW() - INTERVAL '30 days';"


class SeedTools:
    """write_file / execute_sql / read_data that count what they actually did."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.executed: list[tuple[str, dict[str, Any]]] = []

        @tool
        def write_file(path: str, content: str) -> str:
            """Write text to a file."""
            self.counts["write_file"] += 1
            self.executed.append(("write_file", {"path": path, "content": content}))
            return f"wrote {len(content)} characters to {path}"

        @tool
        def execute_sql(query: str) -> str:
            """Run a SQL statement against the orders database."""
            self.counts["execute_sql"] += 1
            self.executed.append(("execute_sql", {"query": query}))
            return "OK, 42 rows affected"

        @tool
        def read_data(table: str) -> str:
            """Read rows from a table."""
            self.counts["read_data"] += 1
            self.executed.append(("read_data", {"table": table}))
            return f"[{table}: 3 rows]"

        @tool
        def ask_user(question: str) -> str:
            """Ask the user a question (answered by a reviewer with `respond`)."""
            self.counts["ask_user"] += 1
            return "nobody answered"

        self.write_file = write_file
        self.execute_sql = execute_sql
        self.read_data = read_data
        self.ask_user = ask_user

    @property
    def all(self) -> list[Any]:
        return [self.write_file, self.execute_sql, self.read_data, self.ask_user]


def seed_policy(**extra: Any) -> HumanInTheLoop:
    return HumanInTheLoop(
        interrupt_on={
            "write_file": True,
            "execute_sql": InterruptOn(
                allowed_decisions=["approve", "reject"],
                description="🚨 SQL execution requires DBA approval",
            ),
            "read_data": False,
            "ask_user": InterruptOn(allowed_decisions=["respond"]),
            **extra,
        },
        description_prefix="Tool execution pending approval",
    )


def make_agent(
    script: Any, store: Checkpointer, tools: SeedTools | None = None, **kw: Any
) -> tuple[Agent, SeedTools, ScriptedModel]:
    tools = tools or SeedTools()
    model = script if isinstance(script, ScriptedModel) else ScriptedModel(script)
    middleware = kw.pop("middleware", None) or [seed_policy()]
    agent = Agent(model=model, tools=tools.all, middleware=middleware, checkpointer=store, **kw)
    return agent, tools, model


def call(name: str, args: dict[str, Any], id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id}
