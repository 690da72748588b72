"""Four-eyes and quorum approvals, and separation of duties (``InterruptOn(approvals=N,
self_approval=False)``).

The rules, for a call that needs ``N`` approvals:

* it runs only after ``N`` distinct reviewers approved it; the same reviewer approving again
  is refused (``InvalidDecision``) and counts once;
* one ``reject`` (or ``respond``) settles the call at once, whatever approvals it had;
* an ``edit`` changes the call that will run and restarts the count: the editor's edit is
  the first approval of the edited call, and the next approvals are for the edited call;
* ``approve`` with ``remember`` is refused (a standing rule would bypass the quorum);
* with ``self_approval=False`` the identity that started the run which raised the request may
  not approve or edit it (it may still reject it).

Partial approvals live in the pending request itself (``ReviewConfig.approved_by``), so they are
stored with the same compare-and-set as any decision, survive restarts, and every surface that
shows the request shows them.
"""

from __future__ import annotations

from datetime import datetime

from .decisions import Approve, Edit, PendingCall, ResolvedDecision
from .errors import InvalidDecision, NotAuthorized
from .hitl import ApprovalRecord


def check_self_approval(thread_id: str, call: PendingCall, r: ResolvedDecision,
                        actor: str) -> None:
    cfg = call.config
    if cfg.self_approval is False and isinstance(r.decision, Approve | Edit) and (
            cfg.requested_by is not None and cfg.requested_by == actor):
        raise NotAuthorized(
            f"Reviewer {actor!r} started the run that asks for call "
            f"{call.request.tool_call_id!r} ({call.request.name}) on thread {thread_id!r} and may "
            f"not approve or edit it (self_approval=False); another reviewer must decide. "
            f"Rejecting it is allowed.")


def record_approval(thread_id: str, call: PendingCall, r: ResolvedDecision, actor: str,
                    now: datetime) -> PendingCall | None:
    """Count an approve or edit towards the call's quorum. Returns the call with the approval
    recorded while more are needed, or ``None`` when the decision settles the call."""
    cfg = call.config
    need = cfg.approvals_required
    d = r.decision
    if need <= 1 or not isinstance(d, Approve | Edit):
        return None
    cid, name = call.request.tool_call_id, call.request.name
    if isinstance(d, Approve) and d.remember is not None:
        raise InvalidDecision(
            thread_id, f"call {cid!r} ({name}) needs {need} approvals, so 'remember' is not "
            f"available for it (a standing rule would skip the other approvals). Approve "
            f"without 'remember'.")
    given = list(cfg.approved_by or [])
    if isinstance(d, Edit):
        assert r.exec_name is not None and r.exec_args is not None
        request = call.request.model_copy(update={"name": r.exec_name, "args": r.exec_args})
        config = cfg.model_copy(update={"approved_by": [ApprovalRecord(by=actor, at=now)]})
        return PendingCall(request, config)
    if any(a.by == actor for a in given):
        raise InvalidDecision(
            thread_id, f"reviewer {actor!r} already approved call {cid!r} ({name}); it needs "
            f"{need} approvals from distinct reviewers and has {len(given)} "
            f"({', '.join(a.by for a in given)}). Another reviewer must approve it.")
    given.append(ApprovalRecord(by=actor, at=now))
    if len(given) >= need:
        return None
    return PendingCall(call.request, cfg.model_copy(update={"approved_by": given}))
