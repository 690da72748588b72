"""The two kinds of pause, staged on a run's transaction: a review request for tool calls
(:func:`raise_review`, narrowed by :func:`replace_review` as calls are decided) and a question
from ``interrupt()`` (:func:`raise_question`); :func:`show` stages a sub-agent's requests on its
parent. Each stages the new pending list with its audit row, and announces the new interrupt
once the change is stored."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ..audit.records import AuditKind, digest
from ..events import InterruptRaised
from ..interrupts import Interrupt
from ..review_request import PendingCall, read_request, request_value
from ..text import escaped, finite
from .reads import turn_message
from .records import replaced
from .texts import SYSTEM, public_interrupt
from .txn import AuditItem, ThreadTxn


def review_calls(review: Interrupt) -> list[PendingCall]:
    """The calls of a stored review interrupt, with their review settings."""
    return read_request(review.value).calls()


def replace_review(txn: ThreadTxn, review: Interrupt, left: Sequence[PendingCall],
                   ) -> list[Interrupt]:
    """The pending list with ``review`` narrowed to ``left`` (dropped when empty)."""
    others = [i for i in txn.thread.pending if i.id != review.id]
    if not left:
        return others
    return [*others, replaced(review, {"value": request_value(left)})]


def raise_review(txn: ThreadTxn, calls: Sequence[PendingCall], *, reason: str | None = None,
                 per_call: bool = False) -> Interrupt | None:
    """Stage a review request for ``calls``: one review interrupt per turn, so they join
    any that is pending (as a new interrupt, calls in the model's order). Returns it.
    ``per_call``: one interrupt for each call instead (``origin="per_call"``), which
    never merges with another; returns the last."""
    if not calls:
        return None
    if per_call:
        last: Interrupt | None = None
        for call in calls:
            last = _stage_review(txn, [call], [call], reason, "per_call",
                                 list(txn.thread.pending))
        return last
    existing = next((i for i in txn.thread.pending if i.kind == "review"
                     and i.origin != "per_call" and i.path is None), None)
    merged = [*(review_calls(existing) if existing else []), *calls]
    order = {c.id: n for n, c in enumerate(turn_message(txn.snapshot).tool_calls)}
    merged.sort(key=lambda p: order.get(p.request.tool_call_id, 0))
    keep = [i for i in txn.thread.pending if i is not existing]
    return _stage_review(txn, merged, calls, reason, None, keep)


def _stage_review(txn: ThreadTxn, request: Sequence[PendingCall], new: Sequence[PendingCall],
                  reason: str | None, origin: str | None, keep: list[Interrupt],
                  ) -> Interrupt:
    intr = Interrupt(id=uuid.uuid4().hex, kind="review", value=request_value(request),
                     created_at=txn.now(), origin=origin)
    data: dict[str, Any] = {"interrupt_id": intr.id, "calls": [
        {"tool_call_id": c.request.tool_call_id, "name": c.request.name,
         "args_sha256": digest(c.request.args),
         "allowed_decisions": c.config.allowed_decisions} for c in new]}
    if reason is not None:
        data["reason"] = reason
    txn.stage(pending=[*keep, intr],
              audit=[AuditItem(AuditKind.REQUEST_RAISED, SYSTEM, None, data)])
    txn.announce(InterruptRaised(txn.thread_id, public_interrupt(intr)))
    return intr


def show(txn: ThreadTxn, pending: list[Interrupt]) -> None:
    """Stage ``pending`` as the thread's pending list (a sub-agent's requests shown here);
    the ones new here are announced once the change is stored."""
    known = {i.id for i in txn.thread.pending}
    txn.stage(pending=pending)
    for i in pending:
        if i.id not in known:
            txn.announce(InterruptRaised(txn.thread_id, public_interrupt(i)))


def raise_question(txn: ThreadTxn, value: Any, *, origin: str, tool_call_id: str | None = None,
                   ) -> Interrupt:
    """Stage a question from ``interrupt(value)`` in a tool or an ``after_model`` hook
    (text that cannot be stored is escaped, a NaN or infinite number written as its name)."""
    value = finite(escaped(value)[0])[0]
    intr = Interrupt(id=uuid.uuid4().hex, kind="input", value=value, created_at=txn.now(),
                     tool_call_id=tool_call_id, origin=origin)
    txn.stage(pending=[*txn.thread.pending, intr], audit=[AuditItem(
        AuditKind.INPUT_REQUESTED, SYSTEM, tool_call_id,
        {"interrupt_id": intr.id, "origin": origin, "value": value})])
    txn.announce(InterruptRaised(txn.thread_id, public_interrupt(intr)))
    return intr
