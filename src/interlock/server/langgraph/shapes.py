"""interlock's threads in the JSON shapes of the LangGraph server API.

Pure functions from the core's public types (``ThreadState``, ``Interrupt``, ``HITLRequest``,
messages) to the objects ``langgraph-sdk`` and Agent Inbox read: assistants, threads, thread
states, interrupts and LangChain-style messages.

Pending tool calls are LangGraph interrupts in one of three formats chosen by the URL the client
uses:

* ``hitl`` (``/langgraph``): one interrupt (and one task) per pending call, with its own id:
  LangChain's HITL request with one action request,
  ``{"action_requests": [...], "review_configs": [...]}``;
* ``turn`` (``/langgraph/per-turn``): one interrupt per review request (by default one per
  turn), as LangChain's middleware makes it: its id is the request's id and its value lists
  every call of the turn, so ``interrupts[0].value.action_requests`` shows them all;
* ``inbox`` (``/langgraph/agent-inbox``): one interrupt per pending call, as Agent Inbox's
  ``HumanInterrupt``,
  ``{"action_request": {action, args}, "config": {allow_*}, "description": markdown}``.

A pending ``interrupt(...)`` question is one interrupt whose value is the question (``hitl``),
or a ``HumanInterrupt`` that only allows a text response (``inbox``).

The display policy (:mod:`interlock.display`) applies as on the other surfaces: every
interrupt carries ``display_warnings`` (what its texts hide, as the inbox's warning says it;
empty when nothing), and the Agent Inbox format, which its client renders, shows every text
that may come from a model with hidden characters escaped (``⟨U+202E⟩``) and the warning as
its description's first line. The ``hitl`` format is data (LangChain's shape, which a client
edits and sends back) and keeps the values as they are, as ``/api`` does.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from ... import display
from ...agent import Agent, ThreadState
from ...interrupts import Interrupt
from ...messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from ...review_request import ActionRequest, HITLRequest, ReviewConfig, read_request
from ...storage.base import metadata_contains
from ...subagent_tree import path_text

Format = Literal["hitl", "turn", "inbox"]
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
    return read_request(intr.value)


def pending_entries(state: ThreadState) -> list[Pending]:
    """Every pending call of the thread (in request order), then pending questions."""
    out: list[Pending] = []
    for intr in state.interrupts:
        if intr.kind == "review":
            for a, c in review_request(intr).pairs():
                out.append(Pending(_call_interrupt_id(intr.id, a.tool_call_id, c.revision),
                                   intr, a, c))
        else:
            out.append(Pending(intr.id, intr))
    return out


def _call_interrupt_id(interrupt_id: str, tool_call_id: str, revision: int) -> str:
    """The LangGraph interrupt id of one revision of a pending call: an edit gives the call a
    new id, so a response keyed by the id a client was shown is for that revision only."""
    key = f"{interrupt_id}\x00{tool_call_id}" + (f"\x00{revision}" if revision > 1 else "")
    return hashlib.sha256(key.encode()).hexdigest()[:32]


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


def warnings_of(p: Pending) -> list[str]:
    """What the texts of an interrupt hide (the inbox's warning), empty when nothing."""
    if p.action is None:
        return display.warnings(display.inspect(display.strings(jsonable(p.interrupt.value))))
    a = p.action
    return display.warnings(display.inspect(
        display.call_texts(a.name, a.description, jsonable(a.args), a.reason or "")))


def _shown(value: Any) -> Any:
    """A JSON value with the hidden characters of every string (keys too) escaped
    (``⟨U+202E⟩``). Nothing else changes (line breaks, blank lines and trailing blanks stay),
    since Agent Inbox edits these values in place and sends them back."""
    if isinstance(value, str):
        return display.escape_hidden(value)
    if isinstance(value, dict):
        return {display.escape_hidden(str(k)): _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def _warning_lines(found: list[str]) -> list[str]:
    return ["**⚠ Check this request closely:** " + " ".join(found), ""] if found else []


def inbox_description(action: ActionRequest, config: ReviewConfig,
                      found: list[str] | None = None) -> str:
    """Markdown for Agent Inbox. The tool name is the agent's own; every text that may come
    from the model (the policy's description, which may quote arguments, and the reason) is
    fenced and shown by the display policy, after the warning of what it hides."""
    # Agent Inbox's list rows show the first 65 characters as plain text: a first line that
    # reads the same raw and rendered (the tool name is the agent's own: letters, digits,
    # '_' and '-')
    lines = [f"Review a call of {display.one_line(action.name)}.", "",
             f"**interlock review: tool {_code(display.one_line(action.name))}** (call "
             f"{_code(display.one_line(action.tool_call_id))})", ""]
    lines += _warning_lines(found or [])
    if action.path:  # raised inside a sub-agent: the path from this thread to the call
        lines += ["Raised inside a sub-agent: "
                  + _code(display.one_line(path_text(action.path))), ""]
    lines += [_fence(display.visible(action.description)), ""]
    if action.reason:
        lines += ["Why this call pauses:", "", _fence(display.visible(action.reason)), ""]
    if config.revision > 1:
        lines.append(f"Revision {config.revision} of this call, edited by "
                     f"{_code(display.one_line(config.edited_by or '?'))}: approvals of "
                     f"earlier revisions do not count.")
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
            "action_request": {"action": "question", "args": {"question": _shown(question)}},
            "config": {"allow_accept": False, "allow_edit": False, "allow_respond": True,
                       "allow_ignore": False},
            "description": "The agent asks a question. Answer with a response.\n\n"
                           + "\n".join(_warning_lines(warnings_of(p)))
                           + (f"Raised inside a sub-agent: "
                              f"{_code(display.one_line(path_text(where)))}\n\n"
                              if where else "") + _fence(display.visible(text)),
        }
    if fmt == "hitl":
        return HITLRequest(action_requests=[p.action], review_configs=[p.config]).to_json()
    allowed = set(p.config.allowed_decisions)
    return {
        # hidden characters escaped (an edit sends back what the reviewer saw)
        "action_request": {"action": p.action.name, "args": _shown(jsonable(p.action.args))},
        "config": {
            "allow_accept": "approve" in allowed,
            "allow_edit": "edit" in allowed,
            "allow_respond": bool(allowed & {"respond", "reject"}),
            "allow_ignore": True,
        },
        "description": inbox_description(p.action, p.config, warnings_of(p)),
    }


def _const(kind: str, **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": ["type", *props],
            "properties": {"type": {"const": kind}, **props}}


def decision_schema(config: ReviewConfig) -> dict[str, Any]:
    """A JSON schema of one decision the call's policy allows (the core still validates an
    edit's arguments with the tool's own validators)."""
    args = config.args_schema or {"type": "object"}
    text = {"type": "string", "minLength": 1}
    shapes = {"approve": _const("approve"),
              "edit": _const("edit", edited_action={
                  "type": "object", "required": ["name", "args"],
                  "properties": {"name": {"type": "string"}, "args": args}}),
              "reject": {**_const("reject"), "properties": {
                  "type": {"const": "reject"}, "message": {"type": "string"}}},
              "respond": _const("respond", message=text)}
    return {"anyOf": [shapes[d] for d in config.allowed_decisions]}


def response_schema(configs: list[ReviewConfig], fmt: Format) -> dict[str, Any]:
    """A JSON schema of ``command.resume`` for one interrupt (LangGraph's
    ``Interrupt.response_schema``): ``{"decisions": [...]}`` with one decision per call in
    order, or (``inbox``) a one-item list of Agent Inbox ``HumanResponse`` objects."""
    if fmt == "inbox":
        c = configs[0]
        allowed = set(c.allowed_decisions)
        kinds = [k for k, ok in (("accept", "approve" in allowed), ("edit", "edit" in allowed),
                                 ("response", bool(allowed & {"respond", "reject"})),
                                 ("ignore", True)) if ok]
        return {"type": "array", "minItems": 1, "maxItems": 1, "items": {
            "type": "object", "required": ["type"],
            "properties": {"type": {"enum": kinds}, "args": {}}}}
    return {"type": "object", "required": ["decisions"], "properties": {"decisions": {
        "type": "array", "minItems": 1, "maxItems": len(configs),
        "prefixItems": [decision_schema(c) for c in configs], "items": False}}}


@dataclass(frozen=True)
class Shown:
    """One LangGraph interrupt as a client sees it: its id, its value and (for pending calls)
    a JSON schema of the resume that answers it."""

    lg_id: str
    value: Any
    warnings: list[str]
    """What the display policy found in it (bidi, invisible characters, ...)."""
    schema: dict[str, Any] | None = None

    @property
    def task_id(self) -> str:
        return derived_id("task", self.lg_id)

    def to_json(self) -> dict[str, Any]:
        out = {"value": self.value, "id": self.lg_id, "display_warnings": self.warnings}
        if self.schema is not None:
            out["response_schema"] = self.schema
        return out


def shown(state: ThreadState, fmt: Format) -> list[Shown]:
    """The thread's pending interrupts in ``fmt``: one per call, or (``turn``) one per review
    request listing its calls; each pending question is one."""
    entries = pending_entries(state)
    if fmt != "turn":
        return [Shown(p.lg_id, interrupt_value(p, fmt), warnings_of(p),
                      response_schema([p.config], fmt) if p.config is not None else None)
                for p in entries]
    out = []
    for i in state.interrupts:
        if i.kind != "review":
            out.append(Shown(i.id, jsonable(i.value), []))
            continue
        req = review_request(i)
        found = list(dict.fromkeys(w for p in entries if p.interrupt.id == i.id
                                   for w in warnings_of(p)))
        out.append(Shown(i.id, _shown(req.to_json()), found,
                         response_schema(list(req.review_configs), fmt)))
    return out


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
    entries = shown(state, fmt)
    if entries:
        values["__interrupt__"] = [p.to_json() for p in entries]
    return values


def status_of(state: ThreadState) -> LGStatus:
    return STATUS.get(state.status, "idle")


def thread_json(state: ThreadState, fmt: Format, assistant: AssistantInfo) -> dict[str, Any]:
    entries = shown(state, fmt)
    return {
        "thread_id": state.thread_id, "created_at": iso(state.created_at),
        "updated_at": iso(state.updated_at), "state_updated_at": iso(state.updated_at),
        "metadata": {**state.metadata, **assistant.metadata()}, "status": status_of(state),
        "config": {},
        "values": values_json(state, fmt),
        "interrupts": {p.task_id: [p.to_json()] for p in entries},
        "error": state.error,
    }


def metadata_matches(metadata: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    """LangGraph's metadata filter, as the stores decide it: ``metadata`` contains ``wanted``
    (``jsonb @>``: every key of ``wanted``, with a value that contains its value)."""
    return metadata_contains(metadata, wanted or {})


def new_thread_json(thread_id: str, created_at: datetime, assistant: AssistantInfo,
                    metadata: dict[str, Any]) -> dict[str, Any]:
    """A thread created through the API that has had no run yet."""
    return {
        "thread_id": thread_id, "created_at": iso(created_at), "updated_at": iso(created_at),
        "state_updated_at": iso(created_at), "metadata": {**metadata, **assistant.metadata()},
        "status": "idle", "config": {}, "values": None, "interrupts": {}, "error": None,
    }


def checkpoint_json(thread_id: str, version: int) -> dict[str, Any]:
    return {"thread_id": thread_id, "checkpoint_ns": "",
            "checkpoint_id": derived_id("checkpoint", thread_id, str(version)),
            "checkpoint_map": None}


def state_json(state: ThreadState, fmt: Format) -> dict[str, Any]:
    entries = shown(state, fmt)
    return {
        "values": values_json(state, fmt),
        "next": [GRAPH_NODE] if entries else [],
        "tasks": [{"id": p.task_id, "name": GRAPH_NODE, "error": None,
                   "interrupts": [p.to_json()], "checkpoint": None, "state": None,
                   "result": None} for p in entries],
        "interrupts": [p.to_json() for p in entries],
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
