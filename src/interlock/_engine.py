"""The run engine: one async implementation of the agent loop, driven by the stored journal.

Every step is committed before the next one starts (compare-and-set on the thread version):

1. model turn: the assistant message, one ``proposed`` journal row per tool call;
2. ``after_model`` hooks: each call becomes ``pending_review`` / ``approved`` /
   ``auto_approved`` / ``rejected``; gated calls form one review interrupt;
3. each runnable call: ``running`` is committed *before* the tool is called, the result is
   committed *with* ``succeeded`` / ``failed``;
4. when every call of the turn has a result, the tool messages are appended in call order.

Resuming, recovering and streaming all re-enter the same loop; finished steps are never redone.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from inspect import isawaitable
from typing import TYPE_CHECKING, Any

from .audit import GENESIS, make_record
from .decisions import (
    Approve,
    Edit,
    PendingCall,
    Reject,
    ResolvedDecision,
    Respond,
    Reviewer,
    resolve_decisions,
)
from .errors import (
    InterlockError,
    InterruptConflict,
    InvalidDecision,
    NoPendingInterrupt,
    RunLimitExceeded,
    StaleInterrupt,
    ThreadBusy,
    ThreadInterrupted,
    ThreadNotFound,
)
from .events import (
    Event,
    InterruptRaised,
    ModelTextDelta,
    ToolCallProposed,
    ToolFinished,
    ToolStarted,
)
from .hitl import ActionRequest, HITLRequest, ReviewConfig
from .interrupts import Interrupt, PauseRun, enter_scope, exit_scope
from .leases import owner_alive
from .messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from .middleware import (
    AutoApproveMark,
    Mark,
    ModelTurn,
    RejectMark,
    ReviewMark,
    ToolCallHandler,
    ToolCallRequest,
    mark_from_json,
)
from .result import RunResult
from .storage.base import (
    FINAL_STATES,
    RESOLVED_KEPT,
    RUNNABLE_STATES,
    CallState,
    Commit,
    JournalEntry,
    RememberedApproval,
    ThreadRecord,
    ThreadSnapshot,
    VersionConflict,
)
from .tools import ArgumentError, ToolContext, result_to_text

if TYPE_CHECKING:
    from .agent import Agent

Sink = Callable[[Event], Awaitable[None]]
AuditItem = tuple[str, str, str | None, dict[str, Any]]  # kind, actor, tool_call_id, data

SYSTEM = "system"


def reject_text(name: str, call_id: str, message: str | None) -> str:
    text = (
        f"The user rejected the tool call `{name}` (id {call_id}). The tool was not executed. "
        f"Do not retry it unless the user asks."
    )
    if message:
        text += f" Reason: {message}"
    return text


def edit_notice(name: str, args: dict[str, Any]) -> str:
    return (
        f"Note: a reviewer changed this tool call before it ran. Your original call is kept in "
        f"the conversation as you made it; what actually ran was `{name}` with arguments "
        f"{json.dumps(args, ensure_ascii=False)}. This change was intentional; do not repeat "
        f"your original call.\n\nTool result:\n"
    )


def cancel_text(name: str, call_id: str, reason: str | None) -> str:
    text = f"The tool call `{name}` (id {call_id}) was cancelled by a reviewer and did not run."
    return text + (f" Reason: {reason}" if reason else "")


def expired_text(name: str, call_id: str) -> str:
    return (
        f"No reviewer decided in time on the tool call `{name}` (id {call_id}); it was "
        f"rejected and did not run."
    )


UNKNOWN_OUTCOME = "outcome unknown: the process stopped while this call ran"


def unknown_reject_text(name: str, call_id: str, message: str | None) -> str:
    """Result of a call whose outcome is unknown and that a reviewer chose not to retry."""
    text = (
        f"The tool call `{name}` (id {call_id}) was interrupted while it ran; its outcome is "
        f"unknown (it may or may not have taken effect). A reviewer decided not to run it "
        f"again. Do not retry it unless the user asks."
    )
    return text + (f" Reason: {message}" if message else "")


def digest(value: Any) -> str:
    """SHA-256 of a value's canonical JSON: audit rows name big payloads by their digest
    instead of copying them (the journal and the messages hold the payloads)."""
    canon = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                       default=str)
    return hashlib.sha256(canon.encode()).hexdigest()


RESULT_PREVIEW = 300
"""Characters of a tool result copied into its ``tool_finished`` audit row."""


def idempotency_key(thread_id: str, tool_call_id: str) -> str:
    return hashlib.sha256(f"{thread_id}\x00{tool_call_id}".encode()).hexdigest()[:32]


def public_interrupt(i: Interrupt) -> Interrupt:
    """Interrupt with a typed value (``HITLRequest`` for review interrupts)."""
    if i.kind == "review" and isinstance(i.value, dict):
        return i.model_copy(update={"value": HITLRequest.model_validate(i.value)})
    return i


@dataclass
class ResumeSpec:
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


class Run:
    """One invocation on one thread."""

    def __init__(self, agent: Agent, thread_id: str, sink: Sink | None = None) -> None:
        self.agent = agent
        self.store = agent.checkpointer
        self.thread_id = thread_id
        self.sink = sink
        self.snap: ThreadSnapshot | None = None
        self.model_calls = 0
        self._conflict: Callable[[], InterlockError] = self._busy
        self._stored_version: int | None = None
        """Version of the thread row in the store (None: not created yet)."""
        self._staged_messages: list[Message] = []
        self._staged_journal: dict[str, JournalEntry] = {}
        self._staged_audit: list[AuditItem] = []
        self.on_accepted: Callable[[], None] | None = None
        """Called once the new input or the decisions are durably stored, before the loop
        continues (the review server answers the HTTP request at that point)."""

    def _accepted(self) -> None:
        if self.on_accepted is not None:
            self.on_accepted()

    # ------------------------------------------------------------------ basics

    def _busy(self) -> InterlockError:
        return ThreadBusy(self.thread_id, "another writer")

    @property
    def s(self) -> ThreadSnapshot:
        assert self.snap is not None
        return self.snap

    @property
    def t(self) -> ThreadRecord:
        return self.s.thread

    def now(self) -> datetime:
        return self.agent.clock()

    async def emit(self, event: Event) -> None:
        if self.sink is not None:
            await self.sink(event)

    def stage(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        **updates: Any,
    ) -> None:
        """Apply a change to the in-memory thread; it is stored by the next :meth:`flush`.

        Only steps that nobody has been told about yet are staged (the model's reply before its
        calls are classified, a new message before the run answers): a crash loses them, and
        the next run simply redoes them.
        """
        s = self.s
        t = s.thread
        new = t.model_copy(update={**updates, "message_count": t.message_count + len(messages)})
        s.thread = new
        s.messages.extend(messages)
        self._staged_messages.extend(messages)
        if new.turn != t.turn:
            s.journal = {}
        for e in journal:
            self._staged_journal[e.tool_call_id] = e
            if e.turn == new.turn:
                s.journal[e.tool_call_id] = e
        self._staged_audit.extend(audit)

    async def flush(self, *, hold_lease: bool = True) -> None:
        """Store everything staged in one atomic compare-and-set commit."""
        t = self.t
        now = self.now()
        seq, prev = t.audit_seq, t.audit_hash or GENESIS
        records = []
        for kind, actor, call_id, data in self._staged_audit:
            seq += 1
            rec = make_record(thread_id=t.thread_id, seq=seq, prev_hash=prev, ts=now, kind=kind,
                              actor=actor, tool_call_id=call_id, data=data)
            prev = rec.hash
            records.append(rec)
        lease = (
            {"lease_owner": self.agent.owner, "lease_until": now + self.agent.lease}
            if hold_lease else {"lease_owner": None, "lease_until": None}
        )
        expected = self._stored_version
        new = t.model_copy(update={
            **lease, "version": (expected or 0) + 1, "updated_at": now,
            "audit_seq": seq, "audit_hash": prev,
        })
        try:
            await self.store.commit(
                Commit(thread=new, messages=self._staged_messages,
                       journal=list(self._staged_journal.values()), audit=records),
                expected_version=expected,
            )
        except VersionConflict:
            raise self._conflict() from None
        self.s.thread = new
        self._stored_version = new.version
        self._staged_messages = []
        self._staged_journal = {}
        self._staged_audit = []

    async def commit(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        hold_lease: bool = True,
        **updates: Any,
    ) -> None:
        """Stage a change and store it (with anything staged before) in one commit."""
        self.stage(messages=messages, journal=journal, audit=audit, **updates)
        await self.flush(hold_lease=hold_lease)

    # ------------------------------------------------------------------ loading

    async def load(self, *, create: bool = False) -> bool:
        """Load the thread. Returns True when it needs recovery (crashed or failed mid-run)."""
        snap = await self.store.load(self.thread_id)
        if snap is None:
            if not create:
                raise ThreadNotFound(self.thread_id)
            now = self.now()
            self.snap = ThreadSnapshot(
                thread=ThreadRecord(thread_id=self.thread_id, created_at=now, updated_at=now,
                                    version=0),
                messages=[],
                journal={},
            )
            return False
        self.snap = snap
        self._stored_version = snap.thread.version
        t = snap.thread
        if t.status == "running":
            owner = t.lease_owner
            if owner and owner_alive(owner, t.lease_until, self.now(), self.thread_id):
                raise ThreadBusy(self.thread_id, owner)
            return True
        return t.status == "failed" and t.turn is not None

    # ------------------------------------------------------------------ entry points

    async def start(self, new_messages: list[Message]) -> RunResult:
        needs_recovery = await self.load(create=True)
        preview = next(
            (m.content[:200] for m in reversed(new_messages) if isinstance(m, UserMessage)), ""
        )
        if self._stored_version is None:
            return await self._accept_input(new_messages, preview)
        if needs_recovery:
            result = await self.recover_loaded()
            if result.interrupted:
                raise ThreadInterrupted(self.thread_id, [i.id for i in self.t.pending])
        await self.expire_and_continue()
        if self.t.pending:
            raise ThreadInterrupted(self.thread_id, [i.id for i in self.t.pending])
        return await self._accept_input(new_messages, preview or self.t.preview)

    async def _accept_input(self, new_messages: list[Message], preview: str) -> RunResult:
        """Take new input. It is stored before anyone is told it was accepted: right away when
        a caller waits for that (``on_accepted``, the review server), otherwise together with
        the model's first reply (one commit less; if the process dies in between, the caller
        never got an answer and simply sends the message again)."""
        self.stage(messages=new_messages, status="running", error=None, preview=preview)
        if self.on_accepted is not None:
            self._conflict = lambda: ThreadBusy(self.thread_id, "another writer")
            await self.flush()
            self._accepted()
        return await self.loop()

    async def recover(self) -> RunResult:
        """Continue a thread that stopped mid-run (crash, failed model call, ...)."""
        needs = await self.load()
        if needs:
            return await self.recover_loaded()
        if (continued := await self.expire_and_continue()) is not None:
            return continued
        if self.t.pending:
            return await self.finish_interrupted()
        if self.t.status == "failed":
            await self.commit(status="running", error=None)
            return await self.loop()
        return self.result_now()

    async def recover_loaded(self) -> RunResult:
        unknown = [e for e in self.s.journal.values() if e.state == CallState.RUNNING]
        updates = [
            e.model_copy(update={"state": CallState.UNKNOWN, "updated_at": self.now()})
            for e in unknown
        ]
        await self.commit(
            journal=updates, status="running", error=None,
            audit=[("outcome_unknown", SYSTEM, e.tool_call_id,
                    {"name": e.exec_name or e.name, "attempts": e.attempts}) for e in unknown]
            + [("recovered", SYSTEM, None, {"previous_owner": self.t.lease_owner})],
        )
        return await self.loop()

    def _raise_if_answered(self, spec: ResumeSpec) -> None:
        """A resume aimed at an interrupt that a resume already answered lost the race."""
        if self.snap is None:
            return
        targets = [spec.interrupt_id] if spec.interrupt_id else []
        if spec.has_command and isinstance(spec.command, dict):
            targets += [k for k in spec.command if isinstance(k, str)]
        answered = next((i for i in targets if i in self.t.resolved), None)
        if answered is not None:
            raise InterruptConflict(self.thread_id, answered)

    async def resume(self, spec: ResumeSpec) -> RunResult:
        try:
            needs = await self.load()
        except ThreadBusy:
            self._raise_if_answered(spec)  # the winner is still running: the id tells us
            raise
        self._raise_if_answered(spec)
        before = {i.id for i in self.t.pending}
        if needs:
            await self.recover_loaded()
            still = [i for i in self.t.pending if i.id in before]
            if not still:
                # recovery replaced the request this resume answers (e.g. it now also asks
                # about a call whose outcome is unknown): the caller must look at it again
                if spec.interrupt_id or (before and self.t.pending):
                    raise StaleInterrupt(self.thread_id, spec.interrupt_id or next(iter(before)),
                                         [i.id for i in self.t.pending])
                raise NoPendingInterrupt(self.thread_id)
        if await self.expire_and_continue() is not None:
            # every pending call expired and the run went on: this answer came too late
            raise StaleInterrupt(self.thread_id, spec.interrupt_id or next(iter(before), ""),
                                 [i.id for i in self.t.pending])
        pending = self.t.pending
        if spec.has_command and pending:
            self._interpret_command(spec, pending)
        if not pending:
            if spec.interrupt_id:
                raise StaleInterrupt(self.thread_id, spec.interrupt_id, [])
            raise NoPendingInterrupt(self.thread_id)
        ids = [i.id for i in pending]
        if spec.interrupt_id is not None and spec.interrupt_id not in ids:
            raise StaleInterrupt(self.thread_id, spec.interrupt_id, ids)
        journal: list[JournalEntry] = []
        audit: list[AuditItem] = []
        updates: dict[str, Any] = {}
        remaining = list(pending)
        hooks = self.t.hooks
        remembered = list(self.t.remembered)

        answers: dict[str, Any] = dict(spec.values or {})
        if spec.decisions is not None:
            review = self._target(pending, "review", spec.interrupt_id)
            new_review = self._apply_decisions(review, spec, journal, audit, remembered)
            remaining = [i for i in remaining if i.id != review.id]
            if new_review is not None:
                remaining.append(new_review)
        elif spec.has_value:
            target = self._target(pending, "input", spec.interrupt_id)
            answers[target.id] = spec.value
        elif not answers:
            raise InvalidDecision(self.thread_id, "resume needs decisions=... or value=....")
        for iid, value in answers.items():
            intr = next((i for i in pending if i.id == iid), None)
            if intr is None:
                raise StaleInterrupt(self.thread_id, iid, ids)
            if intr.kind != "input":
                raise InvalidDecision(
                    self.thread_id, f"interrupt {iid!r} is a review request; answer it with "
                    f"decisions=[...], not a value."
                )
            remaining = [i for i in remaining if i.id != iid]
            if intr.tool_call_id is not None:
                e = self.s.journal[intr.tool_call_id]
                journal.append(e.model_copy(update={
                    "state": e.paused_from or CallState.APPROVED,
                    "answers": [*e.answers, value], "paused_from": None,
                    "updated_at": self.now()}))
            else:
                assert hooks is not None
                hooks = {**hooks, "answers": [*hooks.get("answers", []), value]}
                updates["hooks"] = hooks
            audit.append(("input_answered", spec.actor, intr.tool_call_id,
                          {"interrupt_id": iid, "value": value}))
        self._conflict = lambda: InterruptConflict(self.thread_id, spec.interrupt_id or ids[0])
        left = {i.id for i in remaining}
        resolved = [*self.t.resolved, *(i.id for i in pending if i.id not in left)]
        await self.commit(journal=journal, audit=audit, pending=remaining, status="running",
                          remembered=remembered, resolved=resolved[-RESOLVED_KEPT:], **updates)
        self._conflict = self._busy
        self._accepted()
        return await self.loop()

    def _interpret_command(self, spec: ResumeSpec, pending: list[Interrupt]) -> None:
        """``Command(resume=...)``: decisions, ``{interrupt_id: answer}`` or a plain answer."""
        raw = spec.command
        ids = {i.id: i for i in pending}
        if isinstance(raw, dict) and raw and set(raw) <= set(ids):
            values: dict[str, Any] = {}
            for iid, answer in raw.items():
                if ids[iid].kind == "review":
                    spec.decisions, spec.interrupt_id = answer, iid
                else:
                    values[iid] = answer
            spec.values = values
        elif (isinstance(raw, dict) and "decisions" in raw) or isinstance(raw, list):
            spec.decisions = raw
        else:
            spec.value, spec.has_value = raw, True

    def _target(self, pending: list[Interrupt], kind: str, iid: str | None) -> Interrupt:
        if iid is not None:
            intr = next(i for i in pending if i.id == iid)
            if intr.kind != kind:
                what = "decisions=[...]" if intr.kind == "review" else "value=..."
                raise InvalidDecision(
                    self.thread_id, f"interrupt {iid!r} is a {intr.kind!r} interrupt; answer it "
                    f"with {what}."
                )
            return intr
        matches = [i for i in pending if i.kind == kind]
        if not matches:
            other = "value=... (the thread waits for an answer to interrupt(...))" if kind == \
                "review" else "decisions=[...] (the thread waits for a review)"
            raise InvalidDecision(self.thread_id, f"there is no pending {kind!r} interrupt; "
                                  f"resume with {other}.")
        if len(matches) > 1:
            raise InvalidDecision(
                self.thread_id, f"{len(matches)} {kind!r} interrupts are pending "
                f"({', '.join(i.id for i in matches)}); pass interrupt_id=... to choose one."
            )
        return matches[0]

    def _pending_calls(self, review: Interrupt) -> list[PendingCall]:
        req = HITLRequest.model_validate(review.value)
        return [PendingCall(a, c) for a, c in
                zip(req.action_requests, req.review_configs, strict=True)]

    def _apply_decisions(
        self,
        review: Interrupt,
        spec: ResumeSpec,
        journal: list[JournalEntry],
        audit: list[AuditItem],
        remembered: list[RememberedApproval],
    ) -> Interrupt | None:
        calls = self._pending_calls(review)
        decided = {
            e.tool_call_id: e.state.value for e in self.s.journal.values()
            if e.state != CallState.PENDING_REVIEW
        }
        resolved = resolve_decisions(
            self.thread_id, calls, spec.decisions, tools=self.agent.tools_by_name,
            allows_approve=self.agent.allows_approve, reviewer=spec.reviewer, decided=decided,
        )
        now = self.now()
        done: set[str] = set()
        for r in resolved:
            cid = r.call.request.tool_call_id
            done.add(cid)
            e = self.s.journal[cid]
            journal.append(self._decided_entry(e, r, spec.actor, now))
            d = r.decision
            audit.append(("decision", spec.actor, cid, {
                "interrupt_id": review.id, "type": d.type, "name": e.name, "args": e.args,
                "edited_action": (
                    {"name": r.exec_name, "args": r.exec_args} if isinstance(d, Edit) else None
                ),
                "message": getattr(d, "message", None),
                "remember": getattr(d, "remember", None),
            }))
            if isinstance(d, Approve) and d.remember == "thread" and not any(
                x.tool_name == e.name for x in remembered
            ):
                remembered.append(RememberedApproval(
                    tool_name=e.name, created_at=now, created_by=spec.actor, tool_call_id=cid))
                audit.append(("rule_created", spec.actor, cid,
                              {"tool_name": e.name, "scope": "thread"}))
        left = [c for c in calls if c.request.tool_call_id not in done]
        if not left:
            return None
        req = HITLRequest(action_requests=[c.request for c in left],
                          review_configs=[c.config for c in left])
        return review.model_copy(update={"value": req.to_json()})

    def _decided_entry(
        self, e: JournalEntry, r: ResolvedDecision, actor: str, now: datetime
    ) -> JournalEntry:
        d = r.decision
        base: dict[str, Any] = {
            "decision": d.model_dump(mode="json", exclude_none=True), "decided_by": actor,
            "updated_at": now,
        }
        if isinstance(d, Approve):
            # approving a retry of an edited call (outcome unknown) still runs it as edited
            edited = (r.exec_name, r.exec_args) != (e.name, e.args)
            return e.model_copy(update={
                **base, "state": CallState.EDITED if edited else CallState.APPROVED,
                "exec_name": r.exec_name, "exec_args": r.exec_args})
        if isinstance(d, Edit):
            return e.model_copy(update={**base, "state": CallState.EDITED,
                                        "exec_name": r.exec_name, "exec_args": r.exec_args})
        if isinstance(d, Reject):
            unknown = (e.review or {}).get("reason") == "outcome_unknown"
            text = unknown_reject_text if unknown else reject_text
            msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="error",
                              content=text(e.name, e.tool_call_id, d.message),
                              decision="reject")
            return e.model_copy(update={**base, "state": CallState.REJECTED, "result": msg})
        assert isinstance(d, Respond)
        msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="success",
                          content=d.message, decision="respond")
        return e.model_copy(update={**base, "state": CallState.RESPONDED, "result": msg})

    async def cancel(self, reason: str | None, actor: str) -> RunResult:
        await self.load()
        t = self.t
        if not t.pending and t.turn is None:
            raise NoPendingInterrupt(self.thread_id)
        now = self.now()
        updates: list[JournalEntry] = []
        results: list[ToolMessage] = []
        if t.turn is not None:
            turn_msg = self.s.messages[t.turn]
            assert isinstance(turn_msg, AssistantMessage)
            for call in turn_msg.tool_calls:
                e = self.s.journal.get(call.id)
                if e is not None and e.state in FINAL_STATES and e.result is not None:
                    results.append(e.result)
                    continue
                msg = ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                                  content=cancel_text(call.name, call.id, reason),
                                  decision="cancel")
                results.append(msg)
                if e is not None:
                    updates.append(e.model_copy(update={
                        "state": CallState.CANCELLED, "result": msg, "decided_by": actor,
                        "updated_at": now}))
        await self.commit(
            messages=results, journal=updates, turn=None, hooks=None, pending=[], status="idle",
            hold_lease=False,
            audit=[("cancelled", actor, None, {"reason": reason,
                                               "calls": [e.tool_call_id for e in updates]})],
        )
        return self.result_now()

    # ------------------------------------------------------------------ expiry

    async def expire_due(self) -> bool:
        """Resolve review calls past their deadline. Returns True if any expired."""
        now = self.now()
        review = next((i for i in self.t.pending if i.kind == "review"), None)
        if review is None:
            return False
        calls = self._pending_calls(review)
        due = [c for c in calls if c.config.expires_at is not None and c.config.expires_at <= now]
        if not due:
            return False
        journal = []
        audit: list[AuditItem] = []
        for c in due:
            e = self.s.journal[c.request.tool_call_id]
            msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.name, status="error",
                              content=expired_text(e.name, e.tool_call_id), decision="expire")
            journal.append(e.model_copy(update={
                "state": CallState.EXPIRED, "result": msg, "decided_by": "system:expiry",
                "decision": {"type": "reject", "message": "no reviewer decided in time"},
                "updated_at": now}))
            audit.append(("expired", "system:expiry", e.tool_call_id, {
                "interrupt_id": review.id, "name": e.name, "args": e.args,
                "expires_at": c.config.expires_at, "on_expire": "reject"}))
        left = [c for c in calls if c not in due]
        pending = [i for i in self.t.pending if i.id != review.id]
        if left:
            req = HITLRequest(action_requests=[c.request for c in left],
                              review_configs=[c.config for c in left])
            pending.append(review.model_copy(update={"value": req.to_json()}))
        await self.commit(journal=journal, audit=audit, pending=pending, hold_lease=False)
        return True

    async def expire_and_continue(self) -> RunResult | None:
        """Apply deadlines when the thread is touched. If that resolved every pending call,
        the run continues first (the model gets the expiry results, the turn is closed in
        order); returns that run's result, else None."""
        if not await self.expire_due() or self.t.pending:
            return None
        await self.commit(status="running")
        return await self.loop()

    # ------------------------------------------------------------------ the loop

    def result_now(self) -> RunResult:
        t = self.t
        messages = list(self.s.messages)
        if t.pending:
            return RunResult(self.thread_id, "interrupted", messages,
                             [public_interrupt(i) for i in t.pending])
        last = messages[-1] if messages else None
        output = last.content if isinstance(last, AssistantMessage) and not last.tool_calls \
            else None
        return RunResult(self.thread_id, "completed", messages, [], output)

    async def finish_interrupted(self) -> RunResult:
        if self.t.status != "interrupted" or self.t.lease_owner is not None:
            await self.commit(status="interrupted", hold_lease=False)
        return self.result_now()

    async def loop(self) -> RunResult:
        try:
            return await self._loop()
        except BaseException as exc:
            if isinstance(exc, InterlockError) and isinstance(exc, ThreadBusy | InterruptConflict):
                raise
            await self._mark_failed(exc)
            raise

    async def _mark_failed(self, exc: BaseException) -> None:
        if self.snap is None or (self._stored_version is None and not self._staged_messages):
            return
        try:
            await self.commit(status="failed", error=f"{type(exc).__name__}: {exc}"[:2000],
                              hold_lease=False)
        except Exception:  # the original error matters more; recovery handles the rest
            return

    async def _loop(self) -> RunResult:
        while True:
            t = self.t
            if t.turn is not None:
                if await self.advance_turn():
                    return await self.finish_interrupted()
                continue
            last = self.s.messages[-1] if self.s.messages else None
            if isinstance(last, AssistantMessage) and not last.tool_calls:
                if t.status != "completed" or t.lease_owner is not None:
                    await self.commit(status="completed", hold_lease=False)
                return self.result_now()
            if self.model_calls >= self.agent.max_turns:
                raise RunLimitExceeded(
                    f"Thread {self.thread_id!r}: the model was called {self.model_calls} times "
                    f"in one run without a final answer (max_turns={self.agent.max_turns}). "
                    f"Raise Agent(max_turns=...) or check the model's tool use."
                )
            await self.call_model()

    async def call_model(self) -> None:
        self.model_calls += 1
        history: list[Message] = list(self.s.messages)
        if self.agent.system_prompt:
            history.insert(0, SystemMessage(content=self.agent.system_prompt))
        tools = self.agent.tools
        model = self.agent.model
        if self.sink is not None:
            message: AssistantMessage | None = None
            async for piece in model.stream(history, tools):
                if isinstance(piece, str):
                    if piece:
                        await self.emit(ModelTextDelta(self.thread_id, piece))
                else:
                    message = piece
            if message is None:
                raise InterlockError(
                    f"The model's stream ended without an assistant message (thread "
                    f"{self.thread_id!r}); a Model.stream() must end with an AssistantMessage."
                )
        else:
            message = await model.generate(history, tools)
        message = self._unique_ids(message)
        seq = self.t.message_count
        now = self.now()
        if not message.tool_calls:
            await self.commit(messages=[message], status="completed", hold_lease=False)
            return
        entries = [
            JournalEntry(tool_call_id=c.id, turn=seq, position=i, name=c.name, args=c.args,
                         state=CallState.PROPOSED, updated_at=now)
            for i, c in enumerate(message.tool_calls)
        ]
        # stored together with the hooks' classification (one commit): until then nobody has
        # seen this reply, and a crash just means the model is asked again
        self.stage(messages=[message], journal=entries, turn=seq,
                   hooks={"index": 0, "answers": [], "marks": {}, "done": False})
        for c in message.tool_calls:
            await self.emit(ToolCallProposed(self.thread_id, c))

    def _unique_ids(self, message: AssistantMessage) -> AssistantMessage:
        if not message.tool_calls:
            return message
        seen = {c.id for m in self.s.messages if isinstance(m, AssistantMessage)
                for c in m.tool_calls}
        calls = []
        changed = False
        for i, c in enumerate(message.tool_calls):
            cid = c.id or f"call_{self.t.message_count}_{i}"
            if cid in seen:
                n = 2
                while f"{cid}_{n}" in seen:
                    n += 1
                cid = f"{cid}_{n}"
            if cid != c.id:
                changed = True
                c = c.model_copy(update={"id": cid})
            seen.add(cid)
            calls.append(c)
        return message.model_copy(update={"tool_calls": calls}) if changed else message

    # ------------------------------------------------------------------ one turn

    def _turn_message(self) -> AssistantMessage:
        assert self.t.turn is not None
        msg = self.s.messages[self.t.turn]
        assert isinstance(msg, AssistantMessage)
        return msg

    async def advance_turn(self) -> bool:
        """Move the open turn forward. Returns True when it must wait for someone."""
        message = self._turn_message()
        hooks = self.t.hooks
        if hooks is not None and not hooks.get("done") and await self.run_hooks(message, hooks):
            return True
        await self.handle_unknown(message)
        for call in message.tool_calls:
            e = self.s.journal.get(call.id)
            if e is not None and e.state in RUNNABLE_STATES:
                await self.execute(e)
        if self.t.turn is None:  # the last call's result closed the turn (see execute)
            return False
        entries = [self.s.journal[c.id] for c in message.tool_calls]
        if any(e.state not in FINAL_STATES for e in entries):
            return True
        results = [e.result for e in entries]
        assert all(r is not None for r in results)
        await self.commit(messages=results, turn=None, hooks=None)  # type: ignore[arg-type]
        return False

    async def run_hooks(self, message: AssistantMessage, hooks: dict[str, Any]) -> bool:
        index = int(hooks.get("index", 0))
        answers = list(hooks.get("answers", []))
        marks: dict[str, Mark] = {k: mark_from_json(v) for k, v in hooks.get("marks", {}).items()}
        turn = ModelTurn(thread_id=self.thread_id, message=message, messages=self.s.messages,
                         tools=self.agent.tools_by_name, remembered_rules=self.t.remembered,
                         marks=marks)
        middleware = self.agent.middleware
        while index < len(middleware):
            mw = middleware[index]
            hook = getattr(mw, "after_model", None)
            if hook is None:
                index += 1
                answers = []
                continue
            before = dict(turn.marks)
            turn.current_middleware = _mw_name(mw)
            token = enter_scope(answers)
            try:
                out = hook(turn)
                if isawaitable(out):
                    await out
            except PauseRun as pause:
                intr = Interrupt(id=uuid.uuid4().hex, kind="input", value=pause.value,
                                 created_at=self.now(), origin=f"after_model:{_mw_name(mw)}")
                await self.commit(
                    pending=[*self.t.pending, intr], status="interrupted", hold_lease=False,
                    hooks={"index": index, "answers": answers, "done": False,
                           "marks": {k: m.to_json() for k, m in before.items()}},
                    audit=[("input_requested", SYSTEM, None,
                            {"interrupt_id": intr.id, "origin": intr.origin,
                             "value": pause.value})],
                )
                await self.emit(InterruptRaised(self.thread_id, public_interrupt(intr)))
                return True
            finally:
                exit_scope(token)
            index += 1
            answers = []
        await self.classify(message, turn.marks)
        return False

    async def classify(self, message: AssistantMessage, marks: dict[str, Mark]) -> None:
        now = self.now()
        entries: list[JournalEntry] = []
        audit: list[AuditItem] = []
        reviews: list[tuple[ActionRequest, ReviewConfig]] = []
        for call in message.tool_calls:
            e = self.s.journal[call.id]
            mark = marks.get(call.id)
            base = {"updated_at": now}
            if isinstance(mark, RejectMark):
                msg = ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                                  content=mark.message, decision="reject")
                entries.append(e.model_copy(update={
                    **base, "state": CallState.REJECTED, "result": msg,
                    "decided_by": f"middleware:{mark.by}",
                    "decision": {"type": "reject", "message": mark.message}}))
                audit.append(("rejected_by_policy", f"middleware:{mark.by}", call.id,
                              {"name": call.name, "args": call.args, "message": mark.message}))
            elif isinstance(mark, ReviewMark):
                expires_at = now + mark.expires_after if mark.expires_after else None
                review = {**mark.to_json(), "expires_at": expires_at.isoformat()
                          if expires_at else None}
                review.pop("description", None)  # kept in the request; often repeats the args
                entries.append(e.model_copy(update={
                    **base, "state": CallState.PENDING_REVIEW, "review": review}))
                reviews.append((
                    ActionRequest(tool_call_id=call.id, name=call.name, args=call.args,
                                  description=mark.description, reason=mark.reason),
                    ReviewConfig(action_name=call.name,
                                 allowed_decisions=list(mark.allowed_decisions),
                                 args_schema=self._schema(call.name),
                                 reviewers=list(mark.reviewers) if mark.reviewers is not None
                                 else None,
                                 expires_at=expires_at),
                ))
            elif call.name not in self.agent.tools_by_name:
                msg = ToolMessage(
                    tool_call_id=call.id, name=call.name, status="error",
                    content=f"Tool {call.name!r} does not exist. Available tools: "
                    f"{', '.join(sorted(self.agent.tools_by_name))}.")
                entries.append(e.model_copy(update={**base, "state": CallState.FAILED,
                                                    "result": msg}))
            elif isinstance(mark, AutoApproveMark):
                entries.append(e.model_copy(update={
                    **base, "state": CallState.AUTO_APPROVED, "exec_name": call.name,
                    "exec_args": call.args, "decided_by": f"rule:{mark.rule}"}))
                audit.append(("auto_approved", f"rule:{mark.rule}", call.id,
                              {"name": call.name, "args": call.args, "rule": mark.rule,
                               "middleware": mark.by}))
            else:
                entries.append(e.model_copy(update={
                    **base, "state": CallState.APPROVED, "exec_name": call.name,
                    "exec_args": call.args, "decided_by": "policy"}))
        pending = list(self.t.pending)
        new_intr = self._merge_review(pending, reviews)
        if new_intr is not None:
            audit.append(("request_raised", SYSTEM, None, {
                "interrupt_id": new_intr.id,
                "calls": [{"tool_call_id": a.tool_call_id, "name": a.name,
                           "args_sha256": digest(a.args),
                           "allowed_decisions": c.allowed_decisions} for a, c in reviews]}))
            pending = [i for i in pending if i.kind != "review"] + [new_intr]
        # When nothing of the turn can run before someone answers, the pause is stored in
        # this same commit (finish_interrupted then has nothing left to write).
        turn_now = {**self.s.journal, **{e.tool_call_id: e for e in entries}}
        pause = new_intr is not None and not any(
            e.state in RUNNABLE_STATES or e.state == CallState.UNKNOWN
            for e in turn_now.values()
        )
        extra: dict[str, Any] = {"status": "interrupted", "hold_lease": False} if pause else {}
        await self.commit(journal=entries, audit=audit, pending=pending,
                          hooks={"done": True}, **extra)
        if new_intr is not None:
            await self.emit(InterruptRaised(self.thread_id, public_interrupt(new_intr)))

    def _schema(self, name: str) -> dict[str, Any]:
        tool = self.agent.tools_by_name.get(name)
        return dict(tool.args_schema) if tool else {}

    def _merge_review(
        self, pending: list[Interrupt], reviews: list[tuple[ActionRequest, ReviewConfig]]
    ) -> Interrupt | None:
        """One review interrupt per turn: new gated calls join any that is already pending."""
        if not reviews:
            return None
        existing = next((i for i in pending if i.kind == "review"), None)
        pairs = list(reviews)
        if existing is not None:
            old = self._pending_calls(existing)
            pairs = [(c.request, c.config) for c in old] + pairs
        order = {c.id: n for n, c in enumerate(self._turn_message().tool_calls)}
        pairs.sort(key=lambda p: order.get(p[0].tool_call_id, 0))
        req = HITLRequest(action_requests=[a for a, _ in pairs],
                          review_configs=[c for _, c in pairs])
        return Interrupt(id=uuid.uuid4().hex, kind="review", value=req.to_json(),
                         created_at=self.now())

    async def handle_unknown(self, message: AssistantMessage) -> None:
        """Calls whose outcome is unknown after a crash: retry idempotent tools, ask otherwise."""
        unknown = [self.s.journal[c.id] for c in message.tool_calls
                   if self.s.journal[c.id].state == CallState.UNKNOWN]
        if not unknown:
            return
        now = self.now()
        entries: list[JournalEntry] = []
        audit: list[AuditItem] = []
        reviews: list[tuple[ActionRequest, ReviewConfig]] = []
        for e in unknown:
            tool = self.agent.tools_by_name.get(e.exec_name or e.name)
            if tool is not None and tool.idempotent:
                entries.append(e.model_copy(update={
                    "state": e.paused_from or self._runnable_state(e), "updated_at": now}))
                audit.append(("retry_idempotent", SYSTEM, e.tool_call_id,
                              {"name": tool.name, "attempts": e.attempts}))
                continue
            name = e.exec_name or e.name
            args = e.exec_args if e.exec_args is not None else e.args
            allowed: list[Any] = ["approve", "reject", "respond"]
            entries.append(e.model_copy(update={
                "state": CallState.PENDING_REVIEW, "updated_at": now,
                "review": {"kind": "review", "allowed_decisions": allowed,
                           "description": UNKNOWN_OUTCOME, "reason": "outcome_unknown"}}))
            # the reviewer decides on what actually ran (the edited call, if it was edited)
            reviews.append((
                ActionRequest(tool_call_id=e.tool_call_id, name=name, args=args,
                              description=f"{UNKNOWN_OUTCOME}. Tool: {name}\nArgs: "
                              f"{json.dumps(args, ensure_ascii=False)}\napprove = run it again, "
                              f"reject = do not run it again, respond = give the result you "
                              f"know.", reason="outcome_unknown"),
                ReviewConfig(action_name=name, allowed_decisions=allowed,
                             args_schema=self._schema(name)),
            ))
        pending = list(self.t.pending)
        new_intr = self._merge_review(pending, reviews)
        if new_intr is not None:
            audit.append(("request_raised", SYSTEM, None, {
                "interrupt_id": new_intr.id, "reason": "outcome_unknown",
                "calls": [{"tool_call_id": a.tool_call_id, "name": a.name,
                           "args_sha256": digest(a.args)} for a, _ in reviews]}))
            pending = [i for i in pending if i.kind != "review"] + [new_intr]
        await self.commit(journal=entries, audit=audit, pending=pending)
        if new_intr is not None:
            await self.emit(InterruptRaised(self.thread_id, public_interrupt(new_intr)))

    @staticmethod
    def _runnable_state(e: JournalEntry) -> CallState:
        if e.decision and e.decision.get("type") == "edit":
            return CallState.EDITED
        if e.decided_by and e.decided_by.startswith("rule:"):
            return CallState.AUTO_APPROVED
        return CallState.APPROVED

    async def execute(self, e: JournalEntry) -> None:
        name = e.exec_name or e.name
        args = e.exec_args if e.exec_args is not None else e.args
        original = ToolCall(id=e.tool_call_id, name=e.name, args=e.args)
        call = ToolCall(id=e.tool_call_id, name=name, args=args)
        edited = e.state == CallState.EDITED
        attempt = e.attempts + 1
        running = e.model_copy(update={"state": CallState.RUNNING, "attempts": attempt,
                                       "paused_from": e.state, "updated_at": self.now()})
        await self.commit(journal=[running], audit=[("tool_started", SYSTEM, e.tool_call_id, {
            "name": name, "args_sha256": digest(args), "attempt": attempt})])
        await self.emit(ToolStarted(self.thread_id, call))
        tool = self.agent.tools_by_name.get(name)
        request = ToolCallRequest(
            thread_id=self.thread_id, call=call, original=original, tool=tool,
            context=ToolContext(thread_id=self.thread_id, tool_call_id=e.tool_call_id,
                                idempotency_key=idempotency_key(self.thread_id, e.tool_call_id),
                                attempt=attempt),
        )
        token = enter_scope(e.answers)
        try:
            msg = await self.agent.tool_handler(request)
        except PauseRun as pause:
            intr = Interrupt(id=uuid.uuid4().hex, kind="input", value=pause.value,
                             created_at=self.now(), tool_call_id=e.tool_call_id, origin="tool")
            waiting = running.model_copy(update={"state": CallState.INTERRUPTED,
                                                 "paused_from": e.state,
                                                 "updated_at": self.now()})
            await self.commit(journal=[waiting], pending=[*self.t.pending, intr], audit=[
                ("input_requested", SYSTEM, e.tool_call_id,
                 {"interrupt_id": intr.id, "origin": "tool", "value": pause.value})])
            await self.emit(InterruptRaised(self.thread_id, public_interrupt(intr)))
            return
        finally:
            exit_scope(token)
        content = msg.content
        if edited:
            content = edit_notice(name, args) + content
        msg = ToolMessage(tool_call_id=e.tool_call_id, name=name, content=content,
                          status=msg.status, decision="edit" if edited else msg.decision)
        state = CallState.SUCCEEDED if msg.status == "success" else CallState.FAILED
        done = running.model_copy(update={"state": state, "result": msg, "paused_from": None,
                                          "updated_at": self.now()})
        # When this was the last open call of the turn, the tool messages are appended and the
        # turn is closed in the same commit as the result (advance_turn would do it next).
        calls = self._turn_message().tool_calls
        entries = [done if c.id == e.tool_call_id else self.s.journal[c.id] for c in calls]
        close: dict[str, Any] = {}
        if all(x.state in FINAL_STATES and x.result is not None for x in entries):
            close = {"messages": [x.result for x in entries], "turn": None, "hooks": None}
        await self.commit(journal=[done], audit=[("tool_finished", SYSTEM, e.tool_call_id, {
            "name": name, "status": msg.status, "result": msg.content[:RESULT_PREVIEW],
            "result_chars": len(msg.content), "result_sha256": digest(msg.content)})], **close)
        await self.emit(ToolFinished(self.thread_id, msg))


