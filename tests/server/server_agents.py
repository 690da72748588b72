"""A scripted operations agent for the server tests (also loaded by `interlock serve` in the
multi-process tests, as ``server_agents:make_agent``).

The model reads the latest user message and plans tool calls from its first word:

* ``sql QUERY``: execute_sql(query) (all four decisions)
* ``write PATH TEXT``: write_file(path, content) (all four decisions)
* ``ask QUESTION``: ask_user(question) (respond / reject)
* ``drop TABLE``: drop_table(table) (approve / reject, role ``dba`` only)
* ``limit N``: set_limit(n) (approve / edit / reject; the tool only takes even numbers, which
  its schema cannot say, so only the server catches an odd edit)
* ``twice QUERY``: execute_sql twice, in two turns (for "approve and remember")
* ``multi``: execute_sql and write_file in one turn
* ``triple``: execute_sql, write_file and set_limit in one turn
* ``batch``: execute_sql, write_file, set_limit and ask_user in one turn
* ``pick``: pick_colour(), which asks ``interrupt(...)`` (not gated)
* ``purge``: purge() (approve / reject, expires after 50 ms)
* ``block``: wait_gate(), which blocks until ``GATE`` is set (not gated)
* ``hang QUERY``: hang_sql(query) (all four decisions), which records that it started and
  then waits until the file named by ``INTERLOCK_TEST_RELEASE`` exists (for killing a process
  in the middle of a tool)
* anything else: a plain answer

After the planned calls it answers ``Done. <last tool result>``. Executions are recorded in
``EXECUTED`` and, when ``INTERLOCK_TEST_EXEC_LOG`` is set, appended to that file (one line per
execution, with the process id) so tests can count executions across processes.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Annotated, Any

from pydantic import AfterValidator

from interlock import (
    Agent,
    AssistantMessage,
    Checkpointer,
    HumanInTheLoop,
    InterruptOn,
    Message,
    ScriptedModel,
    ToolMessage,
    UserMessage,
    interrupt,
    tool,
)

EXECUTED: list[tuple[str, dict[str, Any]]] = []
GATE = threading.Event()
"""``block`` runs a tool that waits for this event (so a test can observe a running thread)."""


def _record(name: str, args: dict[str, Any]) -> None:
    EXECUTED.append((name, args))
    path = os.environ.get("INTERLOCK_TEST_EXEC_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), "name": name, "args": args}) + "\n")


def _even(n: int) -> int:
    if n % 2:
        raise ValueError("n must be an even number")
    return n


@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement against the orders database."""
    _record("execute_sql", {"query": query})
    return f"OK: ran {query}"


@tool
def write_file(path: str, content: str) -> str:
    """Write text to a file."""
    _record("write_file", {"path": path, "content": content})
    return f"wrote {len(content)} characters to {path}"


@tool
def ask_user(question: str) -> str:
    """Ask the user a question (answered by a reviewer with `respond`)."""
    _record("ask_user", {"question": question})
    return "nobody answered"


@tool
def drop_table(table: str) -> str:
    """Drop a table. Only a DBA may approve this."""
    _record("drop_table", {"table": table})
    return f"dropped {table}"


@tool
def set_limit(n: Annotated[int, AfterValidator(_even)], reason: str = "") -> str:
    """Set the rate limit (must be an even number)."""
    _record("set_limit", {"n": n, "reason": reason})
    return f"limit set to {n}"


@tool
def pick_colour() -> str:
    """Ask the operator for a colour."""
    answer = interrupt({"question": "Which colour?"})
    _record("pick_colour", {"answer": answer})
    return f"colour is {answer}"


@tool
def purge() -> str:
    """Purge caches."""
    _record("purge", {})
    return "purged"


@tool
def hang_sql(query: str) -> str:
    """Run a slow SQL statement."""
    _record("hang_sql:started", {"query": query})
    release = os.environ.get("INTERLOCK_TEST_RELEASE", "")
    deadline = time.monotonic() + 60
    while not (release and os.path.exists(release)) and time.monotonic() < deadline:
        time.sleep(0.05)
    _record("hang_sql", {"query": query})
    return f"OK: ran {query}"


@tool
def wait_gate() -> str:
    """Wait until the test opens the gate."""
    GATE.wait(30)
    _record("wait_gate", {})
    return "gate passed"


TOOLS = [execute_sql, write_file, ask_user, drop_table, set_limit, pick_colour, purge, wait_gate,
         hang_sql]


def policy() -> HumanInTheLoop:
    return HumanInTheLoop(
        interrupt_on={
            "execute_sql": True,
            "hang_sql": True,
            "write_file": True,
            "ask_user": InterruptOn(allowed_decisions=["respond", "reject"]),
            "drop_table": InterruptOn(allowed_decisions=["approve", "reject"],
                                      reviewers=["dba"],
                                      description="Dropping a table needs a DBA."),
            "set_limit": InterruptOn(allowed_decisions=["approve", "edit", "reject"]),
            "purge": InterruptOn(allowed_decisions=["approve", "reject"],
                                 expires_after=timedelta(milliseconds=50)),
            "pick_colour": False,
        }
    )


def _plan(text: str) -> list[Any]:
    word, _, rest = text.strip().partition(" ")
    if word == "sql":
        return [{"name": "execute_sql", "args": {"query": rest}}]
    if word == "write":
        path, _, content = rest.partition(" ")
        return [{"name": "write_file", "args": {"path": path, "content": content}}]
    if word == "ask":
        return [{"name": "ask_user", "args": {"question": rest}}]
    if word == "drop":
        return [{"name": "drop_table", "args": {"table": rest}}]
    if word == "limit":
        return [{"name": "set_limit", "args": {"n": int(rest)}}]
    if word == "twice":
        return [{"name": "execute_sql", "args": {"query": rest}},
                {"name": "execute_sql", "args": {"query": rest + " -- again"}}]
    if word == "multi":
        return [[{"name": "execute_sql", "args": {"query": "SELECT 1"}},
                 {"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]]
    if word == "triple":
        return [[{"name": "execute_sql", "args": {"query": "SELECT 3"}},
                 {"name": "write_file", "args": {"path": "c.txt", "content": "z"}},
                 {"name": "set_limit", "args": {"n": 2}}]]
    if word == "batch":
        return [[{"name": "execute_sql", "args": {"query": "DELETE FROM t"}},
                 {"name": "write_file", "args": {"path": "b.txt", "content": "y"}},
                 {"name": "set_limit", "args": {"n": 4}},
                 {"name": "ask_user", "args": {"question": "Which region?"}}]]
    if word == "pick":
        return [{"name": "pick_colour", "args": {}}]
    if word == "purge":
        return [{"name": "purge", "args": {}}]
    if word == "block":
        return [{"name": "wait_gate", "args": {}}]
    if word == "hang":
        return [{"name": "hang_sql", "args": {"query": rest}}]
    return []


def script(messages: Sequence[Message]) -> Any:
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    since = messages[last_user + 1:]
    done = sum(1 for m in since if isinstance(m, AssistantMessage))
    plan = _plan(user.content)
    if done < len(plan):
        step = plan[done]
        return ("Working on it.", step if isinstance(step, list) else [step])
    results = [m.content for m in since if isinstance(m, ToolMessage)]
    if results:
        return f"Done. {results[-1]}"
    return f"You said: {user.content}"


def make_agent(checkpointer: Checkpointer | None = None, **kw: Any) -> Agent:
    return Agent(model=ScriptedModel(script), tools=TOOLS, middleware=[policy()],
                 checkpointer=checkpointer, **kw)
