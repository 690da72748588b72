"""Applying what people decide: reviewers' decisions and answers, cancelling, expiring and
revoking. Each is validated in full first, then stored in one commit of the run transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ._deps import RunDeps
from ._models import replaced
from ._texts import cancel_text, digest, expired_text, reject_text, unknown_reject_text
from ._txn import AuditItem, ThreadTxn
from .audit import AuditKind
from .authz import actor_of, check_answer, check_cancel, check_revoke, facts_of
from .decisions import (
    Approve,
    Edit,
    PendingCall,
    Reject,
    ResolvedDecision,
    Respond,
    Reviewer,
    is_decision,
    resolve_decisions,
)
from .errors import (
    ConcurrencyError,
    InterruptConflict,
    InvalidDecision,
    NoPendingInterrupt,
    StaleInterrupt,
    SubAgentThread,
)
from .interrupts import Interrupt
from .messages import ToolMessage
from .quorum import check_self_approval, record_approval
from .storage.base import (
    FINAL_STATES,
    RESOLVED_KEPT,
    CallState,
    DecisionRecord,
    JournalEntry,
    RememberedApproval,
)
from .subagents import ChildState, SubAgentTool
from .text import check_input


@dataclass
class ResumeSpec:
    """One resume: decisions for a review request and/or answers to questions."""

    decisions: Any = None
    values: dict[str, Any] | None = None
    """interrupt id -> answer, for input interrupts."""
    value: Any = None
    has_value: bool = False
    interrupt_id: str | None = None
    reviewer: Reviewer | None = None
    actor: str = "local"
    command: Any = None
    has_command: bool = False
    reviews: dict[str, Any] | None = None
    """interrupt id -> decisions, when one resume answers several review interrupts."""
    routed_from: str | None = None
    """The parent thread this resume was given on, when it is passed to a sub-agent's thread
    (only such a resume may act on a sub-agent's thread)."""
    claim: Callable[[ChildState | None], Awaitable[None]] | None = None
    """For a routed resume: called right after the decisions are stored here, with this
    thread's state (``None``: not stored by this level), so that the parent records it."""

    def __post_init__(self) -> None:
        # every surface builds one of these: text that cannot be stored is refused here
        check_input(self.decisions, "the decisions")
        check_input(self.values, "the answers")
        check_input(self.value, "the answer")
        check_input(self.command, "the resume command")
        check_input(self.actor, "the reviewer id")

    def targets(self) -> list[str]:
        """The interrupt ids this resume names."""
        ids = [self.interrupt_id] if self.interrupt_id else []
        if self.has_command and isinstance(self.command, dict):
            ids += [k for k in self.command if isinstance(k, str)]
        ids += [*(self.reviews or {}), *(self.values or {})]
        return ids


def raise_if_answered(txn: ThreadTxn, spec: ResumeSpec) -> None:
    """A resume aimed at an interrupt that a resume already answered lost the race."""
    if txn.snap is None:
        return
    answered = next((i for i in spec.targets() if i in txn.t.resolved), None)
    if answered is not None:
        raise InterruptConflict(txn.thread_id, answered)


def _interpret_command(spec: ResumeSpec, pending: list[Interrupt]) -> None:
    """``Command(resume=...)``: decisions (also a single bare decision while a review is
    pending), ``{interrupt_id: answer}`` for any pending interrupts, or a plain answer."""
    raw = spec.command
    ids = {i.id: i for i in pending}
    if isinstance(raw, dict) and raw and set(raw) <= set(ids):
        values: dict[str, Any] = {}
        reviews: dict[str, Any] = {}
        for iid, answer in raw.items():
            (reviews if ids[iid].kind == "review" else values)[iid] = answer
        spec.values = values
        if len(reviews) == 1:
            [(spec.interrupt_id, spec.decisions)] = reviews.items()
        elif reviews:
            spec.reviews = reviews
    elif (isinstance(raw, dict) and "decisions" in raw) or isinstance(raw, list) or (
            is_decision(raw) and any(i.kind == "review" for i in pending)):
        spec.decisions = raw
    else:
        spec.value, spec.has_value = raw, True


def _by_interrupt(txn: ThreadTxn, pending: list[Interrupt], spec: ResumeSpec,
                  ) -> dict[str, Any] | None:
    """Decisions for several review interrupts in one resume: ``spec.reviews``, or a mapping
    ``{tool_call_id: decision}`` whose calls belong to different review interrupts (one
    interrupt per call in ``per_call`` mode). None when the decisions target one interrupt."""
    if spec.reviews:
        return spec.reviews
    reviews = [i for i in pending if i.kind == "review"]
    raw = spec.decisions
    if (spec.interrupt_id is not None or len(reviews) < 2 or not isinstance(raw, Mapping)
            or not raw or is_decision(raw) or "decisions" in raw):
        return None
    owner = {c.request.tool_call_id: i.id for i in reviews for c in txn.review_calls(i)}
    if not set(raw) <= set(owner):
        return None  # the single-interrupt path reports the unknown ids
    out: dict[str, dict[str, Any]] = {}
    for cid, decision in raw.items():
        out.setdefault(owner[cid], {})[cid] = decision
    return out


def _target(txn: ThreadTxn, pending: list[Interrupt], kind: str, iid: str | None) -> Interrupt:
    if iid is not None:
        intr = next(i for i in pending if i.id == iid)
        if intr.kind != kind:
            what = "decisions=[...]" if intr.kind == "review" else "value=..."
            raise InvalidDecision(
                txn.thread_id, f"interrupt {iid!r} is a {intr.kind!r} interrupt; answer it "
                f"with {what}."
            )
        return intr
    matches = [i for i in pending if i.kind == kind]
    if not matches:
        other = "value=... (the thread waits for an answer to interrupt(...))" if kind == \
            "review" else "decisions=[...] (the thread waits for a review)"
        raise InvalidDecision(txn.thread_id, f"there is no pending {kind!r} interrupt; "
                              f"resume with {other}.")
    if len(matches) > 1:
        raise InvalidDecision(
            txn.thread_id, f"{len(matches)} {kind!r} interrupts are pending "
            f"({', '.join(i.id for i in matches)}); pass interrupt_id=... to choose one."
        )
    return matches[0]


async def apply_resume(txn: ThreadTxn, deps: RunDeps, spec: ResumeSpec) -> None:
    """Validate the decisions and answers against the pending requests, then store them in
    one commit (``InterruptConflict`` if another resume was stored first)."""
    pending = list(txn.t.pending)
    if spec.has_command and pending:
        _interpret_command(spec, pending)
    if not pending:
        if spec.interrupt_id:
            raise StaleInterrupt(txn.thread_id, spec.interrupt_id, [])
        raise NoPendingInterrupt(txn.thread_id)
    ids = [i.id for i in pending]
    if spec.interrupt_id is not None and spec.interrupt_id not in ids:
        raise StaleInterrupt(txn.thread_id, spec.interrupt_id, ids)
    journal: list[JournalEntry] = []
    audit: list[AuditItem] = []
    updates: dict[str, Any] = {}
    remaining = list(pending)
    hooks = txn.t.hooks
    remembered = list(txn.t.remembered)

    answers: dict[str, Any] = dict(spec.values or {})
    several = _by_interrupt(txn, pending, spec) if spec.decisions is not None or \
        spec.reviews else None
    if several:
        for iid, decisions in several.items():
            review = _target(txn, pending, "review", iid)
            remaining = [i for i in remaining if i.id != iid]
            remaining += _apply_decisions(txn, deps, review,
                                          replace(spec, decisions=decisions, interrupt_id=iid),
                                          journal, audit, remembered)
    elif spec.decisions is not None:
        review = _target(txn, pending, "review", spec.interrupt_id)
        remaining = [i for i in remaining if i.id != review.id]
        remaining += _apply_decisions(txn, deps, review, spec, journal, audit, remembered)
    elif spec.has_value:
        check_answer(spec.reviewer, facts_of(txn.t))
        target = _target(txn, pending, "input", spec.interrupt_id)
        answers[target.id] = spec.value
    elif not answers:
        raise InvalidDecision(txn.thread_id, "resume needs decisions=... or value=....")
    if answers and not spec.has_value:
        check_answer(spec.reviewer, facts_of(txn.t))
    if (spec.reviewer is not None and spec.decisions is not None
            and spec.reviewer.id not in txn.t.deciders):
        updates["deciders"] = [*txn.t.deciders, spec.reviewer.id]  # they may read it now
    for iid, value in answers.items():
        intr = next((i for i in pending if i.id == iid), None)
        if intr is None:
            raise StaleInterrupt(txn.thread_id, iid, ids)
        if intr.kind != "input":
            raise InvalidDecision(
                txn.thread_id, f"interrupt {iid!r} is a review request; answer it with "
                f"decisions=[...], not a value."
            )
        remaining = [i for i in remaining if i.id != iid]
        if intr.tool_call_id is not None:
            e = txn.s.journal[intr.tool_call_id]
            journal.append(replaced(e, {
                "state": e.paused_from or CallState.APPROVED,
                "answers": [*e.answers, value], "paused_from": None,
                "updated_at": txn.now()}))
        else:
            assert hooks is not None
            hooks = replaced(hooks, {"answers": [*hooks.answers, value]})
            updates["hooks"] = hooks
        audit.append(AuditItem(AuditKind.INPUT_ANSWERED, spec.actor, intr.tool_call_id,
                               {"interrupt_id": iid, "value": value, **_via(spec)}))
    left = {i.id for i in remaining}
    resolved = [*txn.t.resolved, *(i.id for i in pending if i.id not in left)]
    with txn.expect(lambda: InterruptConflict(txn.thread_id, spec.interrupt_id or ids[0])):
        await txn.store_input(journal=journal, audit=audit, pending=remaining,
                              status="running", remembered=remembered,
                              resolved=resolved[-RESOLVED_KEPT:], **updates)


def _apply_decisions(
    txn: ThreadTxn,
    deps: RunDeps,
    review: Interrupt,
    spec: ResumeSpec,
    journal: list[JournalEntry],
    audit: list[AuditItem],
    remembered: list[RememberedApproval],
) -> list[Interrupt]:
    """Resolve the decisions for ``review``; returns what is left of it (nothing, or the
    request narrowed to the calls still undecided)."""
    calls = txn.review_calls(review)
    decided = {
        e.tool_call_id: e.state.value for e in txn.s.journal.values()
        if e.state != CallState.PENDING_REVIEW
    }
    resolved = resolve_decisions(
        txn.thread_id, calls, spec.decisions, tools=deps.tools_by_name,
        policies=deps.tool_policies, reviewer=spec.reviewer, decided=decided,
    )
    now = txn.now()
    done: set[str] = set()
    counted: dict[str, PendingCall] = {}
    for r in resolved:
        cid = r.call.request.tool_call_id
        check_self_approval(txn.thread_id, r.call, r, spec.actor)
        partial = record_approval(txn.thread_id, r.call, r, spec.actor, now)
        if partial is not None:  # the call needs more approvals: recorded in the request
            counted[cid] = partial
            audit.append(AuditItem(AuditKind.APPROVAL_RECORDED, spec.actor, cid,
                                   _approval_row(review.id, r, partial)))
            continue
        done.add(cid)
        e = txn.s.journal[cid]
        journal.append(_decided_entry(e, r, spec.actor, now))
        d = r.decision
        # what was proposed and, for approve and edit, the exact call that will run: the
        # signed row proves what was decided, and verify checks the journal against it
        row: dict[str, Any] = {"interrupt_id": review.id, "type": d.type, "name": e.name,
                               "args": e.args, **_via(spec)}
        if r.exec_name is not None:
            row["run"] = {"name": r.exec_name, "args": r.exec_args}
        if isinstance(d, Edit):
            row["edited_action"] = {"name": r.exec_name, "args": r.exec_args}
        for key in ("message", "remember"):
            if getattr(d, key, None) is not None:
                row[key] = getattr(d, key)
        audit.append(AuditItem(AuditKind.DECISION, spec.actor, cid, row))
        if isinstance(d, Approve) and d.remember == "thread" and not any(
            x.tool_name == e.name for x in remembered
        ):
            remembered.append(RememberedApproval(
                tool_name=e.name, created_at=now, created_by=spec.actor, tool_call_id=cid))
            audit.append(AuditItem(AuditKind.RULE_CREATED, spec.actor, cid,
                                   {"tool_name": e.name, "scope": "thread"}))
    left = [counted.get(c.request.tool_call_id, c) for c in calls
            if c.request.tool_call_id not in done]
    narrowed = txn.replace_review(review, left)
    return [i for i in narrowed if i.id == review.id]


def _via(spec: ResumeSpec) -> dict[str, Any]:
    """Audit data of a decision given on a parent thread and passed to this sub-agent's."""
    return {"via_thread_id": spec.routed_from} if spec.routed_from else {}


def _approval_row(iid: str, r: ResolvedDecision, counted: PendingCall) -> dict[str, Any]:
    """Audit data of an approval that does not settle the call yet (quorum)."""
    d = r.decision
    row: dict[str, Any] = {
        "interrupt_id": iid, "type": d.type, "name": r.call.request.name,
        "args_sha256": digest(r.call.request.args),
        "approvals": len(counted.config.approved_by or []),
        "required": counted.config.approvals_required}
    if isinstance(d, Edit):
        row["args"] = r.call.request.args
        row["edited_action"] = {"name": r.exec_name, "args": r.exec_args}
        row["restarted"] = True
    return row


def _decided_entry(e: JournalEntry, r: ResolvedDecision, actor: str, now: datetime,
                   ) -> JournalEntry:
    d = r.decision
    base: dict[str, Any] = {
        "decision": DecisionRecord.model_validate(d.model_dump(mode="json", exclude_none=True)),
        "decided_by": actor, "updated_at": now,
    }
    # what runs is stored only where it differs from what the model proposed
    run = {"exec_name": r.exec_name if r.exec_name != e.name else None,
           "exec_args": r.exec_args if r.exec_args != e.args else None}
    if isinstance(d, Approve):
        # approving a retry of an edited call (outcome unknown) still runs it as edited
        edited = (r.exec_name, r.exec_args) != (e.name, e.args)
        return replaced(e, {
            **base, "state": CallState.EDITED if edited else CallState.APPROVED, **run})
    if isinstance(d, Edit):
        return replaced(e, {**base, "state": CallState.EDITED, **run})
    if isinstance(d, Reject):
        unknown = e.review is not None and e.review.reason == "outcome_unknown"
        text = unknown_reject_text if unknown else reject_text
        msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="error",
                          content=text(e.name, e.tool_call_id, d.message), decision="reject")
        return replaced(e, {**base, "state": CallState.REJECTED, "result": msg})
    assert isinstance(d, Respond)
    msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="success",
                      content=d.message, decision="respond")
    return replaced(e, {**base, "state": CallState.RESPONDED, "result": msg})