def _mw_name(mw: object) -> str:
    name = getattr(mw, "name", None)
    return name if isinstance(name, str) else type(mw).__name__


async def invoke_tool(request: ToolCallRequest) -> ToolMessage:
    """The innermost tool handler: validate the arguments and call the tool."""
    call = request.call
    tool = request.tool
    if tool is None:
        return ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                           content=f"Tool {call.name!r} does not exist.")
    if call.args_error is not None:
        return ToolMessage(
            tool_call_id=call.id, name=call.name, status="error",
            content=f"The arguments for tool {call.name!r} could not be parsed "
            f"({call.args_error}). The tool was not run; call it again with a JSON object.")
    try:
        value = await tool.run(call.args, request.context)
    except ArgumentError as exc:
        return ToolMessage(
            tool_call_id=call.id, name=call.name, status="error",
            content=f"Invalid arguments for tool {call.name!r}: {'; '.join(exc.errors)}. "
            f"The tool was not run; fix the arguments and call it again.")
    except Exception as exc:
        return ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                           content=f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}")
    return ToolMessage(tool_call_id=call.id, name=call.name, content=result_to_text(value))


def build_tool_handler(middleware: Sequence[object]) -> ToolCallHandler:
    """Compose ``wrap_tool_call`` hooks, the first middleware outermost."""
    handler: ToolCallHandler = invoke_tool
    for mw in reversed(middleware):
        wrap = getattr(mw, "wrap_tool_call", None)
        if wrap is None:
            continue

        def make(w: Any, nxt: ToolCallHandler, owner: object = mw) -> ToolCallHandler:
            async def h(req: ToolCallRequest) -> ToolMessage:
                out = w(req, nxt)
                result = await out if isawaitable(out) else out
                if not isinstance(result, ToolMessage):
                    raise InterlockError(
                        f"{type(owner).__name__}.wrap_tool_call returned {type(result).__name__}; "
                        f"it must return the ToolMessage from call_next(request) (or its own).")
                return result
            return h

        handler = make(wrap, handler)
    return handler

