"""interlock's threads in the JSON shapes of the LangGraph server API.

Pure functions from the core's public types (``ThreadState``, ``Interrupt``, ``HITLRequest``,
messages) to the objects ``langgraph-sdk`` and Agent Inbox read: assistants, threads, thread
states, interrupts and LangChain-style messages.

Every pending tool call is one LangGraph interrupt (and one task) with its own id, in one of two
formats chosen by the URL the client uses:

* ``hitl`` (``/langgraph``): LangChain's HITL request with one action request,
  ``{"action_requests": [...], "review_configs": [...]}``;
* ``inbox`` (``/langgraph/agent-inbox``): Agent Inbox's ``HumanInterrupt``,
  ``{"action_request": {action, args}, "config": {allow_*}, "description": markdown}``.

A pending ``interrupt(...)`` question is one interrupt whose value is the question (``hitl``),
or a ``HumanInterrupt`` that only allows a text response (``inbox``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from ...agent import Agent, ThreadState
from ...hitl import ActionRequest, HITLRequest, ReviewConfig
from ...interrupts import Interrupt
from ...messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from ...subagent_tree import path_text

Format = Literal["hitl", "inbox"]
LGStatus = Literal["idle", "busy", "interrupted", "error"]

_NS = uuid.UUID("0f4b5a52-3c1e-4a57-9a39-6b1f3f0c7e21")  # interlock's namespace for derived ids
GRAPH_NODE = "tools"
"""The node name reported for pending calls and tool activity."""

# interlock thread status -> LangGraph thread status
STATUS: dict[str, LGStatus] = {
    "idle": "idle", "completed": "idle", "running": "busy", "interrupted": "interrupted",
    "failed": "error",
}
# LangGraph thread status -> the interlock statuses it covers
STATUSES_FOR: dict[str, tuple[str, ...]] = {
    "idle": ("idle", "completed"), "busy": ("running",), "interrupted": ("interrupted",),
    "error": ("failed",),
}


def derived_id(*parts: str) -> str:
    """A stable UUID derived from ``parts`` (interrupt, task, message and checkpoint ids)."""
    return str(uuid.uuid5(_NS, "\x00".join(parts)))


def jsonable(value: Any) -> Any:
    return to_jsonable_python(value)


def iso(t: datetime) -> str:
    return t.isoformat()


# -- assistants -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AssistantInfo:
    """The one assistant that stands for the served agent."""

    assistant_id: str
    graph_id: str
    created_at: datetime

    @classmethod
    def of(cls, agent: Agent, created_at: datetime) -> AssistantInfo:
        return cls(derived_id("assistant", agent.name), agent.name, created_at)

    def matches(self, ref: str) -> bool:
        return ref in (self.assistant_id, self.graph_id)

    def metadata(self) -> dict[str, Any]:
        return {"graph_id": self.graph_id, "assistant_id": self.assistant_id}

    def to_json(self, agent: Agent) -> dict[str, Any]:
        tools = ", ".join(t.name for t in agent.tools) or "none"
        return {
            "assistant_id": self.assistant_id, "graph_id": self.graph_id, "name": self.graph_id,
            "description": f"interlock agent {agent.name!r} (tools: {tools})",
            "config": {}, "context": {}, "metadata": {"created_by": "system"}, "version": 1,
            "created_at": iso(self.created_at), "updated_at": iso(self.created_at),
        }


# -- pending calls as LangGraph interrupts -----------------------------------------------------


@dataclass(frozen=True)
class Pending:
    """One LangGraph interrupt: a pending review call, or a pending ``interrupt()`` question."""

    lg_id: str
    interrupt: Interrupt
    action: ActionRequest | None = None
    config: ReviewConfig | None = None

    @property
    def task_id(self) -> str:
        return derived_id("task", self.lg_id)


def review_request(intr: Interrupt) -> HITLRequest:
    value = intr.value
    return value if isinstance(value, HITLRequest) else HITLRequest.model_validate(value)


def pending_entries(state: ThreadState) -> list[Pending]:
    """Every pending call of the thread (in request order), then pending questions."""
    out: list[Pending] = []
    for intr in state.interrupts:
        if intr.kind == "review":
            req = review_request(intr)
            for a, c in zip(req.action_requests, req.review_configs, strict=True):
                out.append(Pending(_call_interrupt_id(intr.id, a.tool_call_id), intr, a, c))
        else:
            out.append(Pending(intr.id, intr))
    return out


def _call_interrupt_id(interrupt_id: str, tool_call_id: str) -> str:
    return hashlib.sha256(f"{interrupt_id}\x00{tool_call_id}".encode()).hexdigest()[:32]


def _ticks(text: str, least: int) -> str:
    """A run of backticks longer than any run inside ``text`` (and at least ``least``)."""
    run = longest = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(least, longest + 1)


def _fence(text: str) -> str:
    """``text`` as a fenced markdown block that nothing inside can close (so text from the
    model is shown literally: no links, images or HTML)."""
    fence = _ticks(text, 3)
    return f"{fence}text\n{text}\n{fence}"


def _code(text: str) -> str:
    """``text`` as inline code that nothing inside can close (one line)."""
    flat = " ".join(text.split())
    ticks = _ticks(flat, 1)
    return f"{ticks} {flat} {ticks}"


def inbox_description(action: ActionRequest, config: ReviewConfig) -> str:
    """Markdown for Agent Inbox. The tool name is the agent's own; every text that may come
    from the model (the policy's description, which may quote arguments, and the reason) is
    fenced."""
    lines = [f"**interlock review: tool {_code(action.name)}** (call "
             f"{_code(action.tool_call_id)})", ""]
    if action.path:  # raised inside a sub-agent: the path from this thread to the call
        lines += ["Raised inside a sub-agent: " + _code(path_text(action.path)), ""]
    lines += [_fence(action.description), ""]
    if action.reason:
        lines += ["Why this call pauses:", "", _fence(action.reason), ""]
    lines.append("Allowed decisions: " + ", ".join(config.allowed_decisions) + ".")
    if config.reviewers:
        lines.append("Only reviewers holding one of these roles may decide: "
                     + ", ".join(_code(r) for r in config.reviewers) + ".")
    if config.expires_at is not None:
        lines.append(f"Decide before {iso(config.expires_at)}; after that it is rejected.")
    return "\n".join(lines)


def interrupt_value(p: Pending, fmt: Format) -> Any:
    if p.action is None or p.config is None:
        question = jsonable(p.interrupt.value)
        if fmt == "hitl":
            return question
        text = question if isinstance(question, str) else json.dumps(question, ensure_ascii=False)
        where = p.interrupt.path
        return {
            "action_request": {"action": "question", "args": {"question": question}},
            "config": {"allow_accept": False, "allow_edit": False, "allow_respond": True,
                       "allow_ignore": False},
            "description": "**The agent asks a question.** Answer with a response.\n\n"
                           + (f"Raised inside a sub-agent: {_code(path_text(where))}\n\n"
                              if where else "") + _fence(text),
        }
    if fmt == "hitl":
        return HITLRequest(action_requests=[p.action], review_configs=[p.config]).to_json()
    allowed = set(p.config.allowed_decisions)
    return {
        "action_request": {"action": p.action.name, "args": jsonable(p.action.args)},
        "config": {
            "allow_accept": "approve" in allowed,
            "allow_edit": "edit" in allowed,
            "allow_respond": bool(allowed & {"respond", "reject"}),
            "allow_ignore": True,
        },
        "description": inbox_description(p.action, p.config),
    }


def interrupt_json(p: Pending, fmt: Format) -> dict[str, Any]:
    return {"value": interrupt_value(p, fmt), "id": p.lg_id}


# -- messages, values, threads, states ---------------------------------------------------------


def message_json(thread_id: str, index: int, m: Message) -> dict[str, Any]:
    """A message in LangChain's serialised form (``type``: human / ai / tool / system)."""
    mid = derived_id("message", thread_id, str(index))
    if isinstance(m, UserMessage):
        return {"type": "human", "content": m.content, "id": mid}
    if isinstance(m, SystemMessage):
        return {"type": "system", "content": m.content, "id": mid}
    if isinstance(m, AssistantMessage):
        return {"type": "ai", "content": m.content, "id": mid, "invalid_tool_calls": [],
                "tool_calls": [{"name": c.name, "args": jsonable(c.args), "id": c.id,
                                "type": "tool_call"} for c in m.tool_calls]}
    assert isinstance(m, ToolMessage)
    return {"type": "tool", "content": m.content, "id": mid, "tool_call_id": m.tool_call_id,
            "name": m.name, "status": m.status}


def values_json(state: ThreadState, fmt: Format) -> dict[str, Any]:
    """The thread's values: ``messages``, plus ``__interrupt__`` while calls are pending."""
    values: dict[str, Any] = {
        "messages": [message_json(state.thread_id, i, m) for i, m in enumerate(state.messages)]
    }
    entries = pending_entries(state)
    if entries:
        values["__interrupt__"] = [interrupt_json(p, fmt) for p in entries]
    return values


def status_of(state: ThreadState) -> LGStatus:
    return STATUS.get(state.status, "idle")


def thread_json(state: ThreadState, fmt: Format, assistant: AssistantInfo) -> dict[str, Any]:
    entries = pending_entries(state)
    return {
        "thread_id": state.thread_id, "created_at": iso(state.created_at),
        "updated_at": iso(state.updated_at), "state_updated_at": iso(state.updated_at),
        "metadata": assistant.metadata(), "status": status_of(state), "config": {},
        "values": values_json(state, fmt),
        "interrupts": {p.task_id: [interrupt_json(p, fmt)] for p in entries},
        "error": state.error,
    }


def new_thread_json(thread_id: str, created_at: datetime,
                    assistant: AssistantInfo) -> dict[str, Any]:
    """A thread created through the API that has had no run yet."""
    return {
        "thread_id": thread_id, "created_at": iso(created_at), "updated_at": iso(created_at),
        "state_updated_at": iso(created_at), "metadata": assistant.metadata(),
        "status": "idle", "config": {}, "values": None, "interrupts": {}, "error": None,
    }


def checkpoint_json(thread_id: str, version: int) -> dict[str, Any]:
    return {"thread_id": thread_id, "checkpoint_ns": "",
            "checkpoint_id": derived_id("checkpoint", thread_id, str(version)),
            "checkpoint_map": None}


def state_json(state: ThreadState, fmt: Format) -> dict[str, Any]:
    entries = pending_entries(state)
    return {
        "values": values_json(state, fmt),
        "next": [GRAPH_NODE] if entries else [],
        "tasks": [{"id": p.task_id, "name": GRAPH_NODE, "error": None,
                   "interrupts": [interrupt_json(p, fmt)], "checkpoint": None, "state": None,
                   "result": None} for p in entries],
        "interrupts": [interrupt_json(p, fmt) for p in entries],
        "checkpoint": checkpoint_json(state.thread_id, state.version),
        "parent_checkpoint": (checkpoint_json(state.thread_id, state.version - 1)
                              if state.version > 1 else None),
        "metadata": {"step": state.version, "source": "loop"},
        "created_at": iso(state.updated_at),
    }


def empty_state_json(thread_id: str, created_at: datetime) -> dict[str, Any]:
    return {"values": {}, "next": [], "tasks": [], "interrupts": [],
            "checkpoint": checkpoint_json(thread_id, 0), "parent_checkpoint": None,
            "metadata": {}, "created_at": iso(created_at)}