async def cancel(txn: ThreadTxn, deps: RunDeps, reason: str | None, reviewer: Reviewer | None,
                 *, routed: bool = False) -> None:
    """Close every open call of the thread as cancelled; the thread goes idle. ``reviewer``
    needs the right to decide every pending call (:mod:`interlock.authz`). Sub-agent threads
    the thread waits for are cancelled first (a sub-agent's thread itself is cancelled only
    through its parent: ``routed``)."""
    await txn.load()
    link = txn.t.parent
    if link is not None and not routed:
        raise SubAgentThread(txn.thread_id, link.thread_id, link.tool_call_id,
                             f"cancel the parent thread instead: agent.cancel("
                             f"{link.thread_id!r}).")
    check_cancel(reviewer, facts_of(txn.t))
    actor = actor_of(reviewer)
    t = txn.t
    if not t.pending and t.turn is None:
        raise NoPendingInterrupt(txn.thread_id)
    await _cancel_children(txn, deps, reason, reviewer)
    t = txn.t
    now = txn.now()
    updates: list[JournalEntry] = []
    results: list[ToolMessage] = []
    if t.turn is not None:
        for call in txn.turn_message().tool_calls:
            e = txn.s.journal.get(call.id)
            if e is not None and e.state in FINAL_STATES and e.result is not None:
                results.append(e.result)
                continue
            msg = ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                              content=cancel_text(call.name, call.id, reason), decision="cancel")
            results.append(msg)
            if e is not None:
                updates.append(replaced(e, {
                    "state": CallState.CANCELLED, "result": msg, "decided_by": actor,
                    "updated_at": now}))
    await txn.commit(
        messages=results, journal=updates, turn=None, hooks=None, pending=[], status="idle",
        hold_lease=False,
        audit=[AuditItem(AuditKind.CANCELLED, actor, None,
                         {"reason": reason, "calls": [e.tool_call_id for e in updates]})],
    )


