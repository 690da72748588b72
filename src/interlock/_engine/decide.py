"""Applying what people decide: reviewers' decisions and answers, cancelling, expiring and
revoking. Each is validated in full first, then stored in one commit of the run transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

from .._canonical import same_json
from ..audit.records import AuditKind, digest
from ..authz import actor_of, check_answer, check_cancel, check_revoke, facts_of
from ..decisions import (
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
from ..errors import (
    CallSettled,
    ConcurrencyError,
    InterruptConflict,
    InvalidDecision,
    NoPendingInterrupt,
    StaleInterrupt,
    SubAgentThread,
)
from ..interrupts import Interrupt
from ..messages import ToolCall, ToolMessage
from ..review_request import ReviewConfig, request_value, shown_digest
from ..storage.base import (
    FINAL_STATES,
    RESOLVED_KEPT,
    CallState,
    DecisionRecord,
    JournalEntry,
    RememberedApproval,
)
from ..subagents import SubAgentTool
from .deps import RunDeps
from .execute import settle_stopped_run, store_late_results
from .pauses import replace_review, review_calls
from .policy import classify_call, settings_with, tightened
from .quorum import changes_call, check_self_approval, record_approval, revise
from .reads import turn_message
from .records import EntryChanges, ThreadChanges, entry_with, replaced
from .resume import ResumeSpec, by_interrupt, interpret_command, target
from .texts import (
    cancel_text,
    expired_text,
    reject_text,
    subagent_cancel_text,
    unknown_cancel_text,
    unknown_reject_text,
)
from .txn import AuditItem, ThreadTxn


def raise_if_answered(txn: ThreadTxn, spec: ResumeSpec) -> None:
    """A resume aimed at an interrupt that a resume already answered lost the race."""
    if txn.snap is None:
        return
    answered = next((i for i in spec.targets() if i in txn.thread.resolved), None)
    if answered is not None:
        raise InterruptConflict(txn.thread_id, answered)


def _call_keys(decisions: Any) -> tuple[list[str], bool]:
    """The tool call ids a resume's decisions name (the keys of ``{call_id: decision}``, or
    the ``tool_call_id`` of each decision in a list or of a single one), and whether some
    decision names none (it is paired with its call by position)."""
    if isinstance(decisions, Mapping) and set(decisions) == {"decisions"}:
        decisions = decisions["decisions"]
    if is_decision(decisions):
        decisions = [decisions]
    if isinstance(decisions, Mapping):
        return [k for k in decisions if isinstance(k, str)], False
    named: list[str] = []
    unnamed = False
    for d in decisions if isinstance(decisions, (list, tuple)) else ():
        cid = d.get("tool_call_id") if isinstance(d, Mapping) else getattr(d, "tool_call_id",
                                                                            None)
        if isinstance(cid, str):
            named.append(cid)
        else:
            unnamed = True
    return named, unnamed


async def _raise_if_settled(txn: ThreadTxn, spec: ResumeSpec, pending: list[Interrupt]) -> None:
    """A decision naming a call of an earlier turn that no longer waits (expired, decided,
    cancelled) is told so (:class:`CallSettled`) rather than that nothing is pending or that
    the id is unknown."""
    named, _ = _call_keys(spec.decisions)
    if not named:
        return
    waiting = {c.request.tool_call_id for i in pending if i.kind == "review"
               for c in review_calls(i)}
    # a call of the open turn decided already is refused by the decisions' own checks
    gone = [cid for cid in named if cid not in waiting and cid not in txn.snapshot.journal]
    if not gone:
        return
    entries = {e.tool_call_id: e for e in await txn.store.journal(txn.thread_id)}
    for cid in gone:
        e = entries.get(cid)
        if e is not None and e.state not in (CallState.PROPOSED, CallState.PENDING_REVIEW):
            raise CallSettled(txn.thread_id, cid, e.name, e.state.value, e.decided_by)


def pending_calls(pending: Sequence[Interrupt]) -> dict[str, str]:
    """The calls waiting for a decision in ``pending`` (a thread's own requests and those of
    its sub-agents shown on it): tool call id -> tool name, in request order."""
    return {c.request.tool_call_id: c.request.name for i in pending
            if i.kind == "review" for c in review_calls(i)}


def refuse_if_shifted(txn: ThreadTxn, spec: ResumeSpec, before: Mapping[str, str]) -> None:
    """Deadlines applied as this resume touched the thread (or late results stored for calls
    asked about as "outcome unknown") took calls away from what was pending: decisions that
    do not name their calls would now go to others than the ones their sender was shown
    (invariant 1). They are refused (:class:`CallSettled`, for the first call taken away);
    decisions keyed by call id are judged one by one as usual."""
    now = pending_calls(txn.thread.pending)
    gone = [cid for cid in before if cid not in now]
    if not gone or (spec.decisions is None and not spec.reviews):
        return
    given = [spec.decisions] if spec.decisions is not None else list((spec.reviews or {})
                                                                      .values())
    if all((keys := _call_keys(d))[0] and not keys[1] for d in given):
        return
    e = txn.snapshot.journal.get(gone[0])
    state = e.state.value if e is not None else CallState.EXPIRED.value
    raise CallSettled(txn.thread_id, gone[0], before[gone[0]], state,
                      e.decided_by if e is not None else None)


async def apply_resume(txn: ThreadTxn, deps: RunDeps, spec: ResumeSpec) -> None:
    """Validate the decisions and answers against the pending requests, then store them in
    one commit (``InterruptConflict`` if another resume was stored first)."""
    pending = list(txn.thread.pending)
    if spec.has_command and pending:
        interpret_command(spec, pending)
    await _raise_if_settled(txn, spec, pending)
    if not pending:
        if spec.interrupt_id:
            raise StaleInterrupt(txn.thread_id, spec.interrupt_id, [])
        raise NoPendingInterrupt(txn.thread_id)
    ids = [i.id for i in pending]
    if spec.interrupt_id is not None and spec.interrupt_id not in ids:
        raise StaleInterrupt(txn.thread_id, spec.interrupt_id, ids)
    journal: list[JournalEntry] = []
    audit: list[AuditItem] = []
    updates: ThreadChanges = {}
    remaining = list(pending)
    hooks = txn.thread.hooks
    remembered = list(txn.thread.remembered)

    answers: dict[str, Any] = dict(spec.values or {})
    several = by_interrupt(pending, spec) if spec.decisions is not None or \
        spec.reviews else None
    if several:
        for iid, decisions in several.items():
            review = target(txn.thread_id, pending, "review", iid)
            remaining = [i for i in remaining if i.id != iid]
            applied = await _apply_decisions(txn, deps, review,
                                             replace(spec, decisions=decisions,
                                                     interrupt_id=iid), remembered)
            remaining += applied.left
            journal += applied.journal
            audit += applied.audit
            remembered += applied.remembered
    elif spec.decisions is not None:
        review = target(txn.thread_id, pending, "review", spec.interrupt_id)
        remaining = [i for i in remaining if i.id != review.id]
        applied = await _apply_decisions(txn, deps, review, spec, remembered)
        remaining += applied.left
        journal += applied.journal
        audit += applied.audit
        remembered += applied.remembered
    elif spec.has_value:
        check_answer(spec.reviewer, facts_of(txn.thread))
        question = target(txn.thread_id, pending, "input", spec.interrupt_id)
        answers[question.id] = spec.value
    elif not answers:
        raise InvalidDecision(txn.thread_id, "resume needs decisions=... or value=....")
    if answers and not spec.has_value:
        check_answer(spec.reviewer, facts_of(txn.thread))
    if (spec.reviewer is not None and spec.decisions is not None
            and spec.reviewer.id not in txn.thread.deciders):
        updates["deciders"] = [*txn.thread.deciders, spec.reviewer.id]  # they may read it now
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
            e = txn.snapshot.journal[intr.tool_call_id]
            journal.append(entry_with(
                e, state=e.paused_from or CallState.APPROVED,
                answers=[*e.answers, value], paused_from=None,
                updated_at=txn.now()))
        else:
            assert hooks is not None
            hooks = replaced(hooks, {"answers": [*hooks.answers, value]})
            updates["hooks"] = hooks
        audit.append(AuditItem(AuditKind.INPUT_ANSWERED, spec.actor, intr.tool_call_id,
                               {"interrupt_id": iid, "value": value, **_via(spec)}))
    left = {i.id for i in remaining}
    resolved = [*txn.thread.resolved, *(i.id for i in pending if i.id not in left)]
    with txn.expect(lambda: InterruptConflict(txn.thread_id, spec.interrupt_id or ids[0])):
        changes: ThreadChanges = {
            **updates, "pending": remaining, "status": "running", "remembered": remembered,
            "resolved": resolved[-RESOLVED_KEPT:]}
        await txn.store_input(journal=journal, audit=audit, **changes)


class AppliedDecisions(NamedTuple):
    """What the decisions for one review request change (nothing stored yet)."""

    journal: list[JournalEntry]
    """The decided calls' journal entries."""
    audit: list[AuditItem]
    remembered: list[RememberedApproval]
    """Approvals newly remembered for the thread."""
    left: list[Interrupt]
    """What is left of the request: nothing, or the request narrowed to the calls still
    undecided (with the approvals counted so far)."""


