"""Four-eyes and quorum approvals, separation of duties (``InterruptOn(approvals=N,
self_approval=False)``), and revisions: what an edit changes.

The rules, for a call whose policy needs ``N`` approvals:

* the policy is always the one of the tool that will run, with the arguments that will run
  (the agent's hooks judge the edited call: :func:`.policy.classify_call`): an edit that
  changes the tool or the arguments makes a new revision of the call, reviewed under every
  rule of its tool (allowed decisions, reviewers, approvals, self-approval, expiry,
  escalation, allow_remember); approvals of an earlier revision never count for it, and a
  decision names the revision it was made for;
* the author of a revision (its editor) counts as at most one approval of it, and as none
  where its tool has ``self_approval=False`` (there the editor is a requester too, and may
  not approve that revision) or where the editor may not decide it under its tool's own
  reviewers: a reviewer who could decide the earlier revision only because it was escalated
  to them proposes the new revision, and one of the tool's reviewers (or, once the new
  revision is escalated in its turn, one of the escalation roles) must approve it;
* it runs only after ``N`` distinct reviewers approved it; the same reviewer approving again
  is refused (``InvalidDecision``) and counts once (ids are compared normalised: ``alice``
  and ``Alice`` are one reviewer, :func:`interlock.authz.reviewer_key`);
* one ``reject`` (or ``respond``) settles the call at once, whatever approvals it had;
* ``approve`` with ``remember`` is refused (a standing rule would bypass the quorum);
* with ``self_approval=False`` the identity that started the run which raised the request
  (and the editor of the revision) may not approve or edit it (it may still reject it).

Partial approvals live in the pending request itself (``ReviewConfig.approved_by``), so they are
stored with the same compare-and-set as any decision, survive restarts, and every surface that
shows the request shows them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from .._canonical import same_json
from ..authz import Reviewer, may_decide, same_reviewer
from ..decisions import Approve, Edit, PendingCall, ResolvedDecision
from ..errors import InvalidDecision, NotAuthorized
from ..hitl import ALL_DECISIONS
from ..messages import Message, ToolCall
from ..review_request import ApprovalRecord, ReviewConfig, ReviewRules, review_config
from .deps import RunDeps
from .policy import Verdict, tightened


def check_self_approval(thread_id: str, call: PendingCall, r: ResolvedDecision,
                        actor: str) -> None:
    cfg = call.config
    if cfg.self_approval is not False or not isinstance(r.decision, Approve | Edit):
        return
    cid, name = call.request.tool_call_id, call.request.name
    if same_reviewer(cfg.requested_by, actor):
        raise NotAuthorized(
            f"Reviewer {actor!r} started the run that asks for call {cid!r} ({name}) on "
            f"thread {thread_id!r} and may not approve or edit it (self_approval=False); "
            f"another reviewer must decide. Rejecting it is allowed.")
    if same_reviewer(cfg.edited_by, actor):
        raise NotAuthorized(
            f"Reviewer {actor!r} made revision {cfg.revision} of call {cid!r} ({name}) on "
            f"thread {thread_id!r} by an edit and may not approve or edit it: its tool's "
            f"policy has self_approval=False, so the author of a revision counts as a "
            f"requester. Another reviewer must decide. Rejecting it is allowed.")


def changes_call(call: PendingCall, r: ResolvedDecision) -> bool:
    """Whether ``r`` is an edit that changes the tool or the arguments of ``call``."""
    return isinstance(r.decision, Edit) and (
        r.exec_name != call.request.name or not same_json(r.exec_args, call.request.args))


def revise(call: PendingCall, r: ResolvedDecision, actor: str, reviewer: Reviewer | None,
           now: datetime, deps: RunDeps, verdict: Verdict, thread_id: str = "",
           messages: Sequence[Message] = ()) -> PendingCall:
    """The next revision of ``call`` after the edit ``r`` by ``actor`` (``reviewer``): the
    edited tool and arguments, under the rules the agent's policy gives that call
    (``verdict``, :func:`.policy.classify_call`: the hooks judge the edited call as if the
    model had proposed it; a call they would let run unasked: one approval by anyone), and
    never under looser rules than the revision it replaces where the tool stays the same.
    An edit into a call the policy rejects outright is refused. The edit counts as the new
    revision's first approval only where its editor could approve that revision: not under
    ``self_approval=False``, and not by a reviewer without one of the roles its rules name
    (e.g. one who could decide the earlier revision only because it was escalated to them;
    the new revision's escalation is counted from the edit)."""
    assert r.exec_name is not None and r.exec_args is not None
    name, args = r.exec_name, r.exec_args
    if not verdict.known:
        raise InvalidDecision(
            thread_id, f"the edit of call {call.request.tool_call_id!r} is refused: the "
            f"agent's policy asks a question about {name} with these arguments, or fails on "
            f"it, so no edit can make that call (an edit is judged as if the model had "
            f"proposed it). Edit it otherwise, or reject the call.")
    if verdict.rejection is not None:
        raise InvalidDecision(
            thread_id, f"the edit of call {call.request.tool_call_id!r} is refused: the "
            f"agent's policy rejects {name} with these arguments outright "
            f"({verdict.rejection!r}). Edit it otherwise, or reject the call.")
    rules: ReviewRules = verdict.review or ALL_DECISIONS
    config: ReviewConfig = review_config(
        name, rules, now=now, args_schema=deps.schema(name),
        requested_by=call.config.requested_by, revision=call.config.revision + 1,
        edited_by=actor)
    if name == call.request.name:  # the same tool: never looser than before the edit
        config = tightened(config, call.config.model_copy(update={"approved_by": None}))
    counts = config.self_approval is not False and may_decide(reviewer, config.reviewer_roles)
    if counts:
        config = config.model_copy(update={"approved_by": [ApprovalRecord(by=actor, at=now)]})
    edited = f"Edited by {actor} (revision {config.revision}; the model proposed " \
             f"{call.request.name})."
    # what the tool's policy says of the call as edited (e.g. its risk), worked out again
    said = verdict.review.description if verdict.review is not None else deps.describe(
        ToolCall(id=call.request.tool_call_id, name=name, args=args), thread_id, messages)
    if said is None:
        shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
        said = f"Tool: {name}\nArgs: {shown}"
    request = call.request.model_copy(update={
        "name": name, "args": args, "reason": None, "description": f"{edited}\n\n{said}"})
    return PendingCall(request, config)


def record_approval(thread_id: str, call: PendingCall, r: ResolvedDecision, actor: str,
                    now: datetime, revised: PendingCall | None) -> PendingCall | None:
    """Count an approve or edit towards the call's quorum. ``revised``: the new revision an
    edit made (:func:`revise`). Returns the call with the approval recorded while more are
    needed, or ``None`` when the decision settles the call."""
    if revised is not None:
        given = revised.config.approved_by or []
        return None if len(given) >= revised.config.approvals_required else revised
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
    if any(same_reviewer(a.by, actor) for a in given):
        raise InvalidDecision(
            thread_id, f"reviewer {actor!r} already approved call {cid!r} ({name}); it needs "
            f"{need} approvals from distinct reviewers and has {len(given)} "
            f"({', '.join(a.by for a in given)}). Another reviewer must approve it.")
    given.append(ApprovalRecord(by=actor, at=now))
    if len(given) >= need:
        return None
    return PendingCall(call.request, cfg.model_copy(update={"approved_by": given}))
