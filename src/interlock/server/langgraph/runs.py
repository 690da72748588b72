"""LangGraph runs over interlock's background runs: a small in-process run registry and the
SSE stream (``values``, ``updates`` and ``events`` modes) built from the events the server's
runner publishes on the thread's hub topic."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from ...agent import ThreadState
from ...errors import InterlockError
from ..hub import StreamEvent, Subscription, thread_topic
from ..sse import next_event
from ..state import ServerState
from .shapes import (
    GRAPH_NODE,
    AssistantInfo,
    Format,
    interrupt_json,
    iso,
    message_json,
    pending_entries,
    values_json,
)

RunStatus = Literal["pending", "running", "error", "success", "interrupted"]
STREAM_MODES = ("values", "updates", "events")
TERMINAL = ("run_completed", "run_failed")
STOPPED = {"error": "Shutdown",
           "message": "the server stopped following this run; read the thread to see where it is"}
KEEP_RUNS = 1000


LoadState = Callable[[], Awaitable[ThreadState]]


@dataclass
class RunRecord:
    run_id: str
    thread_id: str
    assistant_id: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    status: RunStatus = "pending"
    done: asyncio.Event = field(default_factory=asyncio.Event)
    error: dict[str, str] | None = None

    def finish(self, status: RunStatus, error: dict[str, str] | None = None) -> None:
        self.status, self.error = status, error
        self.updated_at = datetime.now(UTC)
        self.done.set()

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "thread_id": self.thread_id,
                "assistant_id": self.assistant_id, "created_at": iso(self.created_at),
                "updated_at": iso(self.updated_at), "status": self.status,
                "metadata": self.metadata, "multitask_strategy": "reject", "kwargs": {}}


class RunRegistry:
    """The runs started through this process (newest :data:`KEEP_RUNS`). Runs are not stored:
    the thread is, so after a restart a client reads the thread, not the run."""

    def __init__(self) -> None:
        self._runs: OrderedDict[str, RunRecord] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def new(self, thread_id: str, assistant: AssistantInfo,
            metadata: dict[str, Any] | None) -> RunRecord:
        now = datetime.now(UTC)
        rec = RunRecord(str(uuid.uuid4()), thread_id, assistant.assistant_id,
                        dict(metadata or {}), now, now)
        self._runs[rec.run_id] = rec
        while len(self._runs) > KEEP_RUNS:
            self._runs.popitem(last=False)
        return rec

    def get(self, thread_id: str, run_id: str) -> RunRecord | None:
        rec = self._runs.get(run_id)
        return rec if rec is not None and rec.thread_id == thread_id else None

    def of_thread(self, thread_id: str) -> list[RunRecord]:
        return [r for r in reversed(self._runs.values()) if r.thread_id == thread_id]

    def follow(self, rec: RunRecord, sub: Subscription, state: ServerState,
               load: LoadState) -> None:
        """Track a background run to its end from its hub events."""

        async def watch() -> None:
            try:
                async for item in run_events(sub, state.sse_keepalive, load):
                    if isinstance(item, StreamEvent) and item.event in TERMINAL:
                        settle(rec, item)
            finally:
                state.hub.unsubscribe(sub)
                if not rec.done.is_set():
                    rec.finish("error", STOPPED)

        task = asyncio.create_task(watch(), name=f"interlock-langgraph-run:{rec.run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def settle(rec: RunRecord, ev: StreamEvent) -> None:
    if ev.event == "run_failed":
        rec.finish("error", {"error": str(ev.data.get("error")),
                             "message": str(ev.data.get("message"))})
        return
    status = ev.data.get("result", {}).get("status")
    rec.finish("interrupted" if status == "interrupted" else "success")


async def run_events(sub: Subscription, keepalive: float,
                     load: LoadState) -> AsyncIterator[StreamEvent | bytes]:
    """The run's hub events up to and including ``run_completed`` / ``run_failed`` (with
    keepalives in between). If the subscription fell behind and lost events, the end is
    learnt by reading the thread until it is no longer running."""
    while True:
        item = await next_event(sub, keepalive)
        if item is None:  # the server is shutting down
            return
        yield item
        if isinstance(item, StreamEvent) and item.event in TERMINAL:
            return
        if sub.overflowed and sub.queue.empty():
            yield await _ended(load)
            return


async def _ended(load: LoadState) -> StreamEvent:
    while True:
        current = await load()
        if current.status == "failed":
            return StreamEvent("", "run_failed", {"error": "RunFailed",
                                                  "message": current.error or "the run failed"})
        if current.status != "running":
            return StreamEvent("", "run_completed", {"result": {"status": current.status}})
        await asyncio.sleep(0.2)


# -- SSE ---------------------------------------------------------------------------------------


def sse(event: str, data: Any) -> bytes:
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"event: {event}\ndata: {payload}\n\n".encode()


@dataclass
class StreamContext:
    rec: RunRecord
    assistant: AssistantInfo
    fmt: Format
    modes: tuple[str, ...]
    load: LoadState
    seen_messages: int = 0
    node: str | None = None

    def meta(self, node: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {**self.assistant.metadata(), "run_id": self.rec.run_id,
                               "thread_id": self.rec.thread_id}
        if node is not None:
            out["langgraph_node"] = node
        return out

    def event(self, kind: str, name: str, data: dict[str, Any],
              node: str | None = None) -> bytes:
        return sse("events", {"event": kind, "name": name, "run_id": self.rec.run_id,
                              "tags": [], "metadata": self.meta(node), "data": data,
                              "parent_ids": [] if name == "LangGraph" else [self.rec.run_id]})


async def stream_run(ctx: StreamContext, sub: Subscription | None, state: ServerState,
                     keepalive: float) -> AsyncIterator[bytes]:
    """The run's SSE stream: ``metadata``, then the requested modes, until the run ends (or,
    with no subscription, one final snapshot: a run that ended when it was accepted)."""
    try:
        yield sse("metadata", {"run_id": ctx.rec.run_id, "attempt": 1})
        first = await ctx.load()  # the input or the decisions are stored by now
        ctx.seen_messages = len(first.messages)
        if "events" in ctx.modes:
            yield ctx.event("on_chain_start", "LangGraph",
                            {"input": values_json(first, ctx.fmt)})
        if "values" in ctx.modes:
            yield sse("values", values_json(first, ctx.fmt))
        if sub is not None:
            async for chunk in _follow(ctx, sub, keepalive):
                yield chunk
        final = await ctx.load()
        for chunk in _snapshot(ctx, final, last=True):
            yield chunk
        if ctx.rec.error is not None:
            yield sse("error", ctx.rec.error)
    finally:
        if sub is not None:
            state.hub.unsubscribe(sub)


async def _follow(ctx: StreamContext, sub: Subscription,
                  keepalive: float) -> AsyncIterator[bytes]:
    async for item in run_events(sub, keepalive, ctx.load):
        if isinstance(item, bytes):
            yield item
            continue
        for chunk in _translate(ctx, item):
            yield chunk
        if item.event in ("tool_finished", "interrupt_raised"):
            with contextlib.suppress(InterlockError):
                for chunk in _snapshot(ctx, await ctx.load(), last=False):
                    yield chunk
        if item.event in TERMINAL:
            settle(ctx.rec, item)
    if not ctx.rec.done.is_set():
        ctx.rec.finish("error", STOPPED)


def _translate(ctx: StreamContext, ev: StreamEvent) -> list[bytes]:
    """One hub event as ``events``-mode LangChain events (other modes use snapshots)."""
    if "events" not in ctx.modes:
        return []
    d = ev.data
    out: list[bytes] = []
    if ev.event in ("model_text_delta", "tool_call_proposed") and ctx.node != "model":
        ctx.node = "model"
        out.append(ctx.event("on_chain_start", "model", {}, "model"))
    if ev.event == "model_text_delta":
        out.append(ctx.event("on_chat_model_stream", "model", {"chunk": {
            "type": "AIMessageChunk", "content": d.get("text", ""), "tool_call_chunks": []}},
            "model"))
    elif ev.event == "tool_started":
        if ctx.node != GRAPH_NODE:
            ctx.node = GRAPH_NODE
            out.append(ctx.event("on_chain_start", GRAPH_NODE, {}, GRAPH_NODE))
        call = d.get("call", {})
        out.append(ctx.event("on_tool_start", str(call.get("name")),
                             {"input": call.get("args", {})}, GRAPH_NODE))
    elif ev.event == "tool_finished":
        result = d.get("result", {})
        out.append(ctx.event("on_tool_end", str(result.get("name")), {
            "output": {"type": "tool", "content": result.get("content"),
                       "tool_call_id": result.get("tool_call_id"), "name": result.get("name"),
                       "status": result.get("status")}}, GRAPH_NODE))
    elif ev.event == "interrupt_raised":
        out.append(ctx.event("on_chain_stream", "LangGraph", {"chunk": {
            "__interrupt__": [{"id": ev.data.get("interrupt", {}).get("id")}]}}))
    return out


def _snapshot(ctx: StreamContext, state: ThreadState, *, last: bool) -> list[bytes]:
    """``updates`` for messages added since the last snapshot (and pending interrupts at the
    end), ``values`` for the whole state, and the closing ``events``."""
    out: list[bytes] = []
    new = list(enumerate(state.messages))[ctx.seen_messages:]
    ctx.seen_messages = len(state.messages)
    if "updates" in ctx.modes:
        for i, m in new:
            node = {"assistant": "model", "tool": GRAPH_NODE}.get(m.role)
            if node is not None:
                out.append(sse("updates", {node: {
                    "messages": [message_json(state.thread_id, i, m)]}}))
        entries = pending_entries(state)
        if last and entries:
            out.append(sse("updates", {"__interrupt__": [interrupt_json(p, ctx.fmt)
                                                         for p in entries]}))
    if "values" in ctx.modes and (new or last):
        out.append(sse("values", values_json(state, ctx.fmt)))
    if last and "events" in ctx.modes:
        out.append(ctx.event("on_chain_end", "LangGraph",
                             {"output": values_json(state, ctx.fmt)}))
    return out


def subscribe(state: ServerState, thread_id: str) -> Subscription:
    """Subscribe to the thread's hub topic from now on (before the run is launched)."""
    return state.hub.subscribe(thread_topic(thread_id), after=state.hub.last_id())