def _under_policy_now(txn: ThreadTxn, deps: RunDeps, call: PendingCall) -> PendingCall:
    """``call`` under the stricter of its stored rules and the rules this process's policy
    declares for its tool now (:mod:`.policy`; a redeployed agent, or an API process and a
    worker on different versions). Nothing is evaluated again: a ``when`` predicate and a
    description ran once, when the call paused (a policy with a ``when`` applies only to the
    calls it paused)."""
    e = txn.snapshot.journal.get(call.request.tool_call_id)
    marked_by = e.review.by if e is not None and e.review is not None else None
    policy = deps.declared_policy(call.request.name, marked_by)
    if policy is None:
        return call
    config = tightened(call.config, policy,
                       decisions=call.request.reason != "outcome_unknown")
    return call if config is call.config else PendingCall(call.request, config)


async def _apply_decisions(
    txn: ThreadTxn,
    deps: RunDeps,
    review: Interrupt,
    spec: ResumeSpec,
    remembered_before: Sequence[RememberedApproval],
) -> AppliedDecisions:
    """Resolve the decisions for ``review``. ``remembered_before``: the approvals the thread
    remembers already (an approval is remembered once per tool)."""
    journal: list[JournalEntry] = []
    audit: list[AuditItem] = []
    remembered: list[RememberedApproval] = []
    calls = [_under_policy_now(txn, deps, c) for c in review_calls(review)]
    decided = {
        e.tool_call_id: e.state.value for e in txn.snapshot.journal.values()
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
        revised = None
        if changes_call(r.call, r):
            assert r.exec_name is not None and r.exec_args is not None
            verdict = await classify_call(
                deps, ToolCall(id=cid, name=r.exec_name, args=r.exec_args), txn.thread_id,
                txn.snapshot.messages)
            revised = revise(r.call, r, spec.actor, spec.reviewer, now, deps, verdict,
                             txn.thread_id, txn.snapshot.messages)
        partial = record_approval(txn.thread_id, r.call, r, spec.actor, now, revised)
        if partial is not None:  # the call needs more approvals: recorded in the request
            counted[cid] = partial
            audit.append(AuditItem(AuditKind.APPROVAL_RECORDED, spec.actor, cid,
                                   _approval_row(review.id, r, partial, revised)))
            continue
        done.add(cid)
        e = txn.snapshot.journal[cid]
        journal.append(_decided_entry(e, r, spec.actor, now,
                                      (revised or r.call).config))
        d = r.decision
        # what was proposed and, for approve and edit, the exact call that will run: the
        # signed row proves what was decided, and verify checks the journal against it
        row: dict[str, Any] = {"interrupt_id": review.id, "type": d.type, "name": e.name,
                               "args": e.args, **_shown(r.call), **_via(spec)}
        if r.exec_name is not None:
            row["run"] = {"name": r.exec_name, "args": r.exec_args}
        if isinstance(d, Edit):
            row["edited_action"] = {"name": r.exec_name, "args": r.exec_args}
        for key in ("message", "remember", "metadata"):
            if getattr(d, key, None) is not None:
                row[key] = getattr(d, key)
        audit.append(AuditItem(AuditKind.DECISION, spec.actor, cid, row))
        # a remembered approval is for the tool the reviewer approved (an edit may have
        # changed it from the one the model proposed)
        shown_tool = r.call.request.name
        if isinstance(d, Approve) and d.remember == "thread" and not any(
            x.tool_name == shown_tool for x in (*remembered_before, *remembered)
        ):
            remembered.append(RememberedApproval(
                tool_name=shown_tool, created_at=now, created_by=spec.actor, tool_call_id=cid,
                roles=sorted(spec.reviewer.roles) if spec.reviewer is not None else None,
                app=True if spec.reviewer is None else None))
            audit.append(AuditItem(AuditKind.RULE_CREATED, spec.actor, cid,
                                   {"tool_name": shown_tool, "scope": "thread"}))
    left = [counted.get(c.request.tool_call_id, c) for c in calls
            if c.request.tool_call_id not in done]
    narrowed = replace_review(txn, review, left)
    return AppliedDecisions(journal, audit, remembered,
                            [i for i in narrowed if i.id == review.id])


def _via(spec: ResumeSpec) -> dict[str, Any]:
    """Audit data of a decision given on a parent thread and passed to this sub-agent's."""
    return {"via_thread_id": spec.routed_from} if spec.routed_from else {}


def _shown(call: PendingCall) -> dict[str, Any]:
    """Audit data of what the reviewer decided on: the call's revision and the digest of
    what was shown of it (tool, arguments, rules)."""
    return {"revision": call.config.revision,
            "digest": shown_digest(call.request, call.config)}


def _approval_row(iid: str, r: ResolvedDecision, counted: PendingCall,
                  revised: PendingCall | None) -> dict[str, Any]:
    """Audit data of an approval (or an edit) that does not settle the call yet."""
    d = r.decision
    row: dict[str, Any] = {
        "interrupt_id": iid, "type": d.type, "name": r.call.request.name,
        "args_sha256": digest(r.call.request.args), **_shown(r.call),
        "approvals": len(counted.config.approved_by or []),
        "required": counted.config.approvals_required}
    if isinstance(d, Edit):
        row["args"] = r.call.request.args
        row["edited_action"] = {"name": r.exec_name, "args": r.exec_args}
    if revised is not None:
        row["restarted"] = True
        row["new_revision"] = revised.config.revision
        row["new_digest"] = shown_digest(revised.request, revised.config)
    return row


def _decided_entry(e: JournalEntry, r: ResolvedDecision, actor: str, now: datetime,
                   rules: ReviewConfig) -> JournalEntry:
    """The journal entry of a call ``r`` settles; ``rules``: those of the revision decided
    (kept with the call where they differ from its first review's, so an "outcome unknown"
    question after a crash is decided under the rules of the approval that ran it)."""
    d = r.decision
    base: EntryChanges = {
        "decision": DecisionRecord.model_validate(
            d.model_dump(mode="json", exclude_none=True, exclude={"revision"})),
        "decided_by": actor, "updated_at": now,
    }
    if e.review is not None and isinstance(d, Approve | Edit) and (
            kept := settings_with(e.review, rules)) is not e.review:
        base["review"] = kept
    # what runs is stored only where it differs from what the model proposed
    same_args = r.exec_args is None or same_json(r.exec_args, e.args)
    run: EntryChanges = {"exec_name": r.exec_name if r.exec_name != e.name else None,
                         "exec_args": None if same_args else r.exec_args}
    if isinstance(d, Approve):
        # approving a retry of an edited call (outcome unknown) still runs it as edited
        edited = r.exec_name != e.name or not same_args
        approved: EntryChanges = {
            **base, **run, "state": CallState.EDITED if edited else CallState.APPROVED}
        return entry_with(e, **approved)
    if isinstance(d, Edit):
        changed: EntryChanges = {**base, **run, "state": CallState.EDITED}
        return entry_with(e, **changed)
    if isinstance(d, Reject):
        unknown = e.review is not None and e.review.reason == "outcome_unknown"
        text = unknown_reject_text if unknown else reject_text
        msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="error",
                          content=text(e.name, e.tool_call_id, d.message), decision="reject")
        rejected: EntryChanges = {**base, "state": CallState.REJECTED, "result": msg}
        return entry_with(e, **rejected)
    assert isinstance(d, Respond)
    msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="success",
                      content=d.message, decision="respond")
    responded: EntryChanges = {**base, "state": CallState.RESPONDED, "result": msg}
    return entry_with(e, **responded)


