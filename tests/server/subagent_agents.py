"""An orchestrator with sub-agents for the surface tests (also loaded by ``interlock serve``
and ``interlock review`` in a real process, as ``server.subagent_agents:make_lead``).

``lead`` reads the first word of the user message:

* ``clean``: the ``researcher`` (gated ``delete_file``, all decisions) and the ``dba`` (gated
  ``drop_table``, approve / edit / reject, role ``dba`` only) in parallel, in one turn;
* ``paint``: the ``manager``, which gives the ``painter`` the job; the painter's ``paint`` tool
  asks which colour with ``interrupt()`` (depth 2);

then answers ``lead: <results>``. Tool executions are counted in an
:class:`~procs.subagent_team.Effects` (a file when ``INTERLOCK_TEST_EFFECTS`` is set, so that
a test can count what another process ran).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from interlock import (
    Agent,
    Checkpointer,
    HumanInTheLoop,
    MemoryCheckpointer,
    Message,
    ScriptedModel,
    SqliteCheckpointer,
    ToolMessage,
    UserMessage,
    tool,
)
from procs.subagent_team import Effects, build_chain, build_workers

EFFECTS_ENV = "INTERLOCK_TEST_EFFECTS"
DB_ENV = "INTERLOCK_TEST_SUBAGENT_DB"


def effects() -> Effects:
    path = os.environ.get(EFFECTS_ENV)
    return Effects(Path(path) if path else None)


def lead_script(messages: Sequence[Message]) -> Any:
    last = messages[-1]
    if isinstance(last, UserMessage):
        if last.content.startswith("paint"):
            return {"name": "manager", "args": {"task": "kitchen"}, "id": "ask_manager"}
        return [{"name": "researcher", "args": {"task": "notes.txt"}, "id": "ask_researcher"},
                {"name": "dba", "args": {"task": "users"}, "id": "ask_dba"}]
    results = [f"{m.name}={m.content}" for m in messages if isinstance(m, ToolMessage)]
    return "lead: " + " ; ".join(results)


def make_lead(checkpointer: Checkpointer | None = None, fx: Effects | None = None) -> Agent:
    store = checkpointer
    if store is None:
        db = os.environ.get(DB_ENV)
        store = SqliteCheckpointer(db) if db else MemoryCheckpointer()
    fx = fx if fx is not None else effects()

    researcher, dba = build_workers(store, fx, reviewers=["dba"])
    _, manager, _ = build_chain(store, fx)
    return Agent(
        name="lead", model=ScriptedModel(lead_script), checkpointer=store,
        tools=[researcher.as_tool(description="Research and clean up files."),
               dba.as_tool(description="Database administration."),
               manager.as_tool(description="Manages the painters.")])


def make_same_name_team(store: Checkpointer, ran: list[str] | None = None) -> Agent:
    """``lead`` gates its own ``purge`` (deletes every row of a table) and calls ``checker``,
    a sub-agent whose own ``purge`` is declared read-only (a dry run) and gated too: one turn
    asks for both. Executions are appended to ``ran``."""
    log = ran if ran is not None else []

    @tool
    def purge(table: str) -> str:
        """Delete every row of a table."""
        log.append(f"purge {table}")
        return f"purged {table}"

    @tool(name="purge", read_only=True)
    def dry_purge(pattern: str) -> str:
        """Count what a purge would delete; changes nothing."""
        log.append(f"dry {pattern}")
        return f"would purge {pattern}"

    def checker_script(messages: Sequence[Message]) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "purge", "args": {"pattern": "*.tmp"}}
        return "checked"

    def lead_script(messages: Sequence[Message]) -> Any:
        if isinstance(messages[-1], UserMessage):
            return [{"name": "purge", "args": {"table": "sessions"}, "id": "own"},
                    {"name": "checker", "args": {"task": "tmp files"}, "id": "ask"}]
        return "done"

    checker = Agent(name="checker", checkpointer=store, tools=[dry_purge],
                    model=ScriptedModel(checker_script),
                    middleware=[HumanInTheLoop(interrupt_on={"purge": True})])
    return Agent(name="lead", checkpointer=store,
                 tools=[purge, checker.as_tool(description="Checks things.")],
                 model=ScriptedModel(lead_script),
                 middleware=[HumanInTheLoop(interrupt_on={"purge": True})])
