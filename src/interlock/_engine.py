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

import uuid
from inspect import isawaitable
from typing import TYPE_CHECKING, Any

from ._decide import DecisionSteps
from ._execute import ExecutionSteps, build_tool_handler, invoke_tool, middleware_name
from ._run_base import AuditItem, ResumeSpec
from ._texts import (
    SYSTEM,
    digest,
    idempotency_key,
    public_interrupt,
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
)
from .events import (
    InterruptRaised,
    ModelTextDelta,
    ToolCallProposed,
)
from .hitl import ActionRequest, ReviewConfig
from .interrupts import Interrupt, PauseRun, enter_scope, exit_scope
from .messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from .middleware import (
    AutoApproveMark,
    Mark,
    ModelTurn,
    RejectMark,
    ReviewMark,
    mark_from_json,
)
from .result import RunResult
from .storage.base import (
    FINAL_STATES,
    RESOLVED_KEPT,
    RUNNABLE_STATES,
    CallState,
    JournalEntry,
)

if TYPE_CHECKING:
    pass



class Run(DecisionSteps, ExecutionSteps):
    """One invocation on one thread."""

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
            turn.current_middleware = middleware_name(mw)
            token = enter_scope(answers)
            try:
                out = hook(turn)
                if isawaitable(out):
                    await out
            except PauseRun as pause:
                intr = Interrupt(id=uuid.uuid4().hex, kind="input", value=pause.value,
                                 created_at=self.now(), origin=f"after_model:{middleware_name(mw)}")
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
                review = {k: v for k, v in review.items() if v is not None}
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
                    **base, "state": CallState.AUTO_APPROVED, "decided_by": f"rule:{mark.rule}"}))
                audit.append(("auto_approved", f"rule:{mark.rule}", call.id,
                              {"name": call.name, "args": call.args, "rule": mark.rule,
                               "middleware": mark.by}))
            else:
                entries.append(e.model_copy(update={
                    **base, "state": CallState.APPROVED, "decided_by": "policy"}))
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


__all__ = [
    "ResumeSpec",
    "Run",
    "build_tool_handler",
    "idempotency_key",
    "invoke_tool",
    "public_interrupt",
]
