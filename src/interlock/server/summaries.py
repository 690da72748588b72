"""The list rows of the HTTP API and the inbox (a thread and its pending requests, as the
list and the live updates show them), built from stored records. Apart from the views of
:mod:`.views`, so that the watcher, which announces every change with its row, needs nothing
of ``Agent``."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from .. import display
from ..interrupts import Interrupt, PathStep
from ..review_request import read_request
from ..storage.base import ThreadRecord

PREVIEW_CHARS = 160

ThreadStatusName = Literal["idle", "running", "interrupted", "completed", "failed"]


class CallSummary(BaseModel):
    tool_call_id: str
    name: str
    args_preview: str
    args_summary: str = Field(default="", description="The arguments for a list row, as a "
                              "reader would write them: `name: value` pairs, text as text "
                              "(one line), other values as JSON; cut like args_preview.")
    allowed_decisions: list[str]
    reviewers: list[str] | None = None
    expires_at: datetime | None = None
    reason: str | None = None
    risk: str = Field(default="", description="The policy's word on this call (its "
                      "``description``, e.g. \"Would delete 24 of 400 rows\"), one line, cut "
                      "like args_preview; empty where the description is the default one "
                      "(a prefix, the tool and its arguments), which says nothing of the risk.")
    display_warnings: list[str] = Field(
        default_factory=list,
        description="What the call's name, description and arguments hide (invisible or "
        "control characters, mixed-script words, padding); empty when nothing.")
    path: list[PathStep] | None = Field(
        default=None, description="For a call raised inside a sub-agent: the steps from this "
        "thread to the call (docs/subagents.md); null for this thread's own calls.")


class PendingSummary(BaseModel):
    interrupt_id: str
    kind: Literal["review", "input"]
    created_at: datetime
    calls: list[CallSummary] = Field(default_factory=list)
    question: str | None = None
    """Preview of an ``interrupt()`` question."""
    tool_call_id: str | None = None
    path: list[PathStep] | None = Field(
        default=None, description="For a request raised inside a sub-agent: the steps from "
        "this thread to the thread that raised it; null for this thread's own requests.")


class ThreadSummary(BaseModel):
    thread_id: str
    status: ThreadStatusName
    version: int
    preview: str
    created_at: datetime
    updated_at: datetime
    error: str | None = None
    last_decision: str = Field(default="", description="The latest decision, e.g. "
                               "'approved execute_sql (alice)'.")
    outcome: str = Field(default="", description="How the latest run ended: the start of "
                         "the final answer, a cancellation or the error.")
    pending: list[PendingSummary]
    parent_thread_id: str | None = Field(
        default=None, description="Set on a sub-agent's thread: the thread whose call runs "
        "it. Its requests are shown and decided there (docs/subagents.md).")


def _summary(args: dict[str, Any]) -> str:
    """``to: ann@example.com · subject: Your order`` (text as it is, the rest as JSON; the
    inbox shows line breaks and hidden characters in it visibly, as in every row)."""
    parts = [f"{k}: " + (v if isinstance(v, str) else
                         json.dumps(v, ensure_ascii=False, default=str))
             for k, v in args.items()]
    return _cut(" · ".join(parts))


def _risk(name: str, description: str, args: dict[str, Any]) -> str:
    """What the policy says of the call, on one line; nothing for the default description,
    which only repeats the tool and its arguments after a prefix (hitl.default_description;
    recognised by :func:`~interlock.display.default_part`, never by a marker a model wrote)."""
    if display.default_part(description, name, args) >= 0:
        return ""
    return _cut(" ".join(description.split()))


def _preview(value: Any) -> str:
    return _cut(value if isinstance(value, str) else
                json.dumps(value, ensure_ascii=False, default=str))


def _cut(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


# The summaries are built from stored records, which were validated when they were read:
# model_construct skips validating every field again (a list page builds 150 of these).


def pending_summary(intr: Interrupt) -> PendingSummary:
    if intr.kind == "review":
        calls = [
            CallSummary.model_construct(
                tool_call_id=a.tool_call_id, name=a.name, args_preview=_preview(a.args),
                args_summary=_summary(a.args),
                allowed_decisions=list(c.allowed_decisions), reviewers=c.reviewers,
                expires_at=c.expires_at, reason=a.reason, risk=_risk(a.name, a.description,
                                                                   a.args),
                display_warnings=display.warnings(display.inspect(
                    display.call_texts(a.name, a.description, a.args))),
                path=a.path)
            for a, c in read_request(intr.value).pairs()
        ]
        return PendingSummary.model_construct(
            interrupt_id=intr.id, kind="review", created_at=intr.created_at, calls=calls,
            question=None, tool_call_id=None, path=intr.path)
    return PendingSummary.model_construct(
        interrupt_id=intr.id, kind="input", created_at=intr.created_at, calls=[],
        question=_preview(intr.value), tool_call_id=intr.tool_call_id, path=intr.path)


def thread_summary(rec: ThreadRecord) -> ThreadSummary:
    return ThreadSummary.model_construct(
        thread_id=rec.thread_id, status=rec.status, version=rec.version, preview=rec.preview,
        created_at=rec.created_at, updated_at=rec.updated_at, error=rec.error,
        last_decision=rec.last_decision, outcome=rec.outcome,
        pending=[pending_summary(i) for i in rec.pending],
        parent_thread_id=rec.parent.thread_id if rec.parent is not None else None,
    )