async def expire_due(txn: ThreadTxn) -> bool:
    """Escalate review calls past ``escalate_at`` and resolve those past their deadline.
    Returns True if anything changed."""
    now = txn.now()
    review = next((i for i in txn.t.pending if i.kind == "review" and i.path is None), None)
    if review is None:
        return False
    calls = txn.review_calls(review)
    due = [c for c in calls if c.config.expires_at is not None and c.config.expires_at <= now]
    escalate = [c for c in calls if c not in due and c.config.escalate_at is not None
                and c.config.escalated_at is None and c.config.escalate_at <= now]
    if not due and not escalate:
        return False
    journal = []
    audit: list[AuditItem] = []
    if escalate:
        calls = [_escalated(c, now) if c in escalate else c for c in calls]
        roles = sorted({r for c in escalate for r in (c.config.escalate_to or [])})
        audit.append(AuditItem(AuditKind.ESCALATED, "system:escalation", None, {
            "interrupt_id": review.id, "roles": roles,
            "calls": [c.request.tool_call_id for c in escalate]}))
    for c in due:
        e = txn.s.journal[c.request.tool_call_id]
        msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="error",
                          content=expired_text(e.name, e.tool_call_id), decision="expire")
        journal.append(replaced(e, {
            "state": CallState.EXPIRED, "result": msg, "decided_by": "system:expiry",
            "decision": DecisionRecord(type="reject", message="no reviewer decided in time"),
            "updated_at": now}))
        audit.append(AuditItem(AuditKind.EXPIRED, "system:expiry", e.tool_call_id, {
            "interrupt_id": review.id, "name": e.name, "args": e.args,
            "expires_at": c.config.expires_at, "on_expire": "reject"}))
    due_ids = {c.request.tool_call_id for c in due}
    left: list[PendingCall] = [c for c in calls if c.request.tool_call_id not in due_ids]
    await txn.commit(journal=journal, audit=audit, pending=txn.replace_review(review, left),
                     hold_lease=False)
    return True


