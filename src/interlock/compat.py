"""LangChain / LangGraph names for interlock's pieces, so LangChain agent code runs with its
imports changed (see docs/from-langchain.md)::

    from interlock.compat import Command, HumanInTheLoopMiddleware, InMemorySaver, create_agent

``create_agent(model=..., tools=[...], middleware=[...], checkpointer=...)`` builds an
:class:`~interlock.Agent` and returns it wrapped in :class:`LangGraphStyleAgent`, whose
``invoke(input, config={"configurable": {"thread_id": ...}}, version="v1" | "v2")`` answers
in LangGraph's shapes: a state dict with ``"__interrupt__"`` (v1) or a :class:`GraphOutput`
with ``.value`` and ``.interrupts`` (v2); interrupt values are plain JSON dicts. ``stream`` /
``astream`` yield LangGraph's ``updates``, ``values`` and ``messages`` chunks, ``get_state`` /
``aget_state`` a :class:`StateSnapshot`. The wrapped agent is ``.agent`` for everything else
(``resume``, ``get_thread``, ``cancel``, the server).

When langchain-core is installed, messages come out as LangChain message objects
(``AIMessage``, ``HumanMessage``, ...) and LangChain messages are accepted as input; without it
they are interlock's own messages. The other names are interlock's own classes.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._sync import iterate_blocking
from .agent import Agent, Command, ThreadState
from .errors import ConfigurationError, ThreadNotFound
from .events import InterruptRaised, ModelTextDelta, RunCompleted
from .hitl import HumanInTheLoop
from .interrupts import Interrupt
from .messages import Message
from .result import RunResult
from .review_request import read_request
from .storage.base import Checkpointer
from .storage.memory import MemoryCheckpointer

HumanInTheLoopMiddleware = HumanInTheLoop
InMemorySaver = MemoryCheckpointer

__all__ = ["Command", "GraphOutput", "HumanInTheLoopMiddleware", "InMemorySaver",
           "LangGraphStyleAgent", "StateSnapshot", "create_agent"]

Version = Literal["v1", "v2"]


@dataclass(frozen=True)
class GraphOutput:
    """What LangGraph's ``invoke(..., version="v2")`` returns: the state and the interrupts."""

    value: dict[str, Any]
    interrupts: tuple[Interrupt, ...] = field(default_factory=tuple)


def _target(config: Mapping[str, Any] | None, thread_id: str | None, version: str) -> str:
    """The thread of an ``invoke`` call (LangGraph's ``config`` or ``thread_id=``)."""
    if version not in ("v1", "v2"):
        raise ConfigurationError(f"version={version!r}: use 'v1' or 'v2'.")
    if thread_id is not None:
        return thread_id
    configurable = (config or {}).get("configurable") or {}
    tid = configurable.get("thread_id")
    if not isinstance(tid, str) or not tid:
        raise ConfigurationError(
            "invoke() needs a thread: pass config={'configurable': {'thread_id': 'some_id'}} "
            "(or thread_id='some_id')."
        )
    return tid


def _json_interrupt(i: Interrupt) -> Interrupt:
    """The interrupt as LangGraph code reads it: its value as plain JSON; a request of
    ``interrupt_mode="per_call"`` as LangChain's ``ToolApprovalRequest`` (``{"type":
    "tool_approval", "tool_call_id", "name", "args", "description"}``), answered, as there,
    with one decision keyed by the interrupt's id."""
    if i.kind == "review" and i.origin == "per_call" and len(
            calls := read_request(i.value).calls()) == 1:
        action = calls[0].request
        return i.model_copy(update={"value": {
            "type": "tool_approval", "tool_call_id": action.tool_call_id, "name": action.name,
            "args": action.args, "description": action.description or ""}})
    value = i.value
    if hasattr(value, "to_json"):
        value = value.to_json()
    return i.model_copy(update={"value": value})


def _langchain() -> bool:
    return importlib.util.find_spec("langchain_core") is not None


def _messages_out(messages: Sequence[Message]) -> list[Any]:
    """LangChain messages when langchain-core is installed, else interlock's."""
    if not _langchain():
        return list(messages)
    from .integrations.langchain import to_langchain

    return list(to_langchain(messages))