async def cancel(txn: ThreadTxn, deps: RunDeps, reason: str | None, reviewer: Reviewer | None,
                 *, routed: bool = False) -> None:
    """Close every open call of the thread as cancelled; the thread goes idle. ``reviewer``
    needs the right to decide every pending call (:mod:`interlock.authz`). Sub-agent threads
    the thread waits for are cancelled first (a sub-agent's thread itself is cancelled only
    through its parent: ``routed``).

    A thread whose run stopped mid-way is taken over first: a call that was running when its
    process stopped is never said not to have run. Its kept result is stored; without one
    its outcome is unknown, and it is closed saying so."""
    stopped = await txn.load()
    link = txn.thread.parent
    if link is not None and not routed:
        raise SubAgentThread(txn.thread_id, link.thread_id, link.tool_call_id,
                             f"cancel the parent thread instead: agent.cancel("
                             f"{link.thread_id!r}).")
    check_cancel(reviewer, facts_of(txn.thread))
    actor = actor_of(reviewer)
    t = txn.thread
    if not t.pending and t.turn is None and not stopped:
        raise NoPendingInterrupt(txn.thread_id)
    if stopped:  # ended too when it stopped after its calls (in the model's answer)
        await settle_stopped_run(txn)
    # a result kept for a call asked about as "outcome unknown" is stored, not cancelled
    # as one whose outcome is unknown
    await store_late_results(txn)
    await _cancel_children(txn, deps, reason, reviewer)
    t = txn.thread
    now = txn.now()
    updates: list[JournalEntry] = []
    results: list[ToolMessage] = []
    unknown: list[str] = []
    if t.turn is not None:
        for call in turn_message(txn.snapshot).tool_calls:
            e = txn.snapshot.journal.get(call.id)
            if e is not None and e.state in FINAL_STATES and e.result is not None:
                results.append(e.result)
                continue
            text = cancel_text
            if e is not None and (e.state in (CallState.UNKNOWN, CallState.RUNNING) or (
                    e.review is not None and e.review.reason == "outcome_unknown")):
                text = unknown_cancel_text  # it may have run: never "did not run"
                unknown.append(call.id)
            elif e is not None and e.child_thread is not None:
                # a sub-agent that started may have done part of its work
                text = partial(subagent_cancel_text, thread=e.child_thread)
                unknown.append(call.id)
            msg = ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                              content=text(call.name, call.id, reason), decision="cancel")
            results.append(msg)
            if e is not None:
                updates.append(entry_with(
                    e, state=CallState.CANCELLED, result=msg, decided_by=actor,
                    updated_at=now))
    deciders = t.deciders  # who closed the calls decided them: they may read the thread
    if reviewer is not None and reviewer.id not in deciders:
        deciders = [*deciders, reviewer.id]
    await txn.commit(
        messages=results, journal=updates, turn=None, hooks=None, pending=[], status="idle",
        hold_lease=False, deciders=deciders,
        audit=[AuditItem(AuditKind.CANCELLED, actor, None,
                         {"reason": reason, "calls": [e.tool_call_id for e in updates],
                          **({"outcome_unknown": unknown} if unknown else {})})],
    )


