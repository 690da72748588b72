"""JSON shapes of the HTTP API (pydantic models, so the OpenAPI schema is useful) and the
functions that build them from stored records."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..agent import Agent, ThreadState
from ..audit.verify import AuditHead
from ..authz import Reviewer, ThreadFacts, may_post
from ..interrupts import Interrupt
from ..messages import Message
from ..review_request import read_request
from ..storage.base import (
    AuditRecord,
    JournalEntry,
    ParentLink,
    RememberedApproval,
    parent_chain,
)
from ..subagent_tree import tool_at
from ..text import check_input
from .summaries import PREVIEW_CHARS as PREVIEW_CHARS
from .summaries import CallSummary as CallSummary
from .summaries import PendingSummary as PendingSummary
from .summaries import ThreadStatusName as ThreadStatusName
from .summaries import ThreadSummary as ThreadSummary
from .summaries import pending_summary as pending_summary
from .summaries import thread_summary as thread_summary

# -- request bodies ---------------------------------------------------------------------------


class StartRun(BaseModel):
    """Start a run: a new thread, or a new user message on an existing one."""

    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, description="The user's message.")
    thread_id: str | None = Field(
        default=None, min_length=1,
        description="Thread to use; a new random id when omitted. A new id has "
        "1 to 128 characters: a letter or digit, then letters, digits and . _ : @ -",
    )

    @field_validator("thread_id")
    @classmethod
    def _valid_id(cls, value: str | None) -> str | None:
        if value is not None:  # an existing thread may be older than the rule: looked up only
            check_input(value, "thread_id")
        return value


class PostMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1)


class PostDecisions(BaseModel):
    """Decisions in the LangChain JSON shapes. Any ``reviewer`` field is ignored: the reviewer
    is the owner of the bearer token."""

    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra={
            "examples": [
                {"interrupt_id": "9f0c...", "decisions": [{"type": "approve"}]},
                {"decisions": {"call_1": {"type": "reject", "message": "not on Fridays"}}},
                {"decisions": [{"type": "edit", "edited_action": {
                    "name": "execute_sql", "args": {"query": "SELECT 1"}}}]},
            ]
        },
    )
    decisions: list[Any] | dict[str, Any] = Field(
        description="One decision per pending call in order, or {tool_call_id: decision} for "
        "any subset (the rest stay pending). A decision is {type: approve | edit | reject | "
        "respond, ...}; see the docs."
    )
    interrupt_id: str | None = Field(
        default=None, description="The request being answered; a stale id gives 409."
    )

    @model_validator(mode="before")
    @classmethod
    def _no_stray_keys(cls, data: Any) -> Any:
        # ``reviewer`` / ``actor`` are tolerated (and ignored: the token says who decides);
        # anything else is probably a typo that would otherwise be dropped silently
        if isinstance(data, dict):
            extra = [k for k in data
                     if k not in ("decisions", "interrupt_id", "reviewer", "actor")]
            if extra:
                raise ValueError(
                    f"unknown top-level key(s) {', '.join(repr(k) for k in extra)} next to "
                    f"'decisions': the body is {{\"decisions\": ..., \"interrupt_id\": ...}}; "
                    f"a message or edited arguments go inside a decision"
                )
        return data


class PostAnswer(BaseModel):
    """The answer to an ``interrupt(...)`` question raised inside a tool or hook."""

    model_config = ConfigDict(extra="ignore")
    value: Any = Field(description="Any JSON value; returned by interrupt(...) in the tool.")
    interrupt_id: str | None = None


class PostCancel(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reason: str | None = None


# -- responses --------------------------------------------------------------------------------


class ErrorBody(BaseModel):
    error: str = Field(description="Exception class name, e.g. InvalidDecision.")
    message: str = Field(description="What was wrong and how to fix it.")


class ThreadList(BaseModel):
    threads: list[ThreadSummary]
    next_before: datetime | None = Field(
        description="Pass as ?before= for the next (older) page; null on the last page."
    )
    next_before_id: str | None = Field(
        default=None, description="Pass as ?before_id= together with next_before.")
    total: int | None = Field(
        default=None, description="With ?count=true: how many threads match the filters "
        "(admins and local mode; null for other reviewers).")


class ToolInfo(BaseModel):
    name: str
    description: str
    args_schema: dict[str, Any]
    read_only: bool = Field(default=False, description="The tool declares it changes nothing.")


class ThreadDetail(BaseModel):
    thread_id: str
    status: ThreadStatusName
    version: int
    created_at: datetime
    updated_at: datetime
    preview: str
    error: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    messages: list[Message]
    interrupts: list[Interrupt] = Field(
        description="Pending requests; a review request's value is a HITLRequest."
    )
    remembered: list[RememberedApproval]
    calls: list[JournalEntry] = Field(description="Every tool call of the thread (journal).")
    history: list[AuditRecord] = Field(description="The thread's audit rows, oldest first.")
    history_truncated: bool = False
    tools: dict[str, ToolInfo] = Field(description="Tools named by the pending requests, by "
                                       "name (the first call of a name decides which tool a "
                                       "name stands for; see call_tools).")
    call_tools: dict[str, ToolInfo] = Field(
        default_factory=dict, description="The tool of each pending call, keyed "
        "'<interrupt id>:<tool call id>': a sub-agent's tool may share its name with the "
        "parent's or another sub-agent's and differ in description, schema and read_only.")
    may_post: bool = Field(default=True, description="Whether the caller may send this "
                           "thread a new message (interlock.authz.may_post: its creator and "
                           "admins); the inbox offers a follow-up message only then.")
    parent: ParentLink | None = Field(
        default=None, description="Set on a sub-agent's thread: the call of the parent thread "
        "that runs it (thread, call, tool, agent).")
    root_thread_id: str | None = Field(
        default=None, description="Set on a sub-agent's thread: the top-most thread, which "
        "shows this thread's requests with their path; decide them there (posting decisions "
        "here is a 409 SubAgentThread).")


class Accepted(BaseModel):
    """The input or decision is stored; the run continues in the background."""

    thread_id: str
    accepted: Literal[True] = True
    thread_url: str
    events_url: str = Field(description="SSE stream of this thread, starting at this run.")


class RunOutcome(BaseModel):
    """Returned instead of :class:`Accepted` with ``?wait=true``: how the run ended."""

    thread_id: str
    status: Literal["completed", "interrupted", "idle"] = Field(
        description="completed / interrupted for a run; idle after a cancel.")
    output: str | None
    interrupts: list[dict[str, Any]]
    messages: list[dict[str, Any]]


class AuditPage(BaseModel):
    records: list[AuditRecord]
    next_after_id: int | None = Field(description="Pass as ?after_id= for the next page.")


class AuditProblemOut(BaseModel):
    thread_id: str
    seq: int | None
    problem: str


class VerifyResult(BaseModel):
    ok: bool
    problems: list[AuditProblemOut]
    unchecked: list[str] = Field(
        default_factory=list, description="What could not be checked, and why (e.g. the "
        "server has no audit key, so row signatures were not checked).")


class VerifyAgainstHead(BaseModel):
    head: AuditHead = Field(description="A head from GET /api/audit/head or "
                                        "`interlock audit export-head`, kept elsewhere.")
    thread_id: str | None = None
    allow_unsigned: bool = False


class RememberedList(BaseModel):
    remembered: list[RememberedApproval]


class Revoked(BaseModel):
    revoked: bool


class Me(BaseModel):
    id: str
    roles: list[str]
    auth: bool = Field(description="False in local (loopback, no tokens) mode.")


class Health(BaseModel):
    ok: bool = Field(description="false (with status 503) when the store takes no writes")
    checkpointer: str
    writes: bool | None = Field(None, description="Whether the store takes writes now "
                                "(Postgres: reachable, not a standby, not read-only); null "
                                "for stores that cannot tell")
    write_error: str | None = Field(None, description="Why writes fail")
    live_updates: str = Field("", description="How other processes' changes reach this "
                              "server: change signals (LISTEN/NOTIFY) or polling, with the "
                              "interval")
    live_updates_error: str | None = Field(None, description="Why change signals cannot work "
                                           "here (polling is in use)")


# -- builders ---------------------------------------------------------------------------------


HISTORY_LIMIT = 2000


async def thread_detail(agent: Agent, state: ThreadState,
                        reviewer: Reviewer | None = None) -> ThreadDetail:
    calls = await agent.ajournal(state.thread_id)
    history = await agent.aaudit(state.thread_id, limit=HISTORY_LIMIT + 1)
    tools: dict[str, ToolInfo] = {}
    call_tools: dict[str, ToolInfo] = {}
    for intr in state.interrupts:
        if intr.kind == "review":
            for a in read_request(intr.value).action_requests:
                # a sub-agent's call: the tool of the agent its path leads to
                if (t := tool_at(agent, a.name, a.path)) is None:
                    continue
                info = ToolInfo(name=a.name, description=t.description,
                                args_schema=t.args_schema, read_only=t.read_only)
                call_tools[f"{intr.id}:{a.tool_call_id}"] = info
                tools.setdefault(a.name, info)
    root = None
    if state.parent is not None:
        chain = await parent_chain(agent.checkpointer, state.thread_id)
        root = chain[-1].thread_id if chain else state.parent.thread_id
    return ThreadDetail(
        thread_id=state.thread_id, status=state.status,
        version=state.version, created_at=state.created_at, updated_at=state.updated_at,
        preview=state.preview, error=state.error, metadata=state.metadata,
        messages=state.messages, interrupts=state.interrupts, remembered=state.remembered,
        calls=calls, history=history[:HISTORY_LIMIT],
        history_truncated=len(history) > HISTORY_LIMIT, tools=dict(sorted(tools.items())),
        call_tools=call_tools,
        may_post=may_post(reviewer, ThreadFacts(
            state.thread_id, created_by=state.created_by)) and state.parent is None,
        parent=state.parent, root_thread_id=root,
    )
