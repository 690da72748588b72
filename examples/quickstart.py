"""Quickstart: an agent wants to run SQL; a person decides; the run resumes, in another process.

Run it twice:

    python examples/quickstart.py     # 1st: the agent asks to DELETE; the run pauses and is
                                      #      stored in quickstart.db; this process exits
    python examples/quickstart.py     # 2nd: a new process finds the paused run, asks you
                                      #      (approves when there is no terminal), resumes it,
                                      #      shows the result and removes its files

The files live in $INTERLOCK_QUICKSTART_DIR (default: ~/.interlock/quickstart, your own: two
people on one machine do not share a run).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

from interlock import (
    ActionRequest,
    Agent,
    HumanInTheLoop,
    InterruptOn,
    ScriptedModel,
    SqliteCheckpointer,
    tool,
)

THREAD = "quickstart"
workdir = Path(os.environ.get("INTERLOCK_QUICKSTART_DIR")
               or Path.home() / ".interlock" / "quickstart")
first_run = not (workdir / "quickstart.db").exists()
workdir.mkdir(parents=True, exist_ok=True)

orders = sqlite3.connect(workdir / "orders.db", check_same_thread=False)  # tools run in a worker
if first_run:
    orders.execute("CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, created_at TEXT)")
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
    checkpointer=SqliteCheckpointer(workdir / "quickstart.db"),
)


def call_text(action: ActionRequest) -> str:
    """``execute_sql(query="DELETE ...")``: the call as the reviewer should read it."""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in action.args.items())
    return f"{action.name}({args})"


if first_run:
    result = agent.invoke("删除数据库中的旧记录", thread_id=THREAD)
    for action in result.interrupts[0].value.action_requests:
        print(f"PAUSED: the agent wants to call {call_text(action)}")
        print(f"        {action.description}")
    print(f"Stored in {workdir / 'quickstart.db'} (status: {result.status}).")
    print("Run this script again: a new process will pick up the paused run.")
    agent.close()
    orders.close()
    sys.exit(0)

# a second process: the paused run is read back from quickstart.db
state = agent.get_thread(THREAD)
if state.interrupts:
    action = state.interrupts[0].value.action_requests[0]
    print(f"Found the paused run {THREAD!r} (status: {state.status}): "
          f"{call_text(action)}")
    answer = input("approve? [y/N] ") if sys.stdin.isatty() else "y"
    decision = {"type": "approve"} if answer.strip().lower().startswith("y") else {
        "type": "reject", "message": "Not without a backup."}
    print(f"decision: {decision}")
    result = agent.resume(THREAD, [decision])
else:
    # an earlier run of this script stopped after the decision was stored (Ctrl-C, a crash):
    # the run goes on from where it stopped; the approved call is never run a second time
    print(f"Found the run {THREAD!r} already decided (status: {state.status}); finishing it.")
    result = agent.recover(THREAD)
tool_results = [m.content for m in result.messages if m.role == "tool"]
print(f"tool result: {tool_results[-1] if tool_results else '(none)'}")
print(result.output)
remaining = orders.execute("SELECT COUNT(*) FROM records").fetchone()[0]
print(f"records left: {remaining}   audit rows: {len(agent.audit(THREAD))}   "
      f"audit chain intact: {not agent.verify_audit()}")
agent.close()
orders.close()
shutil.rmtree(workdir)
print(f"Removed {workdir}.")
