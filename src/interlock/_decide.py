"""Applying reviewers' decisions and answers, cancelling, expiring: validated first, then
stored in one commit."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._run_base import AuditItem, ResumeSpec, RunBase
from ._texts import (
    cancel_text,
    digest,
    expired_text,
    reject_text,
    unknown_reject_text,
)
from .decisions import (
    Approve,
    Edit,
    Reject,
    ResolvedDecision,
    Respond,
    resolve_decisions,
)
from .errors import (
    InvalidDecision,
    NoPendingInterrupt,
)
from .hitl import HITLRequest
from .interrupts import Interrupt
from .messages import AssistantMessage, ToolMessage
from .result import RunResult
from .storage.base import (
    FINAL_STATES,
    CallState,
    JournalEntry,
    RememberedApproval,
)

if TYPE_CHECKING:
    pass




class DecisionSteps(RunBase):
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
            # the arguments are copied only when the reviewer changed them (before and after);
            # otherwise the row names them by digest (the messages hold them)
            row: dict[str, Any] = {"interrupt_id": review.id, "type": d.type, "name": e.name}
            if isinstance(d, Edit):
                row["args"] = e.args
                row["edited_action"] = {"name": r.exec_name, "args": r.exec_args}
            else:
                row["args_sha256"] = digest(e.args)
            for key in ("message", "remember"):
                if getattr(d, key, None) is not None:
                    row[key] = getattr(d, key)
            audit.append(("decision", spec.actor, cid, row))
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
        # what runs is stored only where it differs from what the model proposed
        run = {"exec_name": r.exec_name if r.exec_name != e.name else None,
               "exec_args": r.exec_args if r.exec_args != e.args else None}
        if isinstance(d, Approve):
            # approving a retry of an edited call (outcome unknown) still runs it as edited
            edited = (r.exec_name, r.exec_args) != (e.name, e.args)
            return e.model_copy(update={
                **base, "state": CallState.EDITED if edited else CallState.APPROVED, **run})
        if isinstance(d, Edit):
            return e.model_copy(update={**base, "state": CallState.EDITED, **run})
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
