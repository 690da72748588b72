"""LangGraph runs over interlock's background runs: a small in-process run registry and the
SSE stream (``values``, ``updates``, ``events``, ``messages-tuple``, ``messages`` and
``custom`` modes) built from the events the server's runner publishes on the thread's hub
topic. interlock's tools have no way to emit custom events, so ``custom`` is accepted and
sends nothing."""

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
from ...errors import (
    ConcurrencyError,
    InterlockError,
    NotAuthorized,
    ResumeError,
    ThreadInterrupted,
)
from ..hub import StreamEvent, Subscription, thread_topic
from ..sse import next_event
from ..state import ServerState
from .shapes import (
    GRAPH_NODE,
    AssistantInfo,
    Format,
    derived_id,
    iso,
    message_json,
    shown,
    values_json,
)

RunStatus = Literal["pending", "running", "error", "success", "interrupted"]
STREAM_MODES = ("values", "updates", "events", "messages-tuple", "messages", "custom")
MESSAGE_MODES = ("messages-tuple", "messages")
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

    def refused(self, rec: RunRecord, exc: BaseException) -> None:
        """``rec`` ended with ``exc``: a run refused before its input was stored (a conflict,
        a wrong decision, a role) never existed and is not kept; any other ends in error."""
        rec.finish("error", {"error": type(exc).__name__, "message": str(exc)})
        if isinstance(exc, ResumeError | ConcurrencyError | NotAuthorized | ThreadInterrupted):
            self._runs.pop(rec.run_id, None)

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
    """Messages already sent as updates: those stored when the run was accepted, then those
    of each snapshot."""
    node: str | None = None
    accepted: int = 0
    """Messages stored before the run was accepted: the run's own messages follow them."""
    model_turns: int = 0
    """The model messages of this run begun so far (by text or by a proposed call)."""
    in_model_turn: bool = False
    streaming: str | None = None
    """The id of the model message whose text is streaming now."""
    streamed: dict[str, str] = field(default_factory=dict)
    """Text streamed so far per model message id (``messages`` modes)."""
    whole: set[str] = field(default_factory=set)
    """Model messages sent whole (the run had stored them before their text reached this
    stream): their text deltas arriving later are not sent again as chunks."""
    note: Callable[[ThreadState], Any] | None = None
    """Called with each state whose pending requests an event of this stream shows."""
    sent_values: bytes | None = None
    """The last ``values`` event sent: the same values are not sent twice in a row."""

    def values(self, state: ThreadState) -> list[bytes]:
        """A ``values`` event for ``state``, unless it is the one sent last."""
        chunk = sse("values", values_json(state, self.fmt))
        if chunk == self.sent_values:
            return []
        self.sent_values = chunk
        return [chunk]

    def shows(self, state: ThreadState) -> None:
        if self.note is not None:
            self.note(state)

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
                     keepalive: float, runs: RunRegistry) -> AsyncIterator[bytes]:
    """The run's SSE stream: ``metadata``, then the requested modes, until the run ends (or,
    with no subscription, one final snapshot: a run that ended when it was accepted). A client
    that leaves before the run ends leaves it to ``runs``, which follows it to its end as it
    follows a background run, so that its status and ``join`` still learn the outcome."""
    try:
        yield sse("metadata", {"run_id": ctx.rec.run_id, "attempt": 1})
        first = await ctx.load()  # the input or the decisions are stored by now
        if {"events", "values"} & set(ctx.modes):
            ctx.shows(first)
        if "events" in ctx.modes:
            yield ctx.event("on_chain_start", "LangGraph",
                            {"input": values_json(first, ctx.fmt)})
        if "values" in ctx.modes:
            for chunk in ctx.values(first):
                yield chunk
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
            if ctx.rec.done.is_set():
                state.hub.unsubscribe(sub)
            else:  # the client left first: the run goes on, and so does its record
                runs.follow(ctx.rec, sub, state, ctx.load)


async def _follow(ctx: StreamContext, sub: Subscription,
                  keepalive: float) -> AsyncIterator[bytes]:
    async for item in run_events(sub, keepalive, ctx.load):
        if isinstance(item, bytes):
            yield item
            continue
        if item.event in ("model_text_delta", "tool_call_proposed"):
            if not ctx.in_model_turn:
                ctx.in_model_turn = True
                ctx.model_turns += 1
            if item.event == "model_text_delta" and ctx.streaming is None and \
                    set(MESSAGE_MODES) & set(ctx.modes):
                with contextlib.suppress(InterlockError):
                    ctx.streaming = await _model_message_id(ctx)
        else:
            ctx.in_model_turn = False
            ctx.streaming = None
        for chunk in _translate(ctx, item) + _message_chunk(ctx, item):
            yield chunk
        if item.event in ("tool_finished", "interrupt_raised"):
            with contextlib.suppress(InterlockError):
                for chunk in _snapshot(ctx, await ctx.load(), last=False):
                    yield chunk
        if item.event in TERMINAL:
            settle(ctx.rec, item)
    if not ctx.rec.done.is_set():
        ctx.rec.finish("error", STOPPED)


