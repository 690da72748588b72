"""LangChain / LangGraph names for interlock's pieces, so LangChain agent code runs with its
imports changed (see docs/from-langchain.md)::

    from interlock.compat import Command, HumanInTheLoopMiddleware, InMemorySaver, create_agent

``create_agent(model=..., tools=[...], middleware=[...], checkpointer=...)`` builds an
:class:`~interlock.Agent` and returns it wrapped in :class:`LangGraphStyleAgent`, whose
``invoke(input, config={"configurable": {"thread_id": ...}}, version="v1" | "v2")`` answers
in LangGraph's shapes: a state dict with ``"__interrupt__"`` (v1) or a :class:`GraphOutput`
with ``.value`` and ``.interrupts`` (v2); interrupt values are plain JSON dicts. The wrapped
agent is ``.agent`` for everything else (``resume``, ``get_thread``, ``cancel``, the server).

Nothing here imports LangChain: the names are interlock's own classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .agent import Agent, Command
from .errors import ConfigurationError
from .hitl import HumanInTheLoop
from .interrupts import Interrupt
from .result import RunResult
from .storage.base import Checkpointer
from .storage.memory import MemoryCheckpointer

HumanInTheLoopMiddleware = HumanInTheLoop
InMemorySaver = MemoryCheckpointer

__all__ = ["Command", "GraphOutput", "HumanInTheLoopMiddleware", "InMemorySaver",
           "LangGraphStyleAgent", "create_agent"]

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
    value = i.value
    if hasattr(value, "to_json"):
        value = value.to_json()
    return i.model_copy(update={"value": value})


def _shape(result: RunResult, version: Version) -> dict[str, Any] | GraphOutput:
    interrupts = tuple(_json_interrupt(i) for i in result.interrupts)
    state: dict[str, Any] = {"messages": list(result.messages)}
    if version == "v2":
        return GraphOutput(value=state, interrupts=interrupts)
    if interrupts:
        state["__interrupt__"] = list(interrupts)
    return state


class LangGraphStyleAgent:
    """An :class:`~interlock.Agent` answering ``invoke`` / ``ainvoke`` in LangGraph's shapes."""

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
        return _shape(await self.agent.ainvoke(input, thread_id=tid), version)

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
        return _shape(self.agent.invoke(input, thread_id=tid), version)

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
    agent = Agent(model=model, tools=list(tools or ()), middleware=middleware,
                  checkpointer=checkpointer, system_prompt=system_prompt,
                  name=name or "agent")
    return LangGraphStyleAgent(agent)
