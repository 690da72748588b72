"""Texts the model sees for results a person or the system produced, and small helpers."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..interrupts import Interrupt
from ..review_request import HITLRequest
from .records import replaced

SYSTEM = "system"


def reject_text(name: str, call_id: str, message: str | None) -> str:
    text = (
        f"The user rejected the tool call `{name}` (id {call_id}). The tool was not executed. "
        f"Do not retry it unless the user asks."
    )
    if message:
        text += f" Reason: {message}"
    return text


def edit_notice(name: str, args: dict[str, Any], custom: str | None = None) -> str:
    """The note before the result of an edited call. ``custom`` (``HumanInTheLoop(
    edit_notice=...)``) is used as LangChain uses it: its sentence, what ran instead, then
    ``Tool response:``; ``""`` means no note."""
    if custom is not None:
        if not custom:
            return ""
        return (f"{custom} Executed instead: {name} with arguments "
                f"{json.dumps(args, ensure_ascii=False, default=str)}.\n\nTool response:\n")
    return (
        f"Note: a reviewer changed this tool call before it ran. Your original call is kept in "
        f"the conversation as you made it; what actually ran was `{name}` with arguments "
        f"{json.dumps(args, ensure_ascii=False)}. This change was intentional; do not repeat "
        f"your original call.\n\nTool result:\n"
    )


def cancel_text(name: str, call_id: str, reason: str | None) -> str:
    text = f"The tool call `{name}` (id {call_id}) was cancelled by a reviewer and did not run."
    return text + (f" Reason: {reason}" if reason else "")


def unknown_cancel_text(name: str, call_id: str, reason: str | None) -> str:
    """Result of a call whose outcome is unknown (its process stopped while it ran) when the
    thread is cancelled: it is not run again, and it may have taken effect."""
    text = (
        f"The tool call `{name}` (id {call_id}) was interrupted while it ran; its outcome is "
        f"unknown (it may or may not have taken effect). A reviewer cancelled the thread, so "
        f"it is not run again. Do not retry it unless the user asks."
    )
    return text + (f" Reason: {reason}" if reason else "")


def subagent_cancel_text(name: str, call_id: str, reason: str | None, *, thread: str) -> str:
    """Result of a sub-agent call (``Agent.as_tool``) cancelled after its sub-agent started:
    what the sub-agent did before (its own approved tool calls) may have taken effect."""
    text = (
        f"The sub-agent call `{name}` (id {call_id}) was cancelled by a reviewer before it "
        f"finished. The sub-agent had started (thread {thread}): tool calls it made before "
        f"may have taken effect. Do not repeat the task unless the user asks."
    )
    return text + (f" Reason: {reason}" if reason else "")


def expired_text(name: str, call_id: str) -> str:
    return (
        f"No reviewer decided in time on the tool call `{name}` (id {call_id}); it was "
        f"rejected and did not run."
    )


UNKNOWN_OUTCOME = ("outcome unknown: the process stopped while this call ran (or lost the thread: "
                   "it could not reach the store for longer than its lease)")


def unstorable_text(name: str, problem: str) -> str:
    """Result of a call that finished but whose return value cannot be stored."""
    return (
        f"The tool `{name}` finished, but its result could not be stored ({problem}). The call "
        f"ran once and is not repeated; its result is not available. Make the tool return "
        f"text, JSON-compatible data or a pydantic model."
    )


def unknown_reject_text(name: str, call_id: str, message: str | None) -> str:
    """Result of a call whose outcome is unknown and that a reviewer chose not to retry."""
    text = (
        f"The tool call `{name}` (id {call_id}) was interrupted while it ran; its outcome is "
        f"unknown (it may or may not have taken effect). A reviewer decided not to run it "
        f"again. Do not retry it unless the user asks."
    )
    return text + (f" Reason: {message}" if message else "")


RESULT_PREVIEW = 300
"""Characters of a tool result copied into its ``tool_finished`` audit row."""


def idempotency_key(thread_id: str, tool_call_id: str) -> str:
    return hashlib.sha256(f"{thread_id}\x00{tool_call_id}".encode()).hexdigest()[:32]


def public_interrupt(i: Interrupt) -> Interrupt:
    """Interrupt with a typed value (``HITLRequest`` for review interrupts)."""
    if i.kind == "review" and isinstance(i.value, dict):
        return replaced(i, {"value": HITLRequest.of(i.value)})
    return i