async def _cancel_children(txn: ThreadTxn, deps: RunDeps, reason: str | None,
                           reviewer: Reviewer | None) -> None:
    """Cancel the sub-agent threads the open turn waits for. The thread is taken first (a
    crash in between leaves it to recovery, which reads the children's outcome); a child that
    another process advances right now makes the cancel fail with nothing changed here."""
    waiting = [e for e in txn.s.journal.values()
               if e.state == CallState.WAITING and e.child_thread is not None]
    if not waiting:
        return
    for e in waiting:  # none may be advanced elsewhere: then nothing is cancelled
        if e.child_thread is not None and (busy := await txn.busy_elsewhere(e.child_thread)):
            raise busy
    previous = txn.t.status
    await txn.commit(status="running")
    try:
        for e in waiting:
            tool = deps.tools_by_name.get(e.effective.name)
            if isinstance(tool, SubAgentTool) and e.child_thread is not None:
                try:
                    await tool.runner.cancel_child(e.child_thread, reason, reviewer)
                except NoPendingInterrupt:
                    continue  # it had finished: its result is replaced by the cancel
    except ConcurrencyError:
        await txn.commit(status=previous, hold_lease=False)
        raise


def _escalated(call: PendingCall, now: datetime) -> PendingCall:
    """The call after escalation: the escalation roles may decide it too."""
    cfg = call.config
    reviewers = cfg.reviewers
    if reviewers is not None:
        reviewers = [*reviewers, *(r for r in cfg.escalate_to or [] if r not in reviewers)]
    return PendingCall(call.request, replaced(cfg, {
        "escalated_at": now, "reviewers": reviewers}))


async def revoke(txn: ThreadTxn, deps: RunDeps, tool_name: str,
                 reviewer: Reviewer | None) -> bool:
    """Withdraw the remembered approval for ``tool_name``; False if there was none. Needs the
    right to post to the thread or to decide that tool (:mod:`interlock.authz`)."""
    await txn.load()
    for policy in deps.tool_policies(tool_name):
        check_revoke(reviewer, facts_of(txn.t), policy)
    actor = actor_of(reviewer)
    rules = [r for r in txn.t.remembered if r.tool_name != tool_name]
    if len(rules) == len(txn.t.remembered):
        return False
    await txn.commit(remembered=rules, hold_lease=txn.t.status == "running",
                     audit=[AuditItem(AuditKind.RULE_REVOKED, actor, None,
                                      {"tool_name": tool_name, "scope": "thread"})])
    return True
