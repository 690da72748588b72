"""What a thread was about and how it ended, kept on the thread row for listings.

The inbox titles a finished thread by the user's request (``preview``) and shows the latest
decision and the outcome next to it, so that a list of completed threads says more than
"completed". Both are derived from what a commit stores, so every surface sees the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import AssistantMessage, Message, ToolMessage, UserMessage

SUMMARY_CHARS = 160

_VERBS = {"approve": "approved", "edit": "edited", "reject": "rejected",
          "respond": "responded to"}


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _decision_line(kind: str, actor: str, data: dict[str, Any]) -> str | None:
    name = str(data.get("name", ""))
    if kind == "decision":
        verb = _VERBS.get(str(data.get("type")), str(data.get("type")))
        edited = data.get("edited_action")
        if isinstance(edited, dict) and edited.get("name") not in (None, name):
            name = f"{name} → {edited['name']}"
        return f"{verb} {name} ({actor})"
    if kind == "approval_recorded":
        return (f"approved {name} ({actor}), {data.get('approvals')} of "
                f"{data.get('required')} approvals")
    if kind == "escalated":
        return f"escalated to {', '.join(str(r) for r in data.get('roles') or [])}"
    if kind == "auto_approved":
        return f"auto-approved {name} (remembered approval)"
    if kind == "expired":
        return f"{name} expired: nobody decided in time"
    if kind == "cancelled":
        return f"cancelled the pending calls ({actor})"
    if kind == "input_answered":
        return f"answered the question ({actor})"
    return None


def summary_updates(
    *, last_decision: str, outcome: str, status: str, error: str | None,
    messages: Sequence[Message], audit: Sequence[tuple[str, str, str | None, dict[str, Any]]],
    last: Message | None = None,
) -> dict[str, str]:
    """The ``last_decision`` / ``outcome`` fields after a commit of ``messages`` and ``audit``
    that leaves the thread in ``status``; only the fields that change. ``last``: the thread's
    last message after the commit (a run stored as completed whose last message is a tool
    result ended with a ``return_direct`` tool's answer, as :func:`~interlock.result.
    final_output` reads it)."""
    new_decision, new_outcome = last_decision, outcome
    for kind, actor, _call, data in audit:
        line = _decision_line(kind, actor, data)
        if line is not None:
            new_decision = line
        if kind == "cancelled":
            reason = data.get("reason")
            new_outcome = f"cancelled: {reason}" if reason else "cancelled by a reviewer"
    for m in messages:
        if isinstance(m, UserMessage):
            new_outcome = ""
        elif isinstance(m, AssistantMessage) and not m.tool_calls and m.content.strip():
            new_outcome = _short(m.content)
    if status == "completed" and isinstance(last, ToolMessage):
        new_outcome = _short(last.content)
    if status == "failed" and error:
        new_outcome = _short(f"failed: {error}")
    updates: dict[str, str] = {}
    if new_decision != last_decision:
        updates["last_decision"] = new_decision
    if new_outcome != outcome:
        updates["outcome"] = new_outcome
    return updates
