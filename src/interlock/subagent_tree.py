"""The agents behind sub-agent tools (:meth:`interlock.Agent.as_tool`), as the surfaces need
them: the agent and the tool a request's :class:`~interlock.interrupts.PathStep` path leads to
(for the tool's description, schema and read-only flag), a path as one line of text, a
thread's audit rows together with its sub-agents', and giving an agent and all its sub-agents
another store (``--db``). The parent links up to a sub-agent's top-most thread are
:func:`interlock.storage.base.parent_chain`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from . import display
from .agent import Agent
from .authz import Reviewer
from .errors import NotAuthorized
from .interrupts import PathStep
from .storage.base import AuditRecord, Checkpointer
from .subagents import SubAgentTool
from .tools import Tool


def child_agent_of(tool: Tool | None) -> Agent | None:
    """The agent behind a sub-agent tool (None: not one)."""
    if not isinstance(tool, SubAgentTool):
        return None
    inner = getattr(tool.runner, "agent", None)
    return inner if isinstance(inner, Agent) else None


def child_agent(agent: Agent, tool_name: str | None) -> Agent | None:
    """The agent behind ``agent``'s sub-agent tool ``tool_name`` (None: not one)."""
    return child_agent_of(agent.tools_by_name.get(tool_name or ""))


def subagents(agent: Agent) -> Iterator[Agent]:
    """Every agent reachable through sub-agent tools, each once (``agent`` not included)."""
    seen = {id(agent)}
    todo = [agent]
    while todo:
        for tool in todo.pop().tools:
            inner = child_agent_of(tool)
            if inner is not None and id(inner) not in seen:
                seen.add(id(inner))
                todo.append(inner)
                yield inner


def agent_at(agent: Agent, path: Sequence[PathStep] | None) -> Agent | None:
    """The agent that raised a request with this path (``agent`` itself for ``None``): each
    step but the last is a sub-agent call. None when the path does not fit these agents."""
    current: Agent | None = agent
    for step in (path or [])[:-1]:
        if current is None:
            return None
        current = child_agent(current, step.tool_name)
    return current


def tool_at(agent: Agent, name: str, path: Sequence[PathStep] | None) -> Tool | None:
    """The tool ``name`` of the agent a request's path leads to (None: unknown there)."""
    owner = agent_at(agent, path)
    return owner.tools_by_name.get(name) if owner is not None else None


def path_text(path: Sequence[PathStep], width: int | None = None) -> str:
    """``orchestrator: researcher › researcher: delete_file`` — each step as ``agent: tool``
    (the last step of a question names the agent alone), every part made visible by
    :mod:`interlock.display`."""
    parts = []
    for step in path:
        agent = display.one_line(step.agent, 60)
        parts.append(f"{agent}: {display.one_line(step.tool_name, 60)}" if step.tool_name
                     else agent)
    text = " › ".join(parts)
    return text if width is None else display.one_line(text, width)


async def with_subagents(agent: Agent, thread_id: str) -> list[str]:
    """``thread_id`` and the threads of every sub-agent its calls ran, at any depth (read
    from the journals: ``JournalEntry.child_thread``), parents before their children."""
    found = [thread_id]
    for tid in found:  # grows while it is read
        if len(found) > 10_000:
            break
        found += [e.child_thread for e in await agent.ajournal(tid)
                  if e.child_thread is not None and e.child_thread not in found]
    return found


async def audit_with_subagents(agent: Agent, thread_id: str, *, after_id: int = 0,
                               limit: int = 1000, reviewer: Reviewer | None = None,
                               ) -> list[AuditRecord]:
    """The audit rows of ``thread_id`` and of its sub-agents' threads (see
    :func:`with_subagents`) in insertion order: the first ``limit`` after ``after_id``. With
    ``reviewer``: only the threads it may read (:mod:`interlock.authz`)."""
    rows: list[AuditRecord] = []
    for tid in await with_subagents(agent, thread_id):
        try:
            rows += await agent.aaudit(tid, after_id=after_id, limit=limit, reviewer=reviewer)
        except NotAuthorized:
            if tid == thread_id:
                raise
    rows.sort(key=lambda r: r.id or 0)
    return rows[:limit]


def use_store(agent: Agent, store: Checkpointer) -> None:
    """Give ``agent`` and every agent behind its sub-agent tools the store ``store`` (they
    keep their threads together; see :class:`~interlock.errors.SubAgentMismatch`)."""
    agent.checkpointer = store
    for inner in subagents(agent):
        inner.checkpointer = store
