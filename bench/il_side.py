"""interlock side: ``Agent`` + ``HumanInTheLoop`` + ``ScriptedModel`` on an interlock checkpointer.

* memory: ``MemoryCheckpointer`` (bytes = ``stored_bytes()``, the serialised rows it holds);
* sqlite: ``SqliteCheckpointer(path)`` with its defaults, WAL and ``synchronous=FULL``;
* postgres: ``PostgresCheckpointer(dsn, schema=...)`` in a schema of its own.

``ScriptedModel`` records every conversation it is shown (``model.calls``, a test aid); the
benchmark clears that list after each cycle so it does not grow with the run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from scenario import FINAL_TEXT, TOOL_NAME, TOOL_RESULT, USER_TEXT, WRITE_ARGS, ToolCounter, call_id

from interlock import (
    Agent,
    HumanInTheLoop,
    MemoryCheckpointer,
    Message,
    ScriptedModel,
    SqliteCheckpointer,
    UserMessage,
    tool,
)

APPROVE = [{"type": "approve"}]


def script(messages: Sequence[Message]) -> Any:
    """Same decisions as the LangChain side's model."""
    if messages and isinstance(messages[-1], UserMessage):
        return {"name": TOOL_NAME, "args": dict(WRITE_ARGS), "id": call_id(len(messages))}
    return FINAL_TEXT


def make_tool(counter: ToolCounter, *, async_tool: bool = False) -> Any:
    """The tool as a plain function (interlock runs it in a worker thread, as the spec says
    sync tools run), or, for the ``--async-tool`` sensitivity check, as a coroutine function
    (it runs on the event loop: no thread hand-off)."""
    if async_tool:
        async def write_file_async(path: str, content: str) -> str:
            """Write a text file in the workspace."""
            counter.count += 1
            return TOOL_RESULT

        return tool(name=TOOL_NAME)(write_file_async)

    def write_file(path: str, content: str) -> str:
        """Write a text file in the workspace."""
        counter.count += 1
        return TOOL_RESULT

    return tool(write_file)


class InterlockSystem:
    name = "interlock"

    def __init__(self, backend: str, *, sqlite_path: str | None = None,
                 pg_dsn: str | None = None, pg_schema: str = "bench_il",
                 async_tool: bool = False) -> None:
        self.backend = backend
        self.counter = ToolCounter()
        self.sqlite_path = sqlite_path
        self.pg_dsn = pg_dsn
        self.pg_schema = pg_schema
        self.checkpointer: Any
        if backend == "memory":
            self.checkpointer = MemoryCheckpointer()
        elif backend == "sqlite":
            assert sqlite_path is not None
            self.checkpointer = SqliteCheckpointer(sqlite_path)
        elif backend == "postgres":
            from interlock.storage.postgres import PostgresCheckpointer

            assert pg_dsn is not None
            self.checkpointer = PostgresCheckpointer(pg_dsn, schema=pg_schema)
        else:
            raise ValueError(backend)
        self.model = ScriptedModel(script)
        self.agent = Agent(
            model=self.model,
            tools=[make_tool(self.counter, async_tool=async_tool)],
            middleware=[HumanInTheLoop(interrupt_on={TOOL_NAME: True})],
            checkpointer=self.checkpointer,
        )

    def open(self) -> None:
        """Open the store's connection now (otherwise it opens on first use)."""
        if self.backend in ("sqlite", "postgres"):
            self.checkpointer.schema_version()

    def pause(self, thread_id: str) -> None:
        out = self.agent.invoke(USER_TEXT, thread_id=thread_id)
        self.model.calls.clear()
        if not out.interrupted:
            raise AssertionError(f"interlock: thread {thread_id} did not pause")

    def resume(self, thread_id: str) -> None:
        before = self.counter.count
        out = self.agent.resume(thread_id, decisions=APPROVE)
        self.model.calls.clear()
        if out.output != FINAL_TEXT or self.counter.count != before + 1:
            raise AssertionError(f"interlock: thread {thread_id} did not complete once")

    def stored_bytes(self) -> int:
        if self.backend in ("memory", "sqlite"):
            return int(self.checkpointer.stored_bytes())
        from pg_util import schema_bytes

        assert self.pg_dsn is not None
        return schema_bytes(self.pg_dsn, self.pg_schema)

    def describe_durability(self) -> str:
        if self.backend == "memory":
            return "MemoryCheckpointer (not durable)"
        if self.backend == "sqlite":
            conn = sqlite3.connect(self.checkpointer.path)
            jm = conn.execute("PRAGMA journal_mode").fetchone()[0]
            conn.close()
            return (f"SqliteCheckpointer: journal_mode={jm}, "
                    f"synchronous={self.checkpointer.synchronous}")
        from pg_util import connect

        assert self.pg_dsn is not None
        with connect(self.pg_dsn) as conn:
            sc = conn.execute("SHOW synchronous_commit").fetchone()[0]
        return f"PostgresCheckpointer (schema {self.pg_schema}): synchronous_commit={sc}"

    def close(self) -> None:
        self.agent.close()
