"""The agent every crash / race / concurrency process builds, so that a parent and its child
processes run the same tools, model and policy against the same database.

Tools write their side effects to plain files opened with ``O_APPEND`` (one short line per
write, atomic across processes), so a test can count exactly how often a tool acted.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from interlock import (
    Agent,
    AssistantMessage,
    AuditRecord,
    Checkpointer,
    HumanInTheLoop,
    JournalEntry,
    Message,
    ScriptedModel,
    ThreadRecord,
    ToolContext,
    ToolMessage,
    UserMessage,
    tool,
)
from interlock.storage import from_url
from interlock.storage.base import CallState, Commit, ThreadSnapshot

KILL_POINTS = ("decision", "running", "tool", "succeeded")
"""Where a crash child dies: right after the reviewer's decision is committed, right after
``running`` is committed (tool not called yet), inside the tool after its side effect, right
after ``succeeded`` is committed."""


def die() -> None:
    """Stop this process the hard way: no cleanup, no flush, no atexit."""
    os.kill(os.getpid(), signal.SIGKILL)


def append(path: Path, line: str) -> None:
    """Append one line durably; ``O_APPEND`` keeps concurrent writers' lines whole."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


class KillAfterCommit:
    """Checkpointer wrapper that kills the process right after the commit matching ``point``
    (test-only: the crash happens once the change is durably stored)."""

    durable = True

    def __init__(self, inner: Checkpointer, point: str | None) -> None:
        self.inner = inner
        self.point = point

    def _matches(self, change: Commit) -> bool:
        if self.point == "decision":
            return any(a.kind == "decision" for a in change.audit)
        if self.point == "running":
            return any(e.state == CallState.RUNNING for e in change.journal)
        if self.point == "succeeded":
            return any(e.state == CallState.SUCCEEDED for e in change.journal)
        return False

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        await self.inner.commit(change, expected_version=expected_version)
        if self._matches(change):
            die()

    async def load(self, thread_id: str, *, after_seq: int = 0) -> ThreadSnapshot | None:
        return await self.inner.load(thread_id, after_seq=after_seq)

    async def list_threads(
        self, *, status: str | None = None, limit: int = 50, before: datetime | None = None
    ) -> list[ThreadRecord]:
        return await self.inner.list_threads(status=status, limit=limit, before=before)

    async def journal(self, thread_id: str) -> list[JournalEntry]:
        return await self.inner.journal(thread_id)

    async def audit(
        self, *, thread_id: str | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[AuditRecord]:
        return await self.inner.audit(thread_id=thread_id, after_id=after_id, limit=limit)

    async def close(self) -> None:
        await self.inner.close()


def script(messages: Sequence[Message]) -> Any:
    """The model: a user message asks for one tool call, a tool result gets a final answer.

    ``"idempotent: X"`` calls ``append_once``; ``"pair: X"`` calls ``append_line`` (gated) and
    ``note`` (not gated) in one turn; ``"two: X"`` calls ``append_line`` twice in one turn;
    anything else calls ``append_line``.
    """
    last = messages[-1]
    if isinstance(last, UserMessage):
        text = last.content
        if text.startswith("idempotent:"):
            return {"name": "append_once", "args": {"text": text}}
        if text.startswith("two:"):
            return [{"name": "append_line", "args": {"text": f"{text} #{i}"}} for i in (1, 2)]
        if text.startswith("pair:"):
            return [{"name": "append_line", "args": {"text": text}},
                    {"name": "note", "args": {"text": text}}]
        return {"name": "append_line", "args": {"text": text}}
    results = [m.content for m in messages[-2:] if isinstance(m, ToolMessage)]
    assert results, f"unexpected conversation end: {last!r}"
    return f"done: {results[-1][:80]}"


def build_agent(
    url: str, effects: Path, *, kill_at: str | None = None, checkpointer: Checkpointer | None = None
) -> Agent:
    """``effects``: file the tools append to (``<effects>.attempts`` logs every call of the
    idempotent tool). ``kill_at``: one of :data:`KILL_POINTS`, or None to run normally."""
    attempts = effects.with_suffix(".attempts")
    notes = effects.with_suffix(".notes")

    @tool
    def append_line(text: str, ctx: ToolContext) -> str:
        """Append a line to the effects file (not idempotent: every call appends)."""
        append(effects, f"{ctx.thread_id}|{ctx.tool_call_id}|{text}")
        if kill_at == "tool":
            die()
        return f"appended {text!r}"

    @tool(idempotent=True)
    def append_once(text: str, ctx: ToolContext) -> str:
        """Append a line unless this call's idempotency key is already in the file."""
        append(attempts, f"{ctx.thread_id}|{ctx.tool_call_id}|{ctx.attempt}")
        if not any(ctx.idempotency_key in line for line in read_lines(effects)):
            append(effects, f"{ctx.thread_id}|{ctx.tool_call_id}|{text}|{ctx.idempotency_key}")
        if kill_at == "tool":
            die()
        return f"appended once {text!r}"

    @tool
    def note(text: str, ctx: ToolContext) -> str:
        """Record a note (safe, never paused)."""
        append(notes, f"{ctx.thread_id}|{ctx.tool_call_id}|{text}")
        return "noted"

    store = checkpointer if checkpointer is not None else from_url(url)
    if kill_at in ("decision", "running", "succeeded"):
        store = KillAfterCommit(store, kill_at)
    return Agent(
        model=ScriptedModel(script),
        tools=[append_line, append_once, note],
        middleware=[HumanInTheLoop(interrupt_on={"append_line": True, "append_once": True})],
        checkpointer=store,
    )


def transcript(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as JSON (for a parent process to check)."""
    return [json.loads(m.model_dump_json()) for m in messages]


def results_per_call(messages: Sequence[Message]) -> dict[str, int]:
    """How many tool results each tool call of the transcript has."""
    counts: dict[str, int] = {}
    for m in messages:
        if isinstance(m, AssistantMessage):
            for c in m.tool_calls:
                counts.setdefault(c.id, 0)
        elif isinstance(m, ToolMessage):
            counts[m.tool_call_id] = counts.get(m.tool_call_id, 0) + 1
    return counts
