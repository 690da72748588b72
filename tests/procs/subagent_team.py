"""The agents of the sub-agent tests: an orchestrator that delegates to a ``researcher`` (gated
``delete_file``) and a ``dba`` (gated ``drop_table``) in one turn, and a three-level chain
(``boss`` -> ``manager`` -> ``painter``, whose tool asks a question with ``interrupt()``).

Tools record every call in a :class:`Effects` (in memory, or lines appended to a file so that
separate processes can be counted). The scripted models decide from the conversation, so the
same agents serve every process of a test.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from interlock import (
    Agent,
    Checkpointer,
    HumanInTheLoop,
    InterruptOn,
    Message,
    ScriptedModel,
    ToolContext,
    ToolMessage,
    UserMessage,
    interrupt,
    tool,
)

KILL_POINTS = ("child_decision", "parent_claim", "child_running", "child_tool",
               "child_succeeded", "child_completed", "parent_result", "parent_completed")
"""Steps between a decision on the researcher's request (given on the parent) and the
parent's continuation: the child stored the decision; the parent recorded it; the child's
tool is ``running``; inside the tool after its side effect; the tool's result is stored; the
child's final answer is stored; the parent stored the child's answer as its call's result; the
parent's final answer is stored."""

CHAIN_KILL_POINTS = ("bottom_answer", "middle_claim", "top_claim", "bottom_running",
                     "bottom_tool", "bottom_completed", "middle_result", "middle_completed",
                     "top_result")
"""The same for an answer given on ``boss`` to the question of ``painter`` (two levels down):
the painter stored the answer; the manager recorded it; the boss recorded it; the painter's
tool is ``running``; inside it after its side effect; the painter's final answer is stored;
the manager stored it as its call's result; the manager's final answer is stored; the boss
stored it as its call's result."""


class Effects:
    """Side effects of the tools: ``name|thread|call|args`` lines, in memory or in a file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.lines: list[str] = []
        self.after: Callable[[str], None] | None = None
        """Called after each effect is recorded (the crash tests die there)."""

    def add(self, line: str) -> None:
        if self.path is None:
            self.lines.append(line)
        else:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        if self.after is not None:
            self.after(line)

    def all(self) -> list[str]:
        if self.path is None:
            return list(self.lines)
        return self.path.read_text().splitlines() if self.path.exists() else []

    def counts(self) -> Counter[str]:
        return Counter(line.split("|")[0] for line in self.all())


def _last_result(messages: Sequence[Message]) -> str:
    results = [m.content for m in messages if isinstance(m, ToolMessage)]
    return results[-1] if results else ""


def _worker(tool_name: str, label: str) -> Any:
    """A child's model: the task (user message) is the argument of one ``tool_name`` call;
    the tool's result gives the final answer ``<label>: <result>``."""

    def script(messages: Sequence[Message]) -> Any:
        last = messages[-1]
        if isinstance(last, UserMessage):
            key = "path" if tool_name == "delete_file" else "name"
            return {"name": tool_name, "args": {key: last.content}}
        return f"{label}: {_last_result(messages)}"

    return script


def orchestrator_script(messages: Sequence[Message]) -> Any:
    """Both sub-agents in one turn, then a summary of both results."""
    last = messages[-1]
    if isinstance(last, UserMessage):
        return [{"name": "researcher", "args": {"task": "notes.txt"}, "id": "ask_researcher"},
                {"name": "dba", "args": {"task": "users"}, "id": "ask_dba"}]
    results = [f"{m.name}={m.content}" for m in messages if isinstance(m, ToolMessage)]
    return "summary: " + " ; ".join(results)


def build_workers(store: Checkpointer, effects: Effects, *,
                  expires_after: timedelta | None = None,
                  reviewers: list[str] | None = None,
                  approvals: int = 1) -> tuple[Agent, Agent]:
    """(researcher, dba) on ``store``: the researcher's ``delete_file`` is gated with every
    decision; the dba's ``drop_table`` with approve / edit / reject, ``reviewers`` and
    ``approvals``. Both tools record what they do in ``effects``."""

    @tool
    def delete_file(path: str, ctx: ToolContext) -> str:
        """Delete a file."""
        effects.add(f"delete_file|{ctx.thread_id}|{ctx.tool_call_id}|{path}")
        return f"deleted {path}"

    @tool
    def drop_table(name: str, ctx: ToolContext) -> str:
        """Drop a database table."""
        effects.add(f"drop_table|{ctx.thread_id}|{ctx.tool_call_id}|{name}")
        return f"dropped {name}"

    researcher = Agent(
        name="researcher", model=ScriptedModel(_worker("delete_file", "researcher")),
        tools=[delete_file], checkpointer=store,
        middleware=[HumanInTheLoop(interrupt_on={"delete_file": True})])
    dba = Agent(
        name="dba", model=ScriptedModel(_worker("drop_table", "dba")), tools=[drop_table],
        checkpointer=store,
        middleware=[HumanInTheLoop(interrupt_on={"drop_table": InterruptOn(
            allowed_decisions=["approve", "edit", "reject"], expires_after=expires_after,
            reviewers=reviewers, allow_remember=False, approvals=approvals)})])
    return researcher, dba


def build_team(store: Checkpointer, effects: Effects, *,
               expires_after: timedelta | None = None,
               reviewers: list[str] | None = None,
               approvals: int = 1) -> tuple[Agent, Agent, Agent]:
    """(orchestrator, researcher, dba) on ``store``."""
    researcher, dba = build_workers(store, effects, expires_after=expires_after,
                                    reviewers=reviewers, approvals=approvals)
    orchestrator = Agent(
        name="orchestrator", model=ScriptedModel(orchestrator_script),
        tools=[researcher.as_tool(description="Research and clean up files."),
               dba.as_tool(description="Database administration.")],
        checkpointer=store)
    return orchestrator, researcher, dba


def build_chain(store: Checkpointer, effects: Effects) -> tuple[Agent, Agent, Agent]:
    """(boss, manager, painter): boss -> manager -> painter, whose ``paint`` tool asks which
    colour with ``interrupt()`` before it acts."""

    @tool
    def paint(room: str, ctx: ToolContext) -> str:
        """Paint a room."""
        colour = interrupt({"question": f"Which colour for the {room}?"})
        effects.add(f"paint|{ctx.thread_id}|{ctx.tool_call_id}|{room}={colour}")
        return f"painted the {room} {colour}"

    def painter_script(messages: Sequence[Message]) -> Any:
        last = messages[-1]
        if isinstance(last, UserMessage):
            return {"name": "paint", "args": {"room": last.content}}
        return f"painter: {_last_result(messages)}"

    def manager_script(messages: Sequence[Message]) -> Any:
        last = messages[-1]
        if isinstance(last, UserMessage):
            return {"name": "painter", "args": {"task": last.content}}
        return f"manager: {_last_result(messages)}"

    def boss_script(messages: Sequence[Message]) -> Any:
        last = messages[-1]
        if isinstance(last, UserMessage):
            return {"name": "manager", "args": {"task": "kitchen"}, "id": "ask_manager"}
        return f"boss: {_last_result(messages)}"

    painter = Agent(name="painter", model=ScriptedModel(painter_script), tools=[paint],
                    checkpointer=store)
    manager = Agent(name="manager", model=ScriptedModel(manager_script),
                    tools=[painter.as_tool(description="Paints rooms.")], checkpointer=store)
    boss = Agent(name="boss", model=ScriptedModel(boss_script),
                 tools=[manager.as_tool(description="Manages the painters.")],
                 checkpointer=store)
    return boss, manager, painter
