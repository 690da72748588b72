"""LangChain side: ``create_agent`` + ``HumanInTheLoopMiddleware`` on a LangGraph saver.

Savers and their settings:

* memory: ``InMemorySaver``;
* sqlite: ``SqliteSaver`` on a ``sqlite3`` connection we open ourselves with
  ``PRAGMA journal_mode=WAL`` and ``PRAGMA synchronous=FULL`` (``SqliteSaver.setup()`` itself
  only sets WAL; ``synchronous`` is left at SQLite's default, which we read and report);
* postgres: ``PostgresSaver`` on one psycopg connection (``autocommit=True,
  prepare_threshold=0, row_factory=dict_row``, as ``PostgresSaver.from_conn_string`` opens
  it) whose ``search_path`` is a schema of its own.

Every ``invoke`` passes ``durability="sync"``: each checkpoint is written before the next step
starts, as interlock commits each step before the next. (LangGraph's default is
``"async"``, which writes the checkpoint while the next step already runs.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scenario import FINAL_TEXT, TOOL_NAME, TOOL_RESULT, USER_TEXT, WRITE_ARGS, ToolCounter, call_id

APPROVE: dict[str, Any] = {"decisions": [{"type": "approve"}]}


class ScriptedChatModel(BaseChatModel):
    """Deterministic in-process chat model (like ``GenericFakeChatModel``, but it decides from
    the conversation, so one instance serves many threads). ``bind_tools`` returns itself."""

    @property
    def _llm_type(self) -> str:
        return "bench-scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1] if messages else None
        if isinstance(last, HumanMessage):
            msg = AIMessage(
                content="",
                tool_calls=[{"name": TOOL_NAME, "args": dict(WRITE_ARGS),
                             "id": call_id(len(messages)), "type": "tool_call"}],
            )
        else:
            msg = AIMessage(content=FINAL_TEXT)
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def make_tool(counter: ToolCounter) -> Any:
    @tool(TOOL_NAME)
    def write_file(path: str, content: str) -> str:
        """Write a text file in the workspace."""
        counter.count += 1
        return TOOL_RESULT

    return write_file


def inmemory_bytes(saver: InMemorySaver) -> int:
    """Bytes held by an ``InMemorySaver``: every serialised payload (checkpoint, metadata,
    channel blob, pending write) plus the identifier strings of their keys."""
    total = 0
    for thread_id, namespaces in saver.storage.items():
        for ns, checkpoints in namespaces.items():
            for cid, (ckpt, meta, parent) in checkpoints.items():
                total += len(thread_id) + len(ns) + len(cid) + len(parent or "")
                total += len(ckpt[1]) + len(meta[1])
    for (thread_id, ns, cid), writes in saver.writes.items():
        total += len(thread_id) + len(ns) + len(cid)
        for (task_id, _idx), (_t, channel, value, task_path) in writes.items():
            total += len(task_id) + len(channel) + len(value[1]) + len(task_path)
    for (thread_id, ns, channel, version), value in saver.blobs.items():
        total += len(thread_id) + len(ns) + len(channel) + len(str(version)) + len(value[1])
    return total


class LangChainSystem:
    name = "langchain"

    def __init__(self, backend: str, *, sqlite_path: str | None = None,
                 pg_dsn: str | None = None, pg_schema: str = "bench_lg",
                 setup: bool = True) -> None:
        self.backend = backend
        self.counter = ToolCounter()
        self._conn: Any = None
        self.pg_dsn = pg_dsn
        self.pg_schema = pg_schema
        self.sqlite_path = sqlite_path
        self.saver: Any
        if backend == "memory":
            self.saver = InMemorySaver()
        elif backend == "sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver

            assert sqlite_path is not None
            sconn = sqlite3.connect(sqlite_path, check_same_thread=False)
            sconn.execute("PRAGMA journal_mode=WAL")
            sconn.execute("PRAGMA synchronous=FULL")
            self._conn = sconn
            self.saver = SqliteSaver(sconn)
            if setup:
                self.saver.setup()
        elif backend == "postgres":
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row

            assert pg_dsn is not None
            pconn = psycopg.Connection.connect(
                pg_dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                options=f"-c search_path={pg_schema}",
            )
            self._conn = pconn
            self.saver = PostgresSaver(pconn)
            if setup:
                self.saver.setup()
        else:
            raise ValueError(backend)
        self.agent = create_agent(
            model=ScriptedChatModel(),
            tools=[make_tool(self.counter)],
            middleware=[HumanInTheLoopMiddleware(interrupt_on={TOOL_NAME: True})],
            checkpointer=self.saver,
        )

    @staticmethod
    def _config(thread_id: str) -> Any:
        return {"configurable": {"thread_id": thread_id}}

    def pause(self, thread_id: str) -> None:
        out = self.agent.invoke({"messages": [HumanMessage(USER_TEXT)]},
                                self._config(thread_id), durability="sync")
        if not out.get("__interrupt__"):
            raise AssertionError(f"langchain: thread {thread_id} did not pause")

    def resume(self, thread_id: str) -> None:
        before = self.counter.count
        out = self.agent.invoke(Command(resume=APPROVE), self._config(thread_id),
                                durability="sync")
        last = out["messages"][-1]
        if last.content != FINAL_TEXT or self.counter.count != before + 1:
            raise AssertionError(f"langchain: thread {thread_id} did not complete once")

    def stored_bytes(self) -> int:
        if self.backend == "memory":
            return inmemory_bytes(self.saver)
        if self.backend == "sqlite":
            conn = self._conn
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            size = conn.execute("PRAGMA page_size").fetchone()[0]
            return int(pages) * int(size)
        from pg_util import schema_bytes

        assert self.pg_dsn is not None
        return schema_bytes(self.pg_dsn, self.pg_schema)

    def describe_durability(self) -> str:
        if self.backend == "memory":
            return "InMemorySaver (not durable); invoke(durability='sync')"
        if self.backend == "sqlite":
            jm = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
            sync = self._conn.execute("PRAGMA synchronous").fetchone()[0]
            names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
            return (f"SqliteSaver: journal_mode={jm}, synchronous={names.get(sync, sync)}; "
                    f"invoke(durability='sync')")
        row = self._conn.execute("SHOW synchronous_commit").fetchone()
        return (f"PostgresSaver (schema {self.pg_schema}): synchronous_commit="
                f"{row['synchronous_commit']}; invoke(durability='sync')")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def sqlite_default_synchronous() -> str:
    """What ``SqliteSaver`` runs with when the caller does not set ``synchronous``."""
    import tempfile

    from langgraph.checkpoint.sqlite import SqliteSaver

    with tempfile.TemporaryDirectory() as d:
        conn = sqlite3.connect(f"{d}/x.db", check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        jm = conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = conn.execute("PRAGMA synchronous").fetchone()[0]
        conn.close()
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return f"journal_mode={jm}, synchronous={names.get(sync, sync)}"