def _input(value: Any) -> Any:
    """LangChain message objects in the input, as the plain messages the agent takes."""
    if not _langchain() or not isinstance(value, Mapping) or "messages" not in value:
        return value
    from langchain_core.messages import BaseMessage

    from .integrations.langchain import from_langchain

    items = value["messages"]
    items = [items] if isinstance(items, BaseMessage) else items
    if not isinstance(items, list) or not any(isinstance(m, BaseMessage) for m in items):
        return value
    return {**value, "messages": [
        from_langchain([m])[0].model_dump() if isinstance(m, BaseMessage) else m
        for m in items]}


def _shape(result: RunResult, version: Version) -> dict[str, Any] | GraphOutput:
    interrupts = tuple(_json_interrupt(i) for i in result.interrupts)
    state: dict[str, Any] = {"messages": _messages_out(result.messages)}
    if version == "v2":
        return GraphOutput(value=state, interrupts=interrupts)
    if interrupts:
        state["__interrupt__"] = list(interrupts)
    return state


@dataclass(frozen=True)
class StateSnapshot:
    """What LangGraph's ``get_state(config)`` returns, for an interlock thread: ``values``
    (``messages``, and ``__interrupt__`` while calls are pending), ``next`` (``("tools",)``
    while paused), ``interrupts`` and ``config``."""

    values: dict[str, Any]
    next: tuple[str, ...]
    config: dict[str, Any]
    interrupts: tuple[Interrupt, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str | None = None


StreamMode = Literal["values", "updates", "messages", "custom"]
STREAM_MODES = ("values", "updates", "messages", "custom")


def _snapshot(state: ThreadState, config: Mapping[str, Any] | None) -> StateSnapshot:
    interrupts = tuple(_json_interrupt(i) for i in state.interrupts)
    values: dict[str, Any] = {"messages": _messages_out(state.messages)}
    if interrupts:
        values["__interrupt__"] = list(interrupts)
    return StateSnapshot(values=values, next=("tools",) if interrupts else (),
                         config=dict(config or {"configurable": {"thread_id": state.thread_id}}),
                         interrupts=interrupts, metadata={"step": state.version},
                         created_at=state.updated_at.isoformat())


def _modes(stream_mode: str | Sequence[str] | None) -> tuple[tuple[str, ...], bool]:
    """The modes asked for, and whether chunks are ``(mode, chunk)`` pairs (a list given)."""
    modes = ("values",) if stream_mode is None else (
        (stream_mode,) if isinstance(stream_mode, str) else tuple(stream_mode))
    bad = [m for m in modes if m not in STREAM_MODES]
    if bad or not modes:
        raise ConfigurationError(
            f"stream_mode {bad or list(modes)!r} is not supported by interlock.compat; use any "
            f"of {', '.join(STREAM_MODES)} (for interlock's own typed events, iterate "
            f"agent.agent.stream(...)).")
    return modes, not isinstance(stream_mode, str) and stream_mode is not None


def _token(text: str, tid: str) -> Any:
    meta = {"langgraph_node": "model", "thread_id": tid}
    if not _langchain():
        return (text, meta)
    from langchain_core.messages import AIMessageChunk

    return (AIMessageChunk(content=text), meta)


class LangGraphStyleAgent:
    """An :class:`~interlock.Agent` answering ``invoke`` / ``ainvoke`` / ``stream`` /
    ``get_state`` in LangGraph's shapes."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def __repr__(self) -> str:
        return f"LangGraphStyleAgent({self.agent!r})"

    async def ainvoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        version: Version = "v1",
        thread_id: str | None = None,
    ) -> dict[str, Any] | GraphOutput:
        tid = _target(config, thread_id, version)
        return _shape(await self.agent.ainvoke(_input(input), thread_id=tid), version)

    def invoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        version: Version = "v1",
        thread_id: str | None = None,
    ) -> dict[str, Any] | GraphOutput:
        """Run until the answer or a pause (``input`` may be ``Command(resume=...)``)."""
        tid = _target(config, thread_id, version)
        return _shape(self.agent.invoke(_input(input), thread_id=tid), version)

    async def astream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        thread_id: str | None = None,
    ) -> AsyncIterator[Any]:
        """LangGraph's ``stream``: ``updates`` (``{"model": {"messages": [...]}}``,
        ``{"tools": ...}``, ``{"__interrupt__": (...)}``), ``values`` (the whole state after
        each step), ``messages`` (``(token, metadata)`` as the model's text streams). One mode
        yields its chunks; a list of modes yields ``(mode, chunk)`` pairs. ``custom`` is
        accepted and yields nothing (interlock's tools do not emit custom events)."""
        tid = _target(config, thread_id, "v1")
        modes, pairs = _modes(stream_mode)
        agent = self.agent
        try:
            seen = len((await agent.aget_thread(tid)).messages)
        except ThreadNotFound:  # a new thread
            seen = 0

        def out(mode: str, chunk: Any) -> Any:
            return (mode, chunk) if pairs else chunk

        streamed = False  # the model's text came as tokens (not sent again whole)

        async def steps(state: ThreadState) -> AsyncIterator[Any]:
            nonlocal seen, streamed
            new = state.messages[seen:]
            seen = len(state.messages)
            for m, lc in zip(new, _messages_out(new), strict=True):
                node = {"assistant": "model", "tool": "tools"}.get(m.role)
                if node is None:
                    continue
                if "updates" in modes:
                    yield out("updates", {node: {"messages": [lc]}})
                if "messages" in modes and not (node == "model" and streamed):
                    yield out("messages", (lc, {"langgraph_node": node, "thread_id": tid}))
                streamed = streamed and node != "model"
            if "values" in modes and new:
                yield out("values", _snapshot(state, config).values)

        async for event in agent.astream(_input(input), thread_id=tid):
            if isinstance(event, ModelTextDelta):
                streamed = True
                if "messages" in modes:
                    yield out("messages", _token(event.text, tid))
                continue
            if isinstance(event, InterruptRaised | RunCompleted):
                state = await agent.aget_thread(tid)
                async for chunk in steps(state):
                    yield chunk
                if isinstance(event, RunCompleted) and state.interrupts and "updates" in modes:
                    yield out("updates", {"__interrupt__": tuple(
                        _json_interrupt(i) for i in state.interrupts)})
            elif event.type == "tool_finished":
                async for chunk in steps(await agent.aget_thread(tid)):
                    yield chunk

    def stream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        thread_id: str | None = None,
    ) -> Iterator[Any]:
        """The blocking form of :meth:`astream`."""
        return iterate_blocking(self.astream(input, config, stream_mode=stream_mode,
                                             thread_id=thread_id), "stream")

    async def aget_state(self, config: Mapping[str, Any]) -> StateSnapshot:
        """LangGraph's ``get_state``: the thread's values, pending interrupts and ``next``."""
        tid = _target(config, None, "v1")
        return _snapshot(await self.agent.aget_thread(tid), config)

    def get_state(self, config: Mapping[str, Any]) -> StateSnapshot:
        tid = _target(config, None, "v1")
        return _snapshot(self.agent.get_thread(tid), config)

    def update_state(self, config: Mapping[str, Any], values: Any,
                     as_node: str | None = None) -> Any:
        """Not supported: interlock's state changes only through runs and decisions."""
        raise ConfigurationError(
            "update_state() is not supported by interlock: a thread's messages change only "
            "through runs and decisions. Resume pending calls with invoke(Command(resume=...), "
            "config), cancel them with agent.agent.cancel(thread_id), or start a new thread.")

    async def aupdate_state(self, config: Mapping[str, Any], values: Any,
                            as_node: str | None = None) -> Any:
        return self.update_state(config, values, as_node)

    def close(self) -> None:
        self.agent.close()


_UNSUPPORTED = ("response_format", "state_schema", "context_schema", "store",
                "interrupt_before", "interrupt_after", "cache")


def create_agent(
    model: Any,
    tools: Sequence[Any] | None = None,
    *,
    system_prompt: str | None = None,
    middleware: Sequence[object] = (),
    checkpointer: Checkpointer | None = None,
    name: str | None = None,
    debug: bool = False,
    **unsupported: Any,
) -> LangGraphStyleAgent:
    """LangChain's ``create_agent`` on interlock: the same arguments for model, tools, system
    prompt, middleware (``HumanInTheLoopMiddleware``) and checkpointer."""
    given = sorted(k for k, v in unsupported.items() if v is not None)
    if given:
        known = [k for k in given if k in _UNSUPPORTED]
        raise ConfigurationError(
            f"create_agent({', '.join(given)}=...) is not supported by interlock"
            + (" (LangGraph features without an interlock counterpart)" if known else "")
            + "; see docs/from-langchain.md."
        )
    if _langchain():
        from .integrations.langchain import to_langchain

        for mw in middleware:  # LangChain-style callables read LangChain messages, as there
            if isinstance(mw, HumanInTheLoop) and mw.state_messages is None:
                mw.state_messages = to_langchain
    agent = Agent(model=model, tools=list(tools or ()), middleware=middleware,
                  checkpointer=checkpointer, system_prompt=system_prompt,
                  name=name or "agent")
    return LangGraphStyleAgent(agent)
