"""Which notification events a commit carries (written in the same commit, see ``outbox``).

Derived from what the commit itself records, so that every path that raises, decides,
expires, escalates or cancels a review request notifies the same way: the audit rows of the
commit say what happened, the thread rows before and after say which request it happened to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..interrupts import Interrupt, PathStep
from ..outbox import (
    EventType,
    Notice,
    NoticeApproval,
    NoticeCall,
    OutboxEvent,
    raised_event_id,
    request_event_id,
)
from ..review_request import read_request
from ..storage.base import AuditRecord, CallState, JournalEntry, ThreadRecord

_BY_AUDIT: dict[str, EventType] = {
    "request_raised": "request.raised",
    "approval_recorded": "request.approval_recorded",
    "decision": "request.decided",
    "expired": "request.expired",
    "escalated": "request.escalated",
}

_ANNOUNCED = frozenset(_BY_AUDIT) | {"cancelled"}
"""The audit kinds that may make an event: a commit without any makes none."""


def _reviews(thread: ThreadRecord | None) -> dict[str, Interrupt]:
    """The thread's own review requests. Requests mirrored from its sub-agents (``path``
    set) are announced by the commits of the sub-agent's thread, once each."""
    if thread is None:
        return {}
    return {i.id: i for i in thread.pending if i.kind == "review" and i.path is None}


def notice_calls(review: Interrupt, journal: Mapping[str, JournalEntry],
                 above: list[PathStep] | None = None, where: PathStep | None = None,
                 ) -> list[NoticeCall]:
    """The calls of a review request as notifications show them, with their current state.
    For a sub-agent's request, ``above`` are the sub-agent calls from the top-most thread down
    to it and ``where`` its thread and agent: each call's path ends at the call."""
    out = []
    for a, c in read_request(review.value).pairs():
        e = journal.get(a.tool_call_id)
        state = e.state.value if e is not None else CallState.PENDING_REVIEW.value
        message = e.decision.message if e is not None and e.decision is not None else None
        name, args = a.name, a.args
        if e is not None and e.state != CallState.PENDING_REVIEW:
            name, args = e.exec_name or e.name, e.exec_args if e.exec_args is not None else args
        out.append(NoticeCall(
            tool_call_id=a.tool_call_id, name=name, args=args, revision=c.revision,
            description=a.description,
            allowed_decisions=list(c.allowed_decisions), reviewers=c.reviewers,
            approvals_required=c.approvals_required,
            approvals=[NoticeApproval(by=a.by, at=a.at) for a in c.approved_by or []],
            state=state, decided_by=e.decided_by if e is not None and
            e.state != CallState.PENDING_REVIEW else None,
            message=message,
            expires_at=c.expires_at, escalate_at=c.escalate_at,
            path=None if above is None or where is None else [*above, where.model_copy(
                update={"tool_call_id": a.tool_call_id, "tool_name": a.name})]))
    return out


def outbox_events(
    stored: ThreadRecord | None,
    new: ThreadRecord,
    journal: Mapping[str, JournalEntry],
    audit: Sequence[AuditRecord],
    *,
    agent: str = "agent",
) -> list[OutboxEvent]:
    """The events of one commit from ``stored`` (the thread row it replaces) to ``new``, by
    the agent named ``agent``. A sub-agent's thread announces its requests under the
    top-most thread, where they are decided, with the path to each call."""
    if not any(rec.kind in _ANNOUNCED for rec in audit):
        return []  # most commits (a call started, a result, an answer) announce nothing
    before, after = _reviews(stored), _reviews(new)
    link = new.parent
    above = link.steps() if link is not None else None
    where = PathStep(thread_id=new.thread_id, agent=agent) if link is not None else None
    shown_on = link.root_thread_id if link is not None else new.thread_id
    found: dict[tuple[str, EventType], AuditRecord] = {}
    for rec in audit:
        kind = _BY_AUDIT.get(rec.kind)
        iid = rec.data.get("interrupt_id")
        if kind is not None and isinstance(iid, str):
            found.setdefault((iid, kind), rec)
        elif rec.kind == "cancelled":
            for bid in before:
                found.setdefault((bid, "request.cancelled"), rec)
    events = []
    for (iid, kind), rec in found.items():
        if kind == "request.approval_recorded" and (iid, "request.decided") in found:
            continue  # one event per request and commit: the decision says it all
        review = after.get(iid) or before.get(iid)
        if review is None:
            continue
        # the request as it was before this commit, with the states this commit gave its calls
        shown = before.get(iid) or review
        eid = (raised_event_id(iid) if kind == "request.raised"
               else request_event_id(iid, kind, new.version))
        roles = rec.data.get("roles") if kind == "request.escalated" else None
        notice = Notice(
            thread_id=shown_on, interrupt_id=iid, thread_version=new.version,
            subagent_thread_id=new.thread_id if link is not None else None,
            actor=rec.actor, roles=list(roles) if isinstance(roles, list) else None,
            calls=notice_calls(after.get(iid, shown) if kind in (
                "request.raised", "request.escalated", "request.approval_recorded") else shown,
                journal, above, where),
            pending=iid in after)
        events.append(OutboxEvent(id=eid, type=kind, thread_id=shown_on,
                                  created_at=rec.ts, next_at=rec.ts, notice=notice))
    events.sort(key=lambda e: (e.created_at, e.type != "request.raised"))
    return events