async def _model_message_id(ctx: StreamContext) -> str:
    """The id of the message the model's streaming text is stored as: the run's n-th model
    message when the run is ahead of the stream and has stored it already, else the next
    message of the thread."""
    messages = (await ctx.load()).messages
    ours = [i for i, m in enumerate(messages) if i >= ctx.accepted and m.role == "assistant"]
    index = ours[ctx.model_turns - 1] if len(ours) >= ctx.model_turns else len(messages)
    return derived_id("message", ctx.rec.thread_id, str(index))


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


def _message_chunk(ctx: StreamContext, ev: StreamEvent) -> list[bytes]:
    """A piece of model text in the ``messages`` modes: ``messages-tuple`` sends the chunk and
    its metadata, ``messages`` the metadata once and then the message so far."""
    mid = ctx.streaming
    if ev.event != "model_text_delta" or mid is None or mid in ctx.whole:
        return []
    text = str(ev.data.get("text", ""))
    out: list[bytes] = []
    if "messages-tuple" in ctx.modes:
        out.append(sse("messages", [{"type": "AIMessageChunk", "content": text, "id": mid,
                                     "tool_calls": [], "tool_call_chunks": [],
                                     "invalid_tool_calls": []}, ctx.meta("model")]))
    if "messages" in ctx.modes:
        if mid not in ctx.streamed:
            out.append(sse("messages/metadata", {mid: {"metadata": ctx.meta("model")}}))
        so_far = ctx.streamed.get(mid, "") + text
        out.append(sse("messages/partial", [{"type": "ai", "content": so_far, "id": mid,
                                             "tool_calls": [], "invalid_tool_calls": []}]))
    ctx.streamed[mid] = ctx.streamed.get(mid, "") + text
    return out


def _whole_message(ctx: StreamContext, m: dict[str, Any], node: str) -> list[bytes]:
    """A stored message in the ``messages`` modes. A model message whose text streamed is not
    sent again in ``messages-tuple`` (the client has joined the chunks): only its tool calls
    follow, as one more chunk."""
    out: list[bytes] = []
    if m.get("type") == "ai" and m["id"] not in ctx.streamed:
        ctx.whole.add(m["id"])
    if "messages-tuple" in ctx.modes:
        if m["id"] not in ctx.streamed:
            out.append(sse("messages", [m, ctx.meta(node)]))
        elif m.get("tool_calls"):
            out.append(sse("messages", [{
                "type": "AIMessageChunk", "content": "", "id": m["id"],
                "tool_calls": m["tool_calls"], "invalid_tool_calls": [],
                "tool_call_chunks": [{"name": c["name"], "args": json.dumps(c["args"]),
                                      "id": c["id"], "index": i, "type": "tool_call_chunk"}
                                     for i, c in enumerate(m["tool_calls"])]},
                ctx.meta(node)]))
    if "messages" in ctx.modes:
        if m["id"] not in ctx.streamed:
            out.append(sse("messages/metadata", {m["id"]: {"metadata": ctx.meta(node)}}))
        out.append(sse("messages/complete", [m]))
    return out


def _snapshot(ctx: StreamContext, state: ThreadState, *, last: bool) -> list[bytes]:
    """``updates`` for messages added since the last snapshot (and pending interrupts at the
    end), ``values`` for the whole state, and the closing ``events``."""
    out: list[bytes] = []
    new = list(enumerate(state.messages))[ctx.seen_messages:]
    ctx.seen_messages = len(state.messages)
    for i, m in new:
        node = {"assistant": "model", "tool": GRAPH_NODE}.get(m.role)
        if node is None:
            continue
        as_json = message_json(state.thread_id, i, m)
        if "updates" in ctx.modes:
            out.append(sse("updates", {node: {"messages": [as_json]}}))
        out += _whole_message(ctx, as_json, node)
    if (last and {"updates", "events"} & set(ctx.modes)) or \
            ("values" in ctx.modes and (new or last)):
        ctx.shows(state)  # the events below show its pending requests
    if "updates" in ctx.modes:
        entries = shown(state, ctx.fmt)
        if last and entries:
            out.append(sse("updates", {"__interrupt__": [p.to_json() for p in entries]}))
    if "values" in ctx.modes and (new or last):
        out += ctx.values(state)
    if last and "events" in ctx.modes:
        out.append(ctx.event("on_chain_end", "LangGraph",
                             {"output": values_json(state, ctx.fmt)}))
    return out


def subscribe(state: ServerState, thread_id: str) -> Subscription:
    """Subscribe to the thread's hub topic from now on (before the run is launched)."""
    return state.hub.subscribe(thread_topic(thread_id), after=state.hub.last_id())

