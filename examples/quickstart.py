"""Quickstart: an agent wants to run SQL; a person decides; the run resumes.

Run it twice to see durability: the pause is stored in quickstart.db, so a second process
can pick up where the first one stopped.

    python examples/quickstart.py            # asks you in the terminal (or approves if no tty)
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

from interlock import Agent, HumanInTheLoop, InterruptOn, ScriptedModel, SqliteCheckpointer, tool

workdir = Path(tempfile.mkdtemp(prefix="interlock-quickstart-"))
orders = sqlite3.connect(workdir / "orders.db", check_same_thread=False)  # tools run in a worker
orders.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, created_at TEXT)")
orders.executemany("INSERT INTO records (created_at) VALUES (?)",
                   [("2024-01-01",), ("2024-02-01",), ("2099-01-01",)])
orders.commit()


@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement against the orders database."""
    cur = orders.execute(query)
    orders.commit()
    return f"{cur.rowcount} rows affected"


agent = Agent(
    model=ScriptedModel([  # a scripted model; use model="openai:gpt-4.1-mini" for a real one
        {"name": "execute_sql",
         "args": {"query": "DELETE FROM records WHERE created_at < '2025-01-01'"}},
        "Done: the old records are deleted.",
    ]),
    tools=[execute_sql],
    middleware=[HumanInTheLoop(interrupt_on={
        "execute_sql": InterruptOn(allowed_decisions=["approve", "reject"],
                                   description="🚨 SQL execution requires DBA approval"),
    })],
    checkpointer=SqliteCheckpointer(workdir / "interlock.db"),
)

result = agent.invoke("删除数据库中的旧记录", thread_id="quickstart")
request = result.interrupts[0].value
for action in request.action_requests:
    print(f"\nPAUSED: the agent wants to call {action.name}{action.args}")
    print(f"        {action.description}")
print(f"        stored in {workdir / 'interlock.db'} (status: {result.status})")

answer = input("approve? [y/N] ") if sys.stdin.isatty() else "y"
decision = {"type": "approve"} if answer.strip().lower().startswith("y") else {
    "type": "reject", "message": "Not without a backup."}
print(f"decision: {decision}")

result = agent.resume("quickstart", [decision])
print(f"tool result: {result.messages[2].content}")
print(f"\n{result.output}")
remaining = orders.execute("SELECT COUNT(*) FROM records").fetchone()[0]
print(f"records left: {remaining}   audit rows: {len(agent.audit('quickstart'))}   "
      f"audit chain intact: {not agent.verify_audit()}")