async def expire_due(txn: ThreadTxn) -> bool:
    """Escalate review calls past ``escalate_at`` and resolve those past their deadline, in
    every review request of the thread (one per call with ``interrupt_mode="per_call"``), in
    one commit. Returns True if anything changed."""
    now = txn.now()
    journal: list[JournalEntry] = []
    audit: list[AuditItem] = []
    pending: list[Interrupt | None] = list(txn.thread.pending)
    for at, review in enumerate(txn.thread.pending):
        if review.kind != "review" or review.path is not None:
            continue
        left = _apply_deadlines(txn, review, now, journal, audit)
        if left is not None:
            pending[at] = replaced(review, {"value": request_value(left)}) if left else None
    if not audit:
        return False
    await txn.commit(journal=journal, audit=audit,
                     pending=[i for i in pending if i is not None], hold_lease=False)
    return True


def _apply_deadlines(txn: ThreadTxn, review: Interrupt, now: datetime,
                     journal: list[JournalEntry], audit: list[AuditItem],
                     ) -> list[PendingCall] | None:
    """Escalate and expire what is due in one review request (its journal entries and audit
    rows added to ``journal`` and ``audit``): the calls left pending, or None when nothing
    was due."""
    calls = review_calls(review)
    due = [c for c in calls if c.config.expires_at is not None and c.config.expires_at <= now]
    escalate = [c for c in calls if c not in due and c.config.escalate_at is not None
                and c.config.escalated_at is None and c.config.escalate_at <= now]
    if not due and not escalate:
        return None
    if escalate:
        calls = [_escalated(c, now) if c in escalate else c for c in calls]
        roles = sorted({r for c in escalate for r in (c.config.escalate_to or [])})
        audit.append(AuditItem(AuditKind.ESCALATED, "system:escalation", None, {
            "interrupt_id": review.id, "roles": roles,
            "calls": [c.request.tool_call_id for c in escalate]}))
    for c in due:
        e = txn.snapshot.journal[c.request.tool_call_id]
        msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="error",
                          content=expired_text(e.name, e.tool_call_id), decision="expire")
        journal.append(entry_with(
            e, state=CallState.EXPIRED, result=msg, decided_by="system:expiry",
            decision=DecisionRecord(type="reject", message="no reviewer decided in time"),
            updated_at=now))
        audit.append(AuditItem(AuditKind.EXPIRED, "system:expiry", e.tool_call_id, {
            "interrupt_id": review.id, "name": e.name, "args": e.args,
            "expires_at": c.config.expires_at, "on_expire": "reject"}))
    due_ids = {c.request.tool_call_id for c in due}
    return [c for c in calls if c.request.tool_call_id not in due_ids]


async def _cancel_children(txn: ThreadTxn, deps: RunDeps, reason: str | None,
                           reviewer: Reviewer | None) -> None:
    """Cancel the sub-agent threads the open turn waits for. The thread is taken first (a
    crash in between leaves it to recovery, which reads the children's outcome); a child that
    another process advances right now makes the cancel fail with nothing changed here."""
    waiting = [e for e in txn.snapshot.journal.values()
               if e.state == CallState.WAITING and e.child_thread is not None]
    if not waiting:
        return
    for e in waiting:  # none may be advanced elsewhere: then nothing is cancelled
        if e.child_thread is not None and (busy := await txn.busy_elsewhere(e.child_thread)):
            raise busy
    previous = txn.thread.status
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
        check_revoke(reviewer, facts_of(txn.thread), policy)
    actor = actor_of(reviewer)
    rules = [r for r in txn.thread.remembered if r.tool_name != tool_name]
    if len(rules) == len(txn.thread.remembered):
        return False
    await txn.commit(remembered=rules, hold_lease=txn.thread.status == "running",
                     audit=[AuditItem(AuditKind.RULE_REVOKED, actor, None,
                                      {"tool_name": tool_name, "scope": "thread"})])
    return True
